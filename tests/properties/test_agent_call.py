"""The `agent_call_*` invariants and the `AgentCall` record, on calls built by hand: each
invariant accepts what keeps its promise and names the promise that broke, never model output."""

from __future__ import annotations

import contextlib
import json

import httpx2
import pytest
from pydantic import BaseModel, JsonValue

from harness.errors import IllegalArgumentException
from harness.invariants import (
    AgentCall,
    agent_call_bounded,
    agent_call_budget_respected,
    agent_call_ends_validly,
    agent_call_forced_requests_minimal,
    forced_requests_are_minimal,
    work_requests_carry_everything,
)
from harness.llm.adapters import RequestFormatError
from harness.llm.models import LlmRequest, NamedToolChoice, ToolDefinition
from harness.llm.script import (
    ScriptedReply,
    ScriptedToolCall,
    ScriptExhaustedError,
    ScriptTransport,
)
from harness.runtimes.run import run_agent
from harness.strategies import AgentRun

CANARY = "canary-5e1d-model-output"
SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
ANSWER = ToolDefinition(name="final_answer", parameters=SCHEMA)
SEARCH = ToolDefinition(name="search")


def request(*tools: ToolDefinition, choice: object = "auto") -> LlmRequest:
    return LlmRequest.model_validate(
        {"model": "gpt-4o-mini", "tools": tools, "tool_choice": choice}
    )


WORK = request(SEARCH, ANSWER)
FORCED = request(ANSWER, choice=NamedToolChoice(name="final_answer"))


class AgentGaveUp(Exception):
    pass


# -- ends validly ------------------------------------------------------------------------------


def test_valid_output_or_an_allowed_error_ends_validly() -> None:
    agent_call_ends_validly(AgentCall(requests=(WORK,), output={"city": "Paris"}), SCHEMA)
    agent_call_ends_validly(
        AgentCall(requests=(WORK,), error=AgentGaveUp(CANARY)), SCHEMA, errors=(AgentGaveUp,)
    )

    class City(BaseModel):
        city: str

    agent_call_ends_validly(AgentCall(requests=(), output=City(city="Paris")), SCHEMA)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            AgentCall(requests=(WORK,), output={"city": 1, "note": CANARY}),
            r"returned output that fails the schema at /city: type",
        ),
        (AgentCall(requests=(WORK,), output=None), r"fails the schema at /: type"),
        (
            AgentCall(requests=(WORK,), error=json.JSONDecodeError(CANARY, CANARY, 0)),
            "raised a bare JSONDecodeError",
        ),
        (AgentCall(requests=(WORK,), error=KeyError(CANARY)), "raised a bare KeyError"),
        (
            AgentCall(requests=(WORK,), error=RuntimeError(CANARY)),
            "raised RuntimeError; expected output or one of: AgentGaveUp",
        ),
        (
            AgentCall(requests=(WORK,), error=ScriptExhaustedError(CANARY), replies=1),
            r"more model calls than its script has replies \(1\)",
        ),
    ],
)
def test_a_broken_ending_is_named_without_model_output(call: AgentCall, message: str) -> None:
    with pytest.raises(AssertionError, match=message) as raised:
        agent_call_ends_validly(call, SCHEMA, errors=(AgentGaveUp,))
    assert CANARY not in str(raised.value)


def test_a_script_run_dry_behind_an_sdk_error_is_still_caught() -> None:
    class SdkConnectionError(Exception):
        pass

    try:
        try:
            raise ScriptExhaustedError("no reply left")
        except ScriptExhaustedError as exhausted:
            raise SdkConnectionError("connection failed") from exhausted
    except SdkConnectionError as wrapped:
        call = AgentCall(requests=(WORK, WORK), error=wrapped, replies=1)
    with pytest.raises(AssertionError, match="more model calls"):
        agent_call_ends_validly(call, SCHEMA, errors=(SdkConnectionError,))
    with pytest.raises(AssertionError, match="sent 2 request"):
        agent_call_bounded(call)


def test_a_call_has_an_output_or_an_error_not_both() -> None:
    with pytest.raises(IllegalArgumentException, match="got both"):
        AgentCall(requests=(), output={"city": "Paris"}, error=AgentGaveUp())


# -- the budget and the forced requests ----------------------------------------------------------


def test_forced_requests_name_the_output_tool_or_require_it_alone() -> None:
    required_alone = request(ANSWER, choice="required")
    required_among_others = request(SEARCH, ANSWER, choice="required")
    other_named = request(SEARCH, choice=NamedToolChoice(name="search"))
    call = AgentCall(requests=(WORK, FORCED, required_alone, required_among_others, other_named))
    assert call.forced_requests("final_answer") == ((2, FORCED), (3, required_alone))
    assert call.forced_requests("search") == ((5, other_named),)


