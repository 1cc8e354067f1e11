"""The Anthropic Messages adapter (`POST /v1/messages`, `anthropic-version: 2023-06-01`).

Rendering is exact and deterministic: keys always come in the same order, and a parameter the
request leaves unset is left out, except `max_tokens`, which Messages requires (default
`DEFAULT_MAX_TOKENS`, plus the thinking budget when thinking is on, so the budget never eats the
answer). The system fragments become the top-level `system` string; message `metadata` is never
sent. All consecutive user-role content (user text and tool results) goes into one `user`
message, in order, which is how Messages expects tool results (first in the message, text
after). `response_format` has no Messages equivalent and is not sent: ask for JSON in the prompt
or force an output tool instead.

`ReasoningEffort` becomes `thinking: {"type": "enabled", "budget_tokens": ...}` with the
request's budget or `THINKING_BUDGETS[effort]` (lowered below an explicit `max_tokens`, which
Messages requires); unset reasoning and `ReasoningDisabled` send no
`thinking`. Messages refuses a forced tool choice while thinking is on; `check_request` in
`harness.llm.capabilities` catches that before any call.

Parsing joins the text blocks in order and turns `tool_use` blocks into tool calls whose
arguments are compact JSON text. `thinking` and `redacted_thinking` blocks (a streamed one with
its deltas and signature joined) are kept unchanged as `reasoning_blocks`, which the loop keeps on
the assistant turn and rendering sends back first while thinking is on, as Messages requires for
a tool_use continuation; the harness never acts on them (their words are the reply's
`thinking`). With thinking off, as on every forced call, no turn carries them: Messages refuses
an assistant message in the final position that holds thinking while thinking is disabled, and
ignores them in earlier turns. Server-side tool blocks
(`server_tool_use`, `*_tool_result`) that the provider already executed are not part of the
reply the harness acts on.

Request parsing (`parse_request`) is the inverse of rendering, for bodies the harness did not
build, such as those of an agent written on the `anthropic` SDK; fields the neutral request has
no place for are left out, and a malformed body is a `RequestFormatError` naming the field.

Reply rendering (`render_response`, `render_stream`, `render_error`) is the reverse, for scripted
replies that must go through the same parser as recorded ones: a neutral `LlmResponse` becomes a
`message` object or the `message_start` ... `message_stop` event stream, shaped like the recorded
replies in the corpus, deterministically (no clock, no randomness). A tool call's arguments must
be a JSON object, since `tool_use.input` is one. Arguments cut off mid-JSON (a reply stopped by
`max_tokens`) exist only in the stream, as `input_json_delta` fragments: a plain `message` has no
way to carry partial input, so `render_response` refuses them instead of inventing an input the
model never produced. `metadata["stop_sequence"]` becomes `stop_sequence` when the stop word is
`stop_sequence`. The neutral `total_tokens` is not rendered: Messages reports no total.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from pydantic import JsonValue

from harness.errors import (
    AgentDecisionCallException,
    IllegalArgumentException,
    ToolChoiceUnsupportedError,
)
from harness.llm._wire import (
    RequestReader,
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
    thinking_signature,
    wire_system,
)
from harness.llm.capabilities import ALL_EFFORTS, Capabilities, CapabilityRule, first_matching
from harness.llm.models import (
    AssistantMessage,
    Effort,
    LlmRequest,
    LlmResponse,
    LlmToolCall,
    Message,
    NamedToolChoice,
    Reasoning,
    ReasoningDisabled,
    ReasoningEffort,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
    tool_forced_by,
)
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, OtherStop, ToolUse
from harness.providers import ANTHROPIC, Provider, provider_of

PROVIDER: Final = provider_of(ANTHROPIC)
"""The provider this adapter is the native wire of (its errors are reported as this one's)."""
MESSAGES_PATH: Final = ANTHROPIC.request_path
DEFAULT_MAX_TOKENS: Final = 4096
"""`max_tokens` when the request leaves it unset (Messages requires it)."""

THINKING_BUDGETS: Final[Mapping[Effort, int]] = {
    "minimal": 1024,
    "low": 4096,
    "medium": 8192,
    "high": 16384,
}
"""`budget_tokens` per effort when `ReasoningEffort.budget_tokens` is unset.

`minimal` is the smallest budget Messages accepts (1024). Even `high` plus the default answer
room stays below the size at which the official SDKs refuse a non-streamed call.
"""

REASONING_BLOCKS: Final = ("thinking", "redacted_thinking")
"""Content blocks kept as `reasoning_blocks` and sent back unchanged while thinking is on."""

STOP_KINDS: Final[Mapping[str, AnyStopKind]] = {
    "end_turn": EndTurn(),
    "tool_use": ToolUse(),
    "max_tokens": LimitReached(),
    "stop_sequence": EndTurn(),
    "refusal": OtherStop(reason="refusal"),
    "pause_turn": OtherStop(reason="pause_turn"),
    "model_context_window_exceeded": LimitReached(),
}
"""`stop_reason` to the neutral stop kind; any other word becomes `Other(reason=word)`."""

_READER: Final = WireReader(PROVIDER, "Anthropic")
_USAGE_FIELDS: Final = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


def stop_kind(stop_reason: str) -> AnyStopKind:
    """The neutral stop kind of an Anthropic `stop_reason`."""
    return STOP_KINDS.get(stop_reason) or OtherStop(reason=stop_reason)


MIN_THINKING_BUDGET: Final = 1_024
"""The smallest `budget_tokens` Messages accepts."""


def thinking_budget(reasoning: ReasoningEffort, max_tokens: int | None = None) -> int:
    """The `budget_tokens` sent for `reasoning`: its own budget, or the effort's default.

    Messages counts thinking toward `max_tokens` and refuses a budget that is not below it, so
    with an explicit `max_tokens` the effort's default is lowered to `max_tokens - 1` (never
    below 1024); an explicit budget is sent as given.
    """
    if reasoning.budget_tokens:
        return reasoning.budget_tokens
    default = THINKING_BUDGETS[reasoning.effort]
    if max_tokens is None:
        return default
    return max(MIN_THINKING_BUDGET, min(default, max_tokens - 1))


def request_path(request: LlmRequest) -> str:
    """The path every Messages request goes to (`ProviderSpec.request_path`)."""
    return MESSAGES_PATH


def request_headers() -> dict[str, str]:
    """Headers besides content type and credentials: the API version Messages requires."""
    return dict(ANTHROPIC.version_headers)


def _claude(note: str, *, thinking: bool) -> Capabilities:
    return Capabilities(
        provider=PROVIDER,
        model="",
        note=note,
        supports_response_format=False,
        reasoning=thinking,
        reasoning_efforts=ALL_EFFORTS if thinking else (),
        forced_tool_choice_with_reasoning=not thinking,
        sampling_with_reasoning=not thinking,
    )


_THINKING: Final = _claude(
    "extended thinking refuses forced tool use and sampling changes", thinking=True
)
MODEL_RULES: Final[tuple[CapabilityRule, ...]] = (
    CapabilityRule(
        pattern=re.compile(r"^claude-(instant|2|3-(haiku|sonnet|opus)|3-5-)"),
        template=_claude("before Claude 3.7 Sonnet: no extended thinking", thinking=False),
    ),
    CapabilityRule(pattern=re.compile(r"^claude-"), template=_THINKING),
)
"""What Claude models differ in (see `harness.llm.capabilities`), the first match winning."""
DEFAULT_CAPABILITIES: Final = replace(
    _THINKING, note="Anthropic defaults: thinks like current models"
)
"""An unknown model is assumed to think like the current ones."""


def model_capabilities(provider: Provider, model: str) -> Capabilities:
    """What `model` accepts on this wire, at `provider`."""
    return first_matching(MODEL_RULES, DEFAULT_CAPABILITIES, provider=provider, model=model)


def render_request(request: LlmRequest) -> dict[str, JsonValue]:
    """The exact Messages body for `request`.

    Raises `IllegalArgumentException` when an assistant tool call's arguments are not a JSON
    object, since `tool_use.input` must be one (the message names the call, not its content),
    and when a thinking budget is not below an explicit `max_tokens`.
    """
    thinking = request.reasoning if isinstance(request.reasoning, ReasoningEffort) else None
    budget = thinking_budget(thinking, request.max_tokens) if thinking else 0
    max_tokens = request.max_tokens
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS + budget
    elif thinking is not None and budget >= max_tokens:
        raise IllegalArgumentException(
            f"the thinking budget ({budget} tokens) must be below max_tokens ({max_tokens}) on "
            "Anthropic Messages, which counts thinking toward max_tokens; raise max_tokens or "
            "lower the budget"
        )
    body: dict[str, JsonValue] = {"model": request.model, "max_tokens": max_tokens}
    system = request.system_text()
    if system:
        body["system"] = system
    body["messages"] = _render_messages(request, thinking=thinking is not None)
    if request.tools:
        body["tools"] = [_render_tool(tool) for tool in request.tools]
        body["tool_choice"] = _render_tool_choice(request.tool_choice)
    if thinking is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.stop_sequences:
        body["stop_sequences"] = list(request.stop_sequences)
    if request.stream:
        body["stream"] = True
    return body


def _render_messages(request: LlmRequest, *, thinking: bool) -> list[JsonValue]:
    messages: list[JsonValue] = []
    user_blocks: list[JsonValue] | None = None
    for index, message in enumerate(request.messages):
        if isinstance(message, AssistantMessage):
            user_blocks = None
            blocks = _render_assistant_blocks(message, index)
            if thinking:
                # Messages requires a turn's signed thinking before the tool_use it continues;
                # with thinking off they are left out (a forced call disables reasoning).
                blocks = [*(copy_json(block) for block in message.reasoning_blocks), *blocks]
            messages.append({"role": "assistant", "content": blocks})
            continue
        if user_blocks is None:
            user_blocks = []
            messages.append({"role": "user", "content": user_blocks})
        if isinstance(message, UserMessage):
            user_blocks.append({"type": "text", "text": message.content})
        else:
            user_blocks.append(_render_tool_result(message))
    return messages


def _render_assistant_blocks(message: AssistantMessage, index: int) -> list[JsonValue]:
    blocks: list[JsonValue] = []
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for position, call in enumerate(message.tool_calls):
        try:
            arguments = call.parsed_arguments()
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            raise IllegalArgumentException(
                f"messages[{index}].tool_calls[{position}] (id={call.id!r}, name={call.name!r}) "
                "has arguments that are not a JSON object; Anthropic's tool_use.input must be "
                "an object"
            )
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def _render_tool_result(message: ToolResultMessage) -> JsonValue:
    block: dict[str, JsonValue] = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": message.content,
    }
    if message.is_error:
        block["is_error"] = True
    return block


