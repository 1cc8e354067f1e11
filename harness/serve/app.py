"""`harness serve`: an OpenAI- and Anthropic-compatible HTTP server that replays (and records)
cassettes and scripts, for clients in any language.

The server is an ASGI app: a provider call goes straight to its handler (with Starlette's
requests and responses), the control API through a Starlette router. Each provider request is
turned into an `httpx2` request and answered by the same `CassetteTransport` or `ScriptTransport`
the Python API uses, so replay, recording, scrubbing, tamper evidence and merged saves are the
ones tested everywhere else; the server only routes, relays the answer as it is produced (an SSE
stream event by event), and turns harness errors into the provider's own error format, so each
SDK raises its own typed error.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeGuard

import anyio
import httpx2
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route as StarletteRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from harness.cassettes import CassetteMissError, CassetteTransport, RecordMode
from harness.errors import CassetteError, HarnessError
from harness.http_clients import ChunkStream, http_errors
from harness.json_body import MAX_BODY_DEPTH, json_nesting_depth, parse_json_body
from harness.llm._wire import json_type
from harness.llm.adapters import adapter_for
from harness.llm.gateway import API_KEY_VARIABLES, BASE_URL_VARIABLES, DEFAULT_BASE_URLS
from harness.llm.script import ScriptedReply, ScriptExhaustedError, ScriptTransport
from harness.providers import Provider
from harness.serve.routing import ENDPOINTS, Route, RouteError, cassette_path, route

CONTROL_PREFIX: Final = "/_harness"
DEFAULT_OUTPUT_TOOL: Final = "__finish__"

_HOP_BY_HOP: Final = frozenset(
    {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade"}
)
_CLIENT_CREDENTIALS: Final = frozenset({"authorization", "x-api-key", "api-key"})
_UPSTREAM_TIMEOUT: Final = httpx2.Timeout(600.0, connect=10.0).as_dict()
"""How long a recording waits on the provider: the official SDKs' own default of ten minutes,
so a provider that stops answering cannot hold a relay (which a client leaving does not stop)
forever."""


@dataclass(frozen=True, kw_only=True)
class ServeConfig:
    """What the server serves and where a record mode forwards misses.

    `environ` is the *server's* environment: the provider keys (`OPENAI_API_KEY`,
    `ANTHROPIC_API_KEY`) and base URLs (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) a recording is
    forwarded with. A client's own credentials are never forwarded.

    `allow_repeats` lets a cassette answer a request again once its recorded answers are used up
    (the last one is replayed), as `CassetteTransport(allow_repeats=True)` does: a server that
    outlives one test run then serves the next run from the same `/c/<cassette>` URL.
    """

    cassettes: Path = Path("cassettes")
    record_mode: RecordMode = RecordMode.NONE
    allow_repeats: bool = False
    environ: Mapping[str, str] = field(default_factory=dict)

    def upstream(self, provider: Provider) -> str:
        base = self.environ.get(BASE_URL_VARIABLES[provider]) or DEFAULT_BASE_URLS[provider]
        return base.rstrip("/").removesuffix("/v1")

    def credentials(self, provider: Provider) -> dict[str, str]:
        key = self.environ.get(API_KEY_VARIABLES[provider])
        if not key:
            return {}
        return {"x-api-key": key} if provider == "anthropic" else {"authorization": f"Bearer {key}"}


class SessionSpec(BaseModel):
    """The body of `POST /_harness/sessions`: a script (with its provider) or a cassette."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    script: list[ScriptedReply] | None = None
    provider: Provider | None = None
    cassette: str | None = None
    record_mode: RecordMode | None = None
    output_tool: str = Field(default=DEFAULT_OUTPUT_TOOL, min_length=1)


@dataclass
class ReceivedRequest:
    endpoint: str
    provider: Provider
    body: bytes


@dataclass
class Session:
    """Replies attached to `/s/<id>/...`, and every request they answered."""

    id: str
    transport: ScriptTransport | CassetteTransport
    output_tool: str
    received: list[ReceivedRequest] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        """The requests received, each read into the harness's neutral request model and called
        `forced` when it forces the output tool, else `work`."""
        requests: list[dict[str, Any]] = []
        for index, received in enumerate(self.received):
            entry: dict[str, Any] = {
                "index": index,
                "endpoint": received.endpoint,
                "provider": received.provider,
            }
            try:
                parsed = adapter_for(received.provider).parse_request(json.loads(received.body))
            except (ValueError, HarnessError) as error:
                entry["error"] = str(error)
            else:
                entry["kind"] = "forced" if parsed.forces_tool(self.output_tool) else "work"
                entry["request"] = parsed.model_dump(mode="json")
            requests.append(entry)
        return {"id": self.id, "output_tool": self.output_tool, "requests": requests}


