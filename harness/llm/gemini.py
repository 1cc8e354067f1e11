"""The Google Gemini adapter: `generateContent` (`POST /v1beta/models/{model}:generateContent`,
streamed at `:streamGenerateContent?alt=sse`; the key in `x-goog-api-key`).

The model and whether the reply streams are in the path, not in the body: `request_path` gives
both (`ProviderSpec.request_target`), and `parse_request` reads them from the path it is given.

Rendering is exact and deterministic, keys always in the same order: `contents`, then
`systemInstruction` (the joined fragments as one text part), `tools` (one `functionDeclarations`
list, each schema sent as `parametersJsonSchema`, which takes JSON Schema as it is, where
`parameters` takes only Gemini's OpenAPI subset and refuses `additionalProperties`),
`toolConfig.functionCallingConfig` whenever there are tools, and `generationConfig`
(`maxOutputTokens`, `temperature`, `topP`, `stopSequences`, `thinkingConfig`,
`responseMimeType` and `responseJsonSchema` for a `response_format`); what the request leaves
unset is left out. Message `metadata` is never sent. Consecutive user text and tool results go
into one `user` content, in order; a tool result is a `functionResponse` whose `response` is
`{"output": ...}` (`{"error": ...}` for an error result), the result's JSON object or array
itself, or its text.

The tool choice is `functionCallingConfig.mode`: `AUTO`, `NONE`, `ANY` for "required", and for a
named tool `ANY` with `allowedFunctionNames` holding that name alone: the forced call of the
Helix forced-completion migration guide, which Gemini honours while thinking is on.

Thinking (`generationConfig.thinkingConfig`) follows the model's table (`THINKING_RULES`):
Gemini 2.5 takes a `thinkingBudget`, Gemini 3 a `thinkingLevel`; 2.0 and 1.5 do not think and
get none. `ReasoningEffort` is its `budget_tokens`, else the effort's default budget
(`THINKING_BUDGETS`, lowered below an explicit `max_tokens`, since Gemini spends thinking out of
`maxOutputTokens`), or on Gemini 3 the effort's level. `ReasoningDisabled`, what every forced
call sends, turns thinking off (`thinkingBudget: 0`) where the model can (2.5 Flash and Flash
Lite) and asks for the least the model allows where it cannot (2.5 Pro's 128 tokens, Gemini 3's
lowest level). Every `thinkingConfig` sent carries `includeThoughts: false`: the harness never
reads thought summaries. Unset reasoning sends none (the model's own default).

Parsing reads the first candidate: its non-thought text parts joined, its `functionCall` parts
as tool calls (`args` as compact JSON; the call's `id` when Gemini gives one, else
`<responseId>_<index>`, unique in the reply; it never goes back on the wire). `finishReason`
`STOP` is `EndTurn`, or `ToolUse` when the reply calls a function; `MAX_TOKENS` is
`LimitReached`; every other word is `Other(reason=word)`, as is a prompt blocked before any
candidate (`promptFeedback.blockReason`). Usage: input is `promptTokenCount` (and
`toolUsePromptTokenCount`), output `candidatesTokenCount` plus `thoughtsTokenCount` (thinking is
billed as output).

Thought signatures: a reply's content that carries thinking (a `thought` part, a
`thoughtSignature`, or a call `id`) is kept whole as the reply's one reasoning block, and an
assistant turn holding it is sent back as that content exactly, signatures where Gemini put
them, whatever the reasoning setting: Gemini 3 refuses a function-call turn without its
signature even at its lowest thinking level, and Gemini 2.5 accepts them with thinking off. A
turn whose text or calls no longer match its block (built by hand, or from another provider) is
rendered from its text and calls.

Reply rendering is the reverse, for scripted replies: a neutral `LlmResponse` becomes a
`GenerateContentResponse` or its stream (`data:` chunks, the text in a few parts, each call whole
in the last chunk, with the finish reason and the full usage), deterministically.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import JsonValue

from harness.errors import (
    AgentDecisionCallException,
    IllegalArgumentException,
    ToolChoiceUnsupportedError,
)
from harness.json_body import strict_json
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
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
    tool_forced_by,
)
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, OtherStop, ToolUse
from harness.providers import GEMINI, Provider, provider_of

PROVIDER: Final = provider_of(GEMINI)
"""The provider this adapter is the native wire of (its errors are reported as this one's)."""

JSON_MIME_TYPE: Final = "application/json"

THINKING_BUDGETS: Final[Mapping[Effort, int]] = {
    "minimal": 1024,
    "low": 4096,
    "medium": 8192,
    "high": 16384,
}
"""`thinkingBudget` per effort on a model that takes a budget, when `budget_tokens` is unset:
inside every Gemini 2.5 model's range (Pro 128-32768, Flash 0-24576, Flash Lite 512-24576)."""

STOP: Final = "STOP"
MAX_TOKENS: Final = "MAX_TOKENS"
STOP_KINDS: Final[Mapping[str, AnyStopKind]] = {
    STOP: EndTurn(),
    MAX_TOKENS: LimitReached(),
    **{
        word: OtherStop(reason=word)
        for word in (
            "FINISH_REASON_UNSPECIFIED",
            "SAFETY",
            "RECITATION",
            "LANGUAGE",
            "OTHER",
            "BLOCKLIST",
            "PROHIBITED_CONTENT",
            "SPII",
            "MALFORMED_FUNCTION_CALL",
            "IMAGE_SAFETY",
            "IMAGE_PROHIBITED_CONTENT",
            "IMAGE_OTHER",
            "NO_IMAGE",
            "IMAGE_RECITATION",
            "UNEXPECTED_TOOL_CALL",
            "TOO_MANY_TOOL_CALLS",
            "MISSING_THOUGHT_SIGNATURE",
            "MALFORMED_RESPONSE",
        )
    },
}
"""`finishReason` to the neutral stop kind (a `STOP` reply that calls a function is `ToolUse`);
any other word becomes `Other(reason=word)`."""

GOOGLE_STATUSES: Final[Mapping[int, str]] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""The canonical status Google APIs name in `error.status` for each HTTP status."""
_GOOGLE_STATUS: Final = re.compile(r"[A-Z][A-Z_]*")

_READER: Final = WireReader(PROVIDER, "Gemini")
_REQUEST: Final = RequestReader(PROVIDER, "Gemini")
_SSE_END: Final = "\r\n\r\n"
"""What ends each event of Gemini's streams."""


def stop_kind(finish_reason: str) -> AnyStopKind:
    """The neutral stop kind of a Gemini `finishReason` (for a reply without calls)."""
    return STOP_KINDS.get(finish_reason) or OtherStop(reason=finish_reason)


def request_path(request: LlmRequest) -> str:
    """The path and query `request` goes to (`ProviderSpec.request_target`): the model is in the
    path, and a streamed request goes to `:streamGenerateContent?alt=sse`."""
    return GEMINI.request_target(request.model, stream=request.stream)


def request_headers() -> dict[str, str]:
    """Headers besides content type and credentials: none for Gemini."""
    return dict(GEMINI.version_headers)


# -- what each model takes ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ThinkingControl:
    """How one Gemini model's thinking is set: not at all (`none`), by a token budget (Gemini
    2.5) or by a level (Gemini 3); whether it can be turned off, and the least it allows."""

    kind: Literal["none", "budget", "level"]
    can_disable: bool = False
    lowest_budget: int = 1
    levels: Mapping[Effort, str] = field(default_factory=dict)
    """The `thinkingLevel` each effort is sent as (an effort the model has no level for gets
    the nearest it has)."""
    lowest_level: str = ""


@dataclass(frozen=True, kw_only=True)
class GeminiModelRule:
    """Models whose name matches `pattern` have `capabilities` and think as `thinking` says."""

    pattern: re.Pattern[str]
    capabilities: Capabilities
    thinking: ThinkingControl


def _gemini(note: str, thinking: ThinkingControl) -> Capabilities:
    thinks = thinking.kind != "none"
    return Capabilities(
        provider=PROVIDER,
        model="",
        note=note,
        reasoning=thinks,
        reasoning_efforts=ALL_EFFORTS if thinks else (),
        reasons_by_default=thinks,  # a thinking model thinks unless its thinkingConfig says
    )


_NO_THINKING: Final = ThinkingControl(kind="none")
_PRO_LEVELS: Final[Mapping[Effort, str]] = {
    "minimal": "low",
    "low": "low",
    "medium": "high",
    "high": "high",
}
_FLASH_LEVELS: Final[Mapping[Effort, str]] = {
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
}
_CURRENT: Final = ThinkingControl(kind="level", levels=_FLASH_LEVELS, lowest_level="minimal")


def _rule(pattern: str, note: str, thinking: ThinkingControl) -> GeminiModelRule:
    return GeminiModelRule(
        pattern=re.compile(pattern), capabilities=_gemini(note, thinking), thinking=thinking
    )


THINKING_RULES: Final[tuple[GeminiModelRule, ...]] = (
    _rule(r"^gemini-(1\.|2\.0-)", "Gemini 1.5 and 2.0: no thinking", _NO_THINKING),
    _rule(
        r"^gemini-2\.5-pro",
        "Gemini 2.5 Pro: a thinking budget of 128 to 32768 tokens, never off",
        ThinkingControl(kind="budget", lowest_budget=128),
    ),
    _rule(
        r"^gemini-2\.5-flash-lite",
        "Gemini 2.5 Flash Lite: a thinking budget of 512 to 24576 tokens, or off",
        ThinkingControl(kind="budget", can_disable=True, lowest_budget=512),
    ),
    _rule(
        r"^gemini-2\.5-",
        "Gemini 2.5 Flash: a thinking budget of 0 (off) to 24576 tokens",
        ThinkingControl(kind="budget", can_disable=True),
    ),
    _rule(
        r"^gemini-3(\.\d+)?-pro",
        "Gemini 3 Pro: thinking levels low and high, never off",
        ThinkingControl(kind="level", levels=_PRO_LEVELS, lowest_level="low"),
    ),
    _rule(r"^gemini-", "Gemini 3 Flash and later: thinking levels minimal to high", _CURRENT),
)
"""What Gemini models differ in, the first match winning: all take tools, a forced function
call (with thinking on too), a system instruction and a JSON response schema; they differ in
how their thinking is set."""
MODEL_RULES: Final[tuple[CapabilityRule, ...]] = tuple(
    CapabilityRule(pattern=rule.pattern, template=rule.capabilities) for rule in THINKING_RULES
)
"""`THINKING_RULES` as the capability table every adapter has (`harness.llm.capabilities`)."""
DEFAULT_CAPABILITIES: Final = _gemini("Gemini defaults: thinks like current models", _CURRENT)
"""An unknown model is assumed to think like the current ones."""


def model_capabilities(provider: Provider, model: str) -> Capabilities:
    """What `model` accepts on this wire, at `provider`."""
    return first_matching(MODEL_RULES, DEFAULT_CAPABILITIES, provider=provider, model=model)


def thinking_control(model: str) -> ThinkingControl:
    """How `model`'s thinking is set (`THINKING_RULES`, matched as capabilities are: lower-case,
    without a routing prefix)."""
    name = model.rsplit("/", 1)[-1].lower()
    return next((rule.thinking for rule in THINKING_RULES if rule.pattern.search(name)), _CURRENT)


def thinking_config(request: LlmRequest) -> dict[str, JsonValue] | None:
    """The `thinkingConfig` `request` is sent with (see the module docstring), or None."""
    control = thinking_control(request.model)
    reasoning = request.reasoning
    if reasoning is None or control.kind == "none":
        return None
    setting: dict[str, JsonValue]
    if isinstance(reasoning, ReasoningDisabled):
        if control.can_disable:
            setting = {"thinkingBudget": 0}
        elif control.kind == "budget":
            setting = {"thinkingBudget": control.lowest_budget}
        else:
            setting = {"thinkingLevel": control.lowest_level}
    elif reasoning.budget_tokens or control.kind == "budget":
        setting = {"thinkingBudget": thinking_budget(reasoning, request.max_tokens, control)}
    else:
        setting = {"thinkingLevel": control.levels.get(reasoning.effort, control.lowest_level)}
    return {**setting, "includeThoughts": False}


def thinking_budget(
    reasoning: ReasoningEffort, max_tokens: int | None, control: ThinkingControl
) -> int:
    """The `thinkingBudget` sent for `reasoning`: its own budget as given, or the effort's
    default lowered below an explicit `max_tokens` (never below the model's least)."""
    if reasoning.budget_tokens:
        return reasoning.budget_tokens
    default = THINKING_BUDGETS[reasoning.effort]
    if max_tokens is None:
        return default
    return max(control.lowest_budget, min(default, max_tokens - 1))


# -- rendering a request ------------------------------------------------------------------------


def render_request(request: LlmRequest) -> dict[str, JsonValue]:
    """The exact `generateContent` body for `request` (the model and streaming are in the path:
    `request_path`).

    Raises `IllegalArgumentException` when an assistant tool call's arguments are not a JSON
    object, since `functionCall.args` must be one (the message names the call, not its
    content).
    """
    body: dict[str, JsonValue] = {"contents": _render_contents(request.messages)}
    system = request.system_text()
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [_render_tool(tool) for tool in request.tools]}]
        body["toolConfig"] = {"functionCallingConfig": _render_tool_choice(request.tool_choice)}
    generation = _render_generation(request)
    if generation:
        body["generationConfig"] = generation
    return body