def _render_tool(tool: ToolDefinition) -> JsonValue:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": copy_json(tool.parameters),
    }


def _render_tool_choice(choice: ToolChoice) -> JsonValue:
    if isinstance(choice, NamedToolChoice):
        return {"type": "tool", "name": choice.name}
    return {"type": "any" if choice == "required" else choice}


# -- reading a request body back ---------------------------------------------------------------

_REQUEST: Final = RequestReader(PROVIDER, "Anthropic")
_ROLES: Final = ("user", "assistant", "system")
_TOOL_CHOICES: Final[Mapping[str, ToolChoice]] = {
    "auto": "auto",
    "any": "required",
    "none": "none",
}
_THINKING_TYPES: Final = ("enabled", "adaptive", "disabled")
_ADAPTIVE_EFFORTS: Final[Mapping[str, Effort]] = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
    "max": "high",
}
"""`output_config.effort` with adaptive thinking, as the neutral effort: the neutral request has
no level above `high`."""


def effort_for_budget(budget_tokens: int) -> Effort:
    """The effort a thinking budget reads as: the one with the largest default budget
    (`THINKING_BUDGETS`) not above `budget_tokens`, `minimal` below them all."""
    fitting = [effort for effort, budget in THINKING_BUDGETS.items() if budget <= budget_tokens]
    return fitting[-1] if fitting else "minimal"


