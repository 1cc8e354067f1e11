"""Anthropic thinking blocks: kept from a reply, carried on the assistant turn, sent back first.

Messages requires the signed thinking of a turn before the tool_use it continues while thinking
is on; `../shared/corpus` has such a recorded continuation, rendered back exactly in
`test_corpus_parsing`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

from harness.agent.definition import AgentDefinition, AgentTool
from harness.llm import anthropic, openai
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmResponse,
    LlmToolCall,
    ReasoningDisabled,
    ReasoningEffort,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harness.protocol.outcome import EndTurn, ToolUse
from harness.runtimes.run import run_agent
from harness.sse import parse_sse
from tests.support.scripted import TestCompleter

THINKING: dict[str, JsonValue] = {
    "type": "thinking",
    "thinking": "Look the city up first.",
    "signature": "EqQBCkgI==",
}
REDACTED: dict[str, JsonValue] = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafP"}
CALL: dict[str, JsonValue] = {
    "type": "tool_use",
    "id": "toolu_1",
    "name": "lookup",
    "input": {"city": "Paris"},
}


def _event(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def test_a_plain_reply_keeps_its_thinking_blocks_unchanged_and_in_order() -> None:
    reply = anthropic.parse_response(
        {
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [THINKING, REDACTED, {"type": "text", "text": "Checking."}, CALL],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 20},
        }
    )
    assert reply.reasoning_blocks == (THINKING, REDACTED)
    assert reply.text == "Checking."
    assert [call.name for call in reply.tool_calls] == ["lookup"]


def test_a_streamed_reply_joins_thinking_and_signature_deltas_into_the_same_block() -> None:
    stream = "".join(
        [
            _event("message_start", message={"model": "claude-sonnet-4-5", "usage": {}}),
            _event(
                "content_block_start",
                index=0,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            ),
            _event(
                "content_block_delta",
                index=0,
                delta={"type": "thinking_delta", "thinking": "Look the city "},
            ),
            _event(
                "content_block_delta",
                index=0,
                delta={"type": "thinking_delta", "thinking": "up first."},
            ),
            _event(
                "content_block_delta",
                index=0,
                delta={"type": "signature_delta", "signature": "EqQBCkgI=="},
            ),
            _event("content_block_stop", index=0),
            _event("content_block_start", index=1, content_block=REDACTED),
            _event("content_block_stop", index=1),
            _event("content_block_start", index=2, content_block={**CALL, "input": {}}),
            _event(
                "content_block_delta",
                index=2,
                delta={"type": "input_json_delta", "partial_json": '{"city": "Paris"}'},
            ),
            _event("content_block_stop", index=2),
            _event("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 5}),
            _event("message_stop"),
        ]
    )
    reply = anthropic.parse_stream(parse_sse(stream))
    assert reply.reasoning_blocks == (THINKING, REDACTED)
    assert reply.tool_calls[0].arguments == '{"city":"Paris"}'


def conversation(reasoning: ReasoningEffort | ReasoningDisabled) -> LlmRequest:
    return LlmRequest(
        model="claude-sonnet-4-5",
        messages=(
            UserMessage(content="Weather in Paris?"),
            AssistantMessage(
                text="Checking.",
                tool_calls=(
                    LlmToolCall(id="toolu_1", name="lookup", arguments='{"city":"Paris"}'),
                ),
                reasoning_blocks=(THINKING, REDACTED),
            ),
            ToolResultMessage(tool_call_id="toolu_1", name="lookup", content="sunny"),
        ),
        max_tokens=20_000,
        reasoning=reasoning,
    )


def rendered(adapter: Any, reasoning: ReasoningEffort | ReasoningDisabled) -> Any:
    body: Any = adapter.render_request(conversation(reasoning))
    return body


def test_thinking_goes_back_first_while_thinking_is_on_and_never_otherwise() -> None:
    on = rendered(anthropic, ReasoningEffort(effort="low"))["messages"][1]["content"]
    assert [block["type"] for block in on] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert on[0] == THINKING
    off = rendered(anthropic, ReasoningDisabled())["messages"][1]["content"]
    assert [block["type"] for block in off] == ["text", "tool_use"]
    assert "EqQBCkgI" not in json.dumps(rendered(openai, ReasoningEffort(effort="low")))


def test_the_loop_keeps_a_replys_thinking_on_its_assistant_turn() -> None:
    tool_turn = LlmResponse(
        text="Checking.",
        tool_calls=(LlmToolCall(id="toolu_1", name="lookup", arguments='{"city":"Paris"}'),),
        reasoning_blocks=(THINKING,),
        stop=ToolUse(),
        usage=Usage(total_tokens=1),
    )
    answer = LlmResponse(text="Sunny.", stop=EndTurn(), usage=Usage(total_tokens=1))
    completer = TestCompleter([tool_turn, answer])
    agent = AgentDefinition(
        model="claude-sonnet-4-5",
        tools=(AgentTool(name="lookup", result={"weather": "sunny"}),),
        reasoning=ReasoningEffort(effort="low"),
    )
    run_agent(agent, completer, user_message="Weather in Paris?")
    second = completer.requests[1]
    assistant = next(m for m in second.messages if isinstance(m, AssistantMessage))
    assert assistant.reasoning_blocks == (THINKING,)
