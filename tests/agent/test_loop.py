"""The outputSchema agent loop and its forced-completion phase, on the in-process runtime."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.agent.definition import AgentDefinition, AgentTool
from harness.agent.result import RunResult
from harness.errors import (
    AgentDecisionCallException,
    IllegalArgumentException,
    ToolChoiceUnsupportedError,
)
from harness.llm.models import (
    FRAGMENT_BASE,
    LlmResponse,
    NamedToolChoice,
    ReasoningDisabled,
    ReasoningEffort,
    ToolResultMessage,
    UserMessage,
)
from harness.protocol.chunks import ForcedCompletionChunk, ToolResultChunk, chunks_to_messages
from harness.protocol.forced import CompletionCode
from harness.runtimes.run import run_agent
from tests.support.agents import VALID, agent, call, calls, finish, full_agent, text
from tests.support.scripted import TestCompleter


def run(
    definition: AgentDefinition, *replies: LlmResponse | Exception, **options: Any
) -> RunResult:
    completer = TestCompleter(list(replies))
    result = run_agent(definition, completer, user_message="Capital of France?", **options)
    assert len(completer.requests) == len(result.requests()), "every call is recorded"
    return result


def attempt_of(metadata: dict[str, Any]) -> int:
    forced: dict[str, int] = metadata["forcedCompletion"]
    return forced["attempt"]


def phases(result: RunResult) -> list[tuple[str, int | None, str | None]]:
    return [(c.phase, c.attempt, c.code) for c in result.forced_chunks()]


# -- completing without the forced phase ----------------------------------------------------------


def test_a_finish_call_with_valid_output_completes_the_run() -> None:
    result = run(agent(), call("search", {"q": "capital"}), finish())
    assert result.status == "completed"
    assert result.output == VALID
    assert result.forced_chunks() == []
    assert result.requests("forced") == []
    assert result.state.forced_completion is None


def test_siblings_run_before_finish_and_no_call_is_left_dangling() -> None:
    reply = calls(("__finish__", json.dumps(VALID)), ("search", '{"q": "x"}'))
    result = run(agent(), reply)
    assert result.output == VALID
    history = result.state.messages
    results = [m for m in history if isinstance(m, ToolResultMessage)]
    assert [r.name for r in results] == ["__finish__", "search"]
    finish_result = next(r for r in results if r.name == "__finish__")
    assert json.loads(finish_result.content) == {"acknowledged": True}
    order = [c.name for c in result.chunks if isinstance(c, ToolResultChunk)]
    assert order == ["search", "__finish__"], "sibling calls run first"


def test_invalid_finish_output_in_the_work_phase_is_returned_to_the_model() -> None:
    result = run(agent(), finish({"answer": 1}), finish())
    assert result.status == "completed"
    first_result = next(m for m in result.state.messages if isinstance(m, ToolResultMessage))
    assert first_result.is_error
    assert json.loads(first_result.content)["acknowledged"] is False
    assert result.forced_chunks() == [], "an invalid finish is not a trigger"


# -- triggers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("replies", "trigger"),
    [
        ([text("It is Paris.")], "terminal_text"),
        ([text("It is Pa", truncated=True)], "max_tokens"),
        ([call("__finish__", '{"answer": "Pa', truncated=True)], "max_tokens"),
        ([call("search", {"q": str(n)}) for n in range(4)], "max_steps"),
    ],
)
def test_each_trigger_starts_forced_completion(replies: list[LlmResponse], trigger: str) -> None:
    result = run(agent(), *replies, finish())
    assert result.status == "completed"
    assert result.output == VALID
    assert phases(result) == [
        ("started", None, None),
        ("attempt_started", 1, None),
        ("succeeded", 1, None),
    ]
    assert {c.trigger for c in result.forced_chunks()} == {trigger}
    assert result.state.forced_completion is not None
    assert result.state.forced_completion.status == "succeeded"
    assert result.state.forced_completion.trigger == trigger


def test_nothing_else_starts_it() -> None:
    result = run(
        agent(max_steps=5),
        call("search", {}),
        call("missing_tool", {}),
        call("search", "{bad"),
        finish(),
    )
    assert result.forced_chunks() == []
    assert result.output == VALID


def test_a_truncated_reply_leaves_no_dangling_call() -> None:
    result = run(agent(), call("search", '{"q": "cut', text="Looking", truncated=True), finish())
    forced = result.requests("forced")[0]
    for message in forced.messages:
        assert not getattr(message, "tool_calls", ()), "the cut-off call was dropped"


# -- the forced request ----------------------------------------------------------------------------


def test_a_forced_call_carries_the_minimum_viable_prompt() -> None:
    result = run(full_agent(reasoning=ReasoningEffort(effort="high")), text("Paris."), finish())
    work = result.requests("work")[0]
    forced = result.requests("forced")[0]
    assert work.fragment_names() == ("base", "skills_catalog", "skill_bodies", "workspace")
    assert forced.fragment_names() == (FRAGMENT_BASE,)
    assert forced.system_text() == "You are the research agent."
    assert forced.tool_names() == ("__finish__",)
    assert forced.tools[0].parameters == agent().output_schema
    assert forced.tool_choice == NamedToolChoice(name="__finish__")
    assert forced.reasoning == ReasoningDisabled()
    assert work.reasoning == ReasoningEffort(effort="high")
    assert work.tool_choice == "auto"
    assert set(work.tool_names()) == {
        "search",
        "load_skill",
        "read_skill_file",
        "bash",
        "__finish__",
    }
    assert not any(m.metadata.get("memory") for m in forced.messages)
    assert any(m.metadata.get("memory") for m in work.messages)
    nudge = forced.messages[-1]
    assert isinstance(nudge, UserMessage)
    assert nudge.content.startswith("[completion] ")
    assert nudge.metadata == {
        "forcedCompletion": {"trigger": "terminal_text", "attempt": 1, "maxAttempts": 2}
    }
    for request in result.requests():
        for message in request.messages:
            content = getattr(message, "content", "") or ""
            assert not content.startswith("[SYSTEM] You must call"), "the old nudge never appears"


def test_work_calls_are_unchanged_by_the_forced_phase() -> None:
    with_forced = run(full_agent(), call("search", {}), text("Paris."), finish())
    without = run(full_agent(), call("search", {}), finish())
    for a, b in zip(with_forced.requests("work"), without.requests("work"), strict=False):
        assert a.fragment_names() == b.fragment_names()
        assert a.tool_names() == b.tool_names()
        assert a.tool_choice == b.tool_choice == "auto"
        assert a.reasoning == b.reasoning


# -- budget and codes ------------------------------------------------------------------------------


def test_budget_zero_fails_at_once_without_a_forced_call() -> None:
    result = run(agent(max_completion_retries=0), text("Paris."))
    assert result.status == "failed"
    assert result.error_code == "framework_forced_completion_exhausted"
    assert result.requests("forced") == []
    assert phases(result) == [
        ("started", None, None),
        ("exhausted", None, "framework_forced_completion_exhausted"),
    ]


@pytest.mark.parametrize("budget", [1, 2, 3])
def test_the_budget_bounds_the_forced_calls(budget: int) -> None:
    failures = [text("still prose") for _ in range(budget)]
    result = run(agent(max_completion_retries=budget), text("Paris."), *failures)
    assert result.status == "failed"
    assert result.error_code == CompletionCode.EXHAUSTED
    assert len(result.requests("forced")) == budget
    assert result.state.forced_calls_returned == budget
    assert result.state.forced_completion is not None
    assert result.state.forced_completion.attempts_used == budget
    assert result.state.forced_completion.last_failure_code == CompletionCode.TOOL_MISSING
    assert "framework_completion_tool_missing" in (result.state.error_message or "")
    expected: list[tuple[str, int | None, str | None]] = [("started", None, None)]
    for attempt in range(1, budget + 1):
        expected += [
            ("attempt_started", attempt, None),
            ("attempt_failed", attempt, "framework_completion_tool_missing"),
        ]
    expected.append(("exhausted", None, "framework_forced_completion_exhausted"))
    assert phases(result) == expected


@pytest.mark.parametrize("budget", [1, 2, 3])
def test_success_on_the_last_attempt(budget: int) -> None:
    failures = [text("prose") for _ in range(budget - 1)]
    result = run(agent(max_completion_retries=budget), text("Paris."), *failures, finish())
    assert result.status == "completed"
    assert len(result.requests("forced")) == budget
    attempts = [attempt_of(r.messages[-1].metadata) for r in result.requests("forced")]
    assert attempts == list(range(1, budget + 1))


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (text("no tool"), "framework_completion_tool_missing"),
        (
            calls(("__finish__", json.dumps(VALID)), ("search", "{}")),
            "framework_completion_protocol_violation",
        ),
        (call("search", {}), "framework_completion_protocol_violation"),
        (finish({"answer": "x"}), "framework_completion_invalid_output"),
        (
            call("__finish__", '{"answer": "Par', truncated=True),
            "framework_completion_invalid_output",
        ),
    ],
)
def test_each_failed_attempt_has_its_code_and_uses_budget(reply: LlmResponse, code: str) -> None:
    result = run(agent(max_completion_retries=1), text("Paris."), reply)
    assert result.error_code == "framework_forced_completion_exhausted"
    assert result.state.forced_completion is not None
    assert result.state.forced_completion.last_failure_code == code
    assert ("attempt_failed", 1, code) in phases(result)
    last = result.state.messages
    calls_made = {c.id for m in last for c in getattr(m, "tool_calls", ())}
    answered = {m.tool_call_id for m in last if isinstance(m, ToolResultMessage)}
    assert calls_made == answered, "no tool call is left dangling"


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_output_json_cannot_hold_is_invalid_even_where_the_schema_takes_any_number(
    number: str,
) -> None:
    scores = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}
    result = run(
        agent(output_schema=scores, max_completion_retries=2),
        text("Paris."),
        call("__finish__", f'{{"score": {number}}}'),
        call("__finish__", '{"score": 1.5}'),
    )
    assert result.status == "completed"
    assert result.output == {"score": 1.5}
    assert ("attempt_failed", 1, "framework_completion_invalid_output") in phases(result)


def test_tool_choice_unsupported_fails_without_burning_attempts() -> None:
    refusal = ToolChoiceUnsupportedError(
        "cannot force", status=400, error_type="invalid_request_error"
    )
    result = run(agent(max_completion_retries=3), text("Paris."), refusal)
    assert result.status == "failed"
    assert result.error_code == "framework_completion_tool_choice_unsupported"
    assert result.state.forced_completion is not None
    assert result.state.forced_completion.attempts_used == 0
    assert result.state.forced_calls_returned == 0
    assert phases(result)[-1] == (
        "attempt_failed",
        1,
        "framework_completion_tool_choice_unsupported",
    )


def test_a_provider_error_on_a_forced_call_is_a_failed_attempt() -> None:
    outage = AgentDecisionCallException("overloaded", status=529, error_type="overloaded_error")
    result = run(agent(), text("Paris."), outage, finish())
    assert result.status == "completed"
    assert phases(result)[2] == ("attempt_failed", 1, "framework_llm_call_failed")


def test_a_work_call_failure_fails_the_run() -> None:
    outage = AgentDecisionCallException("down", status=500, error_type="server_error")
    result = run(agent(), outage)
    assert result.status == "failed"
    assert result.error_code == "framework_llm_call_failed"


def test_an_invalid_output_schema_is_refused_by_name() -> None:
    with pytest.raises(IllegalArgumentException, match="output_schema is not a valid JSON Schema"):
        run(agent(output_schema={"type": "object", "properties": {"a": {"type": "nonsense"}}}))


# -- chunks ----------------------------------------------------------------------------------------


def test_forced_completion_chunks_are_diagnostic_not_chat_content() -> None:
    result = run(agent(), text("It is Paris."), text("again prose"), finish())
    assert any(isinstance(c, ForcedCompletionChunk) for c in result.chunks)
    messages = chunks_to_messages(list(result.chunks))
    assert [m.text for m in messages if m.role == "assistant"] == ["It is Paris.", "again prose"]
    assert all("forced" not in m.text for m in messages)


def test_each_forced_attempt_is_its_own_chat_message() -> None:
    result = run(agent(), text("It is Paris."), text("prose A"), text("prose B"), finish())
    messages = chunks_to_messages(list(result.chunks))
    assistant = [m.text for m in messages if m.role == "assistant"]
    assert assistant == ["It is Paris.", "prose A", "prose B"]


# -- memory ----------------------------------------------------------------------------------------


def test_memory_is_extracted_once_at_the_terminal_outcome_and_never_recalled_when_forced() -> None:
    extracted: list[int] = []
    result = run(
        full_agent(),
        call("search", {}),
        text("Paris."),
        text("prose"),
        finish(),
        extract_memories=lambda messages: extracted.append(len(messages)),
    )
    assert result.state.memory_extractions == 1
    assert len(extracted) == 1
    assert result.state.memory_recalls == len(result.requests("work")) == 2


def test_memory_is_extracted_on_a_failed_terminal_outcome_too() -> None:
    result = run(full_agent(max_completion_retries=1), text("Paris."), text("prose"))
    assert result.status == "failed"
    assert result.state.memory_extractions == 1


# -- llm_config_override ---------------------------------------------------------------------------


def test_the_override_sees_the_phase_and_the_forced_state() -> None:
    seen: list[tuple[str, str | None]] = []

    def override(config: Any, context: Any) -> dict[str, object] | None:
        state = context.forced_completion
        seen.append((context.execution_phase, state.trigger if state else None))
        if context.execution_phase == "forced_completion":
            return {"model": "gpt-4o-mini-cheap", "temperature": 0.0}
        return None

    result = run(agent(), text("Paris."), finish(), llm_config_override=override)
    assert seen == [("work", None), ("forced_completion", "terminal_text")]
    forced = result.requests("forced")[0]
    assert forced.model == "gpt-4o-mini-cheap"
    assert forced.temperature == 0.0
    assert result.requests("work")[0].model == "gpt-4o-mini"
    assert [c.execution_phase for c in result.state.override_calls] == ["work", "forced_completion"]


def forced_only(changes: object) -> Any:
    """An override returning `changes` in the forced phase, nothing in the work phase."""

    def override(config: Any, context: Any) -> object:
        return changes if context.execution_phase == "forced_completion" else None

    return override


def test_an_override_naming_a_field_the_config_lacks_is_refused_with_the_allowed_fields() -> None:
    override = forced_only({"temprature": 5, "max_tokens": -3})
    with pytest.raises(IllegalArgumentException) as caught:
        run(agent(), text("Paris."), finish(), llm_config_override=override)
    assert caught.value.code == "illegal_argument"
    message = str(caught.value)
    assert message.startswith(
        "expected llm_config_override to return changes to model, max_tokens, temperature"
    )
    assert "temprature=5 (type=int), which is no field of the call config" in message
    assert "max_tokens=-3 (type=int): Input should be greater than 0" in message


@pytest.mark.parametrize(
    ("changes", "refused"),
    [
        ({"max_tokens": -3}, "max_tokens=-3 (type=int): Input should be greater than 0"),
        ({"max_tokens": 0}, "max_tokens=0 (type=int): Input should be greater than 0"),
        ({"temperature": 5}, "temperature=5 (type=int): Input should be less than or equal to 2"),
        ({"model": ""}, "model='' (type=str): String should have at least 1 character"),
        ({"model": None}, "model=None (type=NoneType): Input should be a valid string"),
    ],
)
def test_an_override_value_the_config_refuses_never_reaches_a_call(
    changes: dict[str, object], refused: str
) -> None:
    completer = TestCompleter([text("Paris."), finish()])
    with pytest.raises(IllegalArgumentException, match="llm_config_override") as caught:
        run_agent(
            agent(),
            completer,
            user_message="Capital of France?",
            llm_config_override=forced_only(changes),
        )
    assert refused in str(caught.value)
    assert len(completer.requests) == 1, "the forced call is never made"


def test_an_override_returning_neither_changes_nor_a_config_is_refused() -> None:
    with pytest.raises(IllegalArgumentException, match="but got a value of type list"):
        run(agent(), text("Paris."), finish(), llm_config_override=forced_only(["gpt-4o"]))


def test_valid_changes_still_apply_and_a_long_value_is_cut_short() -> None:
    result = run(
        agent(), text("Paris."), finish(), llm_config_override=forced_only({"max_tokens": 64})
    )
    assert result.requests("forced")[0].max_tokens == 64
    with pytest.raises(IllegalArgumentException) as caught:
        run(agent(), text("Paris."), llm_config_override=forced_only({"max_tokens": "x" * 200}))
    assert f"max_tokens='{'x' * 56}... (type=str)" in str(caught.value)


# -- what a run produces ---------------------------------------------------------------------------


def test_the_outcome_record_of_a_completed_run() -> None:
    result = run(agent(), call("search", {}, text="Let me look."), text("It is Paris."), finish())
    record = result.outcome_record()
    assert record.text == "Let me look.\nIt is Paris."
    assert record.final_message == "It is Paris."
    assert record.stop_reason == "end_turn"
    assert record.session_id
    assert record.into_payload().content_type == "application/json"


def test_the_outcome_record_of_a_failed_run_and_of_a_step_cut_off() -> None:
    failed = run(agent(max_completion_retries=0), text("Paris."))
    assert failed.outcome_record().stop_reason == "error"
    no_schema = agent(output_schema=None, max_steps=2)
    cut = run(no_schema, call("search", {}), call("search", {}))
    assert cut.status == "completed"
    assert cut.outcome_record().stop_reason == "limit_reached"
    plain = run(no_schema, text("Paris."))
    assert plain.outcome_record().stop_reason == "end_turn"
    assert plain.outcome_record().final_message == "Paris."


def test_the_envelope_of_completed_partial_and_empty_runs() -> None:
    completed = run(agent(), finish()).envelope()
    assert completed.outcome == "succeeded"
    assert completed.agent_result == VALID
    assert completed.response is None
    assert completed.structured_output is not None
    assert completed.structured_output.type == "json_payload"
    assert completed.structured_output.version == 1
    assert completed.structured_output.hash.startswith("sha256:")
    partial = run(agent(max_completion_retries=0), text("Paris.")).envelope()
    assert partial.outcome == "partial"
    assert partial.structured_output is None
    assert partial.agent_result is None
    empty = run(
        agent(max_completion_retries=1),
        call("search", {}),
        call("search", {}),
        call("search", {}),
        call("search", {}),
        call("search", {}),
    ).envelope()
    assert empty.outcome == "empty-response"


def test_a_successful_output_passes_the_completion_module() -> None:
    huge = {"answer": "x" * 70_000, "score": 1}
    result = run(agent(max_completion_retries=1), finish(huge), text("Paris."), finish(huge))
    assert result.status == "failed"
    assert result.state.forced_completion is not None
    assert result.state.forced_completion.last_failure_code == "framework_completion_invalid_output"


def test_approval_gated_tools_wait_for_approval() -> None:
    gated = agent(
        tools=[AgentTool(name="deploy", requires_approval=True, result={"deployed": True})]
    )
    decisions: list[str] = []

    def deny(call: Any, tool: Any) -> bool:
        decisions.append(call.name)
        return False

    result = run(gated, call("deploy", {}), finish(), approve=deny)
    assert decisions == ["deploy"]
    approvals = [c for c in result.chunks if c.kind == "approval"]
    assert len(approvals) == 1
    denied = next(m for m in result.state.messages if isinstance(m, ToolResultMessage))
    assert denied.is_error
    assert json.loads(denied.content) == {"error": "approval denied"}


@pytest.mark.parametrize(
    ("reply", "answered"),
    [
        (" \t\n\u2003\u3000\u2028\x0b\x0c\r", False),  # white space to Java, JavaScript and Python
        ("\x1c\x1f", False),  # information separators: white space to Java's isBlank
        ("\u00a0", True),  # a no-break space: content to Java (white space to Python's strip)
        ("\u2007\u202f", True),
    ],
    ids=["shared-white-space", "separators", "no-break-space", "figure-and-narrow-spaces"],
)
def test_a_reply_is_an_answer_unless_it_is_blank_as_java_says(reply: str, answered: bool) -> None:
    result = run(agent(), text(reply), text("Paris"), finish())
    record = result.outcome_record()
    assert record.text == (f"{reply}\nParis" if answered else "Paris")
    assert record.final_message == "Paris"
    assert result.envelope().outcome == "succeeded"
    alone = run(agent(output_schema=None), text(reply))
    assert alone.envelope().outcome == ("partial" if answered else "empty-response")