def parse_request(body: JsonValue, *, path: str | None = None) -> LlmRequest:
    """The neutral request a Messages body asks for: the inverse of `render_request`. The body
    names everything (`path`, where it was sent, is not read).

    `parse_request(render_request(r))` equals `r` except for what the wire cannot carry: the
    system fragments come back as one fragment named `FRAGMENT_WIRE` holding their joined text;
    message `metadata` is gone, and so are `reasoning_blocks` sent with thinking off;
    `max_tokens` is the number sent (the default and the thinking budget included when `r` left
    it unset); a thinking budget reads as `ReasoningEffort(effort_for_budget(budget))`, with
    `budget_tokens` kept unless it is that effort's default; unset reasoning reads as None;
    `response_format` (never sent) reads as None; a tool call's arguments read as compact JSON;
    a tool result's `name` is the name of the `tool_use` with its id in an earlier assistant
    message ("" when there is none); an assistant's empty text reads as None; `tool_choice`
    reads as "auto" when there are no tools.

    Each text block of a user message is one `UserMessage`, each `tool_result` one
    `ToolResultMessage`, in order; an assistant message's text blocks are joined, its
    `tool_use` blocks are its calls and its `thinking` / `redacted_thinking` blocks its
    `reasoning_blocks`. A `system` given as blocks is their text joined by a blank line, and
    the text of `system` messages in the conversation joins it, in order. Adaptive thinking
    reads as `ReasoningEffort` of `output_config.effort` (`high`, Messages' default, when
    unset; `xhigh` and `max` read as `high`, the highest neutral effort). Other
    blocks (images, documents, server tool blocks), server tools, and every field the neutral
    request has no place for (`metadata`, `top_k`, `service_tier`, ...) are left out. Raises
    `RequestFormatError` naming the field for anything else: a body that is not an object, no
    `model` or `messages`, a field of the wrong JSON type, a role, tool choice or thinking type
    outside those listed, a number out of range.
    """
    request = _REQUEST.object(body, "body")
    model = _REQUEST.name(request.get("model"), "model", longest=None)
    system = _REQUEST.text(request.get("system"), "system", separator="\n\n")
    later_system, messages = _parse_messages(_REQUEST.array(request.get("messages"), "messages"))
    return _REQUEST.build(
        LlmRequest,
        "body",
        model=model,
        system=wire_system([system or "", *later_system]),
        messages=tuple(messages),
        tools=tuple(_parse_tools(request.get("tools"))),
        tool_choice=_parse_tool_choice(request.get("tool_choice")),
        max_tokens=_REQUEST.positive(request.get("max_tokens"), "max_tokens"),
        temperature=_REQUEST.number(request.get("temperature"), "temperature", low=0, high=2),
        top_p=_REQUEST.number(request.get("top_p"), "top_p", low=0, high=1, low_included=False),
        stop_sequences=tuple(
            _REQUEST.string(item, f"stop_sequences[{index}]")
            for index, item in enumerate(
                _REQUEST.optional_array(request.get("stop_sequences"), "stop_sequences")
            )
        ),
        reasoning=_parse_thinking(request.get("thinking"), request.get("output_config")),
        stream=_REQUEST.flag(request.get("stream"), "stream"),
    )