def _render_generation(request: LlmRequest) -> dict[str, JsonValue]:
    generation: dict[str, JsonValue] = {}
    if request.max_tokens is not None:
        generation["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        generation["temperature"] = request.temperature
    if request.top_p is not None:
        generation["topP"] = request.top_p
    if request.stop_sequences:
        generation["stopSequences"] = list(request.stop_sequences)
    thinking = thinking_config(request)
    if thinking is not None:
        generation["thinkingConfig"] = thinking
    if request.response_format is not None:
        generation["responseMimeType"] = JSON_MIME_TYPE
        generation["responseJsonSchema"] = copy_json(request.response_format.schema_)
    return generation


def _render_contents(messages: Iterable[Message]) -> list[JsonValue]:
    contents: list[JsonValue] = []
    user_parts: list[JsonValue] | None = None
    names: dict[str, str] = {}
    sent_ids: set[str] = set()  # calls that went out with their id: their results go back with it
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            user_parts = None
            names.update((call.id, call.name) for call in message.tool_calls)
            verbatim = _verbatim_parts(message)
            if verbatim is not None:
                parts = verbatim
                sent_ids.update(_wire_call_ids(parts))
            else:
                parts = _render_assistant_parts(message, index)
            if parts:
                contents.append({"role": "model", "parts": parts})
            continue
        if user_parts is None:
            user_parts = []
            contents.append({"role": "user", "parts": user_parts})
        if isinstance(message, UserMessage):
            user_parts.append({"text": message.content})
        else:
            user_parts.append(_render_tool_result(message, names, sent_ids))
    return contents


def _render_assistant_parts(message: AssistantMessage, index: int) -> list[JsonValue]:
    parts: list[JsonValue] = []
    if message.text:
        parts.append({"text": message.text})
    for position, call in enumerate(message.tool_calls):
        arguments = _object_arguments(call)
        if arguments is None:
            raise IllegalArgumentException(
                f"messages[{index}].tool_calls[{position}] (id={call.id!r}, name={call.name!r}) "
                "has arguments that are not a JSON object; Gemini's functionCall.args must be "
                "an object"
            )
        parts.append({"functionCall": {"name": call.name, "args": arguments}})
    return parts


def _render_tool_result(
    message: ToolResultMessage, names: Mapping[str, str], sent_ids: set[str]
) -> JsonValue:
    value: JsonValue = message.content
    try:
        parsed = strict_json(message.content)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict | list):
        value = parsed
    response: dict[str, JsonValue] = {"error" if message.is_error else "output": value}
    function: dict[str, JsonValue] = {
        "name": message.name or names.get(message.tool_call_id, ""),
        "response": response,
    }
    if message.tool_call_id in sent_ids:
        function = {"id": message.tool_call_id, **function}
    return {"functionResponse": function}


