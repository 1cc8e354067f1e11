"""`--compare-reference` compares the contract: one line per real difference, none for wording the
contract leaves open, for text split into other deltas, or for request fields it does not read."""

from __future__ import annotations

import copy
from typing import Any

from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmToolCall,
    NamedToolChoice,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from harness.scenarios.contract import answer_differences, request_differences
from harness.scenarios.expect import ObservedRequest
from harness.targets.protocol import Counters

FORCED = {"kind": "forced_completion", "trigger": "terminal_text", "max_attempts": 1}
CHUNKS: list[dict[str, Any]] = [
    {"kind": "step_start", "step": 0, "phase": "work"},
    {"kind": "text_delta", "step": 0, "text": "It is Paris."},
    {"kind": "step_finish", "step": 0, "stop_reason": "end_turn"},
    {**FORCED, "phase": "triggered"},
    {**FORCED, "phase": "attempt_started", "attempt": 1},
    {"kind": "step_start", "step": 1, "phase": "forced_completion"},
    {"kind": "tool_call", "step": 1, "id": "c1", "name": "__finish__", "arguments": "{}"},
    {"kind": "step_finish", "step": 1, "stop_reason": "tool_use"},
    {**FORCED, "phase": "succeeded", "attempt": 1},
    {"kind": "run_finish", "status": "completed"},
]
ANSWER: dict[str, Any] = {
    "type": "result",
    "id": "capital[js-memory]",
    "status": "failed",
    "error_code": "forced_completion_tool_missing",
    "error_message": "the forced call did not call the output tool",
    "output": None,
    "chunks": CHUNKS,
    "outcome_record": {"text": "It is Paris.", "stop_reason": "end_turn"},
}


def changed(**members: Any) -> dict[str, Any]:
    answer = copy.deepcopy(ANSWER)
    answer.update(members)
    return answer


def test_the_same_answer_has_no_difference() -> None:
    assert answer_differences(ANSWER, copy.deepcopy(ANSWER)) == []


def test_one_missing_chunk_is_exactly_one_line() -> None:
    mutant = [chunk for chunk in CHUNKS if chunk.get("phase") != "attempt_started"]
    assert answer_differences(ANSWER, changed(chunks=mutant)) == [
        "answer.chunks: missing {kind: forced_completion, phase: attempt_started} "
        "before step_start #4"
    ]


def test_one_extra_chunk_is_exactly_one_line() -> None:
    mutant = [*CHUNKS[:2], {"kind": "approval", "step": 0, "name": "x"}, *CHUNKS[2:]]
    assert answer_differences(ANSWER, changed(chunks=mutant)) == [
        "answer.chunks: extra {kind: approval, name: x} at #2"
    ]


def test_a_changed_field_of_an_aligned_chunk_is_one_line() -> None:
    mutant = copy.deepcopy(CHUNKS)
    mutant[7]["stop_reason"] = "end_turn"
    assert answer_differences(ANSWER, changed(chunks=mutant)) == [
        'answer.chunks[7].stop_reason: "tool_use" -> "end_turn"'
    ]


def test_text_split_into_other_deltas_is_the_same_text() -> None:
    mutant = [
        *CHUNKS[:1],
        {"kind": "text_delta", "step": 0, "text": "It is "},
        {"kind": "text_delta", "step": 0, "text": "Paris."},
        *CHUNKS[2:],
    ]
    assert answer_differences(ANSWER, changed(chunks=mutant)) == []


def test_a_message_s_wording_is_free_but_not_its_presence() -> None:
    assert answer_differences(ANSWER, changed(error_message="no output tool was called")) == []
    assert answer_differences(ANSWER, changed(error_message=None)) == [
        'answer.error_message: "(a message)" -> null'
    ]
    assert answer_differences(ANSWER, changed(error_code="llm_call_failed")) == [
        'answer.error_code: "forced_completion_tool_missing" -> "llm_call_failed"'
    ]


def test_module_error_messages_are_free_text_too() -> None:
    reference = {
        "executions": [{"outputs": {}, "error": {"type": "X", "code": "c", "message": "a"}}]
    }
    target = copy.deepcopy(reference)
    target["executions"][0]["error"]["message"] = "another wording"
    assert answer_differences(reference, target) == []
    target["executions"][0]["error"]["code"] = "d"
    assert answer_differences(reference, target) == ['answer.executions[0].error.code: "c" -> "d"']


def observed(**fields: Any) -> ObservedRequest:
    request = LlmRequest.model_validate(
        {
            "model": "gpt-4o-mini",
            "messages": [UserMessage(content="What is the capital?")],
            "tools": [ToolDefinition(name="__finish__", parameters={"type": "object"})],
            **fields,
        }
    )
    return ObservedRequest(
        request=request,
        fragments=("base",),
        memory_injected=False,
        completion_metadata=None,
        reasoning_unsent=True,
    )


