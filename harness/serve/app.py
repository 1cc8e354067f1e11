"""`harness serve`: an OpenAI-, Anthropic- and Gemini-compatible HTTP server that replays (and
records) cassettes and scripts, for clients in any language.

The server is an ASGI app: a provider call goes straight to its handler (with Starlette's
requests and responses), the control API through a Starlette router. Each provider request is
turned into an `httpx2` request and answered by the same `CassetteTransport` or `ScriptTransport`
the Python API uses, so replay, recording, scrubbing, tamper evidence and merged saves are the
ones tested everywhere else; the server only routes, relays the answer as it is produced (an SSE
stream event by event), and turns harness errors into the provider's own error format, so each
SDK raises its own typed error.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import sys
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeGuard
from urllib.parse import unquote_plus

import anyio
import httpx2
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route as StarletteRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from harness.cassettes import CassetteMissError, CassetteTransport, RecordMode
from harness.cassettes.cassette import IdenticalRequests
from harness.cassettes.key import KEYED_HEADERS, canonical_request_key
from harness.cassettes.pacing import PacedStream, PaceError, parse_pace
from harness.cassettes.recording_run import RUN_ID_VARIABLES, checked_run_id
from harness.errors import CassetteError, HarnessError
from harness.http_clients import AnyRequest, ChunkStream, http_errors
from harness.json_body import MAX_BODY_DEPTH, json_nesting_depth, parse_json_body
from harness.llm._wire import json_type
from harness.llm.adapters import adapter_for
from harness.llm.script import ScriptedReply, ScriptExhaustedError, ScriptTransport
from harness.providers import (
    Provider,
    ProviderSpec,
    as_provider,
    find_provider,
    keyed_header_names,
    provider_names,
    provider_specs,
    served_endpoints,
    unknown_provider,
)
from harness.scrub import field_is_credential
from harness.serve.cassette_usage import (
    CassetteListing,
    CassetteUsage,
    cassette_name,
    served_cassette,
)
from harness.serve.limits import STOP_GRACE_SECONDS, ServeLimits
from harness.serve.request_log import (
    LogFormat,
    Outcome,
    format_line,
    key_prefix,
    logged_path,
    write_line,
)
from harness.serve.routing import (
    ENDPOINTS,
    Route,
    RouteError,
    cassette_path,
    doubled_version,
    route,
)

CONTROL_PREFIX: Final = "/_harness"
DEFAULT_OUTPUT_TOOL: Final = "__finish__"

_HOP_BY_HOP: Final = frozenset(
    {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade"}
)
_CLIENT_HEADERS: Final = frozenset({"content-type", "accept", "user-agent"})
FORWARDED_HEADERS: Final = _CLIENT_HEADERS | KEYED_HEADERS
"""The only headers of a client's request that reach the provider when a miss is recorded: what
the request is (its content type, what it accepts), who sends it, and the providers' version and
beta headers, which change the answer (`ProviderSpec.keyed_headers`: the built-in providers'
here, every registered provider's when forwarding). Everything else (credentials of any
spelling, cookies, proxy and organisation headers) is dropped; the server adds its own key."""
CONTROL_TOKEN_HEADER: Final = "x-harness-token"
IDLE_POLL_SECONDS: Final = 0.005
MAX_MISSES_KEPT: Final = 20
"""The misses a session keeps for its report (the first ones: each later one follows from
them)."""
_RECORD_RIGHTS: Final = (RecordMode.NONE, RecordMode.ONCE, RecordMode.NEW_EPISODES, RecordMode.ALL)
"""Record modes from the least to the most a mode may do to a cassette."""
_UPSTREAM_TIMEOUT: Final = httpx2.Timeout(600.0, connect=10.0).as_dict()
"""How long a recording waits on the provider: the official SDKs' own default of ten minutes,
so a provider that stops answering cannot hold a relay (which a client leaving does not stop)
forever."""


@dataclass(frozen=True, kw_only=True)
class ServeConfig:
    """What the server serves and where a record mode forwards misses.

    `environ` is the *server's* environment: the provider keys (`OPENAI_API_KEY`,
    `ANTHROPIC_API_KEY`) and base URLs (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`; each provider's
    are its spec's `api_key_variable` and `base_url_variable`) a recording is forwarded with. A
    client's own credentials are never forwarded.

    `allow_repeats` lets a cassette answer a request again once its recorded answers are used up
    (the last one is replayed), as `CassetteTransport(allow_repeats=True)` does: a server that
    outlives one test run then serves the next run from the same `/c/<cassette>` URL.

    Record rights belong to whoever started the server: a session records at most as the
    server's own `record_mode` does, unless `allow_session_record` lets sessions choose any mode.
    With a `control_token`, every request but the health check must carry it.

    `identical_requests` is how a recording answers identical requests (`CassetteTransport`'s
    option): `shared` (the default for a new cassette) sends the first to the provider and
    answers every identical one, from any client or session, with that answer; `separate`
    records each. None keeps what each cassette file says.

    `log_format` (`text` or `json`) writes one line per request to stderr (see
    `harness.serve.request_log`); None writes none. Whatever it is, closing the server prints
    the interactions no client played, per cassette.
    """

    cassettes: Path = Path("cassettes")
    record_mode: RecordMode = RecordMode.NONE
    allow_repeats: bool = False
    identical_requests: IdenticalRequests | None = None
    pace: float | None = None
    """How replayed event streams are timed: a speed factor of the recorded timing (1 is as
    recorded) within `parse_pace`'s range, None as fast as the client reads
    (`harness.cassettes.pacing`)."""
    allow_session_record: bool = False
    control_token: str | None = None
    limits: ServeLimits = field(default_factory=ServeLimits)
    environ: Mapping[str, str] = field(default_factory=dict)
    log_format: LogFormat | None = None

    def __post_init__(self) -> None:
        if self.pace is not None:
            parse_pace(self.pace)  # PaceError for a speed out of range, infinite or NaN

    def recording_run(self) -> str:
        """The recording run every cassette of this server saves as (see
        `harness.cassettes.recording_run`): `HARNESS_RECORD_RUN_ID` in its environment, else one
        of the server's own, so sessions recording in mode `all` add to each other instead of
        each replacing the cassette. Raises `RecordRunIdError` for a name not in the safe form."""
        for name in RUN_ID_VARIABLES:
            given = self.environ.get(name)
            if given:
                return checked_run_id(given, name)
        return f"serve-{uuid.uuid4().hex}"

    def upstream(self, provider: Provider) -> str:
        """The root a miss for `provider` is recorded from (its endpoint's path follows)."""
        return _spec(provider).upstream_root(self.environ)

    def credentials(self, provider: Provider) -> dict[str, str]:
        """The server's own key for `provider`, as the header its API reads it from."""
        spec = _spec(provider)
        key = spec.api_key(self.environ)
        return spec.auth_headers(key) if key else {}


def _spec(provider: Provider) -> ProviderSpec:
    spec = find_provider(provider)
    if spec is None:  # removed from the registry while the server runs
        raise RouteError(unknown_provider(provider))
    return spec


class SessionSpec(BaseModel):
    """The body of `POST /_harness/sessions`: a script (with its provider) or a cassette."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    script: list[ScriptedReply] | None = None
    provider: Provider | None = None
    """Any registered provider's name (checked against the registry, not only the literal)."""
    cassette: str | None = None
    record_mode: RecordMode | None = None
    identical_requests: IdenticalRequests | None = None
    """How the session's recording answers identical requests; the server's setting if unset."""
    pace: str | float | None = None
    """`recorded`, a number of times faster (0.001 to 1,000,000), or `off`; the server's
    `--pace` if unset."""
    output_tool: str = Field(default=DEFAULT_OUTPUT_TOOL, min_length=1)

    @field_validator("provider", mode="plain")
    @classmethod
    def _registered(cls, value: object) -> Provider | None:
        checked = as_provider(value)
        if value is not None and checked is None:
            raise ValueError(unknown_provider(value))
        return checked

    @field_validator("pace", mode="plain", json_schema_input_type=str | float | None)
    @classmethod
    def _a_pace(cls, value: object) -> str | float | None:
        """A pace `parse_pace` takes (whatever the session plays: a script is never paced,
        but a pace it could not take is a mistake all the same); a number as a float."""
        try:
            speed = parse_pace(value)
        except PaceError as error:
            # the message as the template's value: a pace given as text may hold braces
            raise PydanticCustomError(
                "pace_invalid", "{message}", {"message": str(error)}
            ) from None
        return value if value is None or isinstance(value, str) else speed


@dataclass
class ReceivedRequest:
    endpoint: str
    provider: Provider
    body: bytes
    path: str | None = None
    """The path it is keyed at (`Route.provider_path`): where Gemini names the model, and
    whether the reply streams."""


@dataclass(eq=False)
class _InUse:
    """What the server holds open for its clients: closed (its recording saved) when it is the
    longest idle one over a limit, never while a request is using it."""

    active: int = field(default=0, init=False)
    """Requests using it now, from when they are routed to when their answer has gone out (a
    recording read to its end)."""

    async def idle(self) -> None:
        """Return once no request is using it: a recording still being read to its end after
        its client has the answer must finish before the transport closes."""
        while self.active:
            await anyio.sleep(IDLE_POLL_SECONDS)


@dataclass(eq=False)
class Session(_InUse):
    """Replies attached to `/s/<id>/...`, and every request they answered (the first
    `keep` of them; later ones are counted in `dropped`)."""

    id: str
    transport: ScriptTransport | CassetteTransport
    output_tool: str
    received: list[ReceivedRequest] = field(default_factory=list)
    keep: int | None = None
    dropped: int = 0
    attached: bool = False
    """Attached in-process (`ReplayServer.attach`): its caller ends it, the server never does."""
    cassette: str | None = None
    """The name of the cassette it plays inside the cassettes folder, if it plays one there."""
    misses: list[str] = field(default_factory=list)
    """What the session answered 404 to (a cassette miss or a used-up script), each with its
    diagnosis: the first `MAX_MISSES_KEPT`."""

    def missed(self, message: str) -> None:
        if len(self.misses) < MAX_MISSES_KEPT:
            self.misses.append(message)

    def receive(self, request: ReceivedRequest) -> None:
        if self.keep is not None and len(self.received) >= self.keep:
            self.dropped += 1
        else:
            self.received.append(request)

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
                parsed = adapter_for(received.provider).parse_request(
                    json.loads(received.body), path=received.path
                )
            except (ValueError, HarnessError) as error:
                entry["error"] = str(error)
            else:
                entry["kind"] = "forced" if parsed.forces_tool(self.output_tool) else "work"
                entry["request"] = parsed.model_dump(mode="json")
            requests.append(entry)
        report: dict[str, Any] = {"id": self.id, "output_tool": self.output_tool}
        report["requests"] = requests
        report["misses"] = list(self.misses)
        if self.dropped:
            report["requests_not_kept"] = self.dropped
        return report


@dataclass(eq=False)
class _Cassette(_InUse):
    """A cassette served under `/c/<name>`, shared by every client of that URL."""

    path: Path
    transport: CassetteTransport


@dataclass(frozen=True)
class _Refused:
    """Why a request body was not read: the status and message it is answered with."""

    status: int
    message: str


_KEY_EXTENSION: Final = "harness.request_key"


class _KeyedCassetteTransport(CassetteTransport):
    """A cassette transport that leaves the key it computes for a request on the request, for
    the request log: computing it again costs as much as finding the recorded answer."""

    def key_for(self, request: AnyRequest) -> str:
        key = super().key_for(request)
        request.extensions[_KEY_EXTENSION] = key
        return key


def _request_key(transport: CassetteTransport | ScriptTransport, request: httpx2.Request) -> str:
    """The key of `request`: the one its cassette transport computed, else computed here."""
    computed = request.extensions.get(_KEY_EXTENSION)
    if isinstance(computed, str):
        return computed
    if isinstance(transport, CassetteTransport):
        return transport.key_for(request)
    return canonical_request_key(
        request.method,
        str(request.url),
        request.headers.multi_items(),
        request.content,
        provider=transport.provider,
    )


@dataclass(slots=True, eq=False)
class _Exchange:
    """What the request log says of one request, filled in as it is answered."""

    arrived: float
    """`time.time()` when it arrived."""
    started: float
    """`time.perf_counter()` when it arrived."""
    outcome: Outcome = "invalid"
    provider: Provider | None = None
    endpoint: str | None = None
    session: str | None = None
    cassette: str | None = None
    keyed: tuple[CassetteTransport | ScriptTransport, httpx2.Request] | None = None
    """The transport that answered and the request it was sent, which give the request key
    (computed only when a line is written, and only when the transport did not compute it)."""
    path: str = ""
    """The request's path, without its query string (the line of a refusal gives it)."""

    def line(self, log_format: LogFormat, status: int, *, secrets: tuple[str, ...] = ()) -> str:
        """The request's log line; `secrets` (the control token) are redacted from its path."""
        key = None if self.keyed is None else key_prefix(_request_key(*self.keyed))
        milliseconds = round((time.perf_counter() - self.started) * 1000, 1)
        return format_line(
            log_format,
            self.arrived,
            self.session,
            self.cassette,
            self.provider,
            self.endpoint,
            key,
            self.outcome,
            status,
            milliseconds,
            logged_path(self.path, self.outcome, status, secrets=secrets),
        )


class _SharedUpstream(httpx2.AsyncBaseTransport):
    """The server's one connection pool to the providers, lent to every recording cassette:
    a cassette closing leaves it open (the server closes it last). One pool, not one per
    cassette: each holds its own TLS context, most of a cassette's memory."""

    def __init__(self) -> None:
        self._pool: httpx2.AsyncHTTPTransport | None = None
        self._shut = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._shut:  # the server is stopping: nothing more is recorded
            raise httpx2.ConnectError("harness serve is stopping", request=request)
        if self._pool is None:
            self._pool = httpx2.AsyncHTTPTransport()
        return await self._pool.handle_async_request(request)

    async def aclose(self) -> None:
        """Closing a cassette that borrowed the pool leaves it open."""

    async def shutdown(self) -> None:
        """Close the pool, breaking off any answer still being read, for good."""
        self._shut = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.aclose()


class ServeRefusedError(HarnessError, PermissionError):
    """A client asked for more than the server's operator allowed: a session recording more
    than the server does, or a request without the server's control token. `status` is the
    HTTP status it is answered with."""

    code = "serve_refused"

    def __init__(self, message: str, *, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


class ReplayApp:
    """The server's state: the `/c/` cassettes and the sessions open, each within its limit."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.limits = config.limits
        self.run_id = config.recording_run()
        self._root = config.cassettes.resolve()
        self.cassettes: OrderedDict[Path, _Cassette] = OrderedDict()
        # A name's cassette, once open: resolving it again for every request (two realpath
        # walks) cost as much as finding the recorded answer.
        self._by_name: dict[tuple[str, Provider], _Cassette] = {}
        self._created: set[Path] = set()
        """Cassettes this server began in mode `once`: they keep recording, whoever asks."""
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self._usage = CassetteUsage()
        """What the transports closed so far played, for the summary printed at shutdown."""
        self._upstream = _SharedUpstream()
        self.stopping = False
        """Whether the server has begun to stop (`stop`)."""
        self._control = Starlette(
            routes=[
                StarletteRoute(f"{CONTROL_PREFIX}/health", self.health, methods=["GET"]),
                StarletteRoute(f"{CONTROL_PREFIX}/cassettes", self.list_cassettes, methods=["GET"]),
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
        if scope["type"] != "http":
            await self._control(scope, receive, send)
            return
        path: str = scope["path"]
        exchange = _Exchange(time.time(), time.perf_counter(), path=path)
        control = path.startswith(CONTROL_PREFIX)
        refused = self._unauthorised(scope, control=control)
        if control:
            if path == f"{CONTROL_PREFIX}/health":  # polled by supervisors: never logged
                await self._control(scope, receive, send)
            else:
                await self._control_call(scope, receive, send, exchange, refused)
        elif refused is not None:
            exchange.outcome = "refused"
            _describe_route(path, exchange)
            try:
                await refused(scope, receive, send)
            finally:
                self._log(exchange, refused.status_code)
        else:
            response, user = await self.provider_call(Request(scope, receive), exchange)
            try:
                await response(scope, receive, send)
            finally:
                if user is not None:
                    user.active -= 1
                self._log(exchange, response.status_code)

    async def _control_call(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        exchange: _Exchange,
        refused: Response | None,
    ) -> None:
        """A control call (or its refusal), logged with the status it was answered with."""
        exchange.endpoint, exchange.session = _control_endpoint(scope["method"], scope["path"])
        scope[_EXCHANGE_SCOPE_KEY] = exchange  # the handlers name the session they open
        status = 500

        async def noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await (refused or self._control)(scope, receive, noting_status)
        finally:
            exchange.outcome = _control_outcome(status)
            self._log(exchange, status)

    def _log(self, exchange: _Exchange, status: int) -> None:
        log_format = self.config.log_format
        if log_format is not None:
            token = self.config.control_token
            write_line(exchange.line(log_format, status, secrets=(token,) if token else ()))

    def _unauthorised(self, scope: Scope, *, control: bool) -> Response | None:
        """The refusal of a request that does not carry the control token, when the server
        has one (the health check needs none)."""
        token = self.config.control_token
        if token is None or scope["path"] == f"{CONTROL_PREFIX}/health":
            return None
        headers = Headers(scope=scope)
        offered = [
            headers.get(CONTROL_TOKEN_HEADER, ""),
            headers.get("x-api-key", ""),
            headers.get("authorization", "").removeprefix("Bearer ").strip(),
        ]
        if any(hmac.compare_digest(given.encode(), token.encode()) for given in offered if given):
            return None
        message = (
            "this harness serve requires its control token (--control-token): send it as the "
            f"SDK's API key, or in the {CONTROL_TOKEN_HEADER} header"
        )
        if control:
            return _control_error(401, message)
        try:
            provider = route(scope["path"]).provider
        except RouteError:
            provider = "openai"
        return _provider_error(provider, 401, "authentication_error", message)

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        await self.close()

    async def stop(self) -> None:
        """The server has begun to stop: `STOP_GRACE_SECONDS` later, as the answers still going
        out are cut off (`BoundedConnection.shutdown`), the connections to the providers are
        closed, so a recording still reading a provider's answer ends then. Its answer is
        broken off, and so never recorded (as when a provider breaks one off): a recording is
        whole or not at all. Without this, a slow provider would hold the stop as long as it
        took to answer."""
        self.stopping = True
        await anyio.sleep(STOP_GRACE_SECONDS)
        await self._upstream.shutdown()

    # -- the provider APIs ------------------------------------------------------------------------

    async def provider_call(
        self, request: Request, exchange: _Exchange
    ) -> tuple[Response, _InUse | None]:
        """The answer to a provider call, and what it holds open until the answer has gone out
        (the caller releases it). `exchange` is filled in with what the request log says."""
        try:
            # the path as the client sent it, percent-decoded: `request.url.path` escapes `\`
            target = route(request.scope["path"])
        except RouteError as error:
            return self._route_error(error, exchange), None
        exchange.provider = target.provider
        exchange.endpoint = target.endpoint
        if target.kind == "session":
            exchange.session = target.name
        if request.method != "POST":
            return _provider_error(
                target.provider,
                405,
                "invalid_request_error",
                f"{request.method} is not allowed on {target.endpoint}; the API takes POST",
            ), None
        body = await self._body(request)
        if isinstance(body, _Refused):
            exchange.outcome = "refused"
            return _provider_error(
                target.provider, body.status, "invalid_request_error", body.message
            ), None
        problem = _not_a_json_object(body)
        if problem is not None:
            return _provider_error(target.provider, 400, "invalid_request_error", problem), None
        try:
            user = await self._user_of(target)
        except RouteError as error:
            return self._route_error(error, exchange), None
        except CassetteError as error:
            exchange.cassette = target.name  # a valid name: the cassette does not load
            exchange.outcome = "failed"
            message = str(error) + self._doubled_version_hint(target)
            return self._provider_error(target.provider, 404, "not_found_error", message), None
        exchange.cassette = user.cassette if isinstance(user, Session) else target.name
        user.active += 1
        try:
            response = await self._answer(request, target, body, user, exchange)
        except BaseException:
            user.active -= 1
            raise
        return response, user

    async def _body(self, request: Request) -> bytes | _Refused:
        """The request body, read as it arrives and never past `limits.max_request_bytes`; a
        refusal when it is larger, too slow, or its client left while sending it."""
        limit = self.limits.max_request_bytes
        too_large = _Refused(
            413,
            f"the request body is larger than this server's limit of {limit:,} bytes; send a "
            "smaller request, or start harness serve with a larger --max-request-bytes",
        )
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return too_large
        parts: list[bytes] = []
        size = 0
        try:
            with anyio.fail_after(self.limits.body_timeout):
                async for part in request.stream():
                    size += len(part)
                    if size > limit:
                        return too_large
                    parts.append(part)
        except TimeoutError:
            return _Refused(
                408,
                f"the request body did not arrive within {self.limits.body_timeout:g} seconds "
                "(--body-timeout)",
            )
        except ClientDisconnect:  # nobody is left to read the answer
            return _Refused(400, "the client left while sending the request body")
        return b"".join(parts)

    async def _answer(
        self, request: Request, target: Route, body: bytes, user: _InUse, exchange: _Exchange
    ) -> Response:
        transport = user.transport if isinstance(user, Session | _Cassette) else None
        assert transport is not None
        if isinstance(user, Session):
            user.receive(
                ReceivedRequest(target.endpoint, target.provider, body, target.provider_path)
            )
        upstream = self._upstream_request(request, target, body, _records(transport))
        exchange.keyed = (transport, upstream)
        try:
            response = await transport.handle_async_request(upstream)
        except CassetteMissError as miss:
            # recorded, and every recorded answer played already; else never recorded
            used_up = isinstance(transport, CassetteTransport) and bool(
                transport.cassette.by_key.get(_request_key(transport, upstream))
            )
            exchange.outcome = "used up" if used_up else "missed"
            message = str(miss) + (_REPLAY_AGAIN_HINT if used_up else "")
            if isinstance(user, Session):
                user.missed(self._for_client(message))
            return self._provider_error(target.provider, 404, "not_found_error", message)
        except ScriptExhaustedError as exhausted:
            exchange.outcome = "used up"
            if isinstance(user, Session):
                user.missed(self._for_client(str(exhausted)))
            return self._provider_error(target.provider, 404, "not_found_error", str(exhausted))
        except HarnessError as error:
            return self._provider_error(target.provider, 400, "invalid_request_error", str(error))
        except http_errors() as error:  # recording, and the provider cannot be reached
            exchange.outcome = "failed"
            return _provider_error(
                target.provider,
                502,
                "api_error",
                f"the provider could not be reached to record this request "
                f"({type(error).__name__}); check {target.spec.base_url_variable}",
            )
        headers = {
            name: value
            for name, value in response.headers.multi_items()
            if name.lower() not in _HOP_BY_HOP
        }
        in_memory = response.is_stream_consumed or isinstance(response.stream, ChunkStream)
        if isinstance(transport, ScriptTransport):
            exchange.outcome = "scripted"
        else:  # a recording relays the provider's answer as it arrives
            exchange.outcome = "replayed" if in_memory else "recorded"
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
            stopping=lambda: self.stopping,
            status_code=response.status_code,
            headers=headers,
        )

    async def _user_of(self, target: Route) -> Session | _Cassette:
        """The session or `/c/` cassette a request is for, opened (and another one closed, over
        `limits.max_cassettes`) on first use."""
        if target.kind == "session":
            session = self.sessions.get(target.name)
            if session is None:
                meant = doubled_version(target.name)
                if meant is not None and meant in self.sessions:
                    raise RouteError(
                        f"no session {target.name!r}: the SDK's base URL ends in /v1 and the SDK "
                        f"adds /v1 itself (the official Anthropic SDKs do); give it the "
                        f"session's URL, /s/{meant}, without /v1",
                        provider=target.provider,
                    )
                raise RouteError(
                    f"no session {target.name!r}: open one with POST {CONTROL_PREFIX}/sessions "
                    f"(a session is gone once deleted, or closed as the longest idle of more "
                    f"than {self.limits.max_sessions:,} open: --max-sessions)",
                    provider=target.provider,
                )
            self.sessions.move_to_end(target.name)
            attached = session.transport
            if (
                isinstance(attached, ScriptTransport)
                and attached.provider != target.provider
                and not attached.requests
            ):
                # A script is written once and spoken in the wire of whichever provider is asked
                # first (a decision module picks its model, and so its provider, as it runs).
                session.transport = ScriptTransport(target.provider, attached.replies)
            return session
        known = self._by_name.get((target.name, target.provider))
        if known is None:
            path = cassette_path(self.config.cassettes, target.name, target.provider)
            known = self.cassettes.get(path)
            if known is None:
                mode = self._mode_for(path, self.config.record_mode)
                known = _Cassette(path, self._cassette(path, mode, target.provider))
                self.cassettes[path] = known
                await self._close_idle(self.cassettes, self.limits.max_cassettes)
            self._by_name[target.name, target.provider] = known
        self.cassettes.move_to_end(known.path)
        return known

    def _doubled_version_hint(self, target: Route) -> str:
        """For a cassette `<name>/v1` that does not load while cassette `<name>` exists: that an
        SDK adding `/v1` itself was given a base URL ending in `/v1`. Else nothing."""
        meant = doubled_version(target.name)
        if target.kind != "cassette" or meant is None:
            return ""
        try:
            exists = cassette_path(self.config.cassettes, meant).is_file()
        except (RouteError, OSError):
            return ""
        if not exists:
            return ""
        return (
            f"; cassette {meant!r} exists: the SDK's base URL ends in /v1 and the SDK adds /v1 "
            f"itself (the official Anthropic SDKs do), so give it /c/{meant} without /v1"
        )

    def _cassette(
        self,
        path: Path,
        mode: RecordMode,
        provider: Provider | None = None,
        identical_requests: IdenticalRequests | None = None,
        pace: str | float | None = None,
    ) -> CassetteTransport:
        return _KeyedCassetteTransport(
            path,
            mode=mode,
            inner=self._upstream,
            provider=provider,
            allow_repeats=self.config.allow_repeats,
            run_id=self.run_id,
            keep_when_idle=True,
            identical_requests=identical_requests or self.config.identical_requests,
            pace=self.config.pace if pace is None else pace,
        )

    def _mode_for(self, path: Path, mode: RecordMode) -> RecordMode:
        """`mode`, except that a cassette this server began in mode `once` goes on recording
        for every client until the server stops: a second client's first request must not find
        the file the first one saved and refuse to record."""
        if mode is not RecordMode.ONCE:
            return mode
        if path in self._created:
            return RecordMode.NEW_EPISODES
        try:
            exists = path.exists()
        except OSError:
            exists = True  # the transport says what is wrong with it
        if not exists:
            self._created.add(path)
        return mode

    async def _close_idle(self, held: OrderedDict[Any, Any], limit: int) -> None:
        """Close the longest idle of `held` (sessions or cassettes) until at most `limit` are
        open; one a request is using is never closed, nor the one just opened (the last), which
        its request is about to use. Recordings are saved as they close."""
        excess = len(held) - limit
        for name, user in list(held.items())[:-1]:
            if excess <= 0:
                return
            if user.active or getattr(user, "attached", False):
                continue
            del held[name]
            excess -= 1
            if isinstance(user, _Cassette):
                self._by_name = {
                    named: cassette
                    for named, cassette in self._by_name.items()
                    if cassette is not user
                }
            await _closed(user.transport)
            self._tally(user.transport)

    def _upstream_request(
        self, request: Request, target: Route, body: bytes, recording: bool
    ) -> httpx2.Request:
        """The request as the provider would receive it: its own path (the endpoint's with its
        version, however the client spelt it; a deployment path as it came), the client's
        query without credential parameters (Gemini's `key`), the client's headers of
        `FORWARDED_HEADERS` alone (and a registered provider's keyed headers), and the server's
        credentials when a miss is recorded."""
        keyed = keyed_header_names()
        headers = [
            (name, value)
            for name, value in request.headers.items()
            if (lowered := name.lower()) in _CLIENT_HEADERS or lowered in keyed
        ]
        if recording:
            headers.extend(self.config.credentials(target.provider).items())
        query = _without_credentials(request.scope["query_string"].decode("latin-1"))
        url = (
            self.config.upstream(target.provider)
            + target.provider_path
            + (f"?{query}" if query else "")
        )
        return httpx2.Request(
            "POST", url, headers=headers, content=body, extensions={"timeout": _UPSTREAM_TIMEOUT}
        )

    def _provider_error(
        self, provider: Provider, status: int, error_type: str, message: str
    ) -> Response:
        """`_provider_error` for a message that may name a cassette file or an option (see
        `_for_client`)."""
        return _provider_error(provider, status, error_type, self._for_client(message))

    def _for_client(self, message: str) -> str:
        """`message` as a client reads it: a cassette by its name inside the cassettes folder,
        never where the folder is on the server, and options as `harness serve` flags."""
        return _cli_spelling(self._hidden_paths(message))

    def _hidden_paths(self, message: str) -> str:
        # the longer first: one may hold the other (a symlinked folder inside its target)
        folders = {str(self._root), os.path.abspath(self.config.cassettes)}
        for folder in sorted(folders, key=len, reverse=True):
            message = message.replace(folder + os.sep, "").replace(folder, "<cassettes>")
        return message

    def _route_error(self, error: RouteError, exchange: _Exchange) -> Response:
        error = self._in_session(error)
        # a refused cassette name is a bad request, not a missing cassette
        exchange.outcome = "refused" if error.status == 400 else "invalid"
        error_type = "invalid_request_error" if error.status == 400 else "not_found_error"
        return self._provider_error(error.provider, error.status, error_type, str(error))

    def _in_session(self, error: RouteError) -> RouteError:
        """`error` for a path under an open session that ends in no endpoint: answered in the
        error format of the provider the path names, else of the session's script, and naming
        what the session answers (a script that has answered speaks its provider's endpoints
        alone; one that has not, and a cassette, every endpoint)."""
        session = self.sessions.get(error.session) if error.session is not None else None
        if session is None:
            return error
        transport = session.transport
        provider, paths = error.spoken or error.provider, list(served_endpoints())
        if isinstance(transport, ScriptTransport):
            provider = error.spoken or transport.provider
            if transport.requests:
                paths = [endpoint.path for endpoint in _spec(transport.provider).endpoints]
        played = "a script" if isinstance(transport, ScriptTransport) else "a cassette"
        listed = paths[0] if len(paths) == 1 else f"{', '.join(paths[:-1])} and {paths[-1]}"
        return RouteError(
            f"{error}; session {session.id!r} plays {played} and answers POST {listed}",
            provider=provider,
        )

    # -- control --------------------------------------------------------------------------------

    async def unknown(self, request: Request) -> Response:
        return _control_error(
            404,
            f"no control endpoint {request.method} {request.url.path}: the control API is "
            f"GET {CONTROL_PREFIX}/health, GET {CONTROL_PREFIX}/cassettes, "
            f"POST {CONTROL_PREFIX}/sessions and GET or DELETE {CONTROL_PREFIX}/sessions/<id>",
        )

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def open_session(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, _Refused):
            return _control_error(body.status, body.message)
        try:
            spec = SessionSpec.model_validate_json(body)
            session = self._session(spec)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in problem['loc']) or '(body)'}: {problem['msg']}"
                for problem in error.errors(include_input=False)
            )
            return _control_error(400, f"invalid session: {problems}")
        except (RouteError, ServeRefusedError, HarnessError) as error:
            return _control_error(getattr(error, "status", 400), self._for_client(str(error)))
        self.sessions[session.id] = session
        exchange = request.scope.get(_EXCHANGE_SCOPE_KEY)
        if isinstance(exchange, _Exchange):
            exchange.session, exchange.cassette = session.id, session.cassette
        await self._close_idle(self.sessions, self.limits.max_sessions)
        base = str(request.base_url).rstrip("/") + f"/s/{session.id}"
        return JSONResponse(
            {
                "id": session.id,
                "url": base,
                "base_urls": {spec.name: spec.sdk_base_url(base) for spec in provider_specs()},
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
                    f"a script session needs its provider: {' or '.join(provider_names())}",
                    status=400,
                )
            transport: ScriptTransport | CassetteTransport = ScriptTransport(
                spec.provider, list(spec.script)
            )
        else:
            assert spec.cassette is not None
            mode = self._session_mode(spec.record_mode)
            path = cassette_path(self.config.cassettes, spec.cassette)
            transport = self._cassette(
                path,
                self._mode_for(path, mode),
                identical_requests=spec.identical_requests,
                pace=spec.pace,
            )
        return Session(
            identifier,
            transport,
            spec.output_tool,
            keep=self.limits.max_session_requests,
            cassette=spec.cassette,
        )

    def _session_mode(self, requested: RecordMode | None) -> RecordMode:
        """The record mode a session gets: what it asks for (the server's own by default), if
        the server's operator allows it."""
        own = self.config.record_mode
        mode = requested or own
        allowed = RecordMode.ALL if self.config.allow_session_record else own
        if _RECORD_RIGHTS.index(mode) > _RECORD_RIGHTS.index(allowed):
            raise ServeRefusedError(
                f"record_mode {mode.value!r} is refused: this server was started with "
                f"--record-mode {own.value}, and a session may not record more than the server "
                f"does; start harness serve with --record-mode {mode.value}, or with "
                "--allow-session-record to let sessions choose their record mode"
            )
        return mode

    async def session_endpoint(self, request: Request) -> Response:
        identifier = request.path_params["session_id"]
        session = self.sessions.get(identifier)
        if session is None:
            return _control_error(404, f"no session {identifier!r}")
        if request.method == "DELETE":
            del self.sessions[identifier]
            await session.idle()
            await _closed(session.transport)
            self._tally(session.transport)
            return JSONResponse({"id": identifier, "deleted": True})
        return JSONResponse(session.report())

    async def list_cassettes(self, request: Request) -> Response:
        """The cassettes open now with what was played of each, as far as the client may see:
        a session's id is what lets a client use it (it is never listed), so `?session=<id>`
        lists that session's cassette alone, and without it only the `/c/` cassettes, which
        every client may use, are listed."""
        given = request.query_params.getlist("session")
        problem = _listing_query_problem(set(request.query_params), given)
        if problem is not None:
            return _control_error(
                400,
                f"{problem}; GET {CONTROL_PREFIX}/cassettes takes session=<id> (the id "
                f"POST {CONTROL_PREFIX}/sessions answered) to list that session's cassette, "
                "and nothing to list the server's own /c/ cassettes",
            )
        if not given:
            served = [
                served_cassette(name, cassette.transport)
                for cassette in self.cassettes.values()
                if (name := cassette_name(cassette.path, self._root)) is not None
            ]
            served.sort(key=lambda cassette: cassette.name)
            return JSONResponse(CassetteListing(cassettes=served).model_dump(mode="json"))
        identifier = given[0]
        exchange = request.scope.get(_EXCHANGE_SCOPE_KEY)
        if isinstance(exchange, _Exchange):
            exchange.session = identifier
        session = self.sessions.get(identifier)
        if session is None:
            return _control_error(404, f"no session {identifier!r}")
        if isinstance(exchange, _Exchange):
            exchange.cassette = session.cassette
        listed = (
            [served_cassette(session.cassette, session.transport, session.id)]
            if session.cassette is not None and isinstance(session.transport, CassetteTransport)
            else []
        )
        return JSONResponse(CassetteListing(cassettes=listed).model_dump(mode="json"))

    def _tally(self, transport: CassetteTransport | ScriptTransport) -> None:
        """Count what a cassette transport played before it closes, for the shutdown summary."""
        if isinstance(transport, CassetteTransport):
            name = cassette_name(transport.path, self._root)
            if name is not None:
                self._usage.add(name, transport)

    def attach(self, session: Session) -> None:
        """Serve `session`, whose caller ends it (see `ReplayServer.attach`)."""
        session.attached = True
        if session.cassette is None and isinstance(session.transport, CassetteTransport):
            session.cassette = cassette_name(session.transport.path.resolve(), self._root)
        self.sessions[session.id] = session

    def detach(self, session: Session) -> None:
        self.sessions.pop(session.id, None)

    async def close(self) -> None:
        """Close every transport: recordings are saved, and the interactions no client played
        over the server's life are printed to stderr, one line per cassette (nothing when every
        one was played).

        `aclose`, on the server's loop: a recording reaches the provider through async
        connections, which the sync `close` leaves open.
        """
        for transport in [
            *(cassette.transport for cassette in self.cassettes.values()),
            *(session.transport for session in self.sessions.values() if not session.attached),
        ]:
            await transport.aclose()
            self._tally(transport)  # after: an answer left unfinished is recorded as it closes
        await self._upstream.shutdown()
        self.cassettes.clear()
        self._by_name.clear()
        self.sessions.clear()
        never_played = self._usage.never_played()
        if never_played:
            sys.stderr.write("".join(f"{line}\n" for line in never_played))


async def _closed(transport: CassetteTransport | ScriptTransport) -> None:
    """Close `transport` (nothing is using it). A recording is saved on a worker thread, so the
    file lock and the write never stall the server's other clients; anything else closes here
    (a thread per close would cost more than the close, and memory besides)."""
    if _records(transport):
        await anyio.to_thread.run_sync(transport.close)
    else:
        await transport.aclose()


class _RelayResponse(StreamingResponse):
    """The answer, relayed chunk by chunk as it is produced (one chunk per SSE event).

    A client that goes away mid-stream only stops the relay: when the exchange ends, however it
    ends, the provider's answer is read to its end and a recording saved. Starlette stops
    iterating when the client leaves without closing anything, so this is done here, at once,
    not whenever the garbage collector gets to an abandoned generator. In record mode `all`
    nothing is saved until the cassette closes: a save in the middle of a re-recording would
    replace the cassette with the first answers alone, so re-recording unchanged traffic would
    rewrite it.

    A paced replay is watched for its client leaving too: its waits would otherwise go on for
    the stream's whole recorded length after the client (or, when the server stops, its cut
    off connection) is gone, and hold the server's stop as long. A recording still under way
    when the server stops is broken off (`ReplayApp.stop`), and not recorded.
    """

    def __init__(
        self,
        upstream: httpx2.Response,
        transport: CassetteTransport | ScriptTransport,
        *,
        in_memory: bool,
        stopping: Callable[[], bool],
        **options: Any,
    ) -> None:
        self._chunks = _chunks(upstream, shielded=not in_memory, stopping=stopping)
        super().__init__(self._chunks, **options)
        self._upstream = upstream
        self._transport = transport
        self._in_memory = in_memory
        self._stopping = stopping
        self._paced = isinstance(upstream.stream, PacedStream)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if self._in_memory and not self._paced:
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
                try:
                    await self._upstream.aclose()  # a recording reads the rest here
                except http_errors():
                    if not self._stopping():
                        raise
                    # broken off by the stop (ReplayApp.stop): not recorded, nothing to report
                transport = self._transport
                if _records(transport) and transport.mode is not RecordMode.ALL:
                    await anyio.to_thread.run_sync(transport.save)


async def _chunks(
    upstream: httpx2.Response, *, shielded: bool, stopping: Callable[[], bool]
) -> AsyncGenerator[bytes, None]:
    """`upstream`'s body as it arrives. A `shielded` read is shielded from the client going
    away: cancelling it mid-read would end the provider's stream there, and the part read so far
    would be recorded as the whole answer. One broken off because the server is `stopping`
    (`ReplayApp.stop`) ends the relay as its connection is cut off."""
    if upstream.is_stream_consumed:  # built from content: the body is already here
        yield upstream.content
        return
    chunks = upstream.aiter_raw()
    if not shielded:  # in memory: nothing is read from anywhere
        async for chunk in chunks:
            yield chunk
        return
    while True:
        try:
            with anyio.CancelScope(shield=True):
                chunk = await anext(chunks, b"")
        except http_errors():
            if not stopping():
                raise
            # not recorded; ending the answer here would tell the client it is whole, so wait
            # for the cut (BoundedConnection.shutdown), which cancels this relay
            await anyio.sleep_forever()
        if not chunk:  # the end (httpx2 never yields an empty chunk)
            return
        yield chunk


_ALL_METHODS: Final = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _is_event_stream(response: httpx2.Response) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


def _records(transport: CassetteTransport | ScriptTransport) -> TypeGuard[CassetteTransport]:
    """Whether `transport` records what it cannot replay."""
    return isinstance(transport, CassetteTransport) and transport.recording


_REPLAY_AGAIN_HINT: Final = (
    "\nThrough harness serve, each recorded answer is played once per /c/<cassette> URL "
    "(until the server restarts) and once per session: for repeated runs, open a session "
    f'per run with POST {CONTROL_PREFIX}/sessions {{"cassette": "<name>"}}, which plays the '
    "cassette from its start."
)
"""Added to the message of a request whose recorded answers were all played."""

_CLI_SPELLINGS: Final = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"\bSet allow_repeats=True\b", "Start harness serve with --allow-repeats"),
        (r"\ballow_repeats=True\b", "--allow-repeats"),
        (
            r"\bload it with allow_tampered=True to inspect it\b",
            "list its problems with harness cassettes verify",
        ),
        (r"\bin record mode '(\w+)'", r"with --record-mode \1"),
        (r"\brecord mode is '(\w+)'", r"--record-mode is \1"),
        (r"\brecord mode '(\w+)', '(\w+)' or '(\w+)'", r"--record-mode \1, \2 or \3"),
        (
            r"\brecord mode '(\w+)' appends the new interaction, '(\w+)'",
            r"--record-mode \1 appends the new interaction, --record-mode \2",
        ),
        (r"\brecord mode '(\w+)'", r"--record-mode \1"),
    )
)
"""The cassette library's messages name its options as a Python caller passes them
(`allow_repeats=True`, `record mode 'all'`); a client of the server reads them as the server's
command-line options, which are what its operator types."""


def _cli_spelling(message: str) -> str:
    """`message` with the cassette library's Python option spellings as `harness serve` flags."""
    for pattern, replacement in _CLI_SPELLINGS:
        message = pattern.sub(replacement, message)
    return message


_EXCHANGE_SCOPE_KEY: Final = "harness.exchange"
_CONTROL_REFUSALS: Final = frozenset({401, 403, 408, 413})
"""Control statuses that are a limit's or the server's rights' refusal."""


def _describe_route(path: str, exchange: _Exchange) -> None:
    """The provider, endpoint and session of a request refused before it was routed."""
    try:
        target = route(path)
    except RouteError:
        return
    exchange.provider = target.provider
    exchange.endpoint = target.endpoint
    if target.kind == "session":
        exchange.session = target.name


def _control_endpoint(method: str, path: str) -> tuple[str, str | None]:
    """A control call as the request log names it (its method and route), and the session it
    is about."""
    sessions = f"{CONTROL_PREFIX}/sessions"
    if path.startswith(f"{sessions}/"):
        return f"{method} {sessions}/<id>", path.removeprefix(f"{sessions}/")
    if path in (sessions, f"{CONTROL_PREFIX}/cassettes"):
        return f"{method} {path}", None
    return f"{method} {CONTROL_PREFIX}/...", None


def _listing_query_problem(names: set[str], sessions: list[str]) -> str | None:
    """What is wrong with the query of a cassette listing (the parameter `names`, the values
    of `session`), or None: a misspelt parameter would otherwise list other cassettes than
    the client meant."""
    unknown = sorted(names - {"session"})
    if unknown:
        noun = "parameter" if len(unknown) == 1 else "parameters"
        return f"unknown query {noun} {', '.join(repr(name[:40]) for name in unknown[:3])}"
    if len(sessions) > 1:
        return f"session is given {len(sessions)} times"
    if sessions == [""]:
        return "session is empty"
    return None


def _control_outcome(status: int) -> Outcome:
    if status < 400:
        return "control"
    if status in _CONTROL_REFUSALS:
        return "refused"
    return "invalid" if status < 500 else "failed"


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


def _without_credentials(query: str) -> str:
    """`query` without its credential parameters (`key=...`, as a Gemini client may send its
    key), the others as the client spelt them: a client's own credentials are never forwarded,
    recorded or keyed."""
    kept = [
        parameter
        for parameter in query.split("&")
        if parameter and not field_is_credential(unquote_plus(parameter.split("=", 1)[0]))
    ]
    return "&".join(kept)


def _control_error(status: int, message: str) -> Response:
    return JSONResponse({"error": {"message": message}}, status)


def create_app(config: ServeConfig) -> ASGIApp:
    """The ASGI app serving `config`."""
    return ReplayApp(config).app


__all__ = ["ENDPOINTS", "ReplayApp", "ServeConfig", "Session", "SessionSpec", "create_app"]
