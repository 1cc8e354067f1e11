"""Replies the corpus lacks, built from the providers' documented formats, plain and streamed.

The corpus has no Anthropic `max_tokens`, `stop_sequence`, `refusal` or `pause_turn` stop, no
OpenAI `length` from OpenAI itself, no `content_filter`, and no 400 refusing a forced tool choice
while thinking. Each is built here from the API reference shape, once as a JSON body and once as
the event stream that says the same, and both must parse to the same neutral response.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal

import pytest
from pydantic import JsonValue

from harness.errors import (
    AgentDecisionCallException,
    IllegalArgumentException,
    ToolChoiceUnsupportedError,
)
from harness.llm import anthropic, openai
from harness.llm.adapters import adapter_for
from harness.llm.capabilities import (
    capabilities_for,
    check_request,
    supports_forced_tool_choice,
    supports_reasoning,
    supports_tools,
)
from harness.llm.models import (
    LlmRequest,
    LlmResponse,
    NamedToolChoice,
    Reasoning,
    ReasoningDisabled,
    ReasoningEffort,
    ToolChoice,
    ToolDefinition,
    UserMessage,
)
from harness.protocol.outcome import EndTurn, LimitReached, OtherStop, ToolUse
from harness.sse import SseEvent

Provider = Literal["openai", "anthropic"]
Mode = Literal["plain", "stream"]
MODES: list[Mode] = ["plain", "stream"]

TRUNCATED_ARGUMENTS = '{"path": "notes.md", "content": "The quick brown'


# --- OpenAI Chat Completions ------------------------------------------------------------------


def openai_body(
    *,
    finish_reason: str,
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {"prompt_tokens": 30, "completion_tokens": 16, "total_tokens": 46},
    }


def openai_stream(body: dict[str, Any], *, pieces: int = 3) -> list[SseEvent]:
    """The chunks that stream `body`: content and arguments split in `pieces`, usage last."""
    choice = body["choices"][0]
    message = choice["message"]
    base = {"id": body["id"], "object": "chat.completion.chunk", "model": body["model"]}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> SseEvent:
        data = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
        return SseEvent(data=json.dumps(data))

    events = [chunk({"role": "assistant", "content": ""})]
    for part in _split(message.get("content") or "", pieces):
        events.append(chunk({"content": part}))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": function["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        for part in _split(function["arguments"], pieces):
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            )
    events.append(chunk({}, choice["finish_reason"]))
    events.append(SseEvent(data=json.dumps({**base, "choices": [], "usage": body["usage"]})))
    events.append(SseEvent(data="[DONE]"))
    return events


def without_indexes(events: list[SseEvent]) -> list[SseEvent]:
    """The stream as Gemini's OpenAI-compatible API sends it: tool-call fragments carry no
    `index`."""
    unindexed = []
    for event in events:
        data = json.loads(event.data or "null") if event.data != "[DONE]" else None
        for choice in (data or {}).get("choices", []):
            for fragment in choice["delta"].get("tool_calls", []):
                fragment.pop("index")
        unindexed.append(SseEvent(data=json.dumps(data)) if data else event)
    return unindexed


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // pieces))
    return [text[start : start + size] for start in range(0, len(text), size)]


def parse_openai(body: dict[str, Any], mode: Mode) -> LlmResponse:
    if mode == "plain":
        return openai.parse_response(body)
    return openai.parse_stream(openai_stream(body))


@pytest.mark.parametrize("mode", MODES)
def test_openai_length_keeps_the_truncated_arguments_as_raw_text(mode: Mode) -> None:
    body = openai_body(
        finish_reason="length",
        tool_calls=[
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "write_file", "arguments": TRUNCATED_ARGUMENTS},
            }
        ],
    )

    response = parse_openai(body, mode)

    assert response.stop == LimitReached()
    assert response.truncated
    assert response.provider_stop_reason == "length"
    [call] = response.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "write_file", TRUNCATED_ARGUMENTS)
    with pytest.raises(ValueError, match="Unterminated string"):
        call.parsed_arguments()
    assert (response.usage.input_tokens, response.usage.output_tokens) == (30, 16)


@pytest.mark.parametrize("mode", MODES)
def test_openai_content_filter_is_an_other_stop(mode: Mode) -> None:
    response = parse_openai(openai_body(finish_reason="content_filter", content="Once upon"), mode)

    assert response.stop == OtherStop(reason="content_filter")
    assert response.stop.canonical_stop_reason() == "other"
    assert response.provider_stop_reason == "content_filter"
    assert response.text == "Once upon"
    assert not response.truncated


@pytest.mark.parametrize(
    ("finish_reason", "stop"),
    [
        ("stop", EndTurn()),
        ("tool_calls", ToolUse()),
        ("function_call", ToolUse()),
        ("length", LimitReached()),
        ("content_filter", OtherStop(reason="content_filter")),
        ("eos", OtherStop(reason="eos")),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_openai_finish_reasons_map_to_neutral_stops(
    finish_reason: str, stop: object, mode: Mode
) -> None:
    response = parse_openai(openai_body(finish_reason=finish_reason, content="x"), mode)

    assert response.stop == stop
    assert response.provider_stop_reason == finish_reason


@pytest.mark.parametrize("mode", MODES)
def test_openai_two_parallel_tool_calls_keep_their_order_and_ids(mode: Mode) -> None:
    calls = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": f"f{n}", "arguments": f'{{"n":{n}}}'},
        }
        for n in range(2)
    ]
    response = parse_openai(openai_body(finish_reason="tool_calls", tool_calls=calls), mode)

    assert [(c.id, c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        ("call_0", "f0", {"n": 0}),
        ("call_1", "f1", {"n": 1}),
    ]
    assert response.stop == ToolUse()


def test_streamed_tool_calls_without_indexes_stay_apart() -> None:
    calls = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": f"f{n}", "arguments": f'{{"n":{n}}}'},
        }
        for n in range(3)
    ]
    body = openai_body(finish_reason="tool_calls", tool_calls=calls)
    events = without_indexes(openai_stream(body))
    fragments = [
        fragment
        for event in events
        if event.data != "[DONE]"
        for choice in json.loads(event.data or "{}")["choices"]
        for fragment in choice["delta"].get("tool_calls", [])
    ]
    assert fragments
    assert all("index" not in fragment for fragment in fragments)

    response = openai.parse_stream(events)

    assert [(c.id, c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        (f"call_{n}", f"f{n}", {"n": n}) for n in range(3)
    ]
    call = {"id": "call_a", "function": {"name": "f", "arguments": "{}"}}
    whole = SseEvent(  # two whole calls in one chunk, without indexes
        data=json.dumps(
            {
                "id": "chatcmpl-1",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [call, {**call, "id": "call_b"}]},
                        "finish_reason": "tool_calls",
                    }
                ],
            }
        )
    )
    assert [c.id for c in openai.parse_stream([whole]).tool_calls] == ["call_a", "call_b"]


def test_openai_refusal_is_kept_in_metadata() -> None:
    body = openai_body(finish_reason="stop")
    body["choices"][0]["message"]["refusal"] = "I can't help with that."

    response = openai.parse_response(body)

    assert response.text == ""
    assert response.metadata == {"refusal": "I can't help with that."}


def test_openai_in_band_stream_error_raises_with_the_provider_type() -> None:
    events = [
        SseEvent(comments=(" OPENROUTER PROCESSING",)),
        SseEvent(data=json.dumps({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})),
        SseEvent(
            data=json.dumps(
                {
                    "error": {"type": "server_error", "code": 502, "message": "Upstream failed"},
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
                }
            )
        ),
        SseEvent(data="[DONE]"),
    ]

    with pytest.raises(AgentDecisionCallException) as raised:
        openai.parse_stream(events)

    assert raised.value.error_type == "server_error"
    assert raised.value.provider == "openai"
    assert raised.value.status is None
    assert "Upstream failed" in str(raised.value)


def test_a_legacy_function_call_reply_is_refused_not_dropped() -> None:
    call = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    body = openai_body(finish_reason="function_call", content=None)
    body["choices"][0]["message"]["function_call"] = call
    delta = {"id": "c", "choices": [{"index": 0, "delta": {"function_call": call}}]}

    with pytest.raises(AgentDecisionCallException, match="deprecated function-calling API"):
        openai.parse_response(body)
    with pytest.raises(AgentDecisionCallException, match="deprecated function-calling API"):
        openai.parse_stream([SseEvent(data=json.dumps(delta))])


def test_openai_error_body_with_status_200_raises() -> None:
    with pytest.raises(AgentDecisionCallException) as raised:
        openai.parse_response({"error": {"code": 429, "message": "Rate limit exceeded"}})

    assert raised.value.error_type == "429"


def test_openai_stream_cut_before_a_finish_reason_is_an_invalid_response() -> None:
    events = openai_stream(openai_body(finish_reason="stop", content="Hello there"))[:3]

    with pytest.raises(AgentDecisionCallException) as raised:
        openai.parse_stream(events)

    assert raised.value.error_type == "invalid_response"
    assert "choices[0].finish_reason" in str(raised.value)


# --- Anthropic Messages -----------------------------------------------------------------------


def anthropic_body(
    *,
    stop_reason: str,
    content: list[dict[str, Any]],
    stop_sequence: str | None = None,
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": {
            "input_tokens": 40,
            "cache_creation_input_tokens": 5,
            "cache_read_input_tokens": 100,
            "output_tokens": 64,
        },
    }


def anthropic_stream(
    body: dict[str, Any], *, partial_json: dict[int, str] | None = None
) -> list[SseEvent]:
    """The events that stream `body`; `partial_json` overrides a tool block's input text."""

    def event(name: str, data: dict[str, Any]) -> SseEvent:
        return SseEvent(event=name, data=json.dumps({"type": name, **data}))

    usage = body["usage"]
    start_usage = {**usage, "output_tokens": 1}
    events = [
        event(
            "message_start",
            {
                "message": {
                    **body,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                }
            },
        ),
        event("ping", {}),
    ]
    for index, block in enumerate(body["content"]):
        if block["type"] == "text":
            events.append(
                event(
                    "content_block_start",
                    {"index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            deltas = [{"type": "text_delta", "text": part} for part in _split(block["text"], 3)]
        elif block["type"] == "thinking":
            events.append(
                event(
                    "content_block_start",
                    {"index": index, "content_block": {"type": "thinking", "thinking": ""}},
                )
            )
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        else:
            events.append(
                event(
                    "content_block_start",
                    {"index": index, "content_block": {**block, "input": {}}},
                )
            )
            text = (partial_json or {}).get(index, json.dumps(block["input"]))
            deltas = [
                {"type": "input_json_delta", "partial_json": part} for part in _split(text, 4)
            ]
        events.extend(event("content_block_delta", {"index": index, "delta": d}) for d in deltas)
        events.append(event("content_block_stop", {"index": index}))
    events.append(
        event(
            "message_delta",
            {
                "delta": {
                    "stop_reason": body["stop_reason"],
                    "stop_sequence": body["stop_sequence"],
                },
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(event("message_stop", {}))
    return events


def parse_anthropic(
    body: dict[str, Any], mode: Mode, partial_json: dict[int, str] | None = None
) -> LlmResponse:
    if mode == "plain":
        return anthropic.parse_response(body)
    return anthropic.parse_stream(anthropic_stream(body, partial_json=partial_json))


def test_anthropic_max_tokens_mid_tool_use_keeps_the_partial_input_raw_when_streamed() -> None:
    body = anthropic_body(
        stop_reason="max_tokens",
        content=[
            {"type": "text", "text": "Writing the file now."},
            {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}},
        ],
    )

    response = parse_anthropic(body, "stream", partial_json={1: TRUNCATED_ARGUMENTS})

    assert response.stop == LimitReached()
    assert response.truncated
    assert response.provider_stop_reason == "max_tokens"
    assert response.text == "Writing the file now."
    [call] = response.tool_calls
    assert (call.id, call.name, call.arguments) == ("toolu_1", "write_file", TRUNCATED_ARGUMENTS)
    with pytest.raises(ValueError, match="Unterminated string"):
        call.parsed_arguments()


def test_anthropic_max_tokens_mid_tool_use_in_a_plain_reply() -> None:
    # A plain reply can only carry what parsed: the input object as far as it got.
    body = anthropic_body(
        stop_reason="max_tokens",
        content=[
            {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {"path": "a"}}
        ],
    )

    response = parse_anthropic(body, "plain")

    assert response.stop == LimitReached()
    assert response.tool_calls[0].arguments == '{"path":"a"}'


@pytest.mark.parametrize("mode", MODES)
def test_anthropic_stop_sequence_ends_the_turn_and_names_the_sequence(mode: Mode) -> None:
    body = anthropic_body(
        stop_reason="stop_sequence",
        stop_sequence="</answer>",
        content=[{"type": "text", "text": "<answer>42"}],
    )

    response = parse_anthropic(body, mode)

    assert response.stop == EndTurn()
    assert response.provider_stop_reason == "stop_sequence"
    assert response.metadata == {"stop_sequence": "</answer>"}
    assert response.text == "<answer>42"


@pytest.mark.parametrize("reason", ["refusal", "pause_turn"])
@pytest.mark.parametrize("mode", MODES)
def test_anthropic_refusal_and_pause_turn_are_other_stops(reason: str, mode: Mode) -> None:
    body = anthropic_body(stop_reason=reason, content=[{"type": "text", "text": "..."}])

    response = parse_anthropic(body, mode)

    assert response.stop == OtherStop(reason=reason)
    assert response.provider_stop_reason == reason
    assert not response.truncated


@pytest.mark.parametrize(
    ("stop_reason", "stop"),
    [
        ("end_turn", EndTurn()),
        ("tool_use", ToolUse()),
        ("max_tokens", LimitReached()),
        ("stop_sequence", EndTurn()),
        ("refusal", OtherStop(reason="refusal")),
        ("pause_turn", OtherStop(reason="pause_turn")),
        ("model_context_window_exceeded", LimitReached()),
        ("something_new", OtherStop(reason="something_new")),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_anthropic_stop_reasons_map_to_neutral_stops(
    stop_reason: str, stop: object, mode: Mode
) -> None:
    body = anthropic_body(stop_reason=stop_reason, content=[{"type": "text", "text": "x"}])

    response = parse_anthropic(body, mode)

    assert response.stop == stop
    assert response.provider_stop_reason == stop_reason


@pytest.mark.parametrize("mode", MODES)
def test_anthropic_thinking_is_not_text_and_usage_counts_the_cache(mode: Mode) -> None:
    body = anthropic_body(
        stop_reason="tool_use",
        content=[
            {"type": "thinking", "thinking": "Let me think.", "signature": "sig"},
            {"type": "text", "text": "Calling it."},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": [1, 2], "b": "ü"}},
        ],
    )

    response = parse_anthropic(body, mode)

    assert response.text == "Calling it."
    assert response.tool_calls[0].arguments == '{"a":[1,2],"b":"ü"}'
    assert response.usage.input_tokens == 40 + 5 + 100
    assert response.usage.output_tokens == 64
    assert response.usage.total_tokens == 40 + 5 + 100 + 64


def test_anthropic_error_event_raises_with_the_provider_type() -> None:
    body = anthropic_body(stop_reason="end_turn", content=[{"type": "text", "text": "Hello"}])
    events = [
        *anthropic_stream(body)[:4],
        SseEvent(
            event="error",
            data=json.dumps(
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            ),
        ),
    ]

    with pytest.raises(AgentDecisionCallException) as raised:
        anthropic.parse_stream(events)

    assert raised.value.error_type == "overloaded_error"
    assert raised.value.provider == "anthropic"
    assert "Overloaded" in str(raised.value)


def test_anthropic_stream_cut_before_a_stop_reason_is_an_invalid_response() -> None:
    body = anthropic_body(stop_reason="end_turn", content=[{"type": "text", "text": "Hello"}])

    with pytest.raises(AgentDecisionCallException) as raised:
        anthropic.parse_stream(anthropic_stream(body)[:-2])

    assert raised.value.error_type == "invalid_response"
    assert "stop_reason" in str(raised.value)


# --- errors -----------------------------------------------------------------------------------

THINKING_FORCED_TOOL_400: JsonValue = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "Thinking may not be enabled when tool_choice forces tool use.",
    },
    "request_id": "req_011CTest",
}


def test_anthropic_thinking_with_a_forced_tool_is_tool_choice_unsupported() -> None:
    error = anthropic.parse_error(400, THINKING_FORCED_TOOL_400)

    assert isinstance(error, ToolChoiceUnsupportedError)
    assert error.status == 400
    assert error.error_type == "invalid_request_error"
    assert error.provider == "anthropic"
    assert error.code == "tool_choice_unsupported"
    assert not error.retryable
    assert "Thinking may not be enabled" in str(error)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (
            404,
            "tools is not supported in this model. For a list of supported models, refer to "
            "https://platform.openai.com/docs/guides/function-calling#models-supporting-function-calling.",
        ),
        (400, "Unsupported parameter: 'tools' is not supported with this model."),
        (400, "Unsupported value: 'tool_choice' does not support 'required' with this model."),
    ],
)
def test_openai_refusing_tools_for_a_model_is_tool_choice_unsupported(
    status: int, message: str
) -> None:
    body: JsonValue = {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    }

    error = openai.parse_error(status, body)

    assert isinstance(error, ToolChoiceUnsupportedError)
    assert (error.status, error.error_type) == (status, "invalid_request_error")


@pytest.mark.parametrize(
    "message",
    [
        "Unsupported parameter: 'parallel_tool_calls' is not supported with this model.",
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
    ],
)
def test_other_openai_tool_errors_stay_ordinary(message: str) -> None:
    body: JsonValue = {"error": {"message": message, "type": "invalid_request_error"}}

    error = openai.parse_error(400, body)

    assert type(error) is AgentDecisionCallException


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_error_message_never_carries_a_secret(provider: Provider) -> None:
    canary = "sk-ant-api03-" + "C" * 40
    body: dict[str, Any] = {
        "type": "error",
        "error": {
            "type": "authentication_error",
            "message": f"invalid x-api-key {canary}; Bearer abcdefghijklmnop",
        },
    }

    error = adapter_for(provider).parse_error(401, body)

    assert canary not in str(error)
    assert "abcdefghijklmnop" not in str(error)
    assert "[SCRUBBED]" in str(error)
    assert error.error_type == "authentication_error"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("payload", ["<html>502 Bad Gateway</html>", None, [1, 2], {"detail": "x"}])
def test_an_error_body_in_another_format_keeps_the_status(provider: Provider, payload: Any) -> None:
    error = adapter_for(provider).parse_error(502, payload)

    assert type(error) is AgentDecisionCallException
    assert (error.status, error.error_type, error.provider) == (502, None, provider)
    assert "Bad Gateway" not in str(error)


@pytest.mark.parametrize(
    ("provider", "payload", "field"),
    [
        (
            "openai",
            {"choices": [{"message": {"content": ["CANARY"]}, "finish_reason": "stop"}]},
            "choices[0].message.content",
        ),
        ("openai", {"choices": []}, "choices"),
        ("openai", {"object": "CANARY"}, "choices"),
        ("openai", {"choices": [{"message": {"content": "CANARY"}}]}, "choices[0].finish_reason"),
        (
            "openai",
            {
                "choices": [
                    {
                        "message": {"tool_calls": [{"id": "c", "function": {"name": 7}}]},
                        "finish_reason": "tool_calls",
                    }
                ]
            },
            "choices[0].message.tool_calls[0].function.name",
        ),
        (
            "openai",
            {"choices": [{"message": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": -1}},
            "usage.prompt_tokens",
        ),
        ("openai", ["CANARY"], "body"),
        ("anthropic", {"type": "completion", "completion": "CANARY"}, "type"),
        (
            "anthropic",
            {"type": "message", "content": "CANARY", "stop_reason": "end_turn"},
            "content",
        ),
        (
            "anthropic",
            {
                "type": "message",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "CANARY"}],
                "stop_reason": "tool_use",
            },
            "content[0].input",
        ),
        (
            "anthropic",
            {"type": "message", "content": [{"type": "text", "text": "CANARY"}]},
            "stop_reason",
        ),
    ],
)
def test_a_reply_in_another_format_names_the_field_not_the_content(
    provider: Provider, payload: Any, field: str
) -> None:
    with pytest.raises(AgentDecisionCallException) as raised:
        adapter_for(provider).parse_response(payload)

    assert raised.value.error_type == "invalid_response"
    assert raised.value.provider == provider
    assert f"`{field}`" in str(raised.value)
    assert "CANARY" not in str(raised.value)


@pytest.mark.parametrize(
    ("provider", "data"),
    [("openai", "{not json CANARY"), ("openai", '"CANARY"'), ("anthropic", "{not json CANARY")],
)
def test_a_stream_event_that_is_not_json_is_an_invalid_response(
    provider: Provider, data: str
) -> None:
    with pytest.raises(AgentDecisionCallException) as raised:
        adapter_for(provider).parse_stream([SseEvent(data=data)])

    assert raised.value.error_type == "invalid_response"
    assert "CANARY" not in str(raised.value)


def test_an_anthropic_delta_for_a_block_that_never_started_is_an_invalid_response() -> None:
    events = [
        SseEvent(
            event="content_block_delta",
            data=json.dumps(
                {
                    "type": "content_block_delta",
                    "index": 3,
                    "delta": {"type": "text_delta", "text": "x"},
                }
            ),
        )
    ]

    with pytest.raises(AgentDecisionCallException, match=r"content_block_delta\.index"):
        anthropic.parse_stream(events)


# --- capabilities -----------------------------------------------------------------------------

TOOL = ToolDefinition(name="lookup", description="Look something up.")
FORCED: list[ToolChoice] = ["required", NamedToolChoice(name="lookup")]
EFFORT = ReasoningEffort(effort="low")


def tool_request(model: str, choice: ToolChoice, reasoning: Reasoning | None) -> LlmRequest:
    return LlmRequest(
        model=model,
        messages=(UserMessage(content="Go."),),
        tools=(TOOL,),
        tool_choice=choice,
        reasoning=reasoning,
    )


@pytest.mark.parametrize("choice", FORCED, ids=["required", "named"])
def test_anthropic_refuses_a_forced_tool_while_thinking_before_any_call(choice: ToolChoice) -> None:
    request = tool_request("claude-sonnet-4-5", choice, EFFORT)

    assert not supports_forced_tool_choice("anthropic", "claude-sonnet-4-5", EFFORT)
    with pytest.raises(ToolChoiceUnsupportedError) as raised:
        check_request("anthropic", request)

    assert raised.value.status is None
    assert raised.value.provider == "anthropic"
    assert "ReasoningDisabled" in str(raised.value)


@pytest.mark.parametrize("reasoning", [None, ReasoningDisabled()], ids=["unset", "disabled"])
@pytest.mark.parametrize("choice", FORCED, ids=["required", "named"])
def test_anthropic_forces_a_tool_when_thinking_is_off(
    choice: ToolChoice, reasoning: Reasoning | None
) -> None:
    check_request("anthropic", tool_request("claude-sonnet-4-5", choice, reasoning))

    assert supports_forced_tool_choice("anthropic", "claude-sonnet-4-5", reasoning)


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_anthropic_thinking_allows_auto_and_none(choice: ToolChoice) -> None:
    check_request("anthropic", tool_request("claude-opus-4-1", choice, EFFORT))


@pytest.mark.parametrize("model", ["o1-mini", "o1-preview-2024-09-12", "openai/o1-mini"])
@pytest.mark.parametrize("choice", ["auto", "required"])
def test_openai_o1_mini_and_preview_take_no_tools(model: str, choice: ToolChoice) -> None:
    assert not supports_tools("openai", model)
    assert not supports_forced_tool_choice("openai", model, None)

    with pytest.raises(ToolChoiceUnsupportedError, match="takes no tools"):
        check_request("openai", tool_request(model, choice, None))


@pytest.mark.parametrize(
    "model", ["gpt-4o", "gpt-4.1-mini", "o3-mini", "o4-mini", "gpt-5-mini", "o1"]
)
@pytest.mark.parametrize("choice", FORCED, ids=["required", "named"])
def test_openai_models_with_tools_can_be_forced_even_while_reasoning(
    model: str, choice: ToolChoice
) -> None:
    check_request("openai", tool_request(model, choice, EFFORT))

    assert supports_forced_tool_choice("openai", model, EFFORT)


def test_a_forced_choice_without_the_tool_is_refused() -> None:
    no_tools = LlmRequest(model="gpt-4o", tool_choice="required")
    other_tool = tool_request("gpt-4o", NamedToolChoice(name="missing"), None)

    with pytest.raises(IllegalArgumentException, match="no tools"):
        check_request("openai", no_tools)
    with pytest.raises(IllegalArgumentException, match=r"'missing'.*offers only: lookup"):
        check_request("anthropic", other_tool)


@pytest.mark.parametrize(
    ("model", "reasoning", "efforts", "parameter"),
    [
        ("gpt-4o", False, (), "max_tokens"),
        ("o1-mini", True, (), "max_completion_tokens"),
        ("o1", True, ("low", "medium", "high"), "max_completion_tokens"),
        ("o3-mini-2025-01-31", True, ("low", "medium", "high"), "max_completion_tokens"),
        ("o4-mini", True, ("low", "medium", "high"), "max_completion_tokens"),
        ("gpt-5", True, ("minimal", "low", "medium", "high"), "max_completion_tokens"),
        ("gpt-5.1-chat-latest", False, (), "max_completion_tokens"),
    ],
)
def test_openai_reasoning_models_accept_reasoning_effort(
    model: str, reasoning: bool, efforts: tuple[str, ...], parameter: str
) -> None:
    capabilities = capabilities_for("openai", model)

    assert supports_reasoning("openai", model) is reasoning
    assert capabilities.reasoning_efforts == efforts
    assert capabilities.max_tokens_parameter == parameter
    assert capabilities.accepts_reasoning_effort("high") is ("high" in efforts)
    assert capabilities.sampling_with_reasoning is not reasoning


@pytest.mark.parametrize(
    ("model", "thinking"),
    [
        ("claude-3-5-sonnet-20241022", False),
        ("claude-3-haiku-20240307", False),
        ("claude-3-7-sonnet-latest", True),
        ("claude-sonnet-4-5", True),
        ("claude-opus-4-6", True),
        ("claude-haiku-4-5", True),
        ("some-future-model", True),
    ],
)
def test_anthropic_thinking_models(model: str, thinking: bool) -> None:
    capabilities = capabilities_for("anthropic", model)

    assert capabilities.reasoning is thinking
    assert capabilities.forced_tool_choice_with_reasoning is not thinking
    assert not capabilities.supports_response_format


def test_capabilities_are_frozen_and_refuse_an_unknown_provider() -> None:
    capabilities = capabilities_for("openai", "gpt-4o")

    with pytest.raises(dataclasses.FrozenInstanceError):
        capabilities.supports_tools = False  # type: ignore[misc]
    with pytest.raises(IllegalArgumentException, match="openai, anthropic, gemini"):
        capabilities_for("mistral", "x")  # type: ignore[arg-type]


# --- rendering: every tool choice, every reasoning variant, the forced call ------------------

CHOICES: list[tuple[ToolChoice, object, object]] = [
    ("auto", "auto", {"type": "auto"}),
    ("none", "none", {"type": "none"}),
    ("required", "required", {"type": "any"}),
    (
        NamedToolChoice(name="lookup"),
        {"type": "function", "function": {"name": "lookup"}},
        {"type": "tool", "name": "lookup"},
    ),
]


@pytest.mark.parametrize(
    ("choice", "openai_wire", "anthropic_wire"), CHOICES, ids=["auto", "none", "required", "named"]
)
def test_every_tool_choice_renders_for_both_providers(
    choice: ToolChoice, openai_wire: object, anthropic_wire: object
) -> None:
    request = tool_request("gpt-4o", choice, None)

    assert openai.render_request(request)["tool_choice"] == openai_wire
    assert anthropic.render_request(request)["tool_choice"] == anthropic_wire


@pytest.mark.parametrize(
    "choice", [c for c, _, _ in CHOICES], ids=["auto", "none", "required", "named"]
)
def test_no_tools_means_no_tool_choice(choice: ToolChoice) -> None:
    request = LlmRequest(model="gpt-4o", tool_choice=choice)

    for provider in ("openai", "anthropic"):
        rendered = adapter_for(provider).render_request(request)
        assert "tools" not in rendered
        assert "tool_choice" not in rendered


@pytest.mark.parametrize("reasoning", [None, ReasoningDisabled()], ids=["unset", "disabled"])
def test_reasoning_unset_or_disabled_sends_no_thinking(reasoning: Reasoning | None) -> None:
    request = LlmRequest(model="claude-sonnet-4-5", reasoning=reasoning)
    rendered = anthropic.render_request(request)
    assert "thinking" not in rendered
    assert rendered["max_tokens"] == 4096


def test_unset_reasoning_sends_no_reasoning_effort() -> None:
    for model in ("o3-mini", "gpt-5", "gpt-5.1", "gpt-4o-mini"):
        assert "reasoning_effort" not in openai.render_request(LlmRequest(model=model))


@pytest.mark.parametrize(
    ("model", "sent"),
    [
        ("gpt-4o-mini", None),  # does not reason: nothing to turn off
        ("gpt-5-chat-latest", None),
        ("o1-mini", None),  # takes no effort at all
        ("o3-mini", "low"),  # the o-series' least
        ("o4-mini", "low"),
        ("gpt-5", "minimal"),  # GPT-5's least
        ("gpt-5-mini", "minimal"),
        ("gpt-5.1", "none"),  # from GPT-5.1 on, reasoning can be turned off
        ("gpt-5.2-codex", "none"),
    ],
)
def test_disabled_reasoning_is_said_to_a_model_that_reasons_unless_told(
    model: str, sent: str | None
) -> None:
    """A forced call disables reasoning: to a model that reasons by default, saying nothing
    would leave it reasoning at its default effort."""
    request = LlmRequest(model=model, reasoning=ReasoningDisabled())
    body = openai.render_request(request)
    assert body.get("reasoning_effort") == sent
    # and it reads back as disabled, what a forced call sends
    assert openai.parse_request(body).reasoning == (None if sent is None else ReasoningDisabled())


@pytest.mark.parametrize(
    ("effort", "budget"), [("minimal", 1024), ("low", 4096), ("medium", 8192), ("high", 16384)]
)
def test_each_effort_renders_for_both_providers(
    effort: Literal["minimal", "low", "medium", "high"], budget: int
) -> None:
    request = LlmRequest(model="o3-mini", reasoning=ReasoningEffort(effort=effort))

    assert openai.render_request(request)["reasoning_effort"] == effort
    rendered = anthropic.render_request(request)
    assert rendered["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert rendered["max_tokens"] == 4096 + budget


def test_an_explicit_budget_and_max_tokens_are_sent_as_given() -> None:
    request = LlmRequest(
        model="claude-sonnet-4-5",
        max_tokens=8000,
        reasoning=ReasoningEffort(effort="high", budget_tokens=3000),
    )

    rendered = anthropic.render_request(request)

    assert rendered["thinking"] == {"type": "enabled", "budget_tokens": 3000}
    assert rendered["max_tokens"] == 8000
    assert openai.render_request(request)["reasoning_effort"] == "high"


FINISH = ToolDefinition(
    name="__finish__",
    description="Finish the task with its final answer.",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    },
)


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gpt-5-mini", "gpt-4o"])
def test_the_forced_completion_call_renders_without_reasoning(model: str) -> None:
    request = LlmRequest(
        model=model,
        messages=(UserMessage(content="[completion]", metadata={"forcedCompletion": True}),),
        tools=(FINISH,),
        tool_choice=NamedToolChoice(name="__finish__"),
        reasoning=ReasoningDisabled(),
    )
    provider: Provider = "anthropic" if model.startswith("claude") else "openai"
    check_request(provider, request)

    if provider == "anthropic":
        assert anthropic.render_request(request) == {
            "model": model,
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "[completion]"}]}],
            "tools": [
                {
                    "name": "__finish__",
                    "description": FINISH.description,
                    "input_schema": FINISH.parameters,
                }
            ],
            "tool_choice": {"type": "tool", "name": "__finish__"},
        }
    else:
        # GPT-5 reasons unless told not to: the least it takes is said; gpt-4o has nothing to say
        reasoning = {"reasoning_effort": "minimal"} if model.startswith("gpt-5") else {}
        assert openai.render_request(request) == {
            "model": model,
            "messages": [{"role": "user", "content": "[completion]"}],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "__finish__",
                        "description": FINISH.description,
                        "parameters": FINISH.parameters,
                    },
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": "__finish__"}},
            **reasoning,
        }