def _parse_messages(items: list[JsonValue]) -> tuple[list[str], list[Message]]:
    """The text of the conversation's `system` messages, and the conversation."""
    system: list[str] = []
    messages: list[Message] = []
    names: dict[str, str] = {}
    for position, item in enumerate(items):
        path = f"messages[{position}]"
        message = _REQUEST.object(item, path)
        role = _REQUEST.choice(message.get("role"), f"{path}.role", _ROLES)
        content = message.get("content")
        blocks: list[JsonValue] = (
            [{"type": "text", "text": content}]
            if isinstance(content, str)
            else _REQUEST.array(content, f"{path}.content")
        )
        if role == "assistant":
            assistant = _parse_assistant(blocks, f"{path}.content")
            names.update((call.id, call.name) for call in assistant.tool_calls)
            messages.append(assistant)
        elif role == "system":
            system.append(_REQUEST.text(blocks, f"{path}.content", separator="\n\n") or "")
        else:
            messages.extend(_parse_user(blocks, f"{path}.content", names))
    return system, messages


def _parse_user(
    blocks: list[JsonValue], path: str, names: Mapping[str, str]
) -> Iterator[UserMessage | ToolResultMessage]:
    for position, value in enumerate(blocks):
        where = f"{path}[{position}]"
        block = _REQUEST.object(value, where)
        kind = block.get("type")
        if kind == "text":
            yield UserMessage(content=_REQUEST.string(block.get("text"), f"{where}.text"))
        elif kind == "tool_result":
            call_id = _REQUEST.string(block.get("tool_use_id"), f"{where}.tool_use_id")
            yield ToolResultMessage(
                tool_call_id=call_id,
                name=names.get(call_id, ""),
                content=_REQUEST.text(block.get("content"), f"{where}.content") or "",
                is_error=_REQUEST.flag(block.get("is_error"), f"{where}.is_error"),
            )


def _parse_assistant(blocks: list[JsonValue], path: str) -> AssistantMessage:
    texts: list[str] = []
    calls: list[LlmToolCall] = []
    reasoning: list[dict[str, JsonValue]] = []
    for position, value in enumerate(blocks):
        where = f"{path}[{position}]"
        block = _REQUEST.object(value, where)
        kind = block.get("type")
        if kind == "text":
            texts.append(_REQUEST.string(block.get("text"), f"{where}.text"))
        elif kind == "tool_use":
            calls.append(
                LlmToolCall(
                    id=_REQUEST.string(block.get("id"), f"{where}.id"),
                    name=_REQUEST.name(block.get("name"), f"{where}.name"),
                    arguments=compact_json(_REQUEST.object(block.get("input"), f"{where}.input")),
                )
            )
        elif kind in REASONING_BLOCKS:
            reasoning.append(_REQUEST.object(copy_json(block), where))
    return AssistantMessage(
        text="".join(texts) or None, tool_calls=tuple(calls), reasoning_blocks=tuple(reasoning)
    )


def forced_tool(body: JsonValue) -> str | None:
    """The tool a request body forces the model to call (`LlmRequest.forces_tool`), read from its
    `tool_choice` and its client tools' names alone: how a received request is told forced or
    work without reading its whole conversation. Raises `RequestFormatError` for those fields as
    `parse_request` does."""
    request = _REQUEST.object(body, "body")
    names = tuple(
        _REQUEST.name(tool.get("name"), f"{path}.name")
        for tool, path in _client_tools(request.get("tools"))
    )
    return tool_forced_by(_parse_tool_choice(request.get("tool_choice")), names)


def _client_tools(value: JsonValue) -> Iterator[tuple[dict[str, JsonValue], str]]:
    """Client tools (no `type`, or `custom`) with their paths; server tools such as web search
    are left out."""
    for position, item in enumerate(_REQUEST.optional_array(value, "tools")):
        path = f"tools[{position}]"
        tool = _REQUEST.object(item, path)
        if tool.get("type", "custom") == "custom":
            yield tool, path


def _parse_tools(value: JsonValue) -> Iterator[ToolDefinition]:
    """Client tools (no `type`, or `custom`); server tools such as web search are left out."""
    for tool, path in _client_tools(value):
        yield _REQUEST.tool(tool, path, schema_key="input_schema")


def _parse_tool_choice(value: JsonValue) -> ToolChoice:
    if value is None:
        return "auto"
    choice = _REQUEST.object(value, "tool_choice")
    kind = _REQUEST.choice(choice.get("type"), "tool_choice.type", [*_TOOL_CHOICES, "tool"])
    if kind == "tool":
        return NamedToolChoice(name=_REQUEST.name(choice.get("name"), "tool_choice.name"))
    return _TOOL_CHOICES[kind]


