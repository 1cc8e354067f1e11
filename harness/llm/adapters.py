"""The adapter contract and the dispatch: `adapter_for("openai" | "anthropic")`.

An adapter is a module with nine functions (`ProviderAdapter`): render the exact wire JSON of a
neutral `LlmRequest`, name its path and non-secret headers, and parse a JSON reply, a stream of
server-sent events, or an error answer into neutral values; and, the other way round, render a
neutral `LlmResponse` as the provider's JSON reply or event stream and an error as the provider's
error body, so a scripted reply goes through the same parser as a recorded one.
`harness.llm.openai` (Chat Completions) and `harness.llm.anthropic` (Messages) are the two
implementations; a gateway holds one of them and never branches on the provider.

This module also holds what both adapters share: `WireReader`, which reads a provider payload
field by field and fails with `AgentDecisionCallException(error_type="invalid_response")` naming
the field and the JSON type it found, never the content; `provider_message`, which lets a
provider's short error message into an exception only after scrubbing secret shapes; and the
small deterministic pieces of reply rendering (`stop_word`, `stream_pieces`, `sse_block`,
`check_error_status`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from pydantic import JsonValue

from harness.cassettes.scrub import Scrubber
from harness.errors import AgentDecisionCallException, IllegalArgumentException
from harness.llm.capabilities import PROVIDERS, Provider
from harness.llm.models import LlmRequest, LlmResponse
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, OtherStop, ToolUse

INVALID_RESPONSE: Final = "invalid_response"
"""The `error_type` of a reply that is not in the provider's format."""

PROVIDER_MESSAGE_LIMIT: Final = 300
"""How much of a provider's own error message an exception may carry."""

STREAM_PIECES: Final = 3
"""How many deltas a rendered stream cuts one text, or one tool call's arguments, into."""

_SCRUBBER: Final = Scrubber()


class ServerSentEventLike(Protocol):
    """One server-sent event as `httpx_sse.ServerSentEvent` or `harness.cassettes.sse.SseEvent`.

    `event` is the event name (`None` or "message" when the stream names none); `data` the
    joined data lines (`None` or "" for a comment-only block, which carries nothing).
    """

    @property
    def event(self) -> str | None: ...

    @property
    def data(self) -> str | None: ...


class ProviderAdapter(Protocol):
    """What a gateway needs from one provider's wire format."""

    def render_request(self, request: LlmRequest) -> dict[str, JsonValue]: ...

    def request_path(self, request: LlmRequest) -> str: ...

    def request_headers(self) -> dict[str, str]: ...

    def parse_response(self, payload: JsonValue) -> LlmResponse: ...

    def parse_stream(self, events: Iterable[ServerSentEventLike]) -> LlmResponse: ...

    def parse_error(self, status: int, payload: JsonValue | str) -> AgentDecisionCallException: ...

    def render_response(
        self, response: LlmResponse, *, model: str, response_id: str
    ) -> dict[str, JsonValue]: ...

    def render_stream(
        self, response: LlmResponse, *, model: str, response_id: str
    ) -> list[str]: ...

    def render_error(self, status: int, error_type: str, message: str) -> dict[str, JsonValue]: ...


def adapter_for(provider: Provider) -> ProviderAdapter:
    """The adapter module for `provider`; refuses any other name, listing the supported ones."""
    # Imported here because both adapters import this module's shared helpers.
    from harness.llm import anthropic, openai

    adapters: dict[str, ProviderAdapter] = {"openai": openai, "anthropic": anthropic}
    try:
        return adapters[provider]
    except KeyError:
        raise IllegalArgumentException(
            f"expected one of {', '.join(PROVIDERS)} but got provider={provider!r} "
            f"(type={type(provider).__name__})"
        ) from None


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


@dataclass(frozen=True)
class WireReader:
    """Reads one provider's payload; every failure names the field, never its content."""

    provider: Provider
    label: str

    def invalid(self, field: str, expected: str, value: object) -> AgentDecisionCallException:
        return AgentDecisionCallException(
            f"{self.label} reply is not in the provider's format: `{field}` should be "
            f"{expected} but is {json_type(value)}",
            error_type=INVALID_RESPONSE,
            provider=self.provider,
        )

    def incomplete(self, field: str, what: str) -> AgentDecisionCallException:
        return AgentDecisionCallException(
            f"{self.label} reply is not in the provider's format: {what} (`{field}`)",
            error_type=INVALID_RESPONSE,
            provider=self.provider,
        )

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

    def decode(self, text: str, field: str) -> JsonValue:
        """One JSON document from a stream's `data` field."""
        try:
            value: JsonValue = json.loads(text)
        except ValueError:
            raise self.incomplete(field, "an event's data is not JSON") from None
        return value


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
