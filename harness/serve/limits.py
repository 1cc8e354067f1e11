"""What one `harness serve` process holds at most, and the connections that enforce it.

Its clients are untrusted: nothing they send or leave open may grow the server's memory or file
descriptors without bound. A request body is read up to `max_request_bytes`; at most
`max_sessions` sessions and `max_cassettes` `/c/` cassettes stay open, the longest idle closed
first (their recordings saved); a connection that has not sent a request's headers within
`header_timeout` seconds, or sent nothing after a response for `idle_timeout`, is closed; and
beyond `max_connections` a new connection takes the place of the one idle the longest.

Nor may they hold the server up when it stops: an answer still going out `STOP_GRACE_SECONDS`
after the stop began (a paced replay may run for minutes) is cut off, its connection closed, and
whatever request is still running `STOP_TIMEOUT_SECONDS` after it is cancelled.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from harness.errors import HarnessError

MIB: Final = 1024 * 1024
_DESCRIPTORS_KEPT: Final = 64
"""File descriptors left for what is not a client connection: the listening socket, cassette
files and their locks, connections to the provider while recording."""
STOP_GRACE_SECONDS: Final = 0.5
"""How long, once the server is stopping, an answer going out has to finish before its
connection is closed: long enough for one already whole in memory, not for a paced stream."""
STOP_TIMEOUT_SECONDS: Final = 1
"""When, once the server is stopping, every request still running is cancelled (uvicorn's
`timeout_graceful_shutdown`, which is otherwise unbounded): a backstop, since the answers are cut
off and the recordings broken off (`ReplayApp.stop`) after `STOP_GRACE_SECONDS`. With the
cassettes' closing after it, `harness serve` exits within 2 s of SIGTERM or SIGINT."""


def default_max_connections() -> int:
    """1,024, or fewer when the process may open fewer files (`ulimit -n`): a flood of
    connections is shed before the server runs out of descriptors for its own files."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1024
    return max(8, min(1024, soft - _DESCRIPTORS_KEPT))


class ServeLimitError(HarnessError, ValueError):
    """A limit given to `harness serve` is not a positive number."""

    code = "serve_limit_invalid"


@dataclass(frozen=True, kw_only=True)
class ServeLimits:
    """The bounds of one server; each has a `harness serve` option of the same name."""

    max_request_bytes: int = 32 * MIB
    """The largest request body read (413 beyond it), checked as it arrives."""
    max_sessions: int = 1_000
    """Sessions open at once; opening one more closes the longest idle (its recording saved)."""
    max_cassettes: int = 256
    """`/c/` cassettes held open at once; using one more closes the longest idle (saved first)."""
    max_session_requests: int = 10_000
    """Requests a session keeps for `GET /_harness/sessions/<id>`; later ones are counted only."""
    max_connections: int = field(default_factory=default_max_connections)
    """Client connections open at once; more are closed as they arrive."""
    header_timeout: float = 10.0
    """Seconds a connection has to send a request's headers, from when it opens or its last
    response ended."""
    idle_timeout: float = 5.0
    """Seconds a kept-alive connection may stay silent after a response."""
    body_timeout: float = 60.0
    """Seconds a request body may take to arrive once its headers have."""

    def __post_init__(self) -> None:
        for name in (
            "max_request_bytes",
            "max_sessions",
            "max_cassettes",
            "max_session_requests",
            "max_connections",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ServeLimitError(
                    f"expected a whole number of at least 1 but got {name}={value!r}"
                )
        for name in ("header_timeout", "idle_timeout", "body_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ServeLimitError(
                    f"expected a number of seconds above 0 but got {name}={value!r}"
                )


class BoundedConnection(HttpToolsProtocol):
    """uvicorn's httptools connection, closed when it holds a slot without using it: headers
    not complete within `limits.header_timeout` (from its start, or from the end of its last
    response: a client trickling one byte at a time would otherwise hold it forever). When
    `limits.max_connections` are open, a new connection takes the place of the one that has
    waited longest for a request, or is closed at once when every one is busy with a request.
    Made per server by `bounded_connection`."""

    limits: ClassVar[ServeLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._waiting_since: float | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            waiting = [
                connection
                for connection in self.connections
                if isinstance(connection, BoundedConnection)
                and connection is not self
                and connection._waiting_since is not None
            ]
            if not waiting:
                transport.close()
                return
            min(waiting, key=lambda connection: connection._waiting_since or 0.0)._close_idle()
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._disarm_header_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._waiting_since = self.loop.time()
        self._header_timer = self.loop.call_later(self.limits.header_timeout, self._close_idle)

    def _disarm_header_timer(self) -> None:
        self._waiting_since = None
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _close_idle(self) -> None:
        # only between requests (the timer is disarmed once headers are in): nothing is half-sent
        self._disarm_header_timer()
        self.transport.close()

    def shutdown(self) -> None:
        """The server is stopping: close the connection now if it is between requests (as
        uvicorn does), else once its answer has gone out, or after `STOP_GRACE_SECONDS` at the
        latest, the answer cut off. A paced replay's wait is cancelled as its client goes."""
        super().shutdown()
        if not self.transport.is_closing():
            self.loop.call_later(STOP_GRACE_SECONDS, self._cut_off)

    def _cut_off(self) -> None:
        if not self.transport.is_closing():
            # abort, not close: close waits for a client that stopped reading to take the rest
            self.transport.abort()


def bounded_connection(limits: ServeLimits) -> type[BoundedConnection]:
    """A connection class enforcing `limits`, for `uvicorn.Config(http=...)`."""
    return type("BoundedConnection", (BoundedConnection,), {"limits": limits})


__all__ = [
    "STOP_GRACE_SECONDS",
    "STOP_TIMEOUT_SECONDS",
    "BoundedConnection",
    "ServeLimitError",
    "ServeLimits",
    "bounded_connection",
    "default_max_connections",
]