def _parse_thinking(value: JsonValue, output_config: JsonValue) -> Reasoning | None:
    thinking = _REQUEST.optional_object(value, "thinking")
    if thinking is None:
        return None
    kind = _REQUEST.choice(thinking.get("type"), "thinking.type", _THINKING_TYPES)
    if kind == "disabled":
        return ReasoningDisabled()
    if kind == "adaptive":
        config = _REQUEST.optional_object(output_config, "output_config") or {}
        effort = config.get("effort")
        if effort is None:
            return ReasoningEffort(effort="high")  # Messages' default effort
        word = _REQUEST.choice(effort, "output_config.effort", list(_ADAPTIVE_EFFORTS))
        return ReasoningEffort(effort=_ADAPTIVE_EFFORTS[word])
    budget = _REQUEST.positive(thinking.get("budget_tokens"), "thinking.budget_tokens")
    if budget is None:
        raise _REQUEST.invalid("thinking.budget_tokens", "a positive integer", None)
    effort = effort_for_budget(budget)
    return ReasoningEffort(
        effort=effort, budget_tokens=None if THINKING_BUDGETS[effort] == budget else budget
    )


def parse_response(payload: JsonValue) -> LlmResponse:
    """A plain JSON Messages reply as a neutral response.

    Raises `AgentDecisionCallException` with the provider's error type when the body is an
    error object, and with error type `invalid_response`, naming the field, when the body is
    not a Messages reply.
    """
    body = _READER.object(payload, "body")
    kind = body.get("type")
    if kind == "error":
        raise _in_band_error(body.get("error"))
    if kind != "message":
        raise _READER.incomplete("type", 'the reply type is not "message"')
    text: list[str] = []
    tool_calls: list[LlmToolCall] = []
    reasoning: list[dict[str, JsonValue]] = []
    for position, value in enumerate(_READER.array(body.get("content"), "content")):
        path = f"content[{position}]"
        block = _READER.object(value, path)
        block_type = _READER.string(block.get("type"), f"{path}.type")
        if block_type in REASONING_BLOCKS:
            reasoning.append(dict(block))
        elif block_type == "text":
            text.append(_READER.string(block.get("text"), f"{path}.text"))
        elif block_type == "tool_use":
            tool_calls.append(
                LlmToolCall(
                    id=_READER.string(block.get("id"), f"{path}.id"),
                    name=_READER.string(block.get("name"), f"{path}.name"),
                    arguments=compact_json(_READER.object(block.get("input"), f"{path}.input")),
                )
            )
    stop_reason = _READER.optional_string(body.get("stop_reason"), "stop_reason")
    if stop_reason is None:
        raise _READER.incomplete("stop_reason", "the reply has no stop_reason")
    counts = _read_usage(body.get("usage"), "usage", {})
    stop_sequence = _READER.optional_string(body.get("stop_sequence"), "stop_sequence")
    return LlmResponse(
        text="".join(text),
        tool_calls=tuple(tool_calls),
        reasoning_blocks=tuple(reasoning),
        thinking=thinking_text(reasoning),
        stop=stop_kind(stop_reason),
        provider_stop_reason=stop_reason,
        usage=_usage(counts),
        model=_READER.optional_string(body.get("model"), "model"),
        metadata={"stop_sequence": stop_sequence} if stop_sequence is not None else {},
        raw=payload,
    )


def thinking_text(blocks: Iterable[Mapping[str, JsonValue]]) -> str:
    """The words of a reply's `thinking` blocks, joined by a blank line (a `redacted_thinking`
    block has none)."""
    texts = [block.get("thinking") for block in blocks if block.get("type") == "thinking"]
    return "\n\n".join(text for text in texts if isinstance(text, str) and text)


def reply_reasoning_blocks(response: LlmResponse) -> list[dict[str, JsonValue]]:
    """The reasoning blocks a rendered reply starts with: its own Messages reasoning blocks as
    they are, else one `thinking` block of its `thinking`, signed (`thinking_signature`)."""
    own = [
        dict(block) for block in response.reasoning_blocks if block.get("type") in REASONING_BLOCKS
    ]
    if own:
        return own
    if not response.thinking:
        return []
    signature = thinking_signature(response.thinking)
    return [{"type": "thinking", "thinking": response.thinking, "signature": signature}]


def _read_usage(value: JsonValue, path: str, counts: dict[str, int]) -> dict[str, int]:
    """`counts` updated with every token count present in `value` (stream counts are totals)."""
    usage = _READER.optional_object(value, path)
    if usage is None:
        return counts
    for name in _USAGE_FIELDS:
        if usage.get(name) is not None:
            counts[name] = _READER.count(usage[name], f"{path}.{name}")
    return counts


def _usage(counts: Mapping[str, int]) -> Usage:
    input_tokens = (
        counts.get("input_tokens", 0)
        + counts.get("cache_creation_input_tokens", 0)
        + counts.get("cache_read_input_tokens", 0)
    )
    output_tokens = counts.get("output_tokens", 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )


@dataclass
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)
    tool_id: str = ""
    tool_name: str = ""
    start_input: JsonValue = None
    partial_json: list[str] = field(default_factory=list)
    start: dict[str, JsonValue] = field(default_factory=dict)
    signature: list[str] = field(default_factory=list)

    def reasoning_block(self) -> dict[str, JsonValue]:
        """A streamed thinking block as the plain reply would carry it (deltas joined)."""
        if self.kind != "thinking":
            return dict(self.start)  # redacted_thinking arrives whole
        block = {**self.start, "thinking": "".join(self.text)}
        if self.signature:
            block["signature"] = "".join(self.signature)
        return block

    def tool_call(self) -> LlmToolCall:
        """The call with its arguments: compact JSON if the input is complete, else raw text."""
        arguments = "".join(self.partial_json)
        if not arguments.strip():
            arguments = compact_json(self.start_input if self.start_input is not None else {})
        else:
            # Cut off (max_tokens) input stays raw: the caller decides what partial input means.
            with contextlib.suppress(ValueError):
                arguments = compact_json(json.loads(arguments))
        return LlmToolCall(id=self.tool_id, name=self.tool_name, arguments=arguments)


@dataclass
class _StreamState:
    blocks: dict[int, _Block] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    model: str | None = None

    def add_event(self, name: str | None, data: dict[str, JsonValue]) -> None:
        kind = data.get("type", name)
        if kind == "error":
            raise _in_band_error(data.get("error"))
        if kind == "message_start":
            message = _READER.object(data.get("message"), "message_start.message")
            self.model = _READER.optional_string(
                message.get("model"), "message_start.message.model"
            )
            _read_usage(message.get("usage"), "message_start.message.usage", self.counts)
        elif kind == "content_block_start":
            self.start_block(data)
        elif kind == "content_block_delta":
            self.add_delta(data)
        elif kind == "message_delta":
            delta = _READER.object(data.get("delta"), "message_delta.delta")
            stop_reason = _READER.optional_string(
                delta.get("stop_reason"), "message_delta.delta.stop_reason"
            )
            if stop_reason is not None:
                self.stop_reason = stop_reason
            stop_sequence = _READER.optional_string(
                delta.get("stop_sequence"), "message_delta.delta.stop_sequence"
            )
            if stop_sequence is not None:
                self.stop_sequence = stop_sequence
            _read_usage(data.get("usage"), "message_delta.usage", self.counts)
        # ping, content_block_stop, message_stop and event types added later carry nothing here

    def start_block(self, data: dict[str, JsonValue]) -> None:
        index = self.index(data, "content_block_start.index")
        path = "content_block_start.content_block"
        start = _READER.object(data.get("content_block"), path)
        block = _Block(kind=_READER.string(start.get("type"), f"{path}.type"))
        if block.kind == "text":
            block.text.append(_READER.optional_string(start.get("text"), f"{path}.text") or "")
        elif block.kind == "tool_use":
            block.tool_id = _READER.string(start.get("id"), f"{path}.id")
            block.tool_name = _READER.string(start.get("name"), f"{path}.name")
            block.start_input = start.get("input")
        elif block.kind in REASONING_BLOCKS:
            block.start = dict(start)
            if block.kind == "thinking":
                block.text.append(
                    _READER.optional_string(start.get("thinking"), f"{path}.thinking") or ""
                )
                signature = _READER.optional_string(start.get("signature"), f"{path}.signature")
                block.signature.append(signature or "")
        self.blocks[index] = block

    def add_delta(self, data: dict[str, JsonValue]) -> None:
        index = self.index(data, "content_block_delta.index")
        block = self.blocks.get(index)
        if block is None:
            raise _READER.incomplete(
                "content_block_delta.index", "a delta arrived for a block that never started"
            )
        delta = _READER.object(data.get("delta"), "content_block_delta.delta")
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text":
            block.text.append(_READER.string(delta.get("text"), "content_block_delta.delta.text"))
        elif kind == "input_json_delta" and block.kind == "tool_use":
            block.partial_json.append(
                _READER.string(delta.get("partial_json"), "content_block_delta.delta.partial_json")
            )
        elif kind == "thinking_delta" and block.kind == "thinking":
            block.text.append(
                _READER.string(delta.get("thinking"), "content_block_delta.delta.thinking")
            )
        elif kind == "signature_delta" and block.kind == "thinking":
            block.signature.append(
                _READER.string(delta.get("signature"), "content_block_delta.delta.signature")
            )
        # citation deltas and server tool input are not the reply

    def index(self, data: dict[str, JsonValue], path: str) -> int:
        index = data.get("index")
        if isinstance(index, bool) or not isinstance(index, int):
            raise _READER.invalid(path, "an integer", index)
        return index

    def response(self, raw: list[JsonValue]) -> LlmResponse:
        if self.stop_reason is None:
            raise _READER.incomplete(
                "message_delta.delta.stop_reason", "the stream ended before a stop_reason"
            )
        ordered = [self.blocks[index] for index in sorted(self.blocks)]
        reasoning = [block.reasoning_block() for block in ordered if block.kind in REASONING_BLOCKS]
        return LlmResponse(
            text="".join("".join(block.text) for block in ordered if block.kind == "text"),
            tool_calls=tuple(block.tool_call() for block in ordered if block.kind == "tool_use"),
            reasoning_blocks=tuple(reasoning),
            thinking=thinking_text(reasoning),
            stop=stop_kind(self.stop_reason),
            provider_stop_reason=self.stop_reason,
            usage=_usage(self.counts),
            model=self.model,
            metadata={"stop_sequence": self.stop_sequence}
            if self.stop_sequence is not None
            else {},
            raw=raw,
        )