def test_requests_differ_only_on_what_the_expectations_read() -> None:
    forced = NamedToolChoice(name="__finish__")
    reference = [("work", observed()), ("forced", observed(tool_choice=forced))]
    unread = [
        ("work", observed(top_p=0.5, stop_sequences=("END",))),
        ("forced", observed(tool_choice=forced)),
    ]
    assert request_differences(reference, unread) == []
    # the token cap is read (expect.*.max_tokens), as the wire carries it
    capped = [("work", observed(max_tokens=99)), ("forced", observed(tool_choice=forced))]
    assert request_differences(reference, capped) == ['requests[0].max_tokens: "unset" -> 99']
    required = [("work", observed()), ("forced", observed(tool_choice="required"))]
    assert request_differences(reference, required) == [
        'requests[1].tool_choice: "__finish__" -> "required"'
    ]
    assert request_differences(reference, reference[:1]) == [
        "requests: missing {kind: forced} at the end"
    ]


def test_schema_validation_errors_are_compared_by_count_not_wording() -> None:
    result = {"kind": "tool_result", "step": 0, "id": "c1", "name": "__finish__"}
    reference = changed(
        chunks=[{**result, "result": {"errors": ["/: 'x' is a required property"]}}]
    )
    other_words = changed(chunks=[{**result, "result": {"errors": ["/: must have property 'x'"]}}])
    assert answer_differences(reference, other_words) == []
    two = changed(chunks=[{**result, "result": {"errors": ["/: a", "/b: c"]}}])
    assert answer_differences(reference, two) == [
        "answer.chunks[0].result.errors: 1 item -> 2 items"
    ]


def test_tool_results_must_go_back_in_the_order_of_the_calls() -> None:
    calls = AssistantMessage(
        tool_calls=(
            LlmToolCall(id="c1", name="__finish__", arguments="{}"),
            LlmToolCall(id="c2", name="lookup", arguments="{}"),
        )
    )
    finish = ToolResultMessage(tool_call_id="c1", name="__finish__", content="{}", is_error=True)
    lookup = ToolResultMessage(tool_call_id="c2", name="lookup", content='{"ok":true}')
    in_call_order = [("work", observed(messages=(UserMessage(content="?"), calls, finish, lookup)))]
    as_executed = [("work", observed(messages=(UserMessage(content="?"), calls, lookup, finish)))]
    assert request_differences(in_call_order, copy.deepcopy(in_call_order)) == []
    assert request_differences(in_call_order, as_executed) == [
        'requests[0].tool_results[0]: "c1" -> "c2"',
        'requests[0].tool_results[1]: "c2" -> "c1"',
    ]


def test_tool_call_arguments_are_compared_as_json_values() -> None:
    """A runtime writes the arguments it parsed in its own language: `0.0` in Python is `0` in
    JavaScript, and keys and spaces are its own; the value is the contract."""
    call = {"kind": "tool_call", "step": 0, "id": "c1", "name": "__finish__"}
    python = changed(chunks=[{**call, "arguments": '{"ok": 0.0, "city": "Paris"}'}])
    javascript = changed(chunks=[{**call, "arguments": '{"city":"Paris","ok":0}'}])
    assert answer_differences(python, javascript) == []
    other = changed(chunks=[{**call, "arguments": '{"city":"Lyon","ok":0}'}])
    assert answer_differences(python, other) == [
        'answer.chunks[0].arguments.city: "Paris" -> "Lyon"'
    ]
    cut_off = changed(chunks=[{**call, "arguments": '{"city": "Pa'}])
    assert answer_differences(cut_off, copy.deepcopy(cut_off)) == []
    assert len(answer_differences(python, cut_off)) == 1


REFERENCE_COUNTERS: dict[str, Any] = {
    "memory_extractions": 0,
    "llm_config_override_calls": ["work", "forced_completion"],
    "crashes": 0,
    "forced_state": None,
}


def test_a_counter_the_target_does_not_report_is_unknown_not_a_difference() -> None:
    """`counters` keys are optional: a counter a target leaves out is not compared (as an
    expectation on it is skipped); one it reports is."""
    reference = changed(counters=REFERENCE_COUNTERS)
    unreported = {k: v for k, v in REFERENCE_COUNTERS.items() if k != "llm_config_override_calls"}
    assert answer_differences(reference, changed(counters=unreported)) == []
    assert answer_differences(reference, changed(counters={})) == []
    assert answer_differences(reference, ANSWER) == []  # no counters at all
    assert answer_differences(reference, changed(counters={**unreported, "crashes": 1})) == [
        "answer.counters.crashes: 0 -> 1"
    ]


def test_a_null_count_is_unknown_but_a_null_forced_state_says_nothing_was_persisted() -> None:
    persisted = {"trigger": "terminal_text", "maxAttempts": 2}
    assert Counters.model_validate({}).reported() == {}
    assert Counters.model_validate({"crashes": None, "memory_extractions": 1}).reported() == {
        "memory_extractions": 1
    }
    assert Counters.model_validate({"forced_state": None}).reported() == {"forced_state": None}
    (reported,) = Counters.model_validate({"forced_state": persisted}).reported().values()
    assert isinstance(reported, dict)
    assert reported["maxAttempts"] == 2
