"""Running the replay server: in the foreground for `harness serve`, or in a background thread as
a context manager for tests (`with ReplayServer(...) as server: ...`)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import json
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import httpx2
import uvicorn

from harness.cassettes import CassetteTransport, RecordMode
from harness.cassettes.cassette import IdenticalRequests
from harness.cassettes.pacing import parse_pace
from harness.errors import HarnessError, IllegalArgumentException
from harness.files import write_atomically
from harness.llm.script import ScriptedReply, ScriptTransport
from harness.providers import Provider, find_provider, provider_specs, unknown_provider
from harness.serve.app import (
    CONTROL_TOKEN_HEADER,
    DEFAULT_OUTPUT_TOOL,
    IDLE_POLL_SECONDS,
    ReplayApp,
    ServeConfig,
    Session,
)
from harness.serve.limits import STOP_TIMEOUT_SECONDS, ServeLimits, bounded_connection
from harness.serve.request_log import LogFormat

STARTUP_SECONDS: Final = 30.0


class ServeError(HarnessError, OSError):
    """The server cannot start (the address is taken, the ready file cannot be written) or a
    control call to it failed."""

    code = "serve_failed"


class _Server(uvicorn.Server):
    """uvicorn's server, calling `on_ready` once it accepts connections and `on_stop` as it
    begins to stop (SIGTERM, SIGINT, `ReplayServer.stop`)."""

    def __init__(
        self,
        config: uvicorn.Config,
        on_ready: Callable[[], None],
        on_stop: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__(config)
        self._on_ready = on_ready
        self._on_stop = on_stop

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            self._on_ready()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # alongside uvicorn's shutdown, which waits for the requests that on_stop ends
        stopping = asyncio.ensure_future(self._on_stop())
        try:
            await super().shutdown(sockets)
        finally:
            stopping.cancel()  # still waiting out its grace: every request ended sooner
            with contextlib.suppress(asyncio.CancelledError):
                await stopping


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port` (`port` 0 picks a free one), or `ServeError`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # asyncio turns Nagle's algorithm off only on sockets whose protocol is IPPROTO_TCP, and
    # accepted connections inherit the listener's; with the default protocol (0) every streamed
    # event after the first waited for the client's delayed ACK, about 40 ms per response.
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(2048)
    except OSError as error:
        listener.close()
        raise ServeError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    listener.setblocking(False)
    return listener


def base_url(listener: socket.socket) -> str:
    host, port = listener.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def check_exposure(host: str, config: ServeConfig) -> None:
    """Refuse to listen beyond loopback without a control token: any client that can reach the
    server could otherwise open sessions and, in a record mode, spend the server's keys."""
    if config.control_token is not None or _is_loopback(host):
        return
    raise ServeError(
        f"--host {host} listens beyond loopback, where any client could use this server: give "
        "--control-token TOKEN (clients send it as their API key), or listen on 127.0.0.1"
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _uvicorn_config(app: ReplayApp) -> uvicorn.Config:
    limits = app.limits
    return uvicorn.Config(
        app.app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        interface="asgi3",
        # httptools (installed with harness), with the header timeout and the connection cap (one
        # request at a time per connection, so it caps requests in flight too)
        http=bounded_connection(limits),
        loop="auto",  # uvloop, installed with harness where it runs
        timeout_keep_alive=limits.idle_timeout,  # type: ignore[arg-type]  # a float works
        # uvicorn waits for every request to end, however long: a paced replay held a stop for
        # as long as its stream lasted (BoundedConnection.shutdown cuts the answers off first)
        timeout_graceful_shutdown=STOP_TIMEOUT_SECONDS,
    )


def serve_forever(
    config: ServeConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    ready_file: Path | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve until interrupted, then return (Ctrl-C is a normal stop). Once connections are
    accepted, the base URL is announced and written to `ready_file` (atomically, so a reader
    never sees half of it). Refuses to listen beyond loopback without a control token."""
    check_exposure(host, config)
    app = ReplayApp(config)  # a bad configuration is refused before anything listens
    listener = bind(host, port)
    url = base_url(listener)

    def ready() -> None:
        # What is loaded by now (harness, pydantic, starlette, uvicorn: ~50,000 objects) lives as
        # long as the process. Frozen, it is left out of the cyclic collector's full passes, each
        # of which otherwise stopped every open stream for ~50 ms, every few seconds under load.
        gc.collect()
        gc.freeze()
        if ready_file is not None:
            write_atomically(ready_file, (url + "\n").encode("utf-8"))
        announce(f"harness serve: listening on {url}")

    # Ctrl-C is how a user stops the server. uvicorn has shut down cleanly (recordings saved)
    # before it raises the signal again; that is a normal end, not a failure.
    with contextlib.suppress(KeyboardInterrupt):
        _Server(_uvicorn_config(app), ready, app.stop).run(sockets=[listener])


class ReplayServer:
    """`harness serve` in a background thread, for tests:

    ```python
    with ReplayServer(cassettes="cassettes") as server:
        client = openai.OpenAI(base_url=server.cassette_url("agent/weather", "openai"))
        session = server.session(script=[{"text": "It is Paris."}], provider="openai")
        ...session.requests()
    ```
    """

    def __init__(
        self,
        cassettes: str | Path = "cassettes",
        *,
        record_mode: str | RecordMode = RecordMode.NONE,
        allow_repeats: bool = False,
        allow_session_record: bool = False,
        control_token: str | None = None,
        limits: ServeLimits | None = None,
        environ: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        identical_requests: IdenticalRequests | None = None,
        log_format: LogFormat | None = None,
        pace: str | float | None = None,
    ) -> None:
        self.config = ServeConfig(
            cassettes=Path(cassettes),
            record_mode=RecordMode.parse(record_mode),
            allow_repeats=allow_repeats,
            identical_requests=identical_requests,
            pace=parse_pace(pace),
            allow_session_record=allow_session_record,
            control_token=control_token,
            limits=limits or ServeLimits(),
            environ=dict(environ or {}),
            log_format=log_format,
        )
        check_exposure(host, self.config)
        self._app = ReplayApp(self.config)
        self._listener = bind(host, port)
        self.url = base_url(self._listener)
        self._ready = threading.Event()
        self._server = _Server(_uvicorn_config(self._app), self._ready.set, self._app.stop)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._listener]}, daemon=True
        )

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(STARTUP_SECONDS) or not self._thread.is_alive():
            self.stop()
            raise ServeError(f"the replay server did not start within {STARTUP_SECONDS:g}s")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving; recordings are saved as the transports close, and the interactions no
        client played are printed to stderr, one line per cassette."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(STARTUP_SECONDS)
        self._listener.close()

    def cassette_url(self, cassette: str, provider: Provider | None = None) -> str:
        """The base URL the official SDK of `provider` takes to use `cassette`: the cassette's
        URL with the SDK's suffix (`ProviderSpec.sdk_base_suffix`: `/v1` for OpenAI, none for
        Anthropic, whose SDK adds `/v1` itself). Without `provider`, the cassette's URL alone:
        an `AzureOpenAI` client's `azure_endpoint`. The server takes every endpoint with and
        without `/v1`, so an SDK that writes its base URL with `/v1` (the AI SDK's Anthropic
        provider) gets the cassette's URL plus `/v1` (docs/serve.md lists each SDK's)."""
        root = f"{self.url}/c/{cassette}"
        if provider is None:
            return root
        spec = find_provider(provider)
        if spec is None:
            raise IllegalArgumentException(unknown_provider(provider))
        return spec.sdk_base_url(root)

    def session(
        self,
        *,
        script: Sequence[ScriptedReply | Mapping[str, Any]] | None = None,
        provider: Provider | None = None,
        cassette: str | None = None,
        record_mode: str | RecordMode | None = None,
        output_tool: str = DEFAULT_OUTPUT_TOOL,
    ) -> ServerSession:
        """Open a session serving `script` (rendered as `provider`'s wire) or `cassette`."""
        body: dict[str, Any] = {"output_tool": output_tool}
        if script is not None:
            body["script"] = [
                reply.model_dump(mode="json", exclude_defaults=True)
                if isinstance(reply, ScriptedReply)
                else reply
                for reply in script
            ]
            body["provider"] = provider
        if cassette is not None:
            body["cassette"] = cassette
        if record_mode is not None:
            body["record_mode"] = str(RecordMode.parse(record_mode))
        token = self.config.control_token
        answer = _control("POST", f"{self.url}/_harness/sessions", body, token)
        return ServerSession(self.url, answer["id"], answer["base_urls"], token, url=answer["url"])

    def attach(
        self,
        transport: ScriptTransport | CassetteTransport,
        *,
        output_tool: str = DEFAULT_OUTPUT_TOOL,
    ) -> Session:
        """Serve `transport` (built by the caller, in this process) as a new session; the
        caller reads `Session.received` and ends it with `detach`. What a scenario cell runs on
        when its target is an implementation under test."""
        session = Session(uuid.uuid4().hex, transport, output_tool)
        self._app.attach(session)
        return session

    def session_urls(self, session: Session) -> dict[str, str]:
        """The base URL each registered provider's SDK takes for `session`."""
        base = f"{self.url}/s/{session.id}"
        return {spec.name: spec.sdk_base_url(base) for spec in provider_specs()}

    def detach(self, session: Session) -> None:
        """End `session`: later requests to it are refused; its transport is the caller's to
        close, once this returns: an answer still going out (a recording read to its end after
        its client has it) is waited for."""
        self._app.detach(session)
        while session.active:
            time.sleep(IDLE_POLL_SECONDS)


class ServerSession:
    """A session of a running server: its URL, the base URLs its clients take, and what it
    received."""

    def __init__(
        self,
        server_url: str,
        identifier: str,
        base_urls: Mapping[str, str],
        control_token: str | None = None,
        *,
        url: str | None = None,
    ) -> None:
        self.id = identifier
        self.url = url or f"{server_url}/s/{identifier}"
        """The session's URL, `<server>/s/<id>`: an `AzureOpenAI` client's `azure_endpoint`,
        and with `/v1` the AI SDK's base URL for either provider."""
        self._control_url = f"{server_url}/_harness/sessions/{identifier}"
        self._token = control_token
        self.base_urls = dict(base_urls)

    def base_url(self, provider: Provider) -> str:
        """The base URL the official SDK of `provider` takes: the session's URL plus
        `/v1` for OpenAI's, alone for Anthropic's (which adds `/v1` itself)."""
        return self.base_urls[provider]

    def requests(self) -> list[dict[str, Any]]:
        """Every request received, parsed into the neutral request model and called `work` or
        `forced` (see `GET /_harness/sessions/<id>`)."""
        requests: list[dict[str, Any]] = _control("GET", self._control_url, token=self._token)[
            "requests"
        ]
        return requests

    def close(self) -> None:
        _control("DELETE", self._control_url, token=self._token)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _control(
    method: str, url: str, body: object = None, token: str | None = None
) -> dict[str, Any]:
    try:
        response = httpx2.request(
            method,
            url,
            content=None if body is None else json.dumps(body),
            headers={CONTROL_TOKEN_HEADER: token} if token else None,
            timeout=30,
        )
    except httpx2.HTTPError as error:
        raise ServeError(f"{method} {url} failed: {type(error).__name__}") from None
    payload: dict[str, Any] = response.json()
    if response.is_error:
        raise ServeError(f"{method} {url}: {payload.get('error', {}).get('message', payload)}")
    return payload
