"""Which cassette or session a request is for, and which provider endpoint it calls.

`/c/<cassette>/v1/chat/completions` serves `<cassettes>/<cassette>.json`; `/s/<session>/v1/...`
serves what a session attached. The endpoint is recognised at the end of the path, so a cassette
may live in folders of any name (`/c/v1/old/v1/messages` is cassette `v1/old`). The endpoints
are every registered provider's (`ProviderSpec.endpoints`), each in three spellings, because SDKs
write a base URL differently:

- its path (`/v1/messages`), after a base URL without the version (the official SDKs');
- its path without the version (`/messages`), after a base URL that ends in it (the AI SDK's
  Anthropic provider, whose default base URL is `https://api.anthropic.com/v1`, and its Google
  provider, whose is `https://generativelanguage.googleapis.com/v1beta`);
- its path at another version of the same API (`/v1/models/<model>:generateContent` for Gemini's
  `/v1beta/models/<model>:generateContent`: google-genai 3 calls `v1`);
- its deployment paths (`/openai/deployments/<deployment>/chat/completions`: Azure OpenAI).

An endpoint whose path names the model (Gemini's `/v1beta/models/<model>:generateContent`)
takes any one path segment there.

The spelling that starts earliest in the path wins, so the reading is never ambiguous: a path
ending in `/v1/messages` is always the versioned endpoint (`/c/x/v1/messages` is cassette `x`,
never `x/v1`), and a deployment path wins over the `/chat/completions` it ends in. At the same
start a provider's own path wins over a deployment path, and that over a path without version.
The first three spellings are one request: it is keyed, replayed and recorded at the endpoint's
path (the model's name in it, for an endpoint that names one), so one cassette serves every SDK.
A deployment path is keyed at itself, as in process.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, Literal

from harness.errors import HarnessError
from harness.providers import (
    BUILT_IN,
    Provider,
    ProviderSpec,
    detect_provider,
    provider_of,
    served_endpoints,
)
from harness.providers.spec import (
    DEPLOYMENT_PLACEHOLDER,
    GENERIC_VERSION_SUFFIX,
    MODEL_PLACEHOLDER,
    Endpoint,
    path_pattern,
)

ENDPOINTS: Final[dict[str, Provider]] = {
    endpoint.path: name for name, spec in BUILT_IN.items() for endpoint in spec.endpoints
}
"""The built-in provider APIs the server speaks, by path (it serves every registered provider's:
`harness.providers.served_endpoints()`)."""


@dataclass(frozen=True)
class _Spelling:
    """One way a path names an endpoint: the endpoint, and whether the request is keyed at the
    path as sent (a deployment path) rather than at the endpoint's."""

    served: Endpoint
    deployment: bool

    @property
    def endpoint(self) -> str:
        return self.served.path


@dataclass(frozen=True)
class _EndpointPattern:
    """Every spelling of the registry's endpoints as one pattern anchored at the end, and which
    spelling each of its named groups is."""

    endpoints: Mapping[str, ProviderSpec]
    pattern: re.Pattern[str]
    spellings: Mapping[str, _Spelling]
    described: str
    """The spellings as a routing error names them."""


_compiled: list[_EndpointPattern] = []
"""The endpoint pattern, compiled from the registry's endpoints it names."""


