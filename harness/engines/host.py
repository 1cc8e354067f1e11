"""The harness's side of a cell run on a real engine, and the worker's way to reach it.

A cell run on Temporal or DBOS runs the reference loop in a worker process the engine schedules,
restarts and replays. What the loop reaches outside itself stays in the harness process, as a
deployed worker reaches a provider and a database over the network: the model (the cell's
scripted, replayed or recorded gateway, so the requests and cassettes are exactly those of the
simulated engine), the cell's store, the approval policy, and the fault plan. `CellHost` serves
those over loopback HTTP to the workers of one run; `HostClient` is the worker's side.

The host also watches the engine: every LLM request carries the unit of work that sent it (a
digest of the state the unit started from), and a unit that sends a second request (the engine ran
a finished unit again) is recorded as a finding. After a crash it records the state the next unit
started from, so the cell can check that the forced-completion state came back from the engine.

Only a client presenting the run's token is answered, and bodies are bounded
(`MAX_BODY_BYTES`): a worker is code the harness started, but nothing it sends can exhaust the
harness.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, ClassVar, Final

import httpx2
from pydantic import JsonValue

from harness.agent.definition import AgentTool
from harness.agent.loop import MemoryExtractor
from harness.agent.tools import ApprovalPolicy
from harness.errors import AgentDecisionCallException, HarnessError, ToolChoiceUnsupportedError
from harness.llm.gateway import Completer
from harness.llm.models import LlmRequest, LlmResponse, LlmToolCall, Message
from harness.stores.base import StateStore, StoredRun

if TYPE_CHECKING:
    from harness.runtimes.base import Cancel, Fault

TOKEN_HEADER: Final = "x-harness-engine-token"
MAX_BODY_BYTES: Final = 64 * 1024 * 1024
"""The largest body a worker may send the host (a run's state, with its transcript)."""
CALL_TIMEOUT_SECONDS: Final = 600.0


class EngineHostError(HarnessError):
    """Raised in a worker when the harness's side of its cell refused a call or could not be
    reached: the run it belongs to is over, or the token is not the run's."""

    code: ClassVar[str] = "engine_host_failed"


@dataclass
class HostedCell:
    """What the harness keeps of one cell while a worker runs it."""

    completer: Completer
    store: StateStore
    approve: ApprovalPolicy
    extract_memories: MemoryExtractor | None
    faults: Sequence[Fault] = ()
    cancel: Cancel | None = None
    fired: set[tuple[str, int]] = field(default_factory=set)
    """The faults that have crashed a worker (each crashes one)."""
    units: dict[str, int] = field(default_factory=dict)
    """LLM requests sent per unit of work (a digest of the state the unit started from)."""
    repeated_units: list[str] = field(default_factory=list)
    crashed_at: list[tuple[str, str | None]] = field(default_factory=list)
    """For each crash: the point, and the forced-completion state (JSON) persisted there."""
    resumed_with: list[str | None] = field(default_factory=list)
    """For each crash: the forced-completion state (JSON) the next unit started from."""
    lock: threading.Lock = field(default_factory=threading.Lock)


class CellHost:
    """The loopback server the workers of one run call; cells are added and removed by id."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(16)
        self.workers_seen: set[int] = set()
        """The process ids of the workers that have run a unit of work."""
        self._cells: dict[str, HostedCell] = {}
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def add(self, cell_id: str, cell: HostedCell) -> None:
        with self._lock:
            self._cells[cell_id] = cell

    def remove(self, cell_id: str) -> HostedCell | None:
        with self._lock:
            return self._cells.pop(cell_id, None)

    def cell(self, cell_id: str) -> HostedCell | None:
        with self._lock:
            return self._cells.get(cell_id)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- what a worker asks -------------------------------------------------------------------

    def answer(self, path: str, body: Mapping[str, Any]) -> JsonValue:
        cell = self.cell(str(body.get("cell", "")))
        if cell is None:
            raise LookupError(f"no cell {body.get('cell')!r} is running")
        handler = _ROUTES.get(path)
        if handler is None:
            raise LookupError(f"no route {path}")
        worker = body.get("worker")
        if isinstance(worker, int):
            with self._lock:
                self.workers_seen.add(worker)
        return handler(cell, body)


def _complete(cell: HostedCell, body: Mapping[str, Any]) -> JsonValue:
    unit = str(body["unit"])
    with cell.lock:
        cell.units[unit] = cell.units.get(unit, 0) + 1
        if cell.units[unit] == 2:
            cell.repeated_units.append(unit)
    request = LlmRequest.model_validate(body["request"])
    try:
        response = cell.completer.complete(request)
    except AgentDecisionCallException as error:
        return {
            "error": {
                "kind": type(error).__name__
                if isinstance(error, ToolChoiceUnsupportedError)
                else "AgentDecisionCallException",
                "message": str(error),
                "status": error.status,
                "error_type": error.error_type,
                "provider": error.provider,
            }
        }
    return {"response": response.model_dump(mode="json")}


def _approve(cell: HostedCell, body: Mapping[str, Any]) -> JsonValue:
    call = LlmToolCall.model_validate(body["call"])
    tool = AgentTool.model_validate(body["tool"])
    return {"granted": bool(cell.approve(call, tool))}


def _extract(cell: HostedCell, body: Mapping[str, Any]) -> JsonValue:
    if cell.extract_memories is not None:
        messages = tuple(_message(m) for m in body["messages"])
        cell.extract_memories(messages)
    return {}


def _message(value: object) -> Message:
    from pydantic import TypeAdapter

    return TypeAdapter(Message).validate_python(value)


def _save(cell: HostedCell, body: Mapping[str, Any]) -> JsonValue:
    """Save the run; with `point`, say whether the worker crashes now (each fault once)."""
    run = StoredRun.model_validate(body["run"])
    cell.store.save(run)
    point, occurrence = body.get("point"), body.get("occurrence")
    crash = False
    if point is not None and occurrence is not None:
        due = (str(point), int(occurrence))
        with cell.lock:
            crash = due not in cell.fired and any(
                (f.point, f.occurrence) == due for f in cell.faults
            )
            if crash:
                cell.fired.add(due)
                fc = run.forced_completion
                cell.crashed_at.append((str(point), fc.model_dump_json() if fc else None))
    return {"crash": crash}


def _load(cell: HostedCell, body: Mapping[str, Any]) -> JsonValue:
    stored = cell.store.load(str(body["run_id"]))
    return {"run": stored.model_dump(mode="json") if stored is not None else None}


def _unit_started(cell: HostedCell, body: Mapping[str, Any]) -> JsonValue:
    """The first unit a worker runs after a crash: what forced-completion state it began with."""
    with cell.lock:
        if len(cell.resumed_with) < len(cell.crashed_at):
            cell.resumed_with.append(body.get("forced_completion"))
    return {}


_ROUTES: Final = {
    "/complete": _complete,
    "/approve": _approve,
    "/extract": _extract,
    "/save": _save,
    "/load": _load,
    "/unit-started": _unit_started,
}


class _QuietServer(ThreadingHTTPServer):
    """A worker killed by a crash fault breaks its connection off: that is no error to print."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        return


def _handler_for(host: CellHost) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # the headers and the body go out as two writes: without this, the second waits for
        # the first's acknowledgement (Nagle's algorithm), some 40 ms on every call
        disable_nagle_algorithm = True

        def do_POST(self) -> None:  # the name http.server calls
            if not secrets.compare_digest(self.headers.get(TOKEN_HEADER, ""), host.token):
                self._reply(HTTPStatus.FORBIDDEN, {"error": "not this run's token"})
                return
            length = int(self.headers.get("content-length") or 0)
            if not 0 <= length <= MAX_BODY_BYTES:
                self._reply(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "body too large"})
                return
            try:
                body = json.loads(self.rfile.read(length))
                answer = host.answer(self.path, body)
            except LookupError as error:
                self._reply(HTTPStatus.NOT_FOUND, {"error": str(error)})
                return
            except Exception as error:  # the worker reports it as its unit's failure
                self._reply(
                    HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(error).__name__}: {error}"}
                )
                return
            self._reply(HTTPStatus.OK, answer)

        def _reply(self, status: HTTPStatus, body: JsonValue) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # http.server's name
            return

    return Handler


