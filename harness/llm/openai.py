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

Request parsing (`parse_request`) is the inverse of rendering, for bodies the harness did not
build, such as those of an agent written on the `openai` SDK: a Chat Completions body, or a
Responses body (one with `input` and no `messages`), becomes a neutral request; fields it has no
place for are left out, and a malformed body is a `RequestFormatError` naming the field.

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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, get_args

from pydantic import JsonValue

from harness.errors import AgentDecisionCallException, HarnessError, ToolChoiceUnsupportedError
from harness.llm._wire import (
    PayloadReader,
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
    wire_system,
)
from harness.llm.capabilities import (
    ALL_EFFORTS,
    Capabilities,
    CapabilityRule,
    first_matching,
)
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
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
    tool_forced_by,
)
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, OtherStop, ToolUse
from harness.providers import OPENAI, Provider, provider_of

PROVIDER: Final = provider_of(OPENAI)
"""The provider this adapter is the native wire of (its errors are reported as this one's)."""
CHAT_COMPLETIONS_PATH: Final = OPENAI.request_path
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
    """The path every Chat Completions request goes to (`ProviderSpec.request_path`)."""
    return CHAT_COMPLETIONS_PATH


def request_headers() -> dict[str, str]:
    """Headers besides content type and credentials: none for OpenAI."""
    return dict(OPENAI.version_headers)


def _reasoning(
    note: str, efforts: tuple[Effort, ...], *, off: str | None, by_default: bool = True
) -> Capabilities:
    return Capabilities(
        provider=PROVIDER,
        model="",
        note=note,
        reasoning=True,
        reasoning_efforts=efforts,
        sampling_with_reasoning=False,
        max_tokens_parameter="max_completion_tokens",
        reasons_by_default=by_default,
        reasoning_off=off,
    )


MODEL_RULES: Final[tuple[CapabilityRule, ...]] = (
    CapabilityRule(
        pattern=re.compile(r"^o1-(mini|preview)"),
        template=replace(
            _reasoning("o1 previews: no tools, no system message, no effort", (), off=None),
            supports_tools=False,
            supports_forced_tool_choice=False,
            supports_system_prompt=False,
            supports_response_format=False,
        ),
    ),
    CapabilityRule(
        pattern=re.compile(r"^gpt-5[.\d]*-chat"),
        template=Capabilities(
            provider=PROVIDER,
            model="",
            note="GPT-5 chat: no reasoning, but only max_completion_tokens",
            max_tokens_parameter="max_completion_tokens",
        ),
    ),
    CapabilityRule(
        pattern=re.compile(r"^gpt-5\.[1-9]"),
        template=_reasoning(
            "GPT-5.1 and later: reasoning can be turned off (none), no minimal effort",
            ("low", "medium", "high"),
            off="none",
            by_default=False,
        ),
    ),
    CapabilityRule(
        pattern=re.compile(r"^gpt-5"),
        template=_reasoning(
            "GPT-5 reasoning: also the minimal effort, the least it reasons",
            ALL_EFFORTS,
            off="minimal",
        ),
    ),
    CapabilityRule(
        pattern=re.compile(r"^o[134](-|$)"),
        template=_reasoning(
            "o-series reasoning: low, medium, high", ("low", "medium", "high"), off="low"
        ),
    ),
)
"""What OpenAI models differ in (see `harness.llm.capabilities`), the first match winning."""
DEFAULT_CAPABILITIES: Final = Capabilities(provider=PROVIDER, model="", note="OpenAI defaults")


def model_capabilities(provider: Provider, model: str) -> Capabilities:
    """What `model` accepts on this wire, at `provider` (OpenAI or a compatible API)."""
    return first_matching(MODEL_RULES, DEFAULT_CAPABILITIES, provider=provider, model=model)