def parse_stream(events: Iterable[ServerSentEventLike]) -> LlmResponse:
    """A streamed Messages reply (`message_start` ... `message_stop`) as one response.

    Text deltas are joined per block and blocks in index order; a `tool_use` block's
    `input_json_delta` fragments are joined and, when they form valid JSON, compacted, so a
    streamed call reads like a plain one; a call cut off mid-input keeps the raw partial text.
    Usage is `message_start`'s, overridden by the totals in `message_delta`. An `error` event
    raises `AgentDecisionCallException` with the provider's error type; a stream that ends
    without a `stop_reason` raises it with error type `invalid_response`. `raw` is the list of
    decoded event data.
    """
    state = _StreamState()
    raw: list[JsonValue] = []
    for event in events:
        data = event_data(event)
        if data is None:
            continue
        decoded = _READER.decode(data, f"{event.event or 'message'}.data")
        raw.append(decoded)
        state.add_event(event.event, _READER.object(decoded, f"{event.event or 'message'}.data"))
    return state.response(raw)


def parse_error(status: int, payload: JsonValue | str) -> AgentDecisionCallException:
    """The exception for a non-2xx answer: status, the provider's `error.type`, a safe message.

    The message carries the provider's own short message only after scrubbing secret shapes.
    The 400 refusing a forced tool choice while thinking is on ("Thinking may not be enabled
    when tool_choice forces tool use.") is a `ToolChoiceUnsupportedError`.
    """
    body = decode_error_body(payload)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return AgentDecisionCallException(
            f"Anthropic answered HTTP {status} with a body that is not an Anthropic error object",
            status=status,
            provider=PROVIDER,
        )
    kind = error.get("type")
    error_type = kind if isinstance(kind, str) and kind else None
    message = provider_message(error.get("message"))
    text = f"Anthropic answered HTTP {status} {error_type or 'without an error type'}" + (
        f": {message}" if message else ""
    )
    exception_type = (
        ToolChoiceUnsupportedError if _refuses_tool_choice(error) else AgentDecisionCallException
    )
    return exception_type(text, status=status, error_type=error_type, provider=PROVIDER)


def _in_band_error(value: JsonValue) -> AgentDecisionCallException:
    error = value if isinstance(value, dict) else {}
    kind = error.get("type")
    error_type = kind if isinstance(kind, str) and kind else None
    message = provider_message(error.get("message"))
    return AgentDecisionCallException(
        f"Anthropic reply carried an error {error_type or 'without a type'}"
        + (f": {message}" if message else ""),
        error_type=error_type,
        provider=PROVIDER,
    )


def _refuses_tool_choice(error: dict[str, JsonValue]) -> bool:
    message = error.get("message")
    if not isinstance(message, str):
        return False
    lowered = message.lower()
    return "tool_choice" in lowered and ("thinking" in lowered or "forces tool use" in lowered)


def stop_reason_for(response: LlmResponse) -> str:
    """The `stop_reason` a rendered reply carries (see `harness.llm._wire.stop_word`).

    `EndTurn` is "end_turn" (or "stop_sequence" when that is the reply's own word), `ToolUse`
    "tool_use", `LimitReached` "max_tokens"; `Other(reason)` keeps the reason when it is one of
    `STOP_KINDS` (such as "refusal" or "pause_turn") and is "end_turn" otherwise.
    """
    return stop_word(
        response, STOP_KINDS, end_turn="end_turn", tool_use="tool_use", limit_reached="max_tokens"
    )


def render_response(response: LlmResponse, *, model: str, response_id: str) -> dict[str, JsonValue]:
    """`response` as the `message` object Messages answers a non-streamed request with.

    The reply's reasoning first (`reply_reasoning_blocks`: its own blocks, or a signed
    `thinking` block of its `thinking`), a `text` block when there is text, then one `tool_use`
    block per call with the parsed
    arguments as `input`, so `parse_response` reads back the same calls with their arguments
    as compact JSON. Raises `IllegalArgumentException` for arguments that are not a JSON object,
    in particular for arguments cut off mid-JSON, which only `render_stream` can carry (the
    message names the call, never its arguments); and for a `Cancelled` or `Error` stop, which
    no model reply carries.
    """
    stop_reason = stop_reason_for(response)
    content: list[JsonValue] = [*reply_reasoning_blocks(response)]
    if response.text:
        content.append({"type": "text", "text": response.text})
    for position, call in enumerate(response.tool_calls):
        arguments = _tool_input(call, position)
        if arguments is None:
            raise IllegalArgumentException(
                f"tool_calls[{position}] (id={call.id!r}, name={call.name!r}) has arguments "
                "that are not valid JSON (cut off by the token limit?); a plain Messages reply "
                "cannot carry partial tool input: render the reply with render_stream, whose "
                "input_json_delta fragments can"
            )
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": _stop_sequence(response, stop_reason),
        "usage": _render_usage(response.usage, output_tokens=response.usage.output_tokens),
    }