def test_the_budget_counts_forced_requests() -> None:
    call = AgentCall(requests=(WORK, FORCED, FORCED))
    agent_call_budget_respected(call, budget=2, output_tool="final_answer")
    with pytest.raises(AssertionError, match=r"sent 2 forced request\(s\) for final_answer"):
        agent_call_budget_respected(call, budget=1, output_tool="final_answer")
    with pytest.raises(AssertionError, match="its budget is 0"):
        agent_call_budget_respected(
            AgentCall(requests=(FORCED,)), budget=0, output_tool="final_answer"
        )
    # the default output tool is the harness's own
    agent_call_budget_respected(call, budget=0)


def test_a_forced_request_offers_only_the_output_tool() -> None:
    agent_call_forced_requests_minimal(
        AgentCall(requests=(WORK, FORCED)), output_tool="final_answer"
    )
    leaky = request(SEARCH, ANSWER, choice=NamedToolChoice(name="final_answer"))
    with pytest.raises(
        AssertionError, match=r"forced request #2 offers tools \['search', 'final_answer'\]"
    ):
        agent_call_forced_requests_minimal(
            AgentCall(requests=(WORK, leaky)), output_tool="final_answer"
        )


def test_bounded_counts_requests_against_the_script_or_a_limit() -> None:
    call = AgentCall(requests=(WORK, WORK, FORCED), output={"city": "Paris"}, replies=3)
    agent_call_bounded(call)
    with pytest.raises(AssertionError, match=r"sent 3 request\(s\); at most 2"):
        agent_call_bounded(call, max_requests=2)
    with pytest.raises(IllegalArgumentException, match="expected max_requests"):
        agent_call_bounded(AgentCall(requests=(WORK,)))


# -- building a call from a transport ------------------------------------------------------------


def test_observe_reads_back_every_request_the_transport_answered() -> None:
    answer = ScriptedReply(
        tool_calls=(ScriptedToolCall(name="final_answer", arguments={"city": "Paris"}),)
    )
    transport = ScriptTransport("anthropic", [ScriptedReply(text=CANARY), answer])

    def agent() -> object:
        with httpx2.Client(transport=transport) as client:
            for body in (
                {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": []},
                {
                    "model": "claude-sonnet-4-5",
                    "max_tokens": 10,
                    "messages": [],
                    "tools": [{"name": "final_answer", "input_schema": SCHEMA}],
                    "tool_choice": {"type": "tool", "name": "final_answer"},
                },
            ):
                reply = client.post("https://api.anthropic.com/v1/messages", json=body).json()
        return reply["content"][0]["input"]

    call = AgentCall.observe(transport, agent)
    assert call.output == {"city": "Paris"}
    assert call.error is None
    assert call.replies == 2
    assert [number for number, _ in call.forced_requests("final_answer")] == [2]
    assert call.requests[1].tool_names() == ("final_answer",)


def test_observe_keeps_the_error_the_agent_raised() -> None:
    transport = ScriptTransport("openai", [])

    def agent() -> object:
        with httpx2.Client(transport=transport) as client:
            client.post(
                "https://api.openai.com/v1/chat/completions", json={"model": "m", "messages": []}
            )
        return None

    call = AgentCall.observe(transport, agent)
    assert isinstance(call.error, ScriptExhaustedError)
    assert call.replies == 0
    assert len(call.requests) == 1
    with pytest.raises(AssertionError, match="at most 0"):
        agent_call_bounded(call)


def test_a_body_that_is_not_a_request_is_named() -> None:
    transport = ScriptTransport("openai", [ScriptedReply(text="hi")])
    with httpx2.Client(transport=transport) as client, contextlib.suppress(ValueError):
        # the transport keeps the request, then cannot read it either
        client.post(
            "https://api.openai.com/v1/chat/completions", content=b"not json " + CANARY.encode()
        )
    assert len(transport.requests) == 1
    with pytest.raises(
        RequestFormatError, match="request #1 has a body that is not JSON"
    ) as raised:
        AgentCall.from_transport(transport)
    assert CANARY not in str(raised.value)


# -- the harness's own invariants take the output tool too ---------------------------------------


def test_the_run_invariants_take_the_output_tool() -> None:
    from harness.factories import AgentDefinitionFactory

    case = AgentRun(
        agent=AgentDefinitionFactory.build(max_completion_retries=1, max_steps=1, memory=None),
        provider="openai",
        replies=(
            ScriptedReply(text="Paris."),
            ScriptedReply(
                tool_calls=(ScriptedToolCall(name="__finish__", arguments={"city": "Paris"}),)
            ),
        ),
    )
    with case.completer() as gateway:
        result = run_agent(case.agent, gateway, user_message="Capital of France?")
    assert result.requests("forced")
    forced_requests_are_minimal(result)
    work_requests_carry_everything(result)
    with pytest.raises(AssertionError, match="expected only final_answer"):
        forced_requests_are_minimal(result, output_tool="final_answer")
    with pytest.raises(AssertionError, match="final_answer"):
        work_requests_carry_everything(result, output_tool="final_answer")