def render_request(request: LlmRequest) -> dict[str, JsonValue]:
    """The exact Chat Completions body for `request`.

    Tools and `tool_choice` are left out together when there are no tools. Reasoning models
    (`model_capabilities`) get `max_completion_tokens` instead of `max_tokens`, which counts
    their reasoning tokens too. Unset reasoning sends no `reasoning_effort`; `ReasoningDisabled`
    sends the model's `reasoning_off` (`none` from GPT-5.1 on, GPT-5's `minimal`, the
    o-series' `low`), and nothing to a model that does not reason. Streaming asks for the final
    usage chunk.
    """
    body: dict[str, JsonValue] = {"model": request.model, "messages": _render_messages(request)}
    if request.tools:
        body["tools"] = [_render_tool(tool) for tool in request.tools]
        body["tool_choice"] = _render_tool_choice(request.tool_choice)
    if request.max_tokens is not None:
        parameter = model_capabilities(PROVIDER, request.model).max_tokens_parameter
        body[parameter] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)
    if isinstance(request.reasoning, ReasoningEffort):
        body["reasoning_effort"] = request.reasoning.effort
    elif isinstance(request.reasoning, ReasoningDisabled):
        off = model_capabilities(PROVIDER, request.model).reasoning_off
        if off is not None:
            body["reasoning_effort"] = off
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


# -- reading a request body back ---------------------------------------------------------------

_REQUEST: Final = RequestReader(PROVIDER, "OpenAI")
_ROLES: Final = ("system", "developer", "user", "assistant", "tool")
_INPUT_ROLES: Final = ("system", "developer", "user", "assistant")
_INPUT_TEXT_PARTS: Final = ("input_text", "output_text", "text")
_TOOL_CHOICES: Final[Mapping[str, ToolChoice]] = {
    "auto": "auto",
    "none": "none",
    "required": "required",
}
_EFFORTS: Final = ("none", *get_args(Effort))  # "none" turns reasoning off
_FORMATS: Final = ("text", "json_object", "json_schema")


def parse_request(body: JsonValue, *, path: str | None = None) -> LlmRequest:
    """The neutral request a Chat Completions body asks for: the inverse of `render_request`.
    The body names everything (`path`, where it was sent, is not read).

    A body with `input` and no `messages` is read as a Responses request (`instructions`,
    `input`, `tools`, `tool_choice`, `max_output_tokens`, `temperature`, `top_p`,
    `reasoning.effort`, `text.format`, `stream`).

    `parse_request(render_request(r))` equals `r` except for what the wire cannot carry: the
    system fragments come back as one fragment named `FRAGMENT_WIRE` holding their joined text;
    message `metadata`, `reasoning_blocks` and a tool result's `is_error` are gone; a tool
    result's `name` is the name of the call with its id in an earlier assistant message ("" when
    there is none); an assistant's empty text reads as None; `ReasoningDisabled` reads as None
    for a model that does not reason (nothing is sent), and the effort it sends a reasoning
    model (`reasoning_off`) reads as `ReasoningDisabled`, even when a `ReasoningEffort` of
    that effort sent it (GPT-5's `minimal`); `budget_tokens` is gone; `tool_choice` reads as "auto" when
    there are no tools.

    System and developer messages anywhere in the conversation join the system text, in order.
    Text content parts are joined; other parts (images, audio, files) and tools that are not
    functions are left out, as is every field the neutral request has no place for (`n`,
    `user`, `stream_options`, `logprobs`, ...). Raises `RequestFormatError` naming the field for
    anything else: a body that is not an object, no `model` or `messages`, a field of the wrong
    JSON type, a role, tool choice or reasoning effort outside those listed, a number out of
    range (`reasoning_effort: "none"` reads as `ReasoningDisabled`), and the deprecated
    `functions` / `function_call` API, which would otherwise be read as a request with no tools.
    """
    request = _REQUEST.object(body, "body")
    for legacy in ("functions", "function_call"):
        if request.get(legacy) is not None:
            raise _REQUEST.error(
                f"`{legacy}` is the deprecated function-calling API, which the harness does not "
                "read; send `tools` and `tool_choice` instead"
            )
    model = _REQUEST.name(request.get("model"), "model", longest=None)
    if "messages" not in request and "input" in request:
        return _parse_responses_request(request, model)
    system, messages = _parse_messages(_REQUEST.array(request.get("messages"), "messages"))
    tools = tuple(
        _REQUEST.tool(function, path, schema_key="parameters")
        for function, path in _function_specs(request.get("tools"), nested=True)
    )
    max_tokens = _REQUEST.positive(request.get("max_completion_tokens"), "max_completion_tokens")
    stop = request.get("stop")
    return _REQUEST.build(
        LlmRequest,
        "body",
        model=model,
        system=wire_system(system),
        messages=tuple(messages),
        tools=tools,
        tool_choice=_parse_tool_choice(request.get("tool_choice"), nested=True),
        max_tokens=max_tokens or _REQUEST.positive(request.get("max_tokens"), "max_tokens"),
        **_sampling(request),
        stop_sequences=(stop,)
        if isinstance(stop, str)
        else tuple(
            _REQUEST.string(item, f"stop[{index}]")
            for index, item in enumerate(_REQUEST.optional_array(stop, "stop"))
        ),
        reasoning=_parse_effort(request.get("reasoning_effort"), "reasoning_effort", model),
        response_format=_parse_format(request.get("response_format"), "response_format"),
        stream=_REQUEST.flag(request.get("stream"), "stream"),
    )