def render_stream(response: LlmResponse, *, model: str, response_id: str) -> list[str]:
    """`response` as the server-sent events Messages streams it with, one block per string.

    `message_start` (the input tokens, at most one output token so far), a `ping`, the
    reasoning blocks (a `thinking` block's words in a few `thinking_delta`s, then its
    `signature_delta`; a `redacted_thinking` block whole), a text block
    whose text comes in a few `text_delta`s, one `tool_use` block per call whose arguments come
    as an empty `input_json_delta` and then a few raw fragments, `message_delta` with the stop
    reason and the final usage, and `message_stop`. Each string is `event: NAME` and `data:`
    and ends with the blank line that closes its block. Arguments cut off mid-JSON go out as
    they are, as when `max_tokens` stops a call; arguments that are complete JSON but not an
    object raise `IllegalArgumentException`, as do `Cancelled` and `Error` stops.
    """
    stop_reason = stop_reason_for(response)
    for position, call in enumerate(response.tool_calls):
        _tool_input(call, position)

    def event(name: str, **fields: JsonValue) -> str:
        return sse_block(compact_json({"type": name, **fields}), event=name)

    message: dict[str, JsonValue] = {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _render_usage(response.usage, output_tokens=min(response.usage.output_tokens, 1)),
    }
    events = [event("message_start", message=message), event("ping")]
    blocks: list[tuple[dict[str, JsonValue], list[dict[str, JsonValue]]]] = [
        _streamed_reasoning(block) for block in reply_reasoning_blocks(response)
    ]
    if response.text:
        blocks.append(
            (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": piece} for piece in stream_pieces(response.text)],
            )
        )
    for call in response.tool_calls:
        pieces = ["", *stream_pieces(call.arguments)]
        blocks.append(
            (
                {"type": "tool_use", "id": call.id, "name": call.name, "input": {}},
                [{"type": "input_json_delta", "partial_json": piece} for piece in pieces],
            )
        )
    for index, (start, deltas) in enumerate(blocks):
        events.append(event("content_block_start", index=index, content_block=start))
        events.extend(event("content_block_delta", index=index, delta=delta) for delta in deltas)
        events.append(event("content_block_stop", index=index))
    stop: dict[str, JsonValue] = {
        "stop_reason": stop_reason,
        "stop_sequence": _stop_sequence(response, stop_reason),
    }
    final_usage: dict[str, JsonValue] = {
        **_render_input_usage(response.usage),
        "output_tokens": response.usage.output_tokens,
    }
    events.append(event("message_delta", delta=stop, usage=final_usage))
    events.append(event("message_stop"))
    return events


def _streamed_reasoning(
    block: dict[str, JsonValue],
) -> tuple[dict[str, JsonValue], list[dict[str, JsonValue]]]:
    """A reasoning block as Messages streams it: a `thinking` block opens empty, its words come
    in a few `thinking_delta`s and its signature in one `signature_delta`; a
    `redacted_thinking` block arrives whole."""
    if block.get("type") != "thinking":
        return block, []
    words = block.get("thinking")
    signature = block.get("signature")
    deltas: list[dict[str, JsonValue]] = [
        {"type": "thinking_delta", "thinking": piece}
        for piece in stream_pieces(words if isinstance(words, str) else "")
    ]
    if isinstance(signature, str):
        deltas.append({"type": "signature_delta", "signature": signature})
    return {"type": "thinking", "thinking": "", "signature": ""}, deltas


def render_error(status: int, error_type: str, message: str) -> dict[str, JsonValue]:
    """The error body Messages answers a failed request with: `{"type": "error", "error": ...}`.

    Raises `IllegalArgumentException` for a status outside 400-599 or an empty error type,
    which `parse_error` could not read back.
    """
    check_error_status(status, error_type)
    return {"type": "error", "error": {"type": error_type, "message": message}}


def _tool_input(call: LlmToolCall, position: int) -> dict[str, JsonValue] | None:
    """The call's arguments as `tool_use.input`, or None when they are not valid JSON.

    Raises `IllegalArgumentException` when they are valid JSON but not an object.
    """
    try:
        arguments = call.parsed_arguments()
    except ValueError:
        return None
    if not isinstance(arguments, dict):
        raise IllegalArgumentException(
            f"tool_calls[{position}] (id={call.id!r}, name={call.name!r}) has arguments that "
            "are not a JSON object; Anthropic's tool_use.input must be an object"
        )
    return arguments


def _stop_sequence(response: LlmResponse, stop_reason: str) -> JsonValue:
    sequence = response.metadata.get("stop_sequence")
    return sequence if stop_reason == "stop_sequence" and isinstance(sequence, str) else None


def _render_usage(usage: Usage, *, output_tokens: int) -> dict[str, JsonValue]:
    return {
        **_render_input_usage(usage),
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _render_input_usage(usage: Usage) -> dict[str, JsonValue]:
    """Input counts: all of it as plain input, since the neutral usage keeps no cache split."""
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
