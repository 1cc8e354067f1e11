"""`AgentDecision`: camelCase on the wire, snake_case in Python, outcomes closed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness import AgentDecision, DecisionOutcome, ToolCall

SEED_DECISION = {
    "outcome": "TOOL_CALLS",
    "toolCalls": [
        {"name": "workflow.execution.inspect", "arguments": {"executionId": "release-42"}}
    ],
}


def test_the_seed_example_decodes_and_encodes_unchanged() -> None:
    decision = AgentDecision.model_validate(SEED_DECISION)
    assert decision.outcome is DecisionOutcome.TOOL_CALLS
    assert decision.tool_calls[0].name == "workflow.execution.inspect"
    assert decision.tool_calls[0].arguments == {"executionId": "release-42"}
    assert decision.normalized_outcome == "tool_calls"
    assert decision.to_wire() == SEED_DECISION


@pytest.mark.parametrize(
    ("outcome", "normalized"),
    [
        ("FINAL_ANSWER", "final_answer"),
        ("ASK_USER", "ask_user"),
        ("WAIT_APPROVAL", "wait_approval"),
        ("CONTINUE", "continue"),
        ("FAILED", "failed"),
    ],
)
def test_every_outcome_normalizes_to_lower_case(outcome: str, normalized: str) -> None:
    decision = AgentDecision.model_validate({"outcome": outcome, "text": "done"})
    assert decision.normalized_outcome == normalized
    assert decision.to_wire() == {"outcome": outcome, "text": "done"}


def test_python_callers_use_snake_case() -> None:
    call = ToolCall(id="call_1", name="search", arguments={"q": "x"})
    decision = AgentDecision(outcome=DecisionOutcome.TOOL_CALLS, tool_calls=(call,))
    assert decision.to_wire()["toolCalls"] == [
        {"id": "call_1", "name": "search", "arguments": {"q": "x"}}
    ]


@pytest.mark.parametrize(
    "payload",
    [
        {"outcome": "tool_calls", "toolCalls": []},
        {"outcome": "DONE"},
        {"outcome": "TOOL_CALLS", "toolCalls": []},
        {"outcome": "FINAL_ANSWER", "toolCalls": [{"name": "x", "arguments": {}}]},
        {"outcome": "TOOL_CALLS", "toolCalls": [{"name": "x", "arguments": "{}"}]},
        {"outcome": "TOOL_CALLS", "toolCalls": [{"name": "x", "arguments": [1]}]},
        {"outcome": "TOOL_CALLS", "toolCalls": [{"name": "", "arguments": {}}]},
        {"outcome": "FINAL_ANSWER", "answer": "extra key"},
    ],
)
def test_malformed_decisions_do_not_decode(payload: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        AgentDecision.model_validate(payload)