def _render_tool(tool: ToolDefinition) -> JsonValue:
    return {
        "name": tool.name,
        "description": tool.description,
        "parametersJsonSchema": copy_json(tool.parameters),
    }


def _render_tool_choice(choice: ToolChoice) -> JsonValue:
    if isinstance(choice, NamedToolChoice):
        return {"mode": "ANY", "allowedFunctionNames": [choice.name]}
    return {"mode": {"auto": "AUTO", "none": "NONE", "required": "ANY"}[choice]}


def _object_arguments(call: LlmToolCall) -> dict[str, JsonValue] | None:
    try:
        arguments = call.parsed_arguments()
    except ValueError:
        return None
    return arguments if isinstance(arguments, dict) else None


def _verbatim_parts(message: AssistantMessage) -> list[JsonValue] | None:
    """The turn's content as Gemini sent it (its one reasoning block), when that content still
    says what the turn says: the same text and the same calls (names, arguments by value, ids
    Gemini gave). Else None: the turn is rendered from its text and calls."""
    if len(message.reasoning_blocks) != 1:
        return None
    block = message.reasoning_blocks[0]
    parts = block.get("parts")
    if block.get("role") != "model" or not isinstance(parts, list):
        return None
    try:
        reading = _read_parts(_READER, parts, "parts", response_id=None)
    except AgentDecisionCallException:
        return None
    if reading.text != (message.text or "") or len(reading.calls) != len(message.tool_calls):
        return None
    for (wire_id, call), kept in zip(reading.calls, message.tool_calls, strict=True):
        if call.name != kept.name or _object_arguments(call) != _object_arguments(kept):
            return None
        if wire_id is not None and wire_id != kept.id:
            return None
    return [copy_json(part) for part in parts]


def _wire_call_ids(parts: list[JsonValue]) -> Iterator[str]:
    for part in parts:
        call = part.get("functionCall") if isinstance(part, dict) else None
        identifier = call.get("id") if isinstance(call, dict) else None
        if isinstance(identifier, str):
            yield identifier


# -- reading a request body back ---------------------------------------------------------------


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _spelling(message: dict[str, JsonValue], name: str) -> str:
    """How `message` spells its member `name`: `name` (lowerCamelCase, as the REST reference
    writes it), or its snake_case twin (`parameters_json_schema`, `thinking_budget`, as
    google-genai sends some members), which the API reads alike; `name` when it has neither."""
    if name in message:
        return name
    snake = _snake(name)
    return snake if snake in message else name


def _member(message: dict[str, JsonValue], name: str, default: JsonValue = None) -> JsonValue:
    """Member `name` of `message`, however it is spelt (`_spelling`), else `default`."""
    return message.get(_spelling(message, name), default)


def _has(message: dict[str, JsonValue], name: str) -> bool:
    return _spelling(message, name) in message


_ROLES: Final = ("user", "model", "function")
"""Content roles: `function` is the earlier role of a turn of function responses."""
_MODES: Final = ("MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED")
_LEVELS: Final[Mapping[str, Effort]] = {
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
}
"""`thinkingLevel` as the neutral effort (any case): the neutral request has no level above
`high`."""


