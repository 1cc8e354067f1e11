"""`ProviderSpec`: every fact the harness knows about one provider, as plain data.

A spec is what the gateway, the replay server, the cassettes, the scripted transport and the
property kit ask instead of naming a provider: its endpoints and the wire each speaks, the paths
it is recognised by, how a key is sent, where its key and base URL come from, what a request key
leaves out and keeps, its default model, and which wire adapter renders it. A leaf: it imports
nothing of ours, so reading a spec loads no adapter, no pydantic, no HTTP client.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal
from urllib.parse import quote, unquote

Wire = Literal["chat_completions", "responses", "messages", "generate_content"]
"""The wire formats the harness speaks: OpenAI Chat Completions and Responses, Anthropic
Messages, Google Gemini `generateContent`."""

GENERIC_VERSION_SUFFIX = "/v1"
"""Removed from the end of a configured base URL when the SDK suffix is not there: users add
`/v1` to any provider's base URL, out of the OpenAI SDK's habit."""


DEPLOYMENT_PLACEHOLDER = "{deployment}"
"""Stands for one path segment, the deployment's name, in `Endpoint.deployment_paths`."""

MODEL_PLACEHOLDER = "{model}"
"""Stands for one path segment, the model's name, in the `Endpoint.path` of an API that names
the model in its path rather than in its body (Gemini's
`/v1beta/models/{model}:generateContent`)."""

PLACEHOLDER_SEGMENT = r"[^/]+"
"""What a placeholder matches in a request path: one segment (`.` and `..` are refused by the
server after matching)."""

_VERSION = re.compile(r"/v[0-9]+(?:(?:alpha|beta)[0-9]*)?(?=/)")
"""A version segment at the start of an endpoint's path: `/v1`, `/v1beta`, `/v1alpha2`."""


def path_pattern(template: str) -> str:
    """A regular expression (unanchored) of the request paths `template` stands for: its text as
    written, each placeholder (`{model}`, `{deployment}`) one path segment."""
    parts = re.split(r"(\{model\}|\{deployment\})", template)
    return "".join(
        PLACEHOLDER_SEGMENT if index % 2 else re.escape(part) for index, part in enumerate(parts)
    )


@dataclass(frozen=True)
class Endpoint:
    """One API a provider serves: its path (as sent upstream and served by `harness serve`, after
    a cassette or session name) and the wire format it speaks.

    `deployment_paths` are the same API on a host that serves one deployment per model, as that
    host spells it (Azure OpenAI's `/openai/deployments/{deployment}/chat/completions`), with
    `DEPLOYMENT_PLACEHOLDER` for the deployment's name. `harness serve` serves them too, and
    keys, replays and records such a request at the path it came to, as a client's own transport
    does in process: a deployment's cassette holds its deployment paths and `api-version`.

    A `path` with `MODEL_PLACEHOLDER` names the model (Gemini's
    `/v1beta/models/{model}:generateContent`): such a request is keyed at its path, the model's
    name in it (`path_for`)."""

    path: str
    wire: Wire
    deployment_paths: tuple[str, ...] = ()
    streams: bool = False
    """Whether every request to it streams its reply, whatever its body says: an API that
    streams by path (Gemini's `:streamGenerateContent`) rather than by a `stream` member."""
    query: str = ""
    """The query the harness's gateway sends with it (`alt=sse`: Gemini's stream as server-sent
    events rather than one JSON array)."""
    other_versions: tuple[str, ...] = ()
    """Other version segments the same API is served at (`/v1` for Gemini's `/v1beta`, whose
    API holds all of `v1`'s): a request there is the same request, keyed, replayed and recorded
    at the endpoint's own path, so one cassette serves an SDK of either version."""

    @property
    def version(self) -> str:
        """The version segment the path starts with (`/v1`, `/v1beta`), or "" when it has none."""
        found = _VERSION.match(self.path)
        return found.group() if found else ""

    @property
    def unversioned_path(self) -> str:
        """The path without its version (`/messages` for `/v1/messages`): what a client sends
        when its base URL already ends in the version, as the AI SDK's Anthropic and Google
        providers' do. The path itself when it has no version."""
        return self.path.removeprefix(self.version)

    @property
    def other_version_paths(self) -> tuple[str, ...]:
        """The path at each of `other_versions` (`/v1/models/{model}:generateContent`)."""
        return tuple(version + self.unversioned_path for version in self.other_versions)

    @property
    def names_model(self) -> bool:
        """Whether the path names the model (`MODEL_PLACEHOLDER`): a request is then keyed,
        replayed and recorded at the path it came to, the model's name in it."""
        return MODEL_PLACEHOLDER in self.path

    def path_for(self, model: str) -> str:
        """The path a request for `model` goes to: the endpoint's path, its model placeholder (if
        any) filled with the name, percent-encoded. A name given with the collection the path
        already holds (`models/gemini-2.5-flash`, as google-genai accepts it) is not doubled."""
        if not self.names_model:
            return self.path
        before = self.path.partition(MODEL_PLACEHOLDER)[0]
        collection = before.rstrip("/").rsplit("/", 1)[-1] + "/"
        return self.path.replace(MODEL_PLACEHOLDER, quote(model.removeprefix(collection), safe=""))

    def ends(self, path: str) -> bool:
        """Whether a request `path` calls this endpoint, told by its ending: the path after the
        version, each placeholder one segment."""
        return self._ending().search(path) is not None

    def model_in(self, path: str) -> str | None:
        """The model a request `path` ending in this endpoint names (decoded), or None when the
        endpoint names no model or the path does not end in it."""
        if not self.names_model:
            return None
        found = self._ending().search(path)
        return unquote(found.group("model")) if found is not None else None

    def _ending(self) -> re.Pattern[str]:
        return _ending_pattern(self.unversioned_path)