# --- edges ------------------------------------------------------------------------------------


def test_openrouter_cost_is_credits_and_a_missing_usage_is_zero() -> None:
    body = openai_body(finish_reason="stop", content="ok")
    body["usage"] = {"prompt_tokens": 3, "completion_tokens": 2, "cost": 0.0004}
    without_usage = {**body, "usage": None}

    response = openai.parse_response(body)

    assert response.credits == 0.0004
    assert response.usage.total_tokens == 5
    assert openai.parse_response(without_usage).usage.total_tokens == 0
    assert openai.parse_response(without_usage).credits is None


def test_an_openai_streamed_refusal_is_kept_in_metadata() -> None:
    events = [
        SseEvent(data=json.dumps({"choices": [{"index": 0, "delta": {"refusal": "I can't"}}]})),
        SseEvent(data=json.dumps({"choices": [{"index": 0, "delta": {"refusal": " help."}}]})),
        SseEvent(
            data=json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        ),
    ]

    response = openai.parse_stream(events)

    assert response.metadata == {"refusal": "I can't help."}
    assert response.text == ""


@pytest.mark.parametrize(
    ("fragment", "field"),
    [
        ({"index": 0, "function": {"name": "f", "arguments": "{}"}}, "id"),
        ({"index": 0, "id": "call_1", "function": {"arguments": "{}"}}, "function.name"),
        ({"index": "0", "id": "call_1", "function": {"name": "f"}}, "index"),
    ],
)
def test_an_incomplete_streamed_openai_tool_call_is_an_invalid_response(
    fragment: dict[str, Any], field: str
) -> None:
    events = [
        SseEvent(data=json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]})),
        SseEvent(
            data=json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        ),
    ]

    with pytest.raises(AgentDecisionCallException) as raised:
        openai.parse_stream(events)

    assert raised.value.error_type == "invalid_response"
    assert f".{field}`" in str(raised.value)


