"""The adapter contract and the dispatch: `adapter_for(provider)`.

An adapter is a module with ten functions (`ProviderAdapter`): render the exact wire JSON of a
neutral `LlmRequest` (the path it goes to is `request_path`'s), and parse a JSON reply, a stream
of server-sent events, or an error answer into neutral values; say what a model accepts on its
wire (`model_capabilities`, from its table of model rules); and, the other way round, read a
request body back into a neutral `LlmRequest` (`parse_request`, for code that receives requests
it did not build, such as an agent written on a provider SDK, given the path the body was sent
to, where Gemini names the model and whether it streams; and `forced_tool`, which tells a forced
call from a work call by its tool choice alone), render a neutral `LlmResponse` as the
provider's JSON reply or event stream and an error as the provider's error body, so a scripted
reply goes through the same parser as a recorded one. `harness.llm.openai` (Chat Completions),
`harness.llm.anthropic` (Messages) and `harness.llm.gemini` (Gemini `generateContent`) are the
implementations; a gateway holds one of them and never branches on the provider. A provider's
other endpoints get their replies rendered by the renderer of their own wire
(`reply_renderer`): OpenAI's `/v1/responses` by `harness.llm.openai_responses`. What they share
lives in `harness.llm._wire`. Where a request goes and with which headers is the provider's
(`ProviderSpec`), not the adapter's: a provider that reuses an adapter (an OpenAI-compatible API
at its own path) keeps its own. Which adapter a provider speaks is `ProviderSpec.adapter`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Protocol, cast

from pydantic import JsonValue

from harness.errors import AgentDecisionCallException, IllegalArgumentException
from harness.llm._wire import FRAGMENT_WIRE, RequestFormatError, ServerSentEventLike
from harness.llm.models import LlmRequest, LlmResponse
from harness.providers import Provider, ProviderSpec, Wire, find_provider, unknown_provider

if TYPE_CHECKING:
    from harness.llm.capabilities import Capabilities

__all__ = [
    "FRAGMENT_WIRE",
    "WIRE_RENDERERS",
    "ProviderAdapter",
    "ReplyRenderer",
    "RequestFormatError",
    "ServerSentEventLike",
    "adapter_for",
    "reply_renderer",
]


class ProviderAdapter(Protocol):
    """What a gateway needs from one provider's wire format."""

    def render_request(self, request: LlmRequest) -> dict[str, JsonValue]: ...

    def parse_request(self, body: JsonValue, *, path: str | None = None) -> LlmRequest: ...

    def forced_tool(self, body: JsonValue) -> str | None: ...

    def model_capabilities(self, provider: Provider, model: str) -> Capabilities: ...

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


class ReplyRenderer(Protocol):
    """What renders a neutral reply in one wire: the reply as a plain JSON body or as its event
    stream, and an error as the wire's error body (a `ProviderAdapter` is one for its wire)."""

    def render_response(
        self, response: LlmResponse, *, model: str, response_id: str
    ) -> dict[str, JsonValue]: ...

    def render_stream(
        self, response: LlmResponse, *, model: str, response_id: str
    ) -> list[str]: ...

    def render_error(self, status: int, error_type: str, message: str) -> dict[str, JsonValue]: ...


WIRE_RENDERERS: Final[Mapping[Wire, str]] = MappingProxyType(
    {
        "chat_completions": "harness.llm.openai",
        "responses": "harness.llm.openai_responses",
        "messages": "harness.llm.anthropic",
        "generate_content": "harness.llm.gemini",
    }
)
"""The module that renders replies in each wire the harness speaks."""


def adapter_for(provider: Provider) -> ProviderAdapter:
    """The adapter module of a registered provider (its spec's `adapter`), imported the first
    time it is asked for, so a run on one provider loads nothing of the other's; refuses any
    other name, listing the registered ones."""
    spec = find_provider(provider)
    if spec is None:
        raise IllegalArgumentException(unknown_provider(provider))
    return cast(ProviderAdapter, importlib.import_module(spec.adapter))


def reply_renderer(spec: ProviderSpec, wire: Wire) -> ReplyRenderer:
    """What renders `spec`'s replies in `wire`: its own adapter for the wire the adapter speaks
    (its first endpoint's), the harness's renderer of `wire` (`WIRE_RENDERERS`) for any other of
    its endpoints, so OpenAI's `/v1/responses` is answered in the Responses wire, never in
    Chat Completions. Imported the first time it is asked for."""
    module = spec.adapter if wire == spec.endpoints[0].wire else WIRE_RENDERERS[wire]
    return cast(ReplyRenderer, importlib.import_module(module))


if TYPE_CHECKING:  # mypy checks that the modules implement the protocols
    from harness.llm import anthropic, gemini, openai, openai_responses

    _IMPLEMENTATIONS: tuple[ProviderAdapter, ...] = (openai, anthropic, gemini)
    _RENDERERS: tuple[ReplyRenderer, ...] = (openai, anthropic, gemini, openai_responses)
