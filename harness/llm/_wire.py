"""What the two provider adapters share (`harness.llm.openai`, `harness.llm.anthropic`).

`WireReader` reads a provider payload field by field and fails with
`AgentDecisionCallException(error_type="invalid_response")` naming the field and the JSON type it
found, never the content; `RequestReader`, its twin for request bodies, fails with
`RequestFormatError`; `provider_message` lets a provider's short error message into an exception
only after scrubbing secret shapes; and the small deterministic pieces of reply rendering
(`stop_word`, `stream_pieces`, `sse_block`, `check_error_status`) live here too.

Private to `harness.llm`: the adapters import it, and `harness.llm.adapters` (the dispatch)
imports the adapters, so nothing here may import either.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Generic, Protocol, TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from harness.errors import AgentDecisionCallException, HarnessError, IllegalArgumentException
from harness.llm.models import LlmResponse, SystemFragment, ToolDefinition
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, OtherStop, ToolUse
from harness.providers import Provider
from harness.scrub import Scrubber

INVALID_RESPONSE: Final = "invalid_response"
"""The `error_type` of a reply that is not in the provider's format."""

PROVIDER_MESSAGE_LIMIT: Final = 300
"""How much of a provider's own error message an exception may carry."""

STREAM_PIECES: Final = 3
"""How many deltas a rendered stream cuts one text, or one tool call's arguments, into."""

FRAGMENT_WIRE: Final = "wire"
"""The name of the one system fragment `parse_request` reads: a request body carries the system
prompt as one text, so the names of the fragments that were joined into it cannot come back."""

_SCRUBBER: Final = Scrubber()


class RequestFormatError(IllegalArgumentException):
    """Raised when `parse_request` (or a script) reads a request body that is not in the provider's
    request format.

    The message names the field as a JSON path (`messages[2].tool_calls[0].function.name`) and what
    it should be, never the value: request bodies carry prompts and user content.
    """

    code: ClassVar[str] = "llm_request_invalid"


class ServerSentEventLike(Protocol):
    """One server-sent event as `httpx_sse.ServerSentEvent` or `harness.sse.SseEvent`.

    `event` is the event name (`None` or "message" when the stream names none); `data` the
    joined data lines (`None` or "" for a comment-only block, which carries nothing).
    """

    @property
    def event(self) -> str | None: ...

    @property
    def data(self) -> str | None: ...


def json_type(value: object) -> str:
    """The JSON name of a value's type, for error messages that must not quote the value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def provider_message(message: object) -> str | None:
    """A provider's own error message, scrubbed of secret shapes and cut to a short length.

    Returns None for anything that is not a non-empty string.
    """
    if not isinstance(message, str) or not message.strip():
        return None
    text = " ".join(_SCRUBBER.text(message).split())
    if len(text) > PROVIDER_MESSAGE_LIMIT:
        text = text[: PROVIDER_MESSAGE_LIMIT - 1] + "…"
    return text


# Covariant: a reader only ever returns its error, so any reader is a reader of HarnessError.
ErrorT = TypeVar("ErrorT", bound=HarnessError, covariant=True)
ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class PayloadReader(Generic[ErrorT]):
    """Reads one provider payload field by field; every failure names the field, never its
    content. `error` turns a description into the exception its subclass raises."""

    provider: Provider
    label: str

    def error(self, detail: str) -> ErrorT:
        raise NotImplementedError

    def invalid(self, field: str, expected: str, value: object) -> ErrorT:
        return self.error(f"`{field}` should be {expected} but is {json_type(value)}")

    def incomplete(self, field: str, what: str) -> ErrorT:
        return self.error(f"{what} (`{field}`)")

    def object(self, value: JsonValue, field: str) -> dict[str, JsonValue]:
        if not isinstance(value, dict):
            raise self.invalid(field, "an object", value)
        return value

    def optional_object(self, value: JsonValue, field: str) -> dict[str, JsonValue] | None:
        return None if value is None else self.object(value, field)

    def array(self, value: JsonValue, field: str) -> list[JsonValue]:
        if not isinstance(value, list):
            raise self.invalid(field, "an array", value)
        return value

    def optional_array(self, value: JsonValue, field: str) -> list[JsonValue]:
        return [] if value is None else self.array(value, field)

    def string(self, value: JsonValue, field: str) -> str:
        if not isinstance(value, str):
            raise self.invalid(field, "a string", value)
        return value

    def optional_string(self, value: JsonValue, field: str) -> str | None:
        return None if value is None else self.string(value, field)

    def count(self, value: JsonValue, field: str) -> int:
        """A token count: a non-negative integer, or 0 when absent."""
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.invalid(field, "a non-negative integer", value)
        return value


@dataclass(frozen=True)
class WireReader(PayloadReader[AgentDecisionCallException]):
    """Reads a provider's reply; fails with `AgentDecisionCallException(invalid_response)`."""

    def error(self, detail: str) -> AgentDecisionCallException:
        return AgentDecisionCallException(
            f"{self.label} reply is not in the provider's format: {detail}",
            error_type=INVALID_RESPONSE,
            provider=self.provider,
        )

    def decode(self, text: str, field: str) -> JsonValue:
        """One JSON document from a stream's `data` field."""
        try:
            value: JsonValue = json.loads(text)
        except ValueError:
            raise self.incomplete(field, "an event's data is not JSON") from None
        return value