def test_a_non_function_openai_tool_call_is_refused() -> None:
    call = {"id": "c", "type": "custom", "custom": {"name": "grep", "input": "x"}}

    with pytest.raises(AgentDecisionCallException, match=r"tool_calls\[0\]\.type"):
        openai.parse_response(openai_body(finish_reason="tool_calls", tool_calls=[call]))


def test_an_anthropic_error_body_with_status_200_raises() -> None:
    with pytest.raises(AgentDecisionCallException) as raised:
        anthropic.parse_response(THINKING_FORCED_TOOL_400)

    assert raised.value.error_type == "invalid_request_error"


def test_an_anthropic_tool_use_without_input_deltas_keeps_its_start_input() -> None:
    body = anthropic_body(
        stop_reason="tool_use",
        content=[{"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}],
    )

    response = anthropic.parse_stream(anthropic_stream(body, partial_json={0: ""}))

    assert response.tool_calls[0].arguments == "{}"


def test_a_long_provider_message_is_cut_and_an_empty_one_left_out() -> None:
    long_body: JsonValue = {"error": {"type": "invalid_request_error", "message": "x" * 5_000}}
    empty_body: JsonValue = {"error": {"type": "invalid_request_error", "message": "  "}}

    long_error = openai.parse_error(400, long_body)
    empty_error = anthropic.parse_error(400, empty_body)

    assert len(str(long_error)) < 400
    assert str(long_error).endswith("…")
    assert str(empty_error) == "Anthropic answered HTTP 400 invalid_request_error"