def effort_for_budget(budget_tokens: int) -> Effort:
    """The effort a thinking budget reads as: the one with the largest default budget
    (`THINKING_BUDGETS`) not above `budget_tokens`, `minimal` below them all."""
    fitting = [effort for effort, budget in THINKING_BUDGETS.items() if budget <= budget_tokens]
    return fitting[-1] if fitting else "minimal"


def parse_request(body: JsonValue, *, path: str | None = None) -> LlmRequest:
    """The neutral request a `generateContent` body sent to `path` asks for: the inverse of
    `render_request`.

    The model and streaming come from the path (`/v1beta/models/gemini-2.5-flash:
    streamGenerateContent` is model `gemini-2.5-flash`, streamed), with or without its version;
    without a path that ends in a Gemini endpoint it is a `RequestFormatError`.

    `parse_request(render_request(r), path=request_path(r))` equals `r` except for what the wire
    cannot carry: the system fragments come back as one fragment named `FRAGMENT_WIRE`; message
    `metadata` is gone; a turn sent back as Gemini's own content has that content as its one
    reasoning block; call ids Gemini gave none are made up (`call_<content>_<part>`) and a
    result takes the id of the first unanswered call of its name in the turn before; a tool
    result whose JSON text was sent as an object or array reads as compact JSON; an assistant's
    empty text reads as None; `tool_choice` reads as "auto" when there are no tools; a thinking
    budget reads as `ReasoningEffort(effort_for_budget(budget))`, `budget_tokens` kept unless it
    is that effort's default, `0` as `ReasoningDisabled` and `-1` (dynamic, the model's default)
    as None; a level as its effort; on a model that cannot stop thinking, its least budget or
    lowest level with `includeThoughts: false`, what a forced call sends it, as
    `ReasoningDisabled` (on Gemini 3 the lowest effort sends the same); `response_format` as
    `ResponseFormat` named "output", strict.

    Every member is read in either spelling the API takes, lowerCamelCase (`thinkingBudget`) or
    snake_case (`thinking_budget`, as google-genai sends some). A `functionResponse` whose
    `response` is `{"output": x}` or `{"error": x}` reads as `x`
    (text as it is, anything else as compact JSON; `error` marks an error result), any other
    `response` as its compact JSON. `mode: ANY` with exactly one allowed name reads as that
    named tool, with none or several as "required"; `VALIDATED` and `MODE_UNSPECIFIED` as
    "auto". Thought parts, images, files and every field the neutral request has no place for
    (`safetySettings`, `topK`, `cachedContent`, ...) are left out, and so are tools other than
    function declarations (`googleSearch`, `codeExecution`). Raises `RequestFormatError` naming
    the field for anything else: a body that is not an object, no `contents`, a field of the
    wrong JSON type, a role or mode outside those listed, a number out of range.
    """
    model, stream = _model_and_stream(path)
    request = _REQUEST.object(body, "body")
    generation = (
        _REQUEST.optional_object(_member(request, "generationConfig"), "generationConfig") or {}
    )
    return _REQUEST.build(
        LlmRequest,
        "body",
        model=model,
        system=wire_system(_system_texts(_member(request, "systemInstruction"))),
        messages=tuple(_parse_contents(_REQUEST.array(_member(request, "contents"), "contents"))),
        tools=tuple(_parse_tools(_member(request, "tools"))),
        tool_choice=_parse_tool_choice(
            _member(request, "toolConfig"), bool(_declarations(request))
        ),
        max_tokens=_REQUEST.positive(
            _member(generation, "maxOutputTokens"), "generationConfig.maxOutputTokens"
        ),
        temperature=_REQUEST.number(
            _member(generation, "temperature"), "generationConfig.temperature", low=0, high=2
        ),
        top_p=_REQUEST.number(
            _member(generation, "topP"), "generationConfig.topP", low=0, high=1, low_included=False
        ),
        stop_sequences=tuple(
            _REQUEST.string(item, f"generationConfig.stopSequences[{index}]")
            for index, item in enumerate(
                _REQUEST.optional_array(
                    _member(generation, "stopSequences"), "generationConfig.stopSequences"
                )
            )
        ),
        reasoning=_parse_thinking(_member(generation, "thinkingConfig"), model),
        response_format=_parse_format(generation),
        stream=stream,
    )


def _model_and_stream(path: str | None) -> tuple[str, bool]:
    endpoint = GEMINI.endpoint_at(path) if path is not None else None
    model = endpoint.model_in(path) if endpoint is not None and path is not None else None
    if endpoint is None or not model:
        raise _REQUEST.error(
            "a Gemini request names its model, and whether it streams, in its path "
            "(/v1beta/models/<model>:generateContent or :streamGenerateContent); read it "
            "with the path it was sent to"
        )
    return model, endpoint.streams


def _system_texts(value: JsonValue) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    instruction = _REQUEST.object(value, "systemInstruction")
    parts = _REQUEST.optional_array(_member(instruction, "parts"), "systemInstruction.parts")
    texts: list[str] = []
    for position, item in enumerate(parts):
        part = _REQUEST.object(item, f"systemInstruction.parts[{position}]")
        text = _REQUEST.optional_string(
            _member(part, "text"), f"systemInstruction.parts[{position}].text"
        )
        if text is not None:
            texts.append(text)
    return texts


def _parse_contents(items: list[JsonValue]) -> Iterator[Message]:
    previous_calls: list[LlmToolCall] = []
    for index, item in enumerate(items):
        where = f"contents[{index}]"
        content = _REQUEST.object(item, where)
        role = _REQUEST.choice(_member(content, "role", "user"), f"{where}.role", _ROLES)
        parts = _REQUEST.optional_array(_member(content, "parts"), f"{where}.parts")
        if role == "model":
            assistant = _parse_model_content(content, parts, index)
            previous_calls = list(assistant.tool_calls)
            yield assistant
            continue
        answered: set[int] = set()
        for position, value in enumerate(parts):
            part_path = f"{where}.parts[{position}]"
            part = _REQUEST.object(value, part_path)
            if _member(part, "thought") is True:
                continue
            if _has(part, "functionResponse"):
                yield _parse_function_response(part, part_path, previous_calls, answered)
            elif _has(part, "text"):
                yield UserMessage(
                    content=_REQUEST.string(_member(part, "text"), f"{part_path}.text")
                )
        previous_calls = []