# -- the worker's side ---------------------------------------------------------------------------


class HostClient:
    """A worker's connection to the harness's side of its cells."""

    def __init__(self, url: str, token: str) -> None:
        self._client = httpx2.Client(
            base_url=url, headers={TOKEN_HEADER: token}, timeout=CALL_TIMEOUT_SECONDS
        )

    def call(self, path: str, body: Mapping[str, Any]) -> Any:
        try:
            response = self._client.post(path, json=body)
        except httpx2.HTTPError as error:
            raise EngineHostError(f"the harness could not be reached at {path}: {error}") from error
        if response.status_code != 200:
            raise EngineHostError(f"the harness refused {path}: {response.text[:500]}")
        return response.json()

    def close(self) -> None:
        self._client.close()


class HostedCompleter:
    """The cell's model, reached through the host: one unit's requests carry its id."""

    def __init__(self, client: HostClient, cell_id: str, unit: str) -> None:
        self._client = client
        self._cell = cell_id
        self._unit = unit

    def complete(self, request: LlmRequest) -> LlmResponse:
        answer = self._client.call(
            "/complete",
            {"cell": self._cell, "unit": self._unit, "request": request.model_dump(mode="json")},
        )
        error = answer.get("error")
        if error is not None:
            kind = (
                ToolChoiceUnsupportedError
                if error["kind"] == "ToolChoiceUnsupportedError"
                else AgentDecisionCallException
            )
            raise kind(
                error["message"],
                status=error["status"],
                error_type=error["error_type"],
                provider=error["provider"],
            )
        return LlmResponse.model_validate(answer["response"])


def unit_id(state_json: str) -> str:
    """The id of the unit of work that starts from `state_json`."""
    return hashlib.sha256(state_json.encode()).hexdigest()[:24]