def forced_tool(body: JsonValue) -> str | None:
    """The tool a request body forces the model to call (`LlmRequest.forces_tool`), read from its
    `tool_choice` and its tools' names alone: how a received request is told forced or work
    without reading its whole conversation. Raises `RequestFormatError` for those fields as
    `parse_request` does."""
    request = _REQUEST.object(body, "body")
    nested = "messages" in request or "input" not in request  # Chat, else Responses
    names = tuple(
        _REQUEST.name(spec.get("name"), f"{path}.name")
        for spec, path in _function_specs(request.get("tools"), nested=nested)
    )
    return tool_forced_by(_parse_tool_choice(request.get("tool_choice"), nested=nested), names)


def _sampling(request: dict[str, JsonValue]) -> dict[str, float | None]:
    return {
        "temperature": _REQUEST.number(request.get("temperature"), "temperature", low=0, high=2),
        "top_p": _REQUEST.number(request.get("top_p"), "top_p", low=0, high=1, low_included=False),
    }


def _parse_messages(items: list[JsonValue]) -> tuple[list[str], list[Message]]:
    system: list[str] = []
    messages: list[Message] = []
    names: dict[str, str] = {}
    for position, item in enumerate(items):
        path = f"messages[{position}]"
        message = _REQUEST.object(item, path)
        role = _REQUEST.choice(message.get("role"), f"{path}.role", _ROLES)
        content = _REQUEST.text(message.get("content"), f"{path}.content")
        if role == "assistant":
            calls = tuple(
                _parse_tool_call(call, f"{path}.tool_calls[{index}]", _REQUEST)
                for index, call in enumerate(
                    _REQUEST.optional_array(message.get("tool_calls"), f"{path}.tool_calls")
                )
            )
            names.update((call.id, call.name) for call in calls)
            messages.append(AssistantMessage(text=content or None, tool_calls=calls))
            continue
        if content is None:
            raise _REQUEST.invalid(f"{path}.content", "a string or an array of parts", None)
        if role in ("system", "developer"):
            system.append(content)
        elif role == "user":
            messages.append(UserMessage(content=content))
        else:
            call_id = _REQUEST.string(message.get("tool_call_id"), f"{path}.tool_call_id")
            messages.append(
                ToolResultMessage(
                    tool_call_id=call_id, name=names.get(call_id, ""), content=content
                )
            )
    return system, messages


def _function_specs(
    value: JsonValue, *, nested: bool
) -> Iterator[tuple[dict[str, JsonValue], str]]:
    """Each function tool's spec with its path: Chat nests it under `function`, Responses
    does not. Tools of other types (custom, hosted) are skipped."""
    for position, item in enumerate(_REQUEST.optional_array(value, "tools")):
        path = f"tools[{position}]"
        tool = _REQUEST.object(item, path)
        if tool.get("type", "function") != "function":
            continue
        if nested:
            yield _REQUEST.object(tool.get("function"), f"{path}.function"), f"{path}.function"
        else:
            yield tool, path