def _parse_model_content(
    content: dict[str, JsonValue], parts: list[JsonValue], index: int
) -> AssistantMessage:
    texts: list[str] = []
    calls: list[LlmToolCall] = []
    carries_thinking = False
    for position, value in enumerate(parts):
        part_path = f"contents[{index}].parts[{position}]"
        part = _REQUEST.object(value, part_path)
        carries_thinking = carries_thinking or _carries_thinking(part)
        if _member(part, "thought") is True:
            continue
        if _has(part, "functionCall"):
            call = _REQUEST.object(_member(part, "functionCall"), f"{part_path}.functionCall")
            identifier = _REQUEST.optional_string(
                _member(call, "id"), f"{part_path}.functionCall.id"
            )
            arguments = _REQUEST.optional_object(
                _member(call, "args"), f"{part_path}.functionCall.args"
            )
            calls.append(
                LlmToolCall(
                    id=identifier or f"call_{index}_{len(calls)}",
                    name=_REQUEST.name(_member(call, "name"), f"{part_path}.functionCall.name"),
                    arguments=compact_json(arguments or {}),
                )
            )
        elif _has(part, "text"):
            texts.append(_REQUEST.string(_member(part, "text"), f"{part_path}.text"))
    blocks = ({"role": "model", "parts": copy_json(parts)},) if carries_thinking else ()
    return AssistantMessage(
        text="".join(texts) or None,
        tool_calls=tuple(calls),
        reasoning_blocks=blocks,
    )


def _parse_function_response(
    part: dict[str, JsonValue], where: str, calls: list[LlmToolCall], answered: set[int]
) -> ToolResultMessage:
    function = _REQUEST.object(_member(part, "functionResponse"), f"{where}.functionResponse")
    name = _REQUEST.name(_member(function, "name"), f"{where}.functionResponse.name")
    identifier = _REQUEST.optional_string(_member(function, "id"), f"{where}.functionResponse.id")
    if identifier is None:
        position = next(
            (
                position
                for position, call in enumerate(calls)
                if call.name == name and position not in answered
            ),
            None,
        )
        if position is not None:
            answered.add(position)
            identifier = calls[position].id
    response = _REQUEST.optional_object(
        _member(function, "response"), f"{where}.functionResponse.response"
    )
    content, is_error = _result_content(response or {})
    return ToolResultMessage(
        tool_call_id=identifier or f"{name}_result", name=name, content=content, is_error=is_error
    )


def _result_content(response: dict[str, JsonValue]) -> tuple[str, bool]:
    if len(response) == 1:
        ((key, value),) = response.items()
        if key in ("output", "error"):
            return (value if isinstance(value, str) else compact_json(value)), key == "error"
    return compact_json(response), False


def _declarations(request: dict[str, JsonValue]) -> list[tuple[dict[str, JsonValue], str]]:
    found: list[tuple[dict[str, JsonValue], str]] = []
    for position, item in enumerate(_REQUEST.optional_array(_member(request, "tools"), "tools")):
        tool = _REQUEST.object(item, f"tools[{position}]")
        key = _spelling(tool, "functionDeclarations")
        path = f"tools[{position}].{key}"
        for index, declaration in enumerate(_REQUEST.optional_array(tool.get(key), path)):
            found.append((_REQUEST.object(declaration, f"{path}[{index}]"), f"{path}[{index}]"))
    return found


def _parse_tools(value: JsonValue) -> Iterator[ToolDefinition]:
    for declaration, path in _declarations({"tools": value}):
        key = _spelling(declaration, "parametersJsonSchema")
        if key not in declaration:
            key = _spelling(declaration, "parameters")
        yield _REQUEST.tool(declaration, path, schema_key=key)


def _function_calling(value: JsonValue) -> dict[str, JsonValue]:
    config = _REQUEST.optional_object(value, "toolConfig") or {}
    return (
        _REQUEST.optional_object(
            _member(config, "functionCallingConfig"), "toolConfig.functionCallingConfig"
        )
        or {}
    )


def _parse_tool_choice(value: JsonValue, has_tools: bool) -> ToolChoice:
    calling = _function_calling(value)
    if not has_tools or _member(calling, "mode") is None:
        return "auto"
    path = "toolConfig.functionCallingConfig"
    mode = _REQUEST.choice(_member(calling, "mode"), f"{path}.mode", _MODES)
    if mode == "NONE":
        return "none"
    if mode != "ANY":
        return "auto"
    allowed = [
        _REQUEST.name(name, f"{path}.allowedFunctionNames[{index}]")
        for index, name in enumerate(
            _REQUEST.optional_array(
                _member(calling, "allowedFunctionNames"), f"{path}.allowedFunctionNames"
            )
        )
    ]
    return NamedToolChoice(name=allowed[0]) if len(allowed) == 1 else "required"


def _parse_thinking(value: JsonValue, model: str) -> Reasoning | None:
    path = "generationConfig.thinkingConfig"
    config = _REQUEST.optional_object(value, path)
    if config is None:
        return None
    if _is_least_thinking(config, model):
        return ReasoningDisabled()
    level = _member(config, "thinkingLevel")
    if level is not None:
        word = _REQUEST.string(level, f"{path}.thinkingLevel").lower()
        if word not in _LEVELS:
            raise _REQUEST.error(f"`{path}.thinkingLevel` is not one of {', '.join(_LEVELS)}")
        return ReasoningEffort(effort=_LEVELS[word])
    budget = _member(config, "thinkingBudget")
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < -1:
        raise _REQUEST.invalid(f"{path}.thinkingBudget", "an integer of -1 or more", budget)
    if budget == 0:
        return ReasoningDisabled()
    if budget == -1:
        return None
    effort = effort_for_budget(budget)
    return ReasoningEffort(
        effort=effort, budget_tokens=None if THINKING_BUDGETS[effort] == budget else budget
    )


def _is_least_thinking(config: dict[str, JsonValue], model: str) -> bool:
    """Whether `config` is what `ReasoningDisabled` sends `model` when it cannot stop thinking:
    its least budget or lowest level, without thoughts (a forced call's)."""
    if thinking_control(model).can_disable:
        return False
    disabled = thinking_config(LlmRequest(model=model, reasoning=ReasoningDisabled()))
    if disabled is None:
        return False
    level = _member(config, "thinkingLevel")
    spelt = {
        "thinkingBudget": _member(config, "thinkingBudget"),
        "thinkingLevel": level.lower() if isinstance(level, str) else level,
        "includeThoughts": _member(config, "includeThoughts"),
    }
    return {name: value for name, value in spelt.items() if value is not None} == disabled


