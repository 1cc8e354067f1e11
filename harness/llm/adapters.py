"""The adapter contract and the dispatch: `adapter_for("openai" | "anthropic")`.

An adapter is a module with six functions (`ProviderAdapter`): render the exact wire JSON of a
neutral `LlmRequest`, name its path and non-secret headers, and parse a JSON reply, a stream of
server-sent events, or an error answer into neutral values. `harness.llm.openai` (Chat
Completions) and `harness.llm.anthropic` (Messages) are the two implementations; a gateway holds
one of them and never branches on the provider.

This module also holds what both adapters share: `WireReader`, which reads a provider payload
field by field and fails with `AgentDecisionCallException(error_type="invalid_response")` naming
the field and the JSON type it found, never the content; and `provider_message`, which lets a
provider's short error message into an exception only after scrubbing secret shapes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Protocol

from pydantic import JsonValue

from harness.cassettes.scrub import Scrubber
from harness.errors import AgentDecisionCallException, IllegalArgumentException
from harness.llm.capabilities import PROVIDERS, Provider
from harness.llm.models import LlmRequest, LlmResponse

INVALID_RESPONSE: Final = "invalid_response"
"""The `error_type` of a reply that is not in the provider's format."""

PROVIDER_MESSAGE_LIMIT: Final = 300
"""How much of a provider's own error message an exception may carry."""

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