def _parse_tool_choice(value: JsonValue, *, nested: bool) -> ToolChoice:
    if value is None:
        return "auto"
    if isinstance(value, str):
        return _TOOL_CHOICES[_REQUEST.choice(value, "tool_choice", list(_TOOL_CHOICES))]
    choice = _REQUEST.object(value, "tool_choice")
    if "type" in choice:  # some compatible APIs send the function alone
        _REQUEST.choice(choice["type"], "tool_choice.type", ("function",))
    if nested:
        function = _REQUEST.object(choice.get("function"), "tool_choice.function")
        return NamedToolChoice(
            name=_REQUEST.name(function.get("name"), "tool_choice.function.name")
        )
    return NamedToolChoice(name=_REQUEST.name(choice.get("name"), "tool_choice.name"))


def _parse_effort(value: JsonValue, field: str, model: str) -> Reasoning | None:
    """`none`, and the effort `ReasoningDisabled` sends `model` (its `reasoning_off`), read as
    `ReasoningDisabled`: what a forced call sends."""
    if value is None:
        return None
    effort = _REQUEST.choice(value, field, _EFFORTS)
    if effort in ("none", model_capabilities(PROVIDER, model).reasoning_off):
        return ReasoningDisabled()
    return _REQUEST.build(ReasoningEffort, field, effort=effort)


def _parse_format(value: JsonValue, field: str) -> ResponseFormat | None:
    """A `json_schema` format (Chat nests it under `json_schema`, Responses does not); plain
    text and `json_object` have no neutral form and read as None."""
    spec = _REQUEST.optional_object(value, field)
    if (
        spec is None
        or _REQUEST.choice(spec.get("type"), f"{field}.type", _FORMATS) != "json_schema"
    ):
        return None
    if "json_schema" in spec:
        field = f"{field}.json_schema"
        spec = _REQUEST.object(spec["json_schema"], field)
    name = _REQUEST.optional_string(spec.get("name"), f"{field}.name")
    return _REQUEST.build(
        ResponseFormat,
        field,
        name=name if name is not None else "output",
        schema=copy_json(_REQUEST.object(spec.get("schema"), f"{field}.schema")),
        strict=_REQUEST.flag(spec.get("strict"), f"{field}.strict"),
    )


def _parse_responses_request(request: dict[str, JsonValue], model: str) -> LlmRequest:
    instructions = _REQUEST.optional_string(request.get("instructions"), "instructions")
    system, messages = _parse_input(request.get("input"))
    reasoning = _REQUEST.optional_object(request.get("reasoning"), "reasoning") or {}
    text = _REQUEST.optional_object(request.get("text"), "text") or {}
    return _REQUEST.build(
        LlmRequest,
        "body",
        model=model,
        system=wire_system([instructions or "", *system]),
        messages=tuple(messages),
        tools=tuple(
            _REQUEST.tool(function, path, schema_key="parameters")
            for function, path in _function_specs(request.get("tools"), nested=False)
        ),
        tool_choice=_parse_tool_choice(request.get("tool_choice"), nested=False),
        max_tokens=_REQUEST.positive(request.get("max_output_tokens"), "max_output_tokens"),
        **_sampling(request),
        reasoning=_parse_effort(reasoning.get("effort"), "reasoning.effort", model),
        response_format=_parse_format(text.get("format"), "text.format"),
        stream=_REQUEST.flag(request.get("stream"), "stream"),
    )