def _parse_format(generation: dict[str, JsonValue]) -> ResponseFormat | None:
    path = "generationConfig"
    if _member(generation, "responseMimeType") != JSON_MIME_TYPE:
        return None
    key = _spelling(generation, "responseJsonSchema")
    if key not in generation:
        key = _spelling(generation, "responseSchema")
    schema = _REQUEST.optional_object(generation.get(key), f"{path}.{key}")
    if schema is None:
        return None
    return _REQUEST.build(ResponseFormat, f"{path}.{key}", schema=schema)


def forced_tool(body: JsonValue) -> str | None:
    """The function a request body forces the model to call (`LlmRequest.forces_tool`), read
    from its `toolConfig` and its declarations' names alone: how a received request is told
    forced or work without reading its whole conversation. Raises `RequestFormatError` for
    those fields as `parse_request` does."""
    request = _REQUEST.object(body, "body")
    declarations = _declarations(request)
    names = tuple(
        _REQUEST.name(_member(declaration, "name"), f"{path}.name")
        for declaration, path in declarations
    )
    return tool_forced_by(_parse_tool_choice(_member(request, "toolConfig"), bool(names)), names)


# -- reading a reply ----------------------------------------------------------------------------


@dataclass
class _Reading:
    """What one candidate's parts say: the text, the calls (each with the id Gemini gave, if
    any), and whether the content carries thinking."""

    text: str
    calls: list[tuple[str | None, LlmToolCall]]
    carries_thinking: bool
    thoughts: str = ""
    """The words of its thought parts (thought summaries, sent when asked for)."""


def _carries_thinking(part: dict[str, JsonValue]) -> bool:
    call = _member(part, "functionCall")
    has_id = isinstance(call, dict) and _member(call, "id") is not None
    return _member(part, "thought") is True or _has(part, "thoughtSignature") or has_id


def _read_parts(
    reader: WireReader, parts: list[JsonValue], path: str, *, response_id: str | None
) -> _Reading:
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[tuple[str | None, LlmToolCall]] = []
    carries_thinking = False
    for position, value in enumerate(parts):
        where = f"{path}[{position}]"
        part = reader.object(value, where)
        carries_thinking = carries_thinking or _carries_thinking(part)
        if _member(part, "thought") is True:
            thought = _member(part, "text")
            if isinstance(thought, str):
                thoughts.append(thought)
            continue
        if _has(part, "functionCall"):
            call = reader.object(_member(part, "functionCall"), f"{where}.functionCall")
            wire_id = reader.optional_string(_member(call, "id"), f"{where}.functionCall.id")
            arguments = reader.optional_object(_member(call, "args"), f"{where}.functionCall.args")
            index = len(calls)
            made_up = f"{response_id}_{index}" if response_id else f"call_{index}"
            calls.append(
                (
                    wire_id,
                    LlmToolCall(
                        id=wire_id or made_up,
                        name=reader.string(_member(call, "name"), f"{where}.functionCall.name"),
                        arguments=compact_json(arguments or {}),
                    ),
                )
            )
        elif _has(part, "text"):
            texts.append(reader.string(_member(part, "text"), f"{where}.text"))
    return _Reading("".join(texts), calls, carries_thinking, "".join(thoughts))


def parse_response(payload: JsonValue) -> LlmResponse:
    """A plain `GenerateContentResponse` as a neutral response.

    Raises `AgentDecisionCallException` with the provider's error status when the body is an
    error object, and with error type `invalid_response`, naming the field, when the body is
    not a Gemini reply (no candidate and no block reason, a candidate without a
    `finishReason`).
    """
    body = _READER.object(payload, "body")
    if "error" in body:
        raise _in_band_error(body.get("error"))
    response_id = _READER.optional_string(body.get("responseId"), "responseId")
    model = _READER.optional_string(body.get("modelVersion"), "modelVersion")
    usage = _read_usage(body.get("usageMetadata"), "usageMetadata", {})
    candidates = _READER.optional_array(body.get("candidates"), "candidates")
    if not candidates:
        return _blocked(body, usage, model, payload)
    candidate = _READER.object(candidates[0], "candidates[0]")
    content = _READER.optional_object(candidate.get("content"), "candidates[0].content") or {}
    parts = _READER.optional_array(content.get("parts"), "candidates[0].content.parts")
    reading = _read_parts(_READER, parts, "candidates[0].content.parts", response_id=response_id)
    finish_reason = _READER.optional_string(
        candidate.get("finishReason"), "candidates[0].finishReason"
    )
    if finish_reason is None:
        raise _READER.incomplete("candidates[0].finishReason", "the reply has no finishReason")
    return _response(reading, parts, finish_reason, usage, model, payload)


def _blocked(
    body: dict[str, JsonValue], usage: dict[str, int], model: str | None, raw: JsonValue
) -> LlmResponse:
    """A reply without candidates: the prompt was blocked (`promptFeedback.blockReason`)."""
    feedback = _READER.optional_object(body.get("promptFeedback"), "promptFeedback") or {}
    reason = _READER.optional_string(feedback.get("blockReason"), "promptFeedback.blockReason")
    if reason is None:
        raise _READER.incomplete("candidates", "the reply has no candidate and no blockReason")
    return LlmResponse(
        stop=OtherStop(reason=reason),
        provider_stop_reason=reason,
        usage=_usage(usage),
        model=model,
        raw=raw,
    )


def _response(
    reading: _Reading,
    parts: list[JsonValue],
    finish_reason: str,
    usage: dict[str, int],
    model: str | None,
    raw: JsonValue,
) -> LlmResponse:
    calls = tuple(call for _, call in reading.calls)
    stop = ToolUse() if calls and finish_reason == STOP else stop_kind(finish_reason)
    blocks = ({"role": "model", "parts": copy_json(parts)},) if reading.carries_thinking else ()
    return LlmResponse(
        text=reading.text,
        tool_calls=calls,
        reasoning_blocks=blocks,
        thinking=reading.thoughts,
        stop=stop,
        provider_stop_reason=finish_reason,
        usage=_usage(usage),
        model=model,
        raw=raw,
    )


_USAGE_FIELDS: Final = (
    "promptTokenCount",
    "toolUsePromptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "totalTokenCount",
)


