"""The OpenAI Chat Completions adapter (`POST /v1/chat/completions`), also for compatible APIs.

Rendering is exact and deterministic: keys always come in the same order, and a parameter the
request leaves unset is left out, so cassettes hash what the harness decided. The system
fragments become one leading `system` message; message `metadata` is never sent. A tool result's
`is_error` has no Chat Completions field: its `content` alone tells the model what happened.
`ReasoningEffort.budget_tokens` has no Chat Completions equivalent and is not sent.

Parsing reads only `choices[0]`. Tool-call arguments stay the provider's raw text, valid JSON or
not (a reply cut off by `length` can end mid-JSON). Reasoning text (`reasoning`,
`reasoning_content` of compatible providers) is not part of `text`. OpenRouter's `usage.cost` is
reported as `credits`; a `refusal` is kept in `metadata["refusal"]`.

Reply rendering (`render_response`, `render_stream`, `render_error`) is the reverse, for scripted
replies that must go through the same parser as recorded ones: a neutral `LlmResponse` becomes a
`chat.completion` object or the `chat.completion.chunk` stream OpenAI sends with
`stream_options.include_usage`, shaped like the recorded replies in the corpus. Rendering is
deterministic (`created` is `RENDERED_CREATED`, no clock, no randomness), tool-call arguments go
out as their exact raw text even when cut off mid-JSON, and `metadata["refusal"]` becomes the
message's `refusal`. Not rendered: `credits` (OpenAI reports no cost) and the neutral
`total_tokens`, since OpenAI's total is always prompt plus completion tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from pydantic import JsonValue

from harness.errors import AgentDecisionCallException, ToolChoiceUnsupported
from harness.llm.adapters import (
    ServerSentEventLike,
    WireReader,
    check_error_status,
    compact_json,
    copy_json,
    decode_error_body,
    event_data,
    provider_message,
    sse_block,
    stop_word,
    stream_pieces,
)
from harness.llm.capabilities import capabilities_for
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmResponse,
    LlmToolCall,
    NamedToolChoice,
    ReasoningEffort,
    ToolChoice,
    ToolDefinition,
    Usage,
    UserMessage,
)
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, OtherStop, ToolUse

PROVIDER: Final = "openai"
CHAT_COMPLETIONS_PATH: Final = "/v1/chat/completions"
STREAM_DONE: Final = "[DONE]"

STOP_KINDS: Final[Mapping[str, AnyStopKind]] = {
    "stop": EndTurn(),
    "tool_calls": ToolUse(),
    "function_call": ToolUse(),
    "length": LimitReached(),
    "content_filter": OtherStop(reason="content_filter"),
}
"""`finish_reason` to the neutral stop kind; any other word becomes `Other(reason=word)`."""

RENDERED_CREATED: Final = 0
"""`created` of a rendered reply: a scripted reply has no creation time, and a clock would make
the same script render different bytes."""

_READER: Final = WireReader(PROVIDER, "OpenAI")

# "tools is not supported in this model", "Unsupported parameter: 'tools' is not supported
# with this model.", "Unsupported value: 'tool_choice' does not support 'required' ..."
_TOOL_CHOICE_REFUSALS: Final = (
    re.compile(r"\b(tools?|tool_choice|function calling)\b[^.]*\b(is|are) not supported", re.I),
    re.compile(r"unsupported (value|parameter): '(tools|tool_choice)'", re.I),
)


def stop_kind(finish_reason: str) -> AnyStopKind:
    """The neutral stop kind of an OpenAI `finish_reason`."""
    return STOP_KINDS.get(finish_reason) or OtherStop(reason=finish_reason)


def request_path(request: LlmRequest) -> str:
    """The path every Chat Completions request goes to."""
    return CHAT_COMPLETIONS_PATH


def request_headers() -> dict[str, str]:
    """Headers besides content type and credentials: none for OpenAI."""
    return {}


def render_request(request: LlmRequest) -> dict[str, JsonValue]:
    """The exact Chat Completions body for `request`.

    Tools and `tool_choice` are left out together when there are no tools. Reasoning models
    (`capabilities_for`) get `max_completion_tokens` instead of `max_tokens`. Unset reasoning
    and `ReasoningDisabled` send no `reasoning_effort`. Streaming asks for the final usage chunk.
    """
    body: dict[str, JsonValue] = {"model": request.model, "messages": _render_messages(request)}
    if request.tools:
        body["tools"] = [_render_tool(tool) for tool in request.tools]
        body["tool_choice"] = _render_tool_choice(request.tool_choice)
    if request.max_tokens is not None:
        parameter = capabilities_for(PROVIDER, request.model).max_tokens_parameter
        body[parameter] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)
    if isinstance(request.reasoning, ReasoningEffort):
        body["reasoning_effort"] = request.reasoning.effort
    if request.response_format is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": request.response_format.name,
                "schema": copy_json(request.response_format.schema_),
                "strict": request.response_format.strict,
            },
        }
    if request.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _render_messages(request: LlmRequest) -> list[JsonValue]:
    messages: list[JsonValue] = []
    system = request.system_text()
    if system:
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": message.content})
        elif isinstance(message, AssistantMessage):
            rendered: dict[str, JsonValue] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                rendered["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in message.tool_calls
                ]
            messages.append(rendered)
        else:
            messages.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
    return messages


def _render_tool(tool: ToolDefinition) -> JsonValue:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": copy_json(tool.parameters),
        },
    }


def _render_tool_choice(choice: ToolChoice) -> JsonValue:
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def parse_response(payload: JsonValue) -> LlmResponse:
    """A plain JSON Chat Completions reply as a neutral response.

    Raises `AgentDecisionCallException` with the provider's error type when the body is an
    error object (OpenRouter answers some failures with HTTP 200), and with error type
    `invalid_response`, naming the field, when the body is not a Chat Completions reply.
    """
    body = _READER.object(payload, "body")
    if body.get("error") is not None and "choices" not in body:
        raise _in_band_error(body["error"])
    choices = _READER.array(body.get("choices"), "choices")
    if not choices:
        raise _READER.incomplete("choices", "the reply has no choices")
    choice = _READER.object(choices[0], "choices[0]")
    message = _READER.object(choice.get("message"), "choices[0].message")
    text = _READER.optional_string(message.get("content"), "choices[0].message.content")
    refusal = _READER.optional_string(message.get("refusal"), "choices[0].message.refusal")
    calls = _READER.optional_array(message.get("tool_calls"), "choices[0].message.tool_calls")
    tool_calls = tuple(
        _parse_tool_call(call, f"choices[0].message.tool_calls[{index}]")
        for index, call in enumerate(calls)
    )
    finish_reason = _READER.optional_string(choice.get("finish_reason"), "choices[0].finish_reason")
    if finish_reason is None:
        raise _READER.incomplete("choices[0].finish_reason", "the reply has no finish_reason")
    usage, credits = _parse_usage(body.get("usage"))
    return LlmResponse(
        text=text or "",
        tool_calls=tool_calls,
        stop=_stop(finish_reason, refusal),
        provider_stop_reason=finish_reason,
        usage=usage,
        credits=credits,
        model=_READER.optional_string(body.get("model"), "model"),
        metadata={"refusal": refusal} if refusal else {},
        raw=payload,
    )


def _parse_tool_call(value: JsonValue, path: str) -> LlmToolCall:
    call = _READER.object(value, path)
    kind = _READER.optional_string(call.get("type"), f"{path}.type")
    if kind not in (None, "function"):
        raise _READER.incomplete(f"{path}.type", "only function tool calls are supported")
    function = _READER.object(call.get("function"), f"{path}.function")
    return LlmToolCall(
        id=_READER.string(call.get("id"), f"{path}.id"),
        name=_READER.string(function.get("name"), f"{path}.function.name"),
        arguments=_READER.optional_string(function.get("arguments"), f"{path}.function.arguments")
        or "",
    )


def _parse_usage(value: JsonValue) -> tuple[Usage, float | None]:
    usage = _READER.optional_object(value, "usage")
    if usage is None:
        return Usage(), None
    input_tokens = _READER.count(usage.get("prompt_tokens"), "usage.prompt_tokens")
    output_tokens = _READER.count(usage.get("completion_tokens"), "usage.completion_tokens")
    total = usage.get("total_tokens")
    total_tokens = (
        input_tokens + output_tokens
        if total is None
        else _READER.count(total, "usage.total_tokens")
    )
    cost = usage.get("cost")
    credits = (
        float(cost)
        if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0
        else None
    )
    return Usage(
        input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=total_tokens
    ), credits


@dataclass
class _PartialToolCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamState:
    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    calls: dict[int, _PartialToolCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    credits: float | None = None
    model: str | None = None

    def add_chunk(self, chunk: dict[str, JsonValue]) -> None:
        if chunk.get("error") is not None:
            raise _in_band_error(chunk["error"])
        if self.model is None:
            self.model = _READER.optional_string(chunk.get("model"), "data.model")
        for position, value in enumerate(_READER.optional_array(chunk.get("choices"), "choices")):
            choice = _READER.object(value, f"choices[{position}]")
            if choice.get("index", 0) == 0:
                self.add_choice(choice)
        if chunk.get("usage") is not None:
            self.usage, self.credits = _parse_usage(chunk["usage"])

    def add_choice(self, choice: dict[str, JsonValue]) -> None:
        delta = _READER.optional_object(choice.get("delta"), "choices[0].delta") or {}
        content = _READER.optional_string(delta.get("content"), "choices[0].delta.content")
        if content:
            self.text.append(content)
        refusal = _READER.optional_string(delta.get("refusal"), "choices[0].delta.refusal")
        if refusal:
            self.refusal.append(refusal)
        fragments = _READER.optional_array(delta.get("tool_calls"), "choices[0].delta.tool_calls")
        for position, fragment in enumerate(fragments):
            self.add_tool_call_fragment(fragment, position)
        finish_reason = _READER.optional_string(
            choice.get("finish_reason"), "choices[0].finish_reason"
        )
        if finish_reason is not None:
            self.finish_reason = finish_reason

    def add_tool_call_fragment(self, value: JsonValue, position: int) -> None:
        path = f"choices[0].delta.tool_calls[{position}]"
        fragment = _READER.object(value, path)
        index = fragment.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int):
            raise _READER.invalid(f"{path}.index", "an integer", index)
        call = self.calls.setdefault(index, _PartialToolCall())
        call_id = _READER.optional_string(fragment.get("id"), f"{path}.id")
        if call_id and not call.id:
            call.id = call_id
        function = _READER.optional_object(fragment.get("function"), f"{path}.function") or {}
        name = _READER.optional_string(function.get("name"), f"{path}.function.name")
        if name and not call.name:
            call.name = name
        arguments = _READER.optional_string(function.get("arguments"), f"{path}.function.arguments")
        if arguments:
            call.arguments.append(arguments)

    def response(self, raw: list[JsonValue]) -> LlmResponse:
        if self.finish_reason is None:
            raise _READER.incomplete(
                "choices[0].finish_reason", "the stream ended before a finish_reason"
            )
        tool_calls: list[LlmToolCall] = []
        for index in sorted(self.calls):
            call = self.calls[index]
            path = f"choices[0].delta.tool_calls[index={index}]"
            if not call.id:
                raise _READER.incomplete(f"{path}.id", "a streamed tool call has no id")
            if not call.name:
                raise _READER.incomplete(
                    f"{path}.function.name", "a streamed tool call has no name"
                )
            tool_calls.append(
                LlmToolCall(id=call.id, name=call.name, arguments="".join(call.arguments))
            )
        refusal = "".join(self.refusal)
        return LlmResponse(
            text="".join(self.text),
            tool_calls=tuple(tool_calls),
            stop=_stop(self.finish_reason, refusal),
            provider_stop_reason=self.finish_reason,
            usage=self.usage,
            credits=self.credits,
            model=self.model,
            metadata={"refusal": refusal} if refusal else {},
            raw=raw,
        )


def parse_stream(events: Iterable[ServerSentEventLike]) -> LlmResponse:
    """A streamed Chat Completions reply (`data:` chunks up to `data: [DONE]`) as one response.

    Text deltas are joined; tool-call fragments are joined per `index` (id and name from the
    first fragment that carries them, arguments concatenated as raw text); the last non-null
    `finish_reason` and the last `usage` (the `choices: []` chunk) win. Events without data
    (SSE comments such as `: OPENROUTER PROCESSING`) are skipped. An `error` object inside a
    chunk raises `AgentDecisionCallException` with the provider's error type; a stream that ends
    without a `finish_reason` raises it with error type `invalid_response`. `raw` is the list of
    decoded chunks.
    """
    state = _StreamState()
    raw: list[JsonValue] = []
    for event in events:
        data = event_data(event)
        if data is None:
            continue
        if data.strip() == STREAM_DONE:
            break
        chunk = _READER.decode(data, "data")
        raw.append(chunk)
        state.add_chunk(_READER.object(chunk, "data"))
    return state.response(raw)


def parse_error(status: int, payload: JsonValue | str) -> AgentDecisionCallException:
    """The exception for a non-2xx answer: status, the provider's error type, a safe message.

    The error type is `error.type`, or `error.code` when there is no type. The message carries
    the provider's own short message only after scrubbing secret shapes, and never any other
    part of the body (Groq's `failed_generation` echoes the model's output). A refusal to take
    tools or a tool choice for this model is a `ToolChoiceUnsupported`.
    """
    body = decode_error_body(payload)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return AgentDecisionCallException(
            f"OpenAI answered HTTP {status} with a body that is not an OpenAI error object",
            status=status,
            provider=PROVIDER,
        )
    error_type, message = _describe_error(error)
    text = f"OpenAI answered HTTP {status} {error_type or 'without an error type'}{message}"
    exception_type = (
        ToolChoiceUnsupported if _refuses_tool_choice(error) else AgentDecisionCallException
    )
    return exception_type(text, status=status, error_type=error_type, provider=PROVIDER)


def _describe_error(error: dict[str, JsonValue]) -> tuple[str | None, str]:
    """The error type, and the code and short message as a suffix for an exception message."""
    kind = error.get("type")
    code = error.get("code")
    code_text = str(code) if isinstance(code, str | int) and not isinstance(code, bool) else None
    error_type = kind if isinstance(kind, str) and kind else code_text
    suffix = f" (code {code_text})" if code_text and code_text != error_type else ""
    message = provider_message(error.get("message"))
    return error_type, suffix + (f": {message}" if message else "")


def _in_band_error(value: JsonValue) -> AgentDecisionCallException:
    error = value if isinstance(value, dict) else {}
    error_type, message = _describe_error(error)
    return AgentDecisionCallException(
        f"OpenAI-compatible reply carried an error {error_type or 'without a type'}{message}",
        error_type=error_type,
        provider=PROVIDER,
    )


def _refuses_tool_choice(error: dict[str, JsonValue]) -> bool:
    message = error.get("message")
    return isinstance(message, str) and any(
        pattern.search(message) for pattern in _TOOL_CHOICE_REFUSALS
    )


def finish_reason_for(response: LlmResponse) -> str:
    """The `finish_reason` a rendered reply carries (see `harness.llm.adapters.stop_word`).

    `EndTurn` is "stop", `ToolUse` "tool_calls", `LimitReached` "length"; `Other(reason)` keeps
    the reason when it is one of `STOP_KINDS` (such as "content_filter") and is "stop" otherwise.
    """
    return stop_word(
        response, STOP_KINDS, end_turn="stop", tool_use="tool_calls", limit_reached="length"
    )


def render_response(response: LlmResponse, *, model: str, response_id: str) -> dict[str, JsonValue]:
    """`response` as the `chat.completion` object OpenAI answers a non-streamed request with.

    `content` is null when the reply is only tool calls; each call's `function.arguments` is
    the call's raw text, exactly, valid JSON or not. Raises `IllegalArgumentException` for a
    `Cancelled` or `Error` stop, which no model reply carries.
    """
    finish_reason = finish_reason_for(response)
    refused = bool(_refusal(response))
    message: dict[str, JsonValue] = {
        "role": "assistant",
        # OpenAI puts a refusal's words in `refusal`, never in `content`
        "content": None if refused else response.text or (None if response.tool_calls else ""),
    }
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in response.tool_calls
        ]
    message["refusal"] = _refusal(response) or None
    message["annotations"] = []
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": RENDERED_CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": _render_usage(response.usage),
        "service_tier": "default",
        "system_fingerprint": None,
    }


def render_stream(response: LlmResponse, *, model: str, response_id: str) -> list[str]:
    """`response` as the server-sent events OpenAI streams it with, one block per string.

    As with `stream_options.include_usage`: an opening chunk with `delta.role` (which also
    carries the first tool call when the reply has no text), the text in a few `content`
    deltas, each tool call as a delta with its id, type, name and empty arguments followed by
    its raw argument text in a few fragments, a chunk with only the `finish_reason`, a chunk
    with `choices: []` and the usage, and `data: [DONE]`. Each string ends with the blank line
    that closes its block. Raises like `render_response`.
    """
    finish_reason = finish_reason_for(response)
    header: dict[str, JsonValue] = {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": RENDERED_CREATED,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": None,
    }

    def chunk(delta: dict[str, JsonValue], finish_reason: str | None = None) -> str:
        choice: dict[str, JsonValue] = {
            "index": 0,
            "delta": delta,
            "logprobs": None,
            "finish_reason": finish_reason,
        }
        return sse_block(compact_json({**header, "choices": [choice], "usage": None}))

    deltas: list[dict[str, JsonValue]] = [
        {"content": piece} for piece in ([] if _refusal(response) else stream_pieces(response.text))
    ]
    deltas.extend({"refusal": piece} for piece in stream_pieces(_refusal(response)))
    for index, call in enumerate(response.tool_calls):
        opening: JsonValue = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        deltas.append({"tool_calls": [opening]})
        deltas.extend(
            {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            for piece in stream_pieces(call.arguments)
        )
    if response.tool_calls and not response.text and not _refusal(response):
        # A reply that starts with a tool call opens with it, as OpenAI streams one.
        first: dict[str, JsonValue] = {"role": "assistant", "content": None, **deltas.pop(0)}
    else:
        first = {"role": "assistant", "content": ""}
    first["refusal"] = None
    usage = {**header, "choices": [], "usage": _render_usage(response.usage)}
    return [
        chunk(first),
        *(chunk(delta) for delta in deltas),
        chunk({}, finish_reason),
        sse_block(compact_json(usage)),
        sse_block(STREAM_DONE),
    ]


def render_error(status: int, error_type: str, message: str) -> dict[str, JsonValue]:
    """The error body OpenAI answers a failed request with: `{"error": {message, type, ...}}`.

    `param` and `code` are null. Raises `IllegalArgumentException` for a status outside
    400-599 or an empty error type, which `parse_error` could not read back.
    """
    check_error_status(status, error_type)
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


def _stop(finish_reason: str, refusal: str | None) -> AnyStopKind:
    """A message carrying a `refusal` ended in a refusal, whatever its finish_reason says."""
    return OtherStop(reason="refusal") if refusal else stop_kind(finish_reason)


def _refusal(response: LlmResponse) -> str:
    refusal = response.metadata.get("refusal")
    return refusal if isinstance(refusal, str) else ""


def _render_usage(usage: Usage) -> dict[str, JsonValue]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