class ReplayApp:
    """The server's state: one transport per cassette, and the open sessions."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.cassettes: dict[Path, CassetteTransport] = {}
        # A name's checked path, once its cassette is open: resolving it again for every
        # request (two realpath walks) cost as much as finding the recorded answer.
        self._by_name: dict[tuple[str, Provider], CassetteTransport] = {}
        self.sessions: dict[str, Session] = {}
        self._control = Starlette(
            routes=[
                StarletteRoute(f"{CONTROL_PREFIX}/health", self.health, methods=["GET"]),
                StarletteRoute(f"{CONTROL_PREFIX}/sessions", self.open_session, methods=["POST"]),
                StarletteRoute(
                    f"{CONTROL_PREFIX}/sessions/{{session_id}}",
                    self.session_endpoint,
                    methods=["GET", "DELETE"],
                ),
                StarletteRoute(
                    f"{CONTROL_PREFIX}/{{path:path}}", self.unknown, methods=_ALL_METHODS
                ),
            ],
            lifespan=self._lifespan,
        )

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app. A provider call goes straight to `provider_call`: Starlette's router
        and middleware, which only the control API needs, cost a loopback call as much as
        answering it (every model call of a target's cell pays it)."""
        if scope["type"] == "http" and not scope["path"].startswith(CONTROL_PREFIX):
            response = await self.provider_call(Request(scope, receive))
            await response(scope, receive, send)
        else:
            await self._control(scope, receive, send)

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        await self.close()

    # -- the provider APIs ------------------------------------------------------------------------

    async def provider_call(self, request: Request) -> Response:
        try:
            # the path as the client sent it, percent-decoded: `request.url.path` escapes `\`
            target = route(request.scope["path"])
        except RouteError as error:
            return _route_error(error)
        if request.method != "POST":
            return _provider_error(
                target.provider,
                405,
                "invalid_request_error",
                f"{request.method} is not allowed on {target.endpoint}; the API takes POST",
            )
        body = await request.body()
        problem = _not_a_json_object(body)
        if problem is not None:
            return _provider_error(target.provider, 400, "invalid_request_error", problem)
        try:
            transport, session = self._transport_for(target)
        except RouteError as error:
            return _route_error(error)
        except CassetteError as error:
            return _provider_error(target.provider, 404, "not_found_error", str(error))
        if session is not None:
            session.received.append(ReceivedRequest(target.endpoint, target.provider, body))
        upstream = self._upstream_request(request, target, body, _records(transport))
        try:
            response = await transport.handle_async_request(upstream)
        except CassetteMissError as miss:
            message = str(miss) + _replay_again_hint(transport, upstream)
            return _provider_error(target.provider, 404, "not_found_error", message)
        except ScriptExhaustedError as exhausted:
            return _provider_error(target.provider, 404, "not_found_error", str(exhausted))
        except HarnessError as error:
            return _provider_error(target.provider, 400, "invalid_request_error", str(error))
        except http_errors() as error:  # recording, and the provider cannot be reached
            return _provider_error(
                target.provider,
                502,
                "api_error",
                f"the provider could not be reached to record this request "
                f"({type(error).__name__}); check {target.provider.upper()}_BASE_URL",
            )
        headers = {
            name: value
            for name, value in response.headers.multi_items()
            if name.lower() not in _HOP_BY_HOP
        }
        in_memory = response.is_stream_consumed or isinstance(response.stream, ChunkStream)
        if in_memory and not _is_event_stream(response):
            # A replayed or scripted JSON answer is already whole in memory and nothing is
            # recorded: it goes out in one write, with its length. An event stream is always
            # relayed event by event, as the provider sent it.
            if response.is_stream_consumed:  # built from its content
                body = response.content
            else:  # replayed: the recorded bytes as they are, never decoded a second time
                body = b"".join([chunk async for chunk in response.aiter_raw()])
            await response.aclose()
            return Response(body, status_code=response.status_code, headers=headers)
        return _RelayResponse(
            response,
            transport,
            in_memory=in_memory,
            status_code=response.status_code,
            headers=headers,
        )

    def _transport_for(
        self, target: Route
    ) -> tuple[CassetteTransport | ScriptTransport, Session | None]:
        if target.kind == "session":
            session = self.sessions.get(target.name)
            if session is None:
                raise RouteError(
                    f"no session {target.name!r}: open one with POST {CONTROL_PREFIX}/sessions",
                    provider=target.provider,
                )
            attached = session.transport
            if (
                isinstance(attached, ScriptTransport)
                and attached.provider != target.provider
                and not attached.requests
            ):
                # A script is written once and spoken in the wire of whichever provider is asked
                # first (a decision module picks its model, and so its provider, as it runs).
                session.transport = ScriptTransport(target.provider, attached.replies)
            return session.transport, session
        known = self._by_name.get((target.name, target.provider))
        if known is not None:
            return known, None
        path = cassette_path(self.config.cassettes, target.name, target.provider)
        transport = self.cassettes.get(path)
        if transport is None:
            transport = CassetteTransport(
                path,
                mode=self.config.record_mode,
                provider=target.provider,
                allow_repeats=self.config.allow_repeats,
            )
            self.cassettes[path] = transport
        self._by_name[target.name, target.provider] = transport
        return transport, None

    def _upstream_request(
        self, request: Request, target: Route, body: bytes, recording: bool
    ) -> httpx2.Request:
        """The request as the provider would receive it: its own path, the client's headers
        without their credentials, and the server's credentials when a miss is recorded (a
        session may record on a server that does not)."""
        headers = [
            (name, value)
            for name, value in request.headers.items()
            if name.lower() not in _HOP_BY_HOP and name.lower() not in _CLIENT_CREDENTIALS
        ]
        if recording:
            headers.extend(self.config.credentials(target.provider).items())
        query = request.scope["query_string"].decode("latin-1")
        url = (
            self.config.upstream(target.provider) + target.endpoint + (f"?{query}" if query else "")
        )
        return httpx2.Request(
            "POST", url, headers=headers, content=body, extensions={"timeout": _UPSTREAM_TIMEOUT}
        )

    # -- control --------------------------------------------------------------------------------

    async def unknown(self, request: Request) -> Response:
        return _control_error(
            404,
            f"no control endpoint {request.method} {request.url.path}: the control API is "
            f"GET {CONTROL_PREFIX}/health, POST {CONTROL_PREFIX}/sessions and "
            f"GET or DELETE {CONTROL_PREFIX}/sessions/<id>",
        )

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def open_session(self, request: Request) -> Response:
        try:
            spec = SessionSpec.model_validate_json(await request.body())
            session = self._session(spec)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in problem['loc']) or '(body)'}: {problem['msg']}"
                for problem in error.errors(include_input=False)
            )
            return _control_error(400, f"invalid session: {problems}")
        except (RouteError, HarnessError) as error:
            return _control_error(getattr(error, "status", 400), str(error))
        self.sessions[session.id] = session
        base = str(request.base_url).rstrip("/") + f"/s/{session.id}"
        return JSONResponse(
            {
                "id": session.id,
                "url": base,
                "base_urls": {"openai": f"{base}/v1", "anthropic": base},
            },
            status_code=201,
        )

    def _session(self, spec: SessionSpec) -> Session:
        identifier = uuid.uuid4().hex
        if (spec.script is None) == (spec.cassette is None):
            raise RouteError("a session needs exactly one of script and cassette", status=400)
        if spec.script is not None:
            if spec.provider is None:
                raise RouteError(
                    "a script session needs its provider: openai or anthropic", status=400
                )
            transport: ScriptTransport | CassetteTransport = ScriptTransport(
                spec.provider, list(spec.script)
            )
        else:
            assert spec.cassette is not None
            transport = CassetteTransport(
                cassette_path(self.config.cassettes, spec.cassette),
                mode=spec.record_mode or self.config.record_mode,
                allow_repeats=self.config.allow_repeats,
            )
        return Session(identifier, transport, spec.output_tool)

    async def session_endpoint(self, request: Request) -> Response:
        identifier = request.path_params["session_id"]
        session = self.sessions.get(identifier)
        if session is None:
            return _control_error(404, f"no session {identifier!r}")
        if request.method == "DELETE":
            del self.sessions[identifier]
            await session.transport.aclose()
            return JSONResponse({"id": identifier, "deleted": True})
        return JSONResponse(session.report())

    async def close(self) -> None:
        """Close every transport: recordings are saved, unplayed interactions logged.

        `aclose`, on the server's loop: a recording reaches the provider through async
        connections, which the sync `close` leaves open.
        """
        for transport in [*self.cassettes.values(), *(s.transport for s in self.sessions.values())]:
            await transport.aclose()
        self.cassettes.clear()
        self._by_name.clear()
        self.sessions.clear()


