"""A scripted reply's `thinking`, rendered as each wire carries reasoning, and read back.

Anthropic sends a signed `thinking` block first (streamed as `thinking_delta`s and a
`signature_delta`); Gemini a `thoughtSignature` on the first function call (or the last part),
its tokens in `thoughtsTokenCount`; OpenAI Chat Completions no words, only `reasoning_tokens`;
the Responses API a `reasoning` item with its summary. The official SDKs read each back.
"""

from __future__ import annotations

from typing import Any

import anthropic as anthropic_sdk
import httpx2
import openai as openai_sdk
import pytest
from pydantic import ValidationError

from harness.llm import anthropic, gemini, openai
from harness.llm._wire import reasoning_token_estimate, thinking_signature
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    ReasoningDisabled,
    ReasoningEffort,
    UserMessage,
)
from harness.llm.script import ScriptedReply, ScriptedToolCall, ScriptTransport
from harness.providers import Provider
from harness.sse import parse_sse

THOUGHT = "The user asks for a capital. I should search first."
SEARCH = ScriptedToolCall(name="search", arguments={"q": "capital of France"})
CALLING = ScriptedReply(thinking=THOUGHT, tool_calls=(SEARCH,))
ANSWERING = ScriptedReply(thinking=THOUGHT, text="Paris.")
SPENT = ScriptedReply(thinking=THOUGHT, truncated=True)


def test_thinking_is_counted_in_the_reply_output_tokens() -> None:
    usage = CALLING.to_response(0).usage
    reasoning = reasoning_token_estimate(THOUGHT)
    assert usage.reasoning_tokens == reasoning == 13
    assert usage.output_tokens == 20 + reasoning
    assert ScriptedReply(text="Paris.").to_response(0).usage.reasoning_tokens == 0


def test_a_reply_of_thinking_alone_is_a_reply_and_an_error_has_none() -> None:
    assert SPENT.to_response(0).truncated
    assert SPENT.to_response(0).text == ""
    with pytest.raises(ValidationError, match="no thinking"):
        ScriptedReply.model_validate({"thinking": "x", "error": {"status": 500}})
    with pytest.raises(ValidationError, match="text, tool_calls, thinking, or error"):
        ScriptedReply.model_validate({})


def test_the_signature_is_deterministic_and_tied_to_the_words() -> None:
    assert thinking_signature(THOUGHT) == thinking_signature(THOUGHT)
    assert thinking_signature(THOUGHT) != thinking_signature(THOUGHT + ".")


@pytest.mark.parametrize(
    "reply", [CALLING, ANSWERING, SPENT], ids=["calling", "answering", "spent"]
)
def test_anthropic_sends_a_signed_thinking_block_first(reply: ScriptedReply) -> None:
    response = reply.to_response(0)
    body: Any = anthropic.render_response(response, model="claude-sonnet-4-5", response_id="msg_1")
    assert body["content"][0] == {
        "type": "thinking",
        "thinking": THOUGHT,
        "signature": thinking_signature(THOUGHT),
    }
    plain = anthropic.parse_response(body)
    streamed = anthropic.parse_stream(
        parse_sse(
            "".join(anthropic.render_stream(response, model="claude-sonnet-4-5", response_id="m"))
        )
    )
    for parsed in (plain, streamed):
        assert parsed.thinking == THOUGHT
        assert parsed.reasoning_blocks == (body["content"][0],)
        assert parsed.text == response.text
        assert parsed.truncated is response.truncated


def test_a_thinking_block_is_sent_back_before_its_call_only_while_thinking_is_on() -> None:
    reply = anthropic.parse_response(
        anthropic.render_response(
            CALLING.to_response(0), model="claude-sonnet-4-5", response_id="m"
        )
    )
    turn = AssistantMessage(tool_calls=reply.tool_calls, reasoning_blocks=reply.reasoning_blocks)
    conversation = (UserMessage(content="Capital of France?"), turn)

    def sent(reasoning: ReasoningEffort | ReasoningDisabled) -> Any:
        request = LlmRequest(model="claude-sonnet-4-5", messages=conversation, reasoning=reasoning)
        body: Any = anthropic.render_request(request)
        return body["messages"][1]["content"]

    thinking_on = sent(ReasoningEffort(effort="low"))
    assert isinstance(thinking_on, list)
    assert [block["type"] for block in thinking_on] == ["thinking", "tool_use"]
    assert [block["type"] for block in sent(ReasoningDisabled())] == ["tool_use"]