def _endpoint_pattern(endpoints: Mapping[str, ProviderSpec]) -> _EndpointPattern:
    """`endpoints` as one pattern, compiled again only when a provider is registered or removed
    (the registry hands out a new mapping then)."""
    if _compiled and _compiled[0].endpoints is endpoints:
        return _compiled[0]
    served = [
        endpoint
        for path, spec in endpoints.items()
        for endpoint in spec.endpoints
        if endpoint.path == path
    ]
    # listed in order of precedence: a regular expression prefers the first alternative that
    # matches at the earliest start
    alternatives: list[tuple[str, _Spelling]] = [
        (path_pattern(path), _Spelling(endpoint, deployment=False))
        for endpoint in served
        for path in (endpoint.path, *endpoint.other_version_paths)
    ]
    deployment_paths: list[str] = []
    for endpoint in served:
        for template in endpoint.deployment_paths:
            alternatives.append((path_pattern(template), _Spelling(endpoint, deployment=True)))
            deployment_paths.append(template.replace(DEPLOYMENT_PLACEHOLDER, "<deployment>"))
    alternatives += [
        (path_pattern(endpoint.unversioned_path), _Spelling(endpoint, deployment=False))
        for endpoint in served
        if endpoint.unversioned_path != endpoint.path
    ]
    groups = {f"spelling{index}": spelling for index, (_, spelling) in enumerate(alternatives)}
    pattern = re.compile(
        "(?:"
        + "|".join(f"(?P<spelling{index}>{regex})" for index, (regex, _) in enumerate(alternatives))
        + ")$"
    )
    described = (
        ", ".join(
            endpoint.path.replace(MODEL_PLACEHOLDER, "<model>")
            + (
                f" (also at {', '.join(endpoint.other_versions)})"
                if endpoint.other_versions
                else ""
            )
            for endpoint in served
        )
        + ", each also without its version"
    )
    if deployment_paths:
        described += f", and the deployment paths {', '.join(deployment_paths)},"
    compiled = _EndpointPattern(endpoints, pattern, groups, described)
    _compiled[:] = [compiled]
    return compiled