def _read_usage(value: JsonValue, path: str, counts: dict[str, int]) -> dict[str, int]:
    """`counts` updated with the token counts in `value` (a stream's counts are totals so far)."""
    usage = _READER.optional_object(value, path)
    if usage is None:
        return counts
    for name in _USAGE_FIELDS:
        if usage.get(name) is not None:
            counts[name] = _READER.count(usage[name], f"{path}.{name}")
    return counts


def _usage(counts: Mapping[str, int]) -> Usage:
    input_tokens = counts.get("promptTokenCount", 0) + counts.get("toolUsePromptTokenCount", 0)
    output_tokens = counts.get("candidatesTokenCount", 0) + counts.get("thoughtsTokenCount", 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=counts.get("totalTokenCount", input_tokens + output_tokens),
        reasoning_tokens=counts.get("thoughtsTokenCount", 0),
    )


@dataclass
class _StreamState:
    parts: list[JsonValue] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    model: str | None = None
    response_id: str | None = None
    feedback: dict[str, JsonValue] = field(default_factory=dict)

    def add_chunk(self, chunk: dict[str, JsonValue]) -> None:
        if "error" in chunk:
            raise _in_band_error(chunk.get("error"))
        self.response_id = (
            _READER.optional_string(chunk.get("responseId"), "responseId") or self.response_id
        )
        self.model = _READER.optional_string(chunk.get("modelVersion"), "modelVersion") or (
            self.model
        )
        _read_usage(chunk.get("usageMetadata"), "usageMetadata", self.counts)
        feedback = _READER.optional_object(chunk.get("promptFeedback"), "promptFeedback")
        if feedback is not None:
            self.feedback = feedback
        candidates = _READER.optional_array(chunk.get("candidates"), "candidates")
        if not candidates:
            return
        candidate = _READER.object(candidates[0], "candidates[0]")
        content = _READER.optional_object(candidate.get("content"), "candidates[0].content")
        path = "candidates[0].content.parts"
        for position, value in enumerate(
            _READER.optional_array((content or {}).get("parts"), path)
        ):
            self.add_part(_READER.object(value, f"{path}[{position}]"))
        finish_reason = _READER.optional_string(
            candidate.get("finishReason"), "candidates[0].finishReason"
        )
        if finish_reason is not None:
            self.finish_reason = finish_reason

    def add_part(self, part: dict[str, JsonValue]) -> None:
        """Keep `part`, its text joined to the one before when both are plain text of the same
        kind (thought or not): a part with a signature, or anything else, stays as it came."""
        last = self.parts[-1] if self.parts else None
        if (
            isinstance(last, dict)
            and _plain_text(last)
            and _plain_text(part)
            and last.get("thought") is part.get("thought")
        ):
            last["text"] = str(last["text"]) + _READER.string(part.get("text"), "text")
            return
        self.parts.append(dict(part))

    def response(self, raw: list[JsonValue]) -> LlmResponse:
        if self.finish_reason is None:
            if self.feedback.get("blockReason") is not None:
                body: dict[str, JsonValue] = {"promptFeedback": self.feedback}
                return _blocked(body, self.counts, self.model, raw)
            raise _READER.incomplete(
                "candidates[0].finishReason", "the stream ended before a finishReason"
            )
        reading = _read_parts(
            _READER, self.parts, "candidates[0].content.parts", response_id=self.response_id
        )
        return _response(reading, self.parts, self.finish_reason, self.counts, self.model, raw)


def _plain_text(part: dict[str, JsonValue]) -> bool:
    return isinstance(part.get("text"), str) and set(part) <= {"text", "thought"}


def parse_stream(events: Iterable[ServerSentEventLike]) -> LlmResponse:
    """A streamed reply (`:streamGenerateContent?alt=sse`, one `GenerateContentResponse` chunk
    per event) as one response.

    Parts are kept in order, consecutive plain text parts joined (a part carrying a signature
    stays whole); the last `finishReason`, `usageMetadata` (totals so far), `modelVersion` and
    `responseId` win. An `error` chunk raises `AgentDecisionCallException` with the provider's
    status; a stream that ends without a `finishReason` (and no block reason) raises it with
    error type `invalid_response`. `raw` is the list of decoded chunks.
    """
    state = _StreamState()
    raw: list[JsonValue] = []
    for event in events:
        data = event_data(event)
        if data is None:
            continue
        chunk = _READER.decode(data, "data")
        raw.append(chunk)
        state.add_chunk(_READER.object(chunk, "data"))
    return state.response(raw)


# -- errors -------------------------------------------------------------------------------------


def parse_error(status: int, payload: JsonValue | str) -> AgentDecisionCallException:
    """The exception for a non-2xx answer: status, the provider's `error.status`
    (`INVALID_ARGUMENT`, `RESOURCE_EXHAUSTED`), a safe message.

    The message carries the provider's own short message only after scrubbing secret shapes,
    never the rest of the body (`details`). A refusal of function calling by the model
    ("Function calling is not enabled for models/...") is a `ToolChoiceUnsupportedError`.
    """
    body = decode_error_body(payload)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return AgentDecisionCallException(
            f"Gemini answered HTTP {status} with a body that is not a Google API error object",
            status=status,
            provider=PROVIDER,
        )
    kind = error.get("status")
    error_type = kind if isinstance(kind, str) and kind else None
    message = provider_message(error.get("message"))
    text = f"Gemini answered HTTP {status} {error_type or 'without an error status'}" + (
        f": {message}" if message else ""
    )
    exception_type = (
        ToolChoiceUnsupportedError if _refuses_tools(error) else AgentDecisionCallException
    )
    return exception_type(text, status=status, error_type=error_type, provider=PROVIDER)


def _in_band_error(value: JsonValue) -> AgentDecisionCallException:
    error = value if isinstance(value, dict) else {}
    kind = error.get("status")
    error_type = kind if isinstance(kind, str) and kind else None
    code = error.get("code")
    status = code if isinstance(code, int) and not isinstance(code, bool) else None
    message = provider_message(error.get("message"))
    return AgentDecisionCallException(
        f"Gemini reply carried an error {error_type or 'without a status'}"
        + (f": {message}" if message else ""),
        status=status,
        error_type=error_type,
        provider=PROVIDER,
    )


_TOOL_REFUSAL: Final = re.compile(
    r"function calling[^.]*\b(is not enabled|is not supported|is unsupported)", re.IGNORECASE
)


def _refuses_tools(error: dict[str, JsonValue]) -> bool:
    message = error.get("message")
    return isinstance(message, str) and _TOOL_REFUSAL.search(message) is not None