@pytest.mark.parametrize("reply", [CALLING, ANSWERING], ids=["calling", "answering"])
def test_gemini_signs_the_first_call_or_the_last_part(reply: ScriptedReply) -> None:
    response = reply.to_response(0)
    body: Any = gemini.render_response(response, model="gemini-2.5-flash", response_id="r")
    parts = body["candidates"][0]["content"]["parts"]
    signed = [part for part in parts if "thoughtSignature" in part]
    assert len(signed) == 1
    assert signed[0]["thoughtSignature"] == thinking_signature(THOUGHT)
    assert ("functionCall" in signed[0]) is bool(reply.tool_calls)
    usage = body["usageMetadata"]
    assert usage["thoughtsTokenCount"] == reasoning_token_estimate(THOUGHT)
    assert usage["candidatesTokenCount"] == 20
    streamed = gemini.parse_stream(
        parse_sse(
            "".join(gemini.render_stream(response, model="gemini-2.5-flash", response_id="r"))
        )
    )
    for parsed in (gemini.parse_response(body), streamed):
        assert len(parsed.reasoning_blocks) == 1  # the whole content, signature in place
        assert parsed.usage.reasoning_tokens == reasoning_token_estimate(THOUGHT)
        assert parsed.usage.output_tokens == response.usage.output_tokens


def test_gemini_thinking_cut_off_by_the_limit_has_no_parts() -> None:
    body: Any = gemini.render_response(
        SPENT.to_response(0), model="gemini-2.5-flash", response_id="r"
    )
    assert "parts" not in body["candidates"][0]["content"]
    parsed = gemini.parse_response(body)
    assert (parsed.text, parsed.truncated, parsed.reasoning_blocks) == ("", True, ())


def test_openai_chat_shows_no_reasoning_but_counts_it() -> None:
    response = SPENT.to_response(0)
    body: Any = openai.render_response(response, model="gpt-5-mini", response_id="c")
    choice = body["choices"][0]
    assert choice["message"]["content"] == ""
    assert choice["finish_reason"] == "length"
    details = body["usage"]["completion_tokens_details"]
    assert details["reasoning_tokens"] == reasoning_token_estimate(THOUGHT)
    parsed = openai.parse_response(body)
    assert (parsed.text, parsed.truncated, parsed.thinking) == ("", True, "")
    assert parsed.usage.reasoning_tokens == reasoning_token_estimate(THOUGHT)


def _http(reply: ScriptedReply, provider: Provider) -> httpx2.Client:
    return httpx2.Client(transport=ScriptTransport(provider, [reply]))


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_openai_sdk_reads_the_reasoning_item_of_a_responses_reply(stream: bool) -> None:
    client = openai_sdk.OpenAI(
        api_key="sk-test", base_url="http://x/v1", http_client=_http(CALLING, "openai")
    )
    response: Any
    if stream:
        with client.responses.stream(model="gpt-5-mini", input="Capital of France?") as events:
            response = events.get_final_response()
    else:
        response = client.responses.create(model="gpt-5-mini", input="Capital of France?")
    reasoning, call = response.output
    assert reasoning.type == "reasoning"
    assert [part.text for part in reasoning.summary] == [THOUGHT]
    assert call.type == "function_call"
    assert call.name == "search"
    assert response.usage is not None
    assert response.usage.output_tokens_details.reasoning_tokens == reasoning_token_estimate(
        THOUGHT
    )


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_anthropic_sdk_reads_the_thinking_block(stream: bool) -> None:
    client = anthropic_sdk.Anthropic(
        api_key="sk-ant-test", base_url="http://x", http_client=_http(CALLING, "anthropic")
    )
    arguments: Any = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "thinking": {"type": "enabled", "budget_tokens": 4096},
        "messages": [{"role": "user", "content": "Capital of France?"}],
    }
    message: Any
    if stream:
        with client.messages.stream(**arguments) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**arguments)
    thinking, call = message.content
    assert thinking.type == "thinking"
    assert (thinking.thinking, thinking.signature) == (THOUGHT, thinking_signature(THOUGHT))
    assert call.type == "tool_use"
    assert call.input == {"q": "capital of France"}