class RouteError(HarnessError, ValueError):
    """A request path names no cassette, session or provider endpoint the server serves, or a
    cassette outside the cassettes folder. `status` is the HTTP status it is answered with;
    `provider` the provider whose error format it is answered in. For a path under a session
    that ends in no endpoint, `session` is the session's id and `spoken` the provider the path
    names by its ending (`/v1/embeddings` is OpenAI's), if any."""

    code = "serve_route_invalid"

    def __init__(
        self,
        message: str,
        *,
        status: int = 404,
        provider: Provider = "openai",
        session: str | None = None,
        spoken: Provider | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.provider = provider
        self.session = session
        self.spoken = spoken


@dataclass(frozen=True)
class Route:
    """A parsed request path: a cassette name or a session id, and the provider endpoint (its
    own path, as the request log and a session's report name it, whichever spelling came)."""

    kind: Literal["cassette", "session"]
    name: str
    endpoint: str
    deployment_path: str | None = None
    """The deployment path the request came to (`/openai/deployments/gpt-4o/chat/completions`),
    or None for the endpoint's own path, with or without its version."""
    model: str | None = None
    """The model the path names, for an endpoint whose path names it (Gemini's
    `/v1beta/models/<model>:generateContent`), else None."""

    @property
    def spec(self) -> ProviderSpec:
        return served_endpoints()[self.endpoint]

    @property
    def provider(self) -> Provider:
        return provider_of(self.spec)

    @property
    def served(self) -> Endpoint:
        """The endpoint, as its provider's spec declares it."""
        return next(served for served in self.spec.endpoints if served.path == self.endpoint)

    @property
    def provider_path(self) -> str:
        """The path the request is keyed, replayed and recorded at: the endpoint's own path
        (with its version, whether the client's base URL had it or not, so one cassette serves
        every SDK; the model's name in it for an endpoint that names one), or the deployment
        path as it came (as `CassetteTransport` keys it)."""
        if self.deployment_path is not None:
            return self.deployment_path
        if self.model is not None:
            return self.served.path_for(self.model)
        return self.endpoint


def route(path: str) -> Route:
    """The route of a request path (`/c/<cassette>/<endpoint>` or `/s/<session>/<endpoint>`),
    the endpoint in any of its spellings (see the module's docstring). A path that ends in no
    spelling is a `RouteError`, answered 404 in the error format of the provider the path names
    (`/v1/embeddings` is OpenAI's), never another endpoint."""
    kind: Literal["cassette", "session"]
    if path.startswith("/c/"):
        kind = "cassette"
    elif path.startswith("/s/"):
        kind = "session"
    else:
        raise RouteError(
            f"no route for {_shown(path)}: requests go to /c/<cassette>/v1/... (a cassette under "
            "the cassettes folder) or /s/<session>/v1/... (a session from POST /_harness/sessions)"
        )
    # Matched with the slash before the name, so `/c/v1/messages` is `/v1/messages` without a
    # name (refused), not cassette `v1` at `/messages`.
    after_prefix = path[2:]
    compiled = _endpoint_pattern(served_endpoints())
    found = compiled.pattern.search(after_prefix)
    if found is None or found.start() <= 1:
        # answered in the error format of the SDK that called, when the path names one
        spoken = detect_provider(path)
        rest = path[3:]
        raise RouteError(
            f"no provider endpoint at the end of {_shown(path)}; the server speaks "
            f"{compiled.described} after the {kind} name",
            provider=spoken or "openai",
            session=rest.split("/", 1)[0] if kind == "session" else None,
            spoken=spoken,
        )
    assert found.lastgroup is not None  # one named group per alternative
    spelling = compiled.spellings[found.lastgroup]
    deployment_path = found.group() if spelling.deployment else None
    if deployment_path is not None and not _checked_deployment(deployment_path):
        raise RouteError(
            f"the deployment in {_shown(deployment_path)} is refused: give its name, not "
            "'.' or '..'",
            status=400,
            provider=provider_of(served_endpoints()[spelling.endpoint]),
        )
    model = None if spelling.deployment else spelling.served.model_in(found.group())
    if model is not None and not _checked_deployment(model):
        raise RouteError(
            f"the model in {_shown(found.group())} is refused: give its name, not '.' or '..'",
            status=400,
            provider=provider_of(served_endpoints()[spelling.endpoint]),
        )
    # Only trailing slashes go: a leading one makes an absolute name, which `cassette_path`
    # refuses rather than reading it as a name inside the folder.
    name = after_prefix[1 : found.start()].rstrip("/")
    return Route(
        kind=kind,
        name=name,
        endpoint=spelling.endpoint,
        deployment_path=deployment_path,
        model=model,
    )


def _checked_deployment(deployment_path: str) -> bool:
    """Whether no segment of `deployment_path` is `.` or `..`, which an HTTP client would fold
    into another path upstream (and so into another request key)."""
    return not any(segment in (".", "..") for segment in deployment_path.split("/"))


def doubled_version(name: str) -> str | None:
    """The name before a trailing `/v1` (`agent/weather` for `agent/weather/v1`), or None: what
    a client meant when it gave an SDK that adds `/v1` itself a base URL ending in `/v1`."""
    suffix = GENERIC_VERSION_SUFFIX
    return name.removesuffix(suffix) if name.endswith(suffix) and len(name) > len(suffix) else None


def cassette_path(folder: Path, name: str, provider: Provider = "openai") -> Path:
    """`<folder>/<name>.json`, refusing names that would leave `folder` (`..`, absolute paths,
    backslashes, NUL bytes): nothing a client sends may reach a file outside it."""
    parts = PurePosixPath(name).parts
    if (
        not name
        or name.startswith("/")
        or "\\" in name
        or "\x00" in name
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise RouteError(
            f"cassette name {_shown(name)} is refused: give a relative path inside the cassettes "
            "folder, without '..'",
            status=400,
            provider=provider,
        )
    root = folder.resolve()
    path = root.joinpath(*parts[:-1], parts[-1] + ".json")
    if not path.resolve().is_relative_to(root):  # a symlink out of the folder
        raise RouteError(
            f"cassette {_shown(name)} resolves outside the cassettes folder",
            status=400,
            provider=provider,
        )
    return path


def _shown(text: str, limit: int = 120) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