def render_error(status: int, error_type: str, message: str) -> dict[str, JsonValue]:
    """The error body Google APIs answer a failed request with:
    `{"error": {"code": status, "message": ..., "status": ...}}`.

    `status` is `error_type` when it is already a Google status word (`RESOURCE_EXHAUSTED`),
    else the one Google names for the HTTP status (`GOOGLE_STATUSES`: 404 is `NOT_FOUND`; an
    HTTP status it does not list is `INVALID_ARGUMENT` below 500 and `INTERNAL` from 500), so
    the harness's own error types (`not_found_error`) reach a Gemini SDK in its format. Raises
    `IllegalArgumentException` for a status outside 400-599 or an empty error type.
    """
    check_error_status(status, error_type)
    word = (
        error_type
        if _GOOGLE_STATUS.fullmatch(error_type)
        else GOOGLE_STATUSES.get(status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    )
    return {"error": {"code": status, "message": message, "status": word}}


# -- rendering a reply --------------------------------------------------------------------------


def finish_reason_for(response: LlmResponse) -> str:
    """The `finishReason` a rendered reply carries (see `harness.llm._wire.stop_word`): `STOP`
    for `EndTurn` and `ToolUse`, `MAX_TOKENS` for `LimitReached`, an `Other` reason kept when it
    is one of `STOP_KINDS` (`SAFETY`) and `STOP` otherwise."""
    return stop_word(response, STOP_KINDS, end_turn=STOP, tool_use=STOP, limit_reached=MAX_TOKENS)


def _call_parts(response: LlmResponse) -> list[JsonValue]:
    parts: list[JsonValue] = []
    for position, call in enumerate(response.tool_calls):
        arguments = _object_arguments(call)
        if arguments is None:
            raise IllegalArgumentException(
                f"tool_calls[{position}] (id={call.id!r}, name={call.name!r}) has arguments "
                "that are not a JSON object (cut off by the token limit?); Gemini sends each "
                "call's args whole, as an object, streamed or not"
            )
        parts.append({"functionCall": {"name": call.name, "args": arguments}})
    return parts


def _candidate(parts: list[JsonValue], finish_reason: str | None) -> dict[str, JsonValue]:
    content: dict[str, JsonValue] = {"parts": parts, "role": "model"}
    if not parts:
        del content["parts"]
    candidate: dict[str, JsonValue] = {"content": content}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    candidate["index"] = 0
    return candidate


def _render_usage(usage: Usage, *, final: bool) -> dict[str, JsonValue]:
    if not final:
        return {"promptTokenCount": usage.input_tokens, "totalTokenCount": usage.input_tokens}
    rendered: dict[str, JsonValue] = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens
        - min(usage.reasoning_tokens, usage.output_tokens),
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    }
    if usage.reasoning_tokens:
        rendered["thoughtsTokenCount"] = min(usage.reasoning_tokens, usage.output_tokens)
    return rendered


def _signed(parts: list[JsonValue], response: LlmResponse) -> list[JsonValue]:
    """`parts` with the reply's thought signature where Gemini puts it, when the reply thought:
    on its first function call, else on its last part. A reply of no parts (thinking that the
    token limit cut off) carries none. The thought's words are not sent: the harness asks for
    none (`includeThoughts: false`)."""
    if not response.thinking or not parts:
        return parts
    objects = [part if isinstance(part, dict) else {} for part in parts]
    calls = [index for index, part in enumerate(objects) if "functionCall" in part]
    at = calls[0] if calls else len(parts) - 1
    signed: dict[str, JsonValue] = {
        **objects[at],
        "thoughtSignature": thinking_signature(response.thinking),
    }
    return [*parts[:at], signed, *parts[at + 1 :]]


def _own_parts(response: LlmResponse) -> list[JsonValue] | None:
    """The parts of the content the reply came with (its one reasoning block), when it has one."""
    if len(response.reasoning_blocks) != 1:
        return None
    parts = copy_json(response.reasoning_blocks[0].get("parts"))
    return parts if isinstance(parts, list) else None


def render_response(response: LlmResponse, *, model: str, response_id: str) -> dict[str, JsonValue]:
    """`response` as the `GenerateContentResponse` Gemini answers `generateContent` with.

    One candidate: the parts of the content the reply came with, when it has one (its reasoning
    block), else a text part when there is text, then one `functionCall` part per call (its
    arguments as `args`, no `id`, as Gemini 2.5 sends them), the reply's thought signature
    (`_signed`) on the first call or the last part when it shows `thinking`, so
    `parse_response` reads back the same text and calls, their arguments as compact JSON. Raises `IllegalArgumentException` for
    arguments that are not a JSON object (cut off mid-JSON included: Gemini has no way to carry
    them), and for a `Cancelled` or `Error` stop, which no model reply carries.
    """
    finish_reason = finish_reason_for(response)
    parts = _own_parts(response)
    if parts is None:
        parts = [{"text": response.text}] if response.text else []
        parts = _signed([*parts, *_call_parts(response)], response)
    return {
        "candidates": [_candidate(parts, finish_reason)],
        "usageMetadata": _render_usage(response.usage, final=True),
        "modelVersion": model,
        "responseId": response_id,
    }


def render_stream(response: LlmResponse, *, model: str, response_id: str) -> list[str]:
    """`response` as the server-sent events Gemini streams it with (`alt=sse`), one block per
    string, each ending with the blank line (`\\r\\n\\r\\n`) that closes it.

    Each event is a `GenerateContentResponse` chunk: the text in a few parts, one per chunk,
    then the calls, whole, in the last chunk, which alone carries the `finishReason` and the
    full usage (the others the prompt's count). A reply with neither text nor calls is one
    chunk without parts. Raises like `render_response`.
    """
    finish_reason = finish_reason_for(response)
    chunks: list[list[JsonValue]] = [[{"text": piece}] for piece in stream_pieces(response.text)]
    calls = _call_parts(response)
    if calls:
        calls = _signed(calls, response)
    elif chunks:
        chunks[-1] = _signed(chunks[-1], response)
    if calls or not chunks:
        chunks.append(calls)
    events: list[str] = []
    for index, parts in enumerate(chunks):
        last = index == len(chunks) - 1
        chunk: dict[str, JsonValue] = {
            "candidates": [_candidate(parts, finish_reason if last else None)],
            "usageMetadata": _render_usage(response.usage, final=last),
            "modelVersion": model,
            "responseId": response_id,
        }
        events.append(f"data: {compact_json(chunk)}{_SSE_END}")
    return events
