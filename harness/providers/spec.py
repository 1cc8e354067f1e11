"""`ProviderSpec`: every fact the harness knows about one provider, as plain data.

A spec is what the gateway, the replay server, the cassettes, the scripted transport and the
property kit ask instead of naming a provider: its endpoints and the wire each speaks, the paths
it is recognised by, how a key is sent, where its key and base URL come from, what a request key
leaves out and keeps, its default model, and which wire adapter renders it. A leaf: it imports
nothing of ours, so reading a spec loads no adapter, no pydantic, no HTTP client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

Wire = Literal["chat_completions", "responses", "messages"]
"""The wire formats the harness speaks: OpenAI Chat Completions and Responses, Anthropic
Messages."""

GENERIC_VERSION_SUFFIX = "/v1"
"""Removed from the end of a configured base URL when the SDK suffix is not there: users add
`/v1` to any provider's base URL, out of the OpenAI SDK's habit."""


DEPLOYMENT_PLACEHOLDER = "{deployment}"
"""Stands for one path segment, the deployment's name, in `Endpoint.deployment_paths`."""


@dataclass(frozen=True)
class Endpoint:
    """One API a provider serves: its path (as sent upstream and served by `harness serve`, after
    a cassette or session name) and the wire format it speaks.

    `deployment_paths` are the same API on a host that serves one deployment per model, as that
    host spells it (Azure OpenAI's `/openai/deployments/{deployment}/chat/completions`), with
    `DEPLOYMENT_PLACEHOLDER` for the deployment's name. `harness serve` serves them too, and
    keys, replays and records such a request at the path it came to, as a client's own transport
    does in process: a deployment's cassette holds its deployment paths and `api-version`."""

    path: str
    wire: Wire
    deployment_paths: tuple[str, ...] = ()

    @property
    def unversioned_path(self) -> str:
        """The path without its version (`/messages` for `/v1/messages`): what a client sends
        when its base URL already ends in the version, as the AI SDK's Anthropic provider's
        does. The path itself when it has no version."""
        if self.path.startswith(GENERIC_VERSION_SUFFIX + "/"):
            return self.path.removeprefix(GENERIC_VERSION_SUFFIX)
        return self.path