class _RelayResponse(StreamingResponse):
    """The answer, relayed chunk by chunk as it is produced (one chunk per SSE event).

    A client that goes away mid-stream only stops the relay: when the exchange ends, however it
    ends, the provider's answer is read to its end and a recording saved. Starlette stops
    iterating when the client leaves without closing anything, so this is done here, at once,
    not whenever the garbage collector gets to an abandoned generator. In record mode `all`
    nothing is saved until the cassette closes: a save in the middle of a re-recording would
    replace the cassette with the first answers alone, so re-recording unchanged traffic would
    rewrite it.
    """

    def __init__(
        self,
        upstream: httpx2.Response,
        transport: CassetteTransport | ScriptTransport,
        *,
        in_memory: bool,
        **options: Any,
    ) -> None:
        self._chunks = _chunks(upstream, shielded=not in_memory)
        super().__init__(self._chunks, **options)
        self._upstream = upstream
        self._transport = transport
        self._in_memory = in_memory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if self._in_memory:
                # A replay or a script: every event is already here, so there is nothing to stop
                # early when the client leaves (the server drops writes to a closed connection).
                # Starlette's watch for the client leaving, a task per response, cost about as
                # much server CPU as routing, matching and replaying the request together.
                await self.stream_response(send)
            else:
                await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._chunks.aclose()
                await self._upstream.aclose()  # a recording reads the rest here
                transport = self._transport
                if _records(transport) and transport.mode is not RecordMode.ALL:
                    await anyio.to_thread.run_sync(transport.save)