def _parse_input(value: JsonValue) -> tuple[list[str], list[Message]]:
    """A Responses `input`: a string (one user message) or items. Consecutive `function_call`
    items join the assistant message before them; item types without a neutral form
    (`reasoning`, hosted tool calls, references) are left out."""
    if isinstance(value, str):
        return [], [UserMessage(content=value)]
    system: list[str] = []
    messages: list[Message] = []
    names: dict[str, str] = {}
    for position, entry in enumerate(_REQUEST.array(value, "input")):
        path = f"input[{position}]"
        item = _REQUEST.object(entry, path)
        kind = item.get("type", "message")
        if kind == "message":
            role = _REQUEST.choice(item.get("role"), f"{path}.role", _INPUT_ROLES)
            content = _REQUEST.text(
                item.get("content"), f"{path}.content", part_types=_INPUT_TEXT_PARTS
            )
            if role == "assistant":
                messages.append(AssistantMessage(text=content or None))
            elif content is None:
                raise _REQUEST.invalid(f"{path}.content", "a string or an array of parts", None)
            elif role == "user":
                messages.append(UserMessage(content=content))
            else:
                system.append(content)
        elif kind == "function_call":
            call = LlmToolCall(
                id=_REQUEST.string(item.get("call_id"), f"{path}.call_id"),
                name=_REQUEST.name(item.get("name"), f"{path}.name"),
                arguments=_REQUEST.optional_string(item.get("arguments"), f"{path}.arguments")
                or "",
            )
            names[call.id] = call.name
            last = messages[-1] if messages else None
            if isinstance(last, AssistantMessage):
                messages[-1] = last.model_copy(update={"tool_calls": (*last.tool_calls, call)})
            else:
                messages.append(AssistantMessage(tool_calls=(call,)))
        elif kind == "function_call_output":
            call_id = _REQUEST.string(item.get("call_id"), f"{path}.call_id")
            output = _REQUEST.text(
                item.get("output"), f"{path}.output", part_types=_INPUT_TEXT_PARTS
            )
            messages.append(
                ToolResultMessage(
                    tool_call_id=call_id, name=names.get(call_id, ""), content=output or ""
                )
            )
    return system, messages


def _legacy_function_call(field: str) -> AgentDecisionCallException:
    return _READER.error(
        f"the reply calls a function through the deprecated function-calling API (`{field}`), "
        "which the harness does not read; send `tools` instead of `functions`"
    )


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
    if message.get("function_call") is not None:
        raise _legacy_function_call("choices[0].message.function_call")
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


def _parse_tool_call(
    value: JsonValue, path: str, reader: PayloadReader[HarnessError] = _READER
) -> LlmToolCall:
    """One Chat tool call, in a reply or in a request's assistant message (`reader` says which
    error a malformed one is)."""
    call = reader.object(value, path)
    kind = reader.optional_string(call.get("type"), f"{path}.type")
    if kind not in (None, "function"):
        raise reader.incomplete(f"{path}.type", "only function tool calls are supported")
    function = reader.object(call.get("function"), f"{path}.function")
    return LlmToolCall(
        id=reader.string(call.get("id"), f"{path}.id"),
        name=reader.string(function.get("name"), f"{path}.function.name"),
        arguments=reader.optional_string(function.get("arguments"), f"{path}.function.arguments")
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
    details = _READER.optional_object(
        usage.get("completion_tokens_details"), "usage.completion_tokens_details"
    )
    reasoning = (details or {}).get("reasoning_tokens")
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=total_tokens,
        reasoning_tokens=0
        if reasoning is None
        else _READER.count(reasoning, "usage.completion_tokens_details.reasoning_tokens"),
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
        if delta.get("function_call") is not None:
            raise _legacy_function_call("choices[0].delta.function_call")
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
        call_id = _READER.optional_string(fragment.get("id"), f"{path}.id")
        index = fragment.get("index")
        if index is None:
            index = self._implied_index(call_id, position)
        if isinstance(index, bool) or not isinstance(index, int):
            raise _READER.invalid(f"{path}.index", "an integer", index)
        call = self.calls.setdefault(index, _PartialToolCall())
        if call_id and not call.id:
            call.id = call_id
        function = _READER.optional_object(fragment.get("function"), f"{path}.function") or {}
        name = _READER.optional_string(function.get("name"), f"{path}.function.name")
        if name and not call.name:
            call.name = name
        arguments = _READER.optional_string(function.get("arguments"), f"{path}.function.arguments")
        if arguments:
            call.arguments.append(arguments)

    def _implied_index(self, call_id: str | None, position: int) -> int:
        """The index of a fragment that carries none, as Gemini's and other OpenAI-compatible
        streams send them: a chunk's later entries, and an entry whose id is not the last
        call's, start a new call; anything else continues the last call."""
        if not self.calls:
            return position
        last = max(self.calls)
        if position > 0 or (call_id and call_id != self.calls[last].id):
            return last + 1
        return last

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
    tools or a tool choice for this model is a `ToolChoiceUnsupportedError`.
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
        ToolChoiceUnsupportedError if _refuses_tool_choice(error) else AgentDecisionCallException
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
    """The `finish_reason` a rendered reply carries (see `harness.llm._wire.stop_word`).

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
            "reasoning_tokens": usage.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