@dataclass(frozen=True, kw_only=True)
class ProviderSpec:
    """One provider, in one place. Frozen: a spec is registered whole and never changed.

    `endpoints` come in order of preference: the first is the one the harness's own gateway
    sends to (its wire is the one `adapter` renders). `detected_paths` are the path endings that
    name this provider in a request made by anyone (`detect_provider`), served or not, such as
    `/embeddings` or `/messages/count_tokens`.

    `sdk_base_suffix` is what the provider's official SDKs expect at the end of their base URL
    (`/v1` for OpenAI's, nothing for Anthropic's, which add `/v1` themselves), so a server root
    plus the suffix is the base URL to give an SDK. Other SDKs write it their own way (the AI
    SDK's Anthropic provider wants `/v1`): `harness serve` takes every endpoint with and without
    its version, so either spelling reaches it.

    `volatile_fields` are JSON pointers of body fields that vary between runs without changing
    the answer: the request key leaves them out. `keyed_headers` are the headers that change
    what the provider does (version, beta): they are part of the request key and are the only
    provider headers the replay server forwards upstream. `version_headers` are the ones the API
    requires on every request, with the value the harness's gateway sends.

    `json_text_fields` and `text_block_fields` are what a client may spell two ways for one
    request (JSON pointers, `*` for every item): a string holding JSON text (a tool call's
    arguments, which one client sends back as the model wrote them and another as its own
    `JSON.stringify` of the parsed value), and a text given either as a string or as a list of
    one text block (`[{"type": "text", "text": ...}]`). The request key keeps the bytes as
    sent; a cassette that has no interaction under that key replays the one whose request
    holds the same values (`harness.cassettes.key.equivalent_request_key`).

    `tool_input_is_object` says a tool call's input is always a JSON object on this wire (a
    non-streamed reply cannot carry cut-off arguments); `thinking_counts_toward_max_tokens` that
    a reasoning budget must fit under `max_tokens`. What each model accepts (tools, reasoning,
    `max_completion_tokens`) is not here but in the table of the wire adapter the spec names
    (`model_capabilities`): it is a fact of the models a wire serves, written in the LLM layer's
    types, and a provider that reuses an adapter gets it.
    """

    name: str
    adapter: str
    """The module path of the wire adapter (`harness.llm.openai`), imported on first use."""
    endpoints: tuple[Endpoint, ...]
    detected_paths: tuple[str, ...]
    sdk_base_suffix: str
    default_base_url: str
    api_key_variable: str
    base_url_variable: str
    auth_header: str
    auth_scheme: str = ""
    """What comes before the key in `auth_header` (`"Bearer "`), or nothing."""
    volatile_fields: tuple[str, ...] = ()
    keyed_headers: frozenset[str] = frozenset()
    version_headers: Mapping[str, str] = field(default_factory=dict)
    default_model: str
    tool_models: tuple[str, ...]
    """Models that accept tools and a forced tool choice (without reasoning), `default_model`
    among them: what generated agents run on."""
    json_text_fields: tuple[str, ...] = ()
    text_block_fields: tuple[str, ...] = ()
    tool_input_is_object: bool = False
    thinking_counts_toward_max_tokens: bool = False

    def __post_init__(self) -> None:
        # a copy nobody can change: the spec is frozen, its mapping too
        object.__setattr__(self, "version_headers", MappingProxyType(dict(self.version_headers)))
        if not self.endpoints:
            raise ValueError(f"expected at least one endpoint but got provider {self.name!r}")
        if self.default_model not in self.tool_models:
            raise ValueError(
                f"expected default_model among tool_models but got "
                f"default_model={self.default_model!r} (tool_models={self.tool_models!r})"
            )

    def endpoint_at(self, path: str) -> Endpoint | None:
        """The endpoint a request `path` calls, told by its ending: the endpoint's path after
        the version (`/responses` for `/v1/responses`), so a request through an
        OpenAI-compatible prefix or an Azure deployment is told too. None for a path that ends
        in none of them (`/v1/embeddings`, `/v1/messages/count_tokens`): an API of this
        provider that the harness does not speak."""
        for endpoint in sorted(self.endpoints, key=lambda served: -len(served.path)):
            if path.endswith(endpoint.unversioned_path):
                return endpoint
        return None

    @property
    def request_path(self) -> str:
        """The path the harness's own gateway sends a request to."""
        return self.endpoints[0].path

    def auth_headers(self, key: str) -> dict[str, str]:
        """The header that carries `key` (`authorization: Bearer KEY`, `x-api-key: KEY`)."""
        return {self.auth_header: f"{self.auth_scheme}{key}"}

    def sdk_base_url(self, root: str) -> str:
        """The base URL this provider's SDKs take to reach `root` (a server root, or a cassette's
        or session's URL on the replay server)."""
        return root + self.sdk_base_suffix

    def server_root(self, base_url: str) -> str:
        """`base_url` as configured (with or without the SDK's suffix, trailing slashes
        allowed) reduced to the root the endpoints' paths are appended to."""
        trimmed = base_url.rstrip("/")
        for suffix in (self.sdk_base_suffix, GENERIC_VERSION_SUFFIX):
            if suffix and trimmed.endswith(suffix):
                return trimmed.removesuffix(suffix)
        return trimmed

    def upstream_root(self, environ: Mapping[str, str]) -> str:
        """Where this provider is reached: `base_url_variable` in `environ`, else the default."""
        return self.server_root(environ.get(self.base_url_variable) or self.default_base_url)

    def api_key(self, environ: Mapping[str, str]) -> str | None:
        """The key `api_key_variable` holds in `environ`, or None when unset or empty."""
        return environ.get(self.api_key_variable) or None