async def _chunks(upstream: httpx2.Response, *, shielded: bool) -> AsyncGenerator[bytes, None]:
    """`upstream`'s body as it arrives. A `shielded` read is shielded from the client going
    away: cancelling it mid-read would end the provider's stream there, and the part read so far
    would be recorded as the whole answer."""
    if upstream.is_stream_consumed:  # built from content: the body is already here
        yield upstream.content
        return
    chunks = upstream.aiter_raw()
    if not shielded:  # in memory: nothing is read from anywhere
        async for chunk in chunks:
            yield chunk
        return
    while True:
        with anyio.CancelScope(shield=True):
            chunk = await anext(chunks, b"")
        if not chunk:  # the end (httpx2 never yields an empty chunk)
            return
        yield chunk


_ALL_METHODS: Final = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _is_event_stream(response: httpx2.Response) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


def _records(transport: CassetteTransport | ScriptTransport) -> TypeGuard[CassetteTransport]:
    """Whether `transport` records what it cannot replay."""
    return isinstance(transport, CassetteTransport) and transport.recording


def _replay_again_hint(
    transport: CassetteTransport | ScriptTransport, request: httpx2.Request
) -> str:
    """For a request whose recorded answers were all played, how to play them again through the
    server (the miss message's own advice, `allow_repeats`, is not a server setting)."""
    if not isinstance(transport, CassetteTransport) or not transport.cassette.by_key.get(
        transport.key_for(request)
    ):
        return ""
    return (
        "\nThrough harness serve, each recorded answer is played once per /c/<cassette> URL "
        "(until the server restarts) and once per session: for repeated runs, open a session "
        f'per run with POST {CONTROL_PREFIX}/sessions {{"cassette": "<name>"}}, which plays the '
        "cassette from its start."
    )


def _not_a_json_object(body: bytes) -> str | None:
    """Why `body` is not the JSON object every provider endpoint takes, or None. The reason
    names a position or a type, never the content (it may be the user's prompt)."""
    if body.count(b"[") + body.count(b"{") <= MAX_BODY_DEPTH:  # cannot nest too deep
        try:  # the common case, about 5x faster than the full check below
            if isinstance(orjson.loads(body), dict):
                return None
        except orjson.JSONDecodeError:
            pass
    is_json, value = parse_json_body(body)
    if is_json:
        if isinstance(value, dict):
            return None
        reason = f"it is {json_type(value)}"
    elif not body:
        reason = "it is empty"
    elif json_nesting_depth(body) > MAX_BODY_DEPTH:
        reason = f"it nests deeper than {MAX_BODY_DEPTH} levels"
    else:
        try:
            json.loads(body)
            reason = "it holds NaN or Infinity, which are not JSON numbers"
        except UnicodeDecodeError as error:
            reason = f"it is not UTF-8 text (byte {error.start})"
        except json.JSONDecodeError as error:
            reason = f"{error.msg} at line {error.lineno} column {error.colno}"
    return f"the request body is not a JSON object: {reason}; send the request as a JSON object"


def _provider_error(provider: Provider, status: int, error_type: str, message: str) -> Response:
    """An error in `provider`'s own format, so its SDK raises its own typed error for `status`."""
    return JSONResponse(adapter_for(provider).render_error(status, error_type, message), status)


def _route_error(error: RouteError) -> Response:
    # a refused cassette name is a bad request, not a missing cassette
    error_type = "invalid_request_error" if error.status == 400 else "not_found_error"
    return _provider_error(error.provider, error.status, error_type, str(error))


def _control_error(status: int, message: str) -> Response:
    return JSONResponse({"error": {"message": message}}, status)


def create_app(config: ServeConfig) -> ASGIApp:
    """The ASGI app serving `config`."""
    return ReplayApp(config).app


__all__ = ["ENDPOINTS", "ReplayApp", "ServeConfig", "Session", "SessionSpec", "create_app"]
