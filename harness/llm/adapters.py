"""The adapter contract and the dispatch: `adapter_for("openai" | "anthropic")`.

An adapter is a module with eleven functions (`ProviderAdapter`): render the exact wire JSON of a
neutral `LlmRequest`, name its path and non-secret headers, and parse a JSON reply, a stream of
server-sent events, or an error answer into neutral values; and, the other way round, read a
request body back into a neutral `LlmRequest` (`parse_request`, for code that receives requests
it did not build, such as an agent written on a provider SDK, and `forced_tool`, which tells a
forced call from a work call by its tool choice alone), render a neutral `LlmResponse` as
the provider's JSON reply or event stream and an error as the provider's error body, so a
scripted reply goes through the same parser as a recorded one.
`harness.llm.openai` (Chat Completions) and `harness.llm.anthropic` (Messages) are the two
implementations; a gateway holds one of them and never branches on the provider. What both share
lives in `harness.llm._wire`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final, Protocol, cast

from pydantic import JsonValue

from harness.errors import AgentDecisionCallException, IllegalArgumentException
from harness.llm._wire import FRAGMENT_WIRE, RequestFormatError, ServerSentEventLike
from harness.llm.models import LlmRequest, LlmResponse
from harness.providers import PROVIDERS, Provider

__all__ = [
    "FRAGMENT_WIRE",
    "ProviderAdapter",
    "RequestFormatError",
    "ServerSentEventLike",
    "adapter_for",
]


class ProviderAdapter(Protocol):
    """What a gateway needs from one provider's wire format."""

    def render_request(self, request: LlmRequest) -> dict[str, JsonValue]: ...

    def parse_request(self, body: JsonValue) -> LlmRequest: ...

    def forced_tool(self, body: JsonValue) -> str | None: ...

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
    try:
        module = _ADAPTERS[provider]
    except KeyError:
        raise IllegalArgumentException(
            f"expected one of {', '.join(PROVIDERS)} but got provider={provider!r} "
            f"(type={type(provider).__name__})"
        ) from None
    return cast(ProviderAdapter, importlib.import_module(module))


_ADAPTERS: Final = {"openai": "harness.llm.openai", "anthropic": "harness.llm.anthropic"}
"""Each provider's adapter module, imported the first time a gateway needs it (a run on one
provider loads nothing of the other's)."""

if TYPE_CHECKING:  # mypy checks that both modules implement the protocol
    from harness.llm import anthropic, openai

    _IMPLEMENTATIONS: tuple[ProviderAdapter, ...] = (openai, anthropic)
