"""The LLM gateway: one call, `complete(request) -> response`, over an httpx client.

The wire request is exactly what the provider adapter renders (no provider SDK in between), so
cassettes hash what the harness decided. The transport is injectable: `CassetteTransport` in
replay, the network only in a record mode. Base URLs and keys come only from the environment or
the harness configuration (`GatewayConfig`), never from workflow input.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

import httpx2

from harness.errors import AgentDecisionCallException, HarnessError
from harness.http_clients import (
    HTTPX2,
    AnyResponse,
    AnySyncTransport,
    HttpLibrary,
    describe_transport,
    http_errors,
    libraries,
    timeout_errors,
)
from harness.llm.adapters import adapter_for
from harness.llm.capabilities import check_request
from harness.llm.models import LlmRequest, LlmResponse
from harness.providers import (
    BUILT_IN,
    Provider,
    ProviderSpec,
    as_provider,
    find_provider,
    unknown_provider,
)
from harness.scrub import redact

if TYPE_CHECKING:
    import httpx

    from harness.llm.script import ScriptedReply

# The built-in providers' facts as tables, for code that imports them from here; the gateway
# itself asks the provider's spec, so a provider registered at run time works too.
DEFAULT_BASE_URLS: Final[Mapping[Provider, str]] = {
    name: spec.default_base_url for name, spec in BUILT_IN.items()
}
API_KEY_VARIABLES: Final[Mapping[Provider, str]] = {
    name: spec.api_key_variable for name, spec in BUILT_IN.items()
}
BASE_URL_VARIABLES: Final[Mapping[Provider, str]] = {
    name: spec.base_url_variable for name, spec in BUILT_IN.items()
}
DEFAULT_TIMEOUT_SECONDS: Final = 120.0


class GatewayConfigError(HarnessError, ValueError):
    """Raised when the gateway cannot be configured as asked: no API key when recording against the
    live provider, an unknown provider, or a transport the gateway cannot call (it makes blocking
    calls through an httpx2 or httpx sync transport)."""

    code = "gateway_config_invalid"


@dataclass(frozen=True, kw_only=True)
class GatewayConfig:
    """Where and how to reach one provider. `api_key` never appears in repr or errors."""

    provider: Provider
    base_url: str
    api_key: str | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    def __repr__(self) -> str:
        key = "set" if self.api_key else "unset"
        return (
            f"GatewayConfig(provider={self.provider!r}, base_url={self.base_url!r}, api_key={key})"
        )

    @classmethod
    def from_environment(
        cls, provider: str, environ: Mapping[str, str] | None = None
    ) -> GatewayConfig:
        """Read the provider's key and base URL variables (`OPENAI_API_KEY`, `OPENAI_BASE_URL`;
        `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`; `GOOGLE_API_KEY` else `GEMINI_API_KEY`, and
        `GOOGLE_GEMINI_BASE_URL`; see `ProviderSpec`), else its default base URL.

        A base URL variable may include the suffix the official SDKs use (`/v1`); it is removed,
        since the endpoints' paths include it.
        """
        checked = parse_provider(provider)
        spec = _spec(checked)
        env = os.environ if environ is None else environ
        return cls(provider=checked, base_url=spec.upstream_root(env), api_key=spec.api_key(env))

    def require_api_key(self) -> str:
        """The key, or a `GatewayConfigError` naming the variable to set (before any request)."""
        if not self.api_key:
            variable = _spec(self.provider).api_key_variable
            raise GatewayConfigError(
                f"no API key for {self.provider}: set {variable} in the environment to record "
                "against the live provider"
            )
        return self.api_key


def parse_provider(value: str) -> Provider:
    """`value` as a registered provider's name, or a `GatewayConfigError` listing them."""
    checked = as_provider(value)
    if checked is None:
        raise GatewayConfigError(unknown_provider(value))
    return checked


def _spec(provider: str) -> ProviderSpec:
    spec = find_provider(provider)
    if spec is None:  # unregistered since the configuration was made
        raise GatewayConfigError(unknown_provider(provider))
    return spec


def _library_for(transport: object) -> HttpLibrary:
    if transport is None:
        return HTTPX2
    for library in libraries():
        if library.owns_transport(transport, asynchronous=False):
            return library
    raise GatewayConfigError(
        f"expected an httpx2 or httpx sync transport but got {describe_transport(transport)}; the "
        "gateway makes blocking calls"
    )


class Completer(Protocol):
    """Anything that answers a neutral request with a neutral response (the gateway, a fake)."""

    def complete(self, request: LlmRequest) -> LlmResponse: ...