_ENDINGS: dict[str, re.Pattern[str]] = {}


def _ending_pattern(template: str) -> re.Pattern[str]:
    """`template` as a pattern anchored at the end of a path, the model's segment a named group;
    compiled once per template."""
    compiled = _ENDINGS.get(template)
    if compiled is None:
        before, placeholder, after = template.partition(MODEL_PLACEHOLDER)
        regex = path_pattern(before) + (
            f"(?P<model>{PLACEHOLDER_SEGMENT})" + path_pattern(after) if placeholder else ""
        )
        compiled = _ENDINGS.setdefault(template, re.compile(regex + "$"))
    return compiled


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
    non-streamed reply cannot carry cut-off arguments), `tool_input_streams_whole` that a
    streamed one cannot either (each call arrives whole, as on Gemini);
    `thinking_counts_toward_max_tokens` that a reasoning budget is spent out of `max_tokens`.
    What each model accepts (tools, reasoning, `max_completion_tokens`) is not here but in the
    table of the wire adapter the spec names (`model_capabilities`): it is a fact of the models a
    wire serves, written in the LLM layer's types, and a provider that reuses an adapter gets it.
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
    preferred_api_key_variables: tuple[str, ...] = ()
    """Variables read before `api_key_variable`, in order, as the provider's SDK reads them
    (google-genai reads `GOOGLE_API_KEY` before `GEMINI_API_KEY`)."""
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
    snake_case_members: bool = False
    """Whether a request's member names may be written in snake_case as well as lowerCamelCase
    (protobuf's JSON, which Gemini reads): the equivalent key reads them as lowerCamelCase, but
    for the members in `data_members`, whose values are data (a call's arguments, a JSON
    Schema), and the keys of the maps in `map_members` (a schema's `properties`)."""
    data_members: frozenset[str] = frozenset()
    map_members: frozenset[str] = frozenset()
    ignored_when_equivalent: tuple[str, ...] = ()
    equivalent_values: tuple[tuple[str, str, str], ...] = ()
    """Values that mean the same as another at a member (JSON pointer, the value, the value it
    reads as), read as that other in the equivalent key only: OpenAI's `developer` role, which
    the Vercel AI SDK sends a reasoning model in place of `system`."""
    """Members (JSON pointers, in lowerCamelCase) the provider ignores and one client adds:
    left out of the equivalent key only (google-genai's `role` on `systemInstruction`)."""
    tool_result_error_flag: bool = False
    """Whether a tool result carries an error flag on this wire (Anthropic's `is_error`); where it
    does not, only the result's content says a call failed."""
    forced_tool_choice_refusal: tuple[int, str, str] | None = None
    """The provider's HTTP error refusing a call that forces a tool, in its own words: status,
    error type, message (what `harness fuzz` answers a forced call with to try a target on it)."""
    tool_input_is_object: bool = False
    tool_input_streams_whole: bool = False
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
            if endpoint.ends(path):
                return endpoint
        return None

    @property
    def request_path(self) -> str:
        """The path the harness's own gateway sends a request to (with `MODEL_PLACEHOLDER` where
        the API names the model in its path: `request_target` fills it in)."""
        return self.endpoints[0].path

    def request_target(self, model: str, *, stream: bool) -> str:
        """The path and query the harness's own gateway sends a request for `model` to: the first
        endpoint's, or for a streamed request on an API that streams by path, the first endpoint
        of the same wire that `streams` (Gemini's `:streamGenerateContent?alt=sse`)."""
        endpoint = self.endpoints[0]
        if stream:
            endpoint = next(
                (
                    served
                    for served in self.endpoints
                    if served.streams and served.wire == endpoint.wire
                ),
                endpoint,
            )
        path = endpoint.path_for(model)
        return f"{path}?{endpoint.query}" if endpoint.query else path

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
        versions = (
            version
            for endpoint in self.endpoints
            for version in (endpoint.version, *endpoint.other_versions)
        )
        for suffix in (self.sdk_base_suffix, GENERIC_VERSION_SUFFIX, *versions):
            if suffix and trimmed.endswith(suffix):
                return trimmed.removesuffix(suffix)
        return trimmed

    def upstream_root(self, environ: Mapping[str, str]) -> str:
        """Where this provider is reached: `base_url_variable` in `environ`, else the default."""
        return self.server_root(environ.get(self.base_url_variable) or self.default_base_url)

    def api_key(self, environ: Mapping[str, str]) -> str | None:
        """The key in `environ`: the first of `preferred_api_key_variables` and then
        `api_key_variable` that is set and not empty, else None."""
        for variable in (*self.preferred_api_key_variables, self.api_key_variable):
            if environ.get(variable):
                return environ[variable]
        return None