@dataclass(frozen=True)
class RequestReader(PayloadReader[RequestFormatError]):
    """Reads a request body sent to a provider; fails with `RequestFormatError`.

    Only the fields the neutral request holds are read; every other field is left alone, so a
    parameter a provider adds later never breaks the reading.
    """

    def error(self, detail: str) -> RequestFormatError:
        return RequestFormatError(f"{self.label} request is not in the provider's format: {detail}")

    def flag(self, value: JsonValue, field: str) -> bool:
        """A boolean, False when absent."""
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.invalid(field, "a boolean", value)
        return value

    def name(self, value: JsonValue, field: str, *, longest: int | None = 128) -> str:
        """A name: a non-empty string of at most `longest` characters (a tool name's limit by
        default; None for no limit, as for a model)."""
        text = self.string(value, field)
        if not text or (longest is not None and len(text) > longest):
            limit = f"of 1 to {longest} characters" if longest is not None else "that is not empty"
            raise self.error(f"`{field}` should be a name {limit} but has {len(text)}")
        return text

    def positive(self, value: JsonValue, field: str) -> int | None:
        """A positive integer (a token limit), None when absent."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.invalid(field, "a positive integer", value)
        return value

    def number(
        self, value: JsonValue, field: str, *, low: float, high: float, low_included: bool = True
    ) -> float | None:
        """A number from `low` to `high` (`low` itself only when `low_included`), None when
        absent."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.invalid(field, "a number", value)
        if not (low <= value if low_included else low < value) or value > high:
            bound = "from" if low_included else "above"
            raise self.invalid(field, f"a number {bound} {low:g} to {high:g}", value)
        return float(value)

    def choice(self, value: JsonValue, field: str, allowed: Sequence[str]) -> str:
        """One of the `allowed` words; the message lists them, never the word it got."""
        if not isinstance(value, str):
            raise self.invalid(field, f"one of {', '.join(allowed)}", value)
        if value not in allowed:
            raise self.error(f"`{field}` is not one of {', '.join(allowed)}")
        return value

    def text(
        self,
        value: JsonValue,
        field: str,
        *,
        part_types: Sequence[str] = ("text",),
        separator: str = "",
    ) -> str | None:
        """Content: a string, or an array of content parts whose text parts (`type` in
        `part_types`) are joined by `separator`; parts of any other type (images, files, audio)
        are left out. None when absent."""
        if value is None or isinstance(value, str):
            return value
        texts: list[str] = []
        for position, item in enumerate(self.array(value, field)):
            part = self.object(item, f"{field}[{position}]")
            if part.get("type") in part_types:
                texts.append(self.string(part.get("text"), f"{field}[{position}].text"))
        return separator.join(texts)

    def tool(self, spec: dict[str, JsonValue], field: str, *, schema_key: str) -> ToolDefinition:
        """A tool definition from `name`, `description` (empty when absent) and its JSON schema
        under `schema_key` (an empty object schema when absent)."""
        name = self.name(spec.get("name"), f"{field}.name")
        description = self.optional_string(spec.get("description"), f"{field}.description")
        schema = self.optional_object(spec.get(schema_key), f"{field}.{schema_key}")
        if schema is None:
            return self.build(ToolDefinition, field, name=name, description=description or "")
        # no copy: validating `parameters` (JSON values) builds new dicts and lists already
        return self.build(
            ToolDefinition, field, name=name, description=description or "", parameters=schema
        )

    def build(self, model: type[ModelT], field: str, /, **values: object) -> ModelT:
        """`model` built from `values`; a value the model refuses fails naming `field` and the
        model's own field, with pydantic's description of the rule (never the value)."""
        try:
            return model.model_validate(values)
        except ValidationError as error:
            first = error.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            raise self.error(
                f"`{field}` cannot be read ({where or 'value'}: {first['msg']})"
            ) from None


def wire_system(texts: Iterable[str]) -> tuple[SystemFragment, ...]:
    """The system prompt read from a request body: its non-empty texts joined by a blank line (as
    `LlmRequest.system_text` joins fragments) in one `FRAGMENT_WIRE` fragment, none when empty."""
    text = "\n\n".join(text for text in texts if text)
    return (SystemFragment(name=FRAGMENT_WIRE, text=text),) if text else ()


