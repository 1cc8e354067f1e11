"""Which cassette or session a request is for, and which provider endpoint it calls.

`/c/<cassette>/v1/chat/completions` serves `<cassettes>/<cassette>.json`; `/s/<session>/v1/...`
serves what a session attached. The endpoint is recognised at the end of the path, so a cassette
may live in folders of any name (`/c/v1/old/v1/messages` is cassette `v1/old`). The endpoints
are every registered provider's (`ProviderSpec.endpoints`); the longest that ends the path wins.
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

ENDPOINTS: Final[dict[str, Provider]] = {
    endpoint.path: name for name, spec in BUILT_IN.items() for endpoint in spec.endpoints
}
"""The built-in provider APIs the server speaks, by path (it serves every registered provider's:
`harness.providers.served_endpoints()`)."""

_compiled: list[tuple[Mapping[str, ProviderSpec], re.Pattern[str]]] = []
"""The endpoint pattern, and the registry's endpoints it was compiled from."""


def _endpoint_pattern(endpoints: Mapping[str, ProviderSpec]) -> re.Pattern[str]:
    """`endpoints` as one pattern anchored at the end, compiled again only when a provider is
    registered or removed (the registry hands out a new mapping then)."""
    if _compiled and _compiled[0][0] is endpoints:
        return _compiled[0][1]
    pattern = re.compile(r"(?P<endpoint>" + "|".join(re.escape(path) for path in endpoints) + r")$")
    _compiled[:] = [(endpoints, pattern)]
    return pattern


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
    """A parsed request path: a cassette name or a session id, and the provider endpoint."""

    kind: Literal["cassette", "session"]
    name: str
    endpoint: str

    @property
    def spec(self) -> ProviderSpec:
        return served_endpoints()[self.endpoint]

    @property
    def provider(self) -> Provider:
        return provider_of(self.spec)


def route(path: str) -> Route:
    """The route of a request path (`/c/<cassette>/<endpoint>` or `/s/<session>/<endpoint>`)."""
    kind: Literal["cassette", "session"]
    if path.startswith("/c/"):
        kind, rest = "cassette", path[3:]
    elif path.startswith("/s/"):
        kind, rest = "session", path[3:]
    else:
        raise RouteError(
            f"no route for {_shown(path)}: requests go to /c/<cassette>/v1/... (a cassette under "
            "the cassettes folder) or /s/<session>/v1/... (a session from POST /_harness/sessions)"
        )
    endpoints = served_endpoints()
    found = _endpoint_pattern(endpoints).search(rest)
    if found is None or found.start() == 0:
        # answered in the error format of the SDK that called, when the path names one
        spoken = detect_provider(path)
        raise RouteError(
            f"no provider endpoint at the end of {_shown(path)}; the server speaks "
            f"{', '.join(endpoints)} after the {kind} name",
            provider=spoken or "openai",
            session=rest.split("/", 1)[0] if kind == "session" else None,
            spoken=spoken,
        )
    # Only trailing slashes go: a leading one makes an absolute name, which `cassette_path`
    # refuses rather than reading it as a name inside the folder.
    name = rest[: found.start()].rstrip("/")
    return Route(kind=kind, name=name, endpoint=found.group("endpoint"))


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