class LlmGateway:
    """One provider behind one HTTP client; `complete` makes exactly one HTTP request.

    The client is an `httpx2` one, the official SDKs' stack, unless `transport` is an `httpx` 0.28
    transport (a `respx` mock, say), which gets an `httpx` client. A transport that is neither, or
    async only, is a `GatewayConfigError` naming what was passed.
    """

    def __init__(self, config: GatewayConfig, *, transport: AnySyncTransport | None = None) -> None:
        self.config = config
        self.spec = _spec(config.provider)
        self.adapter = adapter_for(config.provider)
        library = _library_for(transport)
        self._client: httpx2.Client | httpx.Client = library.module.Client(
            base_url=config.base_url,
            transport=transport,
            timeout=config.timeout_seconds,
            headers=self._headers(),
        )

    @classmethod
    def scripted(
        cls, provider: str, replies: Iterable[ScriptedReply | Mapping[str, Any]]
    ) -> LlmGateway:
        """A gateway answered by `replies`, in order, in `provider`'s wire format (no network):
        the provider is named once, for the script and the gateway."""
        from harness.llm.script import ScriptedReply, ScriptTransport

        checked = parse_provider(provider)
        script = [ScriptedReply.model_validate(reply) for reply in replies]
        config = GatewayConfig(provider=checked, base_url=_spec(checked).default_base_url)
        return cls(config, transport=ScriptTransport(checked, script))

    @classmethod
    def replaying(cls, provider: str, cassette: str | PathLike[str], **options: Any) -> LlmGateway:
        """A gateway replaying (or, with `mode=`, recording) `cassette` for `provider`; keys and
        base URL come from the environment as for a live gateway. `options` go to
        `CassetteTransport` (`mode`, `volatile`, `strict`, `allow_repeats`, ...)."""
        from harness.cassettes import CassetteTransport

        config = GatewayConfig.from_environment(provider)
        transport = CassetteTransport(cassette, provider=config.provider, **options)
        return cls(config, transport=transport)

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", **self.spec.version_headers}
        if self.config.api_key:
            headers.update(self.spec.auth_headers(self.config.api_key))
        return headers

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Send `request` once and parse the answer.

        Raises `ToolChoiceUnsupportedError` before sending when the model cannot be forced to call
        the named tool, and `AgentDecisionCallException` (status and provider error type, never
        a credential nor the request body) for non-2xx answers, timeouts and transport failures.
        A cassette miss propagates as the same exception. Every error's message (and error type)
        has the API key this gateway sends and the environment's `*_API_KEY` values removed
        (providers quote the key they refused: "Incorrect API key provided: sk-...").
        """
        try:
            return self._complete(request)
        except HarnessError as error:
            self._redact(error)
            raise

    def _redact(self, error: HarnessError) -> None:
        """Remove the key (and the environment's secrets) from `error`'s message in place."""
        secrets = (self.config.api_key,) if self.config.api_key else ()
        error.args = tuple(
            redact(arg, secrets=secrets) if isinstance(arg, str) else arg for arg in error.args
        )
        if isinstance(error, AgentDecisionCallException) and error.error_type is not None:
            error.error_type = redact(error.error_type, secrets=secrets)

    def _complete(self, request: LlmRequest) -> LlmResponse:
        check_request(self.config.provider, request)
        body = json.dumps(
            self.adapter.render_request(request), ensure_ascii=False, separators=(",", ":")
        ).encode("utf-8")
        path = self.spec.request_target(request.model, stream=request.stream)
        try:
            if request.stream:
                with self._client.stream("POST", path, content=body) as response:
                    if not response.is_success:
                        response.read()
                        raise self._error(response)
                    # httpx-sse reads either library's response (the same API); it brings
                    # `httpx` 0.28, so it is loaded only for a streamed call
                    from httpx_sse import EventSource

                    events = EventSource(cast("httpx.Response", response)).iter_sse()
                    return self.adapter.parse_stream(events)
            response = self._client.post(path, content=body)
        except timeout_errors():
            raise AgentDecisionCallException(
                f"{self.config.provider} call timed out after {self.config.timeout_seconds:g}s",
                status=None,
                error_type="timeout",
                provider=self.config.provider,
            ) from None
        except http_errors() as error:
            # transport failures, and bodies httpx cannot decode (a corrupt gzip, too many
            # redirects): the gateway failed either way
            raise AgentDecisionCallException(
                f"{self.config.provider} call failed in transport: {type(error).__name__}",
                status=None,
                error_type="transport",
                provider=self.config.provider,
            ) from None
        if not response.is_success:
            raise self._error(response)
        try:
            payload = response.json()
        except ValueError:
            raise AgentDecisionCallException(
                f"{self.config.provider} answered {response.status_code} with a body that is not "
                "JSON",
                status=response.status_code,
                error_type="invalid_response",
                provider=self.config.provider,
            ) from None
        response_model = self.adapter.parse_response(payload)
        retrieval = payload.get("retrieval") if isinstance(payload, dict) else None
        if retrieval is not None:
            # The LLM compatibility gateway's extension: retrieval receipts.
            metadata = {**response_model.metadata, "retrieval": retrieval}
            response_model = response_model.model_copy(update={"metadata": metadata})
        return response_model

    def _error(self, response: AnyResponse) -> AgentDecisionCallException:
        try:
            payload = response.json()
        except ValueError:
            payload = response.text
        return self.adapter.parse_error(response.status_code, payload)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> LlmGateway:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