def copy_json(value: JsonValue) -> JsonValue:
    """A deep copy of a JSON value: new dicts and lists, the (immutable) scalars shared.

    What `copy.deepcopy` gives for JSON, without its memo and dispatch, which cost a sixth of a
    realistic agent run when every request copied every tool schema.
    """
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def compact_json(value: JsonValue) -> str:
    """JSON text without insignificant whitespace, keys in their given order."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def event_data(event: ServerSentEventLike) -> str | None:
    """The event's data, or None for an event that carries none (a comment or keep-alive)."""
    data = event.data
    if data is None or not data.strip():
        return None
    return data


def decode_error_body(payload: JsonValue | str) -> JsonValue:
    """An error answer's body as JSON: decoded when given as text, None when it is not JSON."""
    if not isinstance(payload, str):
        return payload
    try:
        body: JsonValue = json.loads(payload)
    except ValueError:
        return None
    return body


def stop_word(
    response: LlmResponse,
    stop_kinds: Mapping[str, AnyStopKind],
    *,
    end_turn: str,
    tool_use: str,
    limit_reached: str,
) -> str:
    """The provider's stop word for a reply that is about to be rendered.

    The reply's own `provider_stop_reason` wins when it is one of the provider's words
    (`stop_kinds`) and means the reply's neutral stop, so a word with no neutral twin (Anthropic
    `stop_sequence`) survives a round trip. Otherwise the neutral stop decides; an `Other`
    reason is kept when it is one of the provider's words and becomes the end-turn word when it
    is not, since a real reply never carries a word outside the provider's vocabulary. Refuses
    `Cancelled` and `Error` with `IllegalArgumentException`: they end runs, no model reply
    carries them.
    """
    stop = response.stop
    word = response.provider_stop_reason
    if word is not None and stop_kinds.get(word) == stop:
        return word
    if isinstance(stop, EndTurn):
        return end_turn
    if isinstance(stop, ToolUse):
        return tool_use
    if isinstance(stop, LimitReached):
        return limit_reached
    if isinstance(stop, OtherStop):
        return stop.reason if stop.reason in stop_kinds else end_turn
    # The kind only: an `Error` stop's message is transcript content, never an error message.
    raise IllegalArgumentException(
        "expected a model reply's stop (end_turn, tool_use, limit_reached or other) but got "
        f"stop.kind={stop.kind!r} (type={type(stop).__name__})"
    )


def stream_pieces(text: str, pieces: int = STREAM_PIECES) -> list[str]:
    """`text` cut into at most `pieces` consecutive non-empty parts that join back to it.

    Returns no part for empty text. The cut depends on the length alone, so the same text
    always streams as the same deltas.
    """
    size = max(1, -(-len(text) // pieces))
    return [text[start : start + size] for start in range(0, len(text), size)]


SCRIPTED_SIGNATURE_PREFIX: Final = b"harness-scripted-thinking\x00"


def thinking_signature(thinking: str) -> str:
    """The signature a rendered reply's reasoning carries (Anthropic `signature`, Gemini
    `thoughtSignature`): base64 of a digest of the thinking text, so the same words always
    sign the same way and a reply replays byte for byte. A provider's own signatures are
    opaque; this one only has their shape."""
    digest = hashlib.sha256(SCRIPTED_SIGNATURE_PREFIX + thinking.encode("utf-8")).digest()
    return base64.b64encode(digest + hashlib.sha256(digest).digest()).decode("ascii")


def reasoning_token_estimate(thinking: str) -> int:
    """The reasoning tokens a scripted reply's thinking counts as: a quarter of its characters,
    rounded up (at least one for any thinking), the usual rule of thumb for English text."""
    return -(-len(thinking) // 4)


def sse_block(data: str, *, event: str | None = None) -> str:
    """One server-sent event block, closing blank line included: `event:` when named, `data:`.

    `data` must be one line (compact JSON always is: JSON escapes line breaks inside strings).
    """
    return (f"event: {event}\n" if event is not None else "") + f"data: {data}\n\n"


def check_error_status(status: int, error_type: str) -> None:
    """Refuse an error body a provider would never send: a non-error status or no error type.

    Raises `IllegalArgumentException`; the status is not part of either provider's error body,
    so this is the only place it is checked.
    """
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise IllegalArgumentException(
            f"expected an HTTP error status from 400 to 599 but got status={status!r} "
            f"(type={type(status).__name__})"
        )
    if not isinstance(error_type, str) or not error_type:
        raise IllegalArgumentException(
            f"expected a non-empty error type but got error_type={error_type!r} "
            f"(type={type(error_type).__name__})"
        )
