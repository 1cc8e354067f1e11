"""Running scenarios: expand the matrix, run each cell, compare with `expect:`."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness.cassettes.modes import RecordMode
from harness.engines.settings import EngineName, EngineSettings, engine_of
from harness.errors import HarnessError, StoreUnavailableError
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.llm.script import ScriptTransport
from harness.modules.completion import AgentCompletionModule
from harness.runtimes.base import RuntimeOptions
from harness.runtimes.run import run_agent
from harness.scenarios import build
from harness.scenarios.detail import CellDetail, agent_detail
from harness.scenarios.expect import Mismatch, check_agent, check_downstream, check_module
from harness.scenarios.format import Scenario, cancel_plan, fault_plan
from harness.scenarios.load import LoadedScenario
from harness.scrub import redact
from harness.stores.base import StateStore, StoredRun
from harness.stores.urls import (
    StoreUrlError,
    default_store_url,
    open_store,
    store_kind,
)
from harness.workflow import run_workflow

if TYPE_CHECKING:
    from harness.agent.result import RunResult
    from harness.cassettes.transport import CassetteTransport
    from harness.modules.decision import AgentDecisionModule
    from harness.modules.models_acl import LlmDetails

_T = TypeVar("_T")

STORE_URL_VARIABLES = {"postgres": "HARNESS_POSTGRES_URL", "redis": "HARNESS_REDIS_URL"}


class ScenarioSetupError(HarnessError, ValueError):
    """Raised when a cell cannot run as configured: a store with no URL, or one that cannot be
    opened."""

    code = "scenario_setup_invalid"


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How to run: record mode, matrix filters, store URLs, strictness."""

    record_mode: RecordMode = RecordMode.NONE
    runtimes: Sequence[str] = ()
    stores: Sequence[str] = ()
    store_url: str | None = None
    strict_cassettes: bool = False
    workdir: Path = field(default_factory=Path.cwd)
    model: str | None = None
    collect_detail: bool = False
    """Keep each agent cell's calls, chunks and records in `CellResult.detail` (for the HTML
    report); off, a run keeps only what it checks."""
    engine: EngineName = "simulated"
    """`real`: the `temporal` and `dbos` cells run on the engine itself (`harness.engines`)."""
    engine_settings: EngineSettings = field(default_factory=EngineSettings)


@dataclass(frozen=True)
class Cell:
    """One scenario on one runtime and store."""

    loaded: LoadedScenario
    runtime: str
    store: str

    @property
    def id(self) -> str:
        name = self.loaded.scenario.name
        return name if self.runtime == "module" else f"{name}[{self.runtime}-{self.store}]"


@dataclass
class CellResult:
    """What one cell did: mismatches, or an error that kept it from finishing."""

    cell: Cell
    mismatches: list[Mismatch] = field(default_factory=list)
    error: str | None = None
    error_code: str | None = None
    duration: float = 0.0
    run_id: str | None = None
    """A failing agent cell's run, kept in its store for inspection (passing runs are deleted)."""
    skipped: str | None = None
    """Why the cell did not run: the target under test does not support what it needs."""
    skipped_expectations: list[str] = field(default_factory=list)
    """Expectations not checked, each with its reason (the target does not report a counter)."""
    stderr: str = ""
    """What a command target wrote to stderr while it ran this cell."""
    kept_in: str | None = None
    """Where a failing cell's run is kept: the SQLite file (each `-n` worker has its own), or the
    store kind for PostgreSQL and Redis (their URLs may hold a password)."""
    differences: list[str] = field(default_factory=list)
    """With `--compare-reference`: how the target's answer and traffic differ from the
    reference's, one structural difference per line."""
    misses: list[str] = field(default_factory=list)
    """On a target: the requests its session could not answer (a cassette miss, a used-up
    script), each with its diagnosis; a failing cell's report shows them first, as the cause."""
    causes: list[str] = field(default_factory=list)
    """On a target: what its traffic shows went wrong first (a forced attempt sent without
    forcing the completion tool); a failing cell's report shows them first."""
    detail: CellDetail | None = None
    """With `RunOptions.collect_detail`: what an agent cell's run did, call by call."""
    engine: EngineName = "simulated"
    """What ran the cell: `simulated` (the in-process loop) or `real` (Temporal, DBOS)."""

    @property
    def passed(self) -> bool:
        return (
            not self.mismatches
            and not self.differences
            and self.error is None
            and self.skipped is None
        )

    @property
    def failed(self) -> bool:
        return self.skipped is None and not self.passed


def expand(loaded: Iterable[LoadedScenario], options: RunOptions) -> list[Cell]:
    """Every (scenario x runtime x store) cell, filtered by the options."""
    cells: list[Cell] = []
    for item in loaded:
        for runtime, store in item.scenario.cells():
            if runtime != "module" and options.runtimes and runtime not in options.runtimes:
                continue
            if runtime != "module" and options.stores and store not in options.stores:
                continue
            cells.append(Cell(item, runtime, store))
    return cells


@contextlib.contextmanager
def keep_loaded() -> Iterator[None]:
    """While the block runs, leave everything loaded before it (the harness, the scenario files,
    their cells) out of the garbage collector's passes. A run's cells make short-lived objects by
    the million, and every full collection they set off otherwise walked the whole library
    again. Afterwards the collector sees all of it again (nothing loaded is kept for good)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run_cell(cell: Cell, options: RunOptions) -> CellResult:
    """Run one cell. Nothing it raises escapes: a harness error (a cassette miss included) or
    failed assertion is reported as the cell's error, a store that dies fails the cell with
    `StoreUnavailableError`, and anything else is reported by exception type and place, never by
    its message (which may quote the user's content). The next cell runs either way."""
    started = time.perf_counter()
    result = CellResult(cell)
    try:
        kind = cell.loaded.scenario.kind
        if kind == "agent":
            result.mismatches = _run_agent(cell, options, result)
        elif kind == "store_check":
            result.mismatches = _run_store_check(cell)
        else:
            result.mismatches = _run_module(cell, options)
    except (HarnessError, AssertionError) as error:
        result.error = f"{type(error).__name__}: {error}"
        result.error_code = getattr(error, "code", None)
    except Exception as error:
        unexpected = UnexpectedCellError.from_exception(error)
        result.error = f"{type(unexpected).__name__}: {unexpected}"
        result.error_code = unexpected.code
    result.duration = time.perf_counter() - started
    return result


class UnexpectedCellError(HarnessError):
    """A cell raised something no harness component raises on purpose: a bug, in the harness or
    in code the cell ran. Named by exception type and the innermost place it was raised."""

    code = "cell_crashed"

    @classmethod
    def from_exception(cls, error: BaseException) -> UnexpectedCellError:
        frames = traceback.extract_tb(error.__traceback__)
        where = ""
        if frames:
            last = frames[-1]
            where = f" at {Path(last.filename).name}:{last.lineno} (in {last.name})"
        return cls(
            f"the cell raised {type(error).__name__}{where}; its message is not shown since it "
            "may quote scenario content. If the harness is at fault, please report it with the "
            "scenario file"
        )


def _gateway(provider: str, transport: Any) -> LlmGateway:
    return LlmGateway(GatewayConfig.from_environment(provider), transport=transport)


def mode_for(cell: Cell, options: RunOptions) -> RecordMode:
    """Record through the first cell of a scenario only; the others replay what it recorded."""
    if options.record_mode is RecordMode.NONE:
        return RecordMode.NONE
    first = cell.loaded.scenario.cells()[0]
    return options.record_mode if (cell.runtime, cell.store) == first else RecordMode.NONE


_SHARED_STORES: dict[str, StateStore] = {}


class _GuardedStore:
    """A cell's view of a store: the driver's own errors (the server went away, a statement timed
    out) become `StoreUnavailableError` naming the store kind and the exception type, never the
    URL (it may hold a password). A durable store is opened once per process and URL and shared
    by the cells (opening one checks its migrations); closing a cell's view leaves it open, and a
    store that failed is dropped so the next cell connects afresh."""

    def __init__(self, store: StateStore, kind: str, url: str | None) -> None:
        self._store = store
        self._kind = kind
        self._url = url

    def _call(self, action: str, operation: Callable[[], _T]) -> _T:
        try:
            return operation()
        except HarnessError:
            raise
        except Exception as error:
            if self._url is not None and _SHARED_STORES.get(self._url) is self._store:
                del _SHARED_STORES[self._url]
                with contextlib.suppress(Exception):
                    self._store.close()
            raise StoreUnavailableError(
                f"the {self._kind} store failed to {action} a run ({type(error).__name__}); "
                "the cell fails and the run goes on. Check that the server is up and answering"
            ) from None

    def load(self, run_id: str) -> StoredRun | None:
        return self._call("load", lambda: self._store.load(run_id))

    def save(self, run: StoredRun) -> None:
        self._call("save", lambda: self._store.save(run))

    def delete(self, run_id: str) -> bool:
        return self._call("delete", lambda: self._store.delete(run_id))

    def close(self) -> None:
        if self._url is None:
            self._call("close", self._store.close)


def _kind_of(url: str) -> str | None:
    try:
        return store_kind(url)
    except StoreUrlError:
        return None


_UNOPENABLE_STORES: dict[str, ScenarioSetupError] = {}
"""Stores that could not be opened in this run: their other cells fail at once with the same
error instead of each waiting out the connect timeout again."""


def _shared(url: str) -> StateStore:
    kind = _kind_of(url) or "unknown"
    store = _SHARED_STORES.get(url)
    if store is None:
        failed = _UNOPENABLE_STORES.get(url)
        if failed is not None:
            raise ScenarioSetupError(str(failed))
        try:
            store = open_store(url)
        except HarnessError:
            raise
        except Exception as error:  # the driver's own error: the server is down, auth failed
            where = STORE_URL_VARIABLES.get(kind, "the URL")
            refused = ScenarioSetupError(  # never the URL itself: it may hold a password
                f"cannot open the {kind} store (--store-url or {where}): "
                f"{type(error).__name__}; start it or fix the URL"
            )
            _UNOPENABLE_STORES[url] = refused
            raise refused from None
        _SHARED_STORES[url] = store
    return _GuardedStore(store, kind, url)


@atexit.register
def _close_shared_stores() -> None:
    for store in _SHARED_STORES.values():
        with contextlib.suppress(Exception):  # a server that went away has nothing to close
            store.close()
    _SHARED_STORES.clear()
    _UNOPENABLE_STORES.clear()


def kept_in(store: StateStore) -> str | None:
    """The SQLite file `store` writes to, relative to the working folder when it is inside it."""
    url = getattr(store, "_url", None)
    if not isinstance(url, str) or not url.startswith("sqlite:///"):
        return None
    path = Path(url.removeprefix("sqlite:///"))
    with contextlib.suppress(ValueError):
        path = path.relative_to(Path.cwd())
    return str(path)


def cell_store(kind: str, options: RunOptions) -> StateStore:
    """The store of a `kind` cell: `--store-url` when it names a store of that kind (a
    PostgreSQL URL never serves a redis cell), else the environment, else the default."""
    if kind == "memory":
        return open_store("memory://")
    given = options.store_url if options.store_url and _kind_of(options.store_url) == kind else None
    if kind == "sqlite":
        return _shared(given or default_store_url(options.workdir))
    variable = STORE_URL_VARIABLES[kind]
    url = given or os.environ.get(variable)
    if not url:
        raise ScenarioSetupError(f"store {kind} needs a URL: pass --store-url or set {variable}")
    return _shared(url)


def _run_agent(cell: Cell, options: RunOptions, outcome: CellResult) -> list[Mismatch]:
    """Run the agent cell; a passing cell's stored run is deleted, a failing one's is kept and
    named in `outcome.run_id` so it can be inspected."""
    scenario = cell.loaded.scenario
    if options.model:
        scenario = scenario.model_copy(update={"model": options.model})
    spec = scenario.agent
    assert spec is not None
    store = cell_store(cell.store, options)  # first: closing a store that never ran costs nothing
    transport = build.transport(
        scenario, cell.loaded.folder, mode_for(cell, options), strict=options.strict_cassettes
    )
    # the key the store files the run under: redacted, as everything the store keeps
    run_id = f"{redact(scenario.name)}-{cell.runtime}-{cell.store}-{uuid.uuid4().hex[:8]}"
    if cell.store != "memory":  # a memory store is gone with its cell
        outcome.run_id = run_id
        outcome.kept_in = kept_in(store)
    outcome.engine = engine_of(options.engine, cell.runtime)
    try:
        result, stored = run_reference_agent(
            scenario,
            _gateway(scenario.provider, transport),
            store,
            runtime=cell.runtime,
            run_id=run_id,
            session_id=f"session-{scenario.name}",
            user_message=spec.user_message,
            engine=options.engine,
            engine_settings=options.engine_settings,
        )
        transport.close()
        if options.collect_detail:
            outcome.detail = agent_detail(result, stored.forced_completion if stored else None)
        mismatches = check_agent(
            scenario.expect,
            result,
            stored.forced_completion if stored else None,
            scenario.provider,
        )
        if scenario.workflow is not None:
            downstream = run_workflow(scenario.workflow, result.envelope())
            if scenario.expect.downstream is not None:
                mismatches.extend(check_downstream(scenario.expect.downstream, downstream))
        if not mismatches:
            # The run has served its purpose; deleting it keeps the default store from growing
            # with every library run.
            store.delete(run_id)
            outcome.run_id = outcome.kept_in = None
    finally:
        store.close()
        transport.close()
    return mismatches


# -- the reference: one implementation for a cell run in process and the reference target ---------


def run_reference_agent(
    scenario: Scenario,
    gateway: LlmGateway,
    store: StateStore,
    *,
    runtime: str,
    run_id: str,
    session_id: str,
    user_message: str,
    engine: str = "simulated",
    engine_settings: EngineSettings | None = None,
) -> tuple[RunResult, StoredRun | None]:
    """Run the agent of `scenario` (its `agent`, `faults`, `cancel` and `temporal`, named and
    modelled as it says) to its end on the reference `runtime`, persisting to `store`; returns
    the run and what `store` then holds of it. The one reference run of an agent cell: `run_cell`
    calls it over the cell's transport, the reference target (`harness.scenarios.reference`) over
    the session a cell message names, so the two cannot drift apart."""
    spec = scenario.agent
    assert spec is not None
    agent = build.agent_named(
        spec, name=scenario.name, provider=scenario.provider, model=scenario.model
    )
    temporal = scenario.temporal
    result = run_agent(
        agent,
        gateway,
        user_message=user_message,
        runtime=runtime,
        store=store,
        faults=[fault_plan(fault) for fault in scenario.faults],
        cancel=cancel_plan(scenario.cancel) if scenario.cancel is not None else None,
        run_id=run_id,
        session_id=session_id,
        llm_config_override=build.config_override(spec),
        approve=build.approval_policy(spec),
        options=RuntimeOptions(
            temporal_register_persist_forced_completion=(
                temporal.register_persist_forced_completion if temporal is not None else True
            )
        ),
        engine=engine,
        engine_settings=engine_settings,
    )
    return result, store.load(run_id)


def decision_module(
    scenario: Scenario, completer_for: Callable[[LlmDetails], LlmGateway]
) -> AgentDecisionModule:
    """The decision module `scenario` configures (`config`, `models`, `session`,
    `tool_policy`), reaching each selected model through `completer_for`."""
    from harness.modules.decision import AgentDecisionModule  # only decision scenarios load it

    return AgentDecisionModule(
        scenario.config,
        models=build.models_service(scenario),
        session=build.session(scenario),
        completer_for=completer_for,
        tool_policy=build.ScenarioToolPolicy(scenario.tool_policy)
        if scenario.tool_policy is not None
        else None,
    )


def execute_module(
    module: AgentCompletionModule | AgentDecisionModule, state: dict[str, Any]
) -> tuple[dict[str, Any], HarnessError | None]:
    """One execution of `module`: its outputs, or the typed error it raised and the outputs it
    leaves (a completion module's, as they stand after the refusal; a decision module's, none).
    Anything but a `HarnessError` is not a module's answer and propagates."""
    try:
        return dict(module.execute(state)), None
    except HarnessError as error:
        left = dict(module.outputs) if isinstance(module, AgentCompletionModule) else {}
        return left, error


@dataclass(frozen=True)
class ModuleExecution:
    """What one execution of a reference module did: its outputs (what a failed completion
    execution leaves, else none), the typed error it raised, and the model calls it made."""

    outputs: dict[str, Any]
    error: HarnessError | None
    llm_calls: int


def run_reference_module(
    scenario: Scenario, folder: Path, options: RunOptions
) -> list[ModuleExecution]:
    """Run a decision or completion scenario on the reference modules: the decision module on
    its `input` (its model reached through the scenario's script or cassette, relative to
    `folder`), or each completion execution (or the one `input`) through ONE module, in order."""
    if scenario.kind == "decision":
        return [_execute_decision(scenario, folder, options)]
    module = AgentCompletionModule()
    states = (
        [execution.input for execution in scenario.executions]
        if scenario.executions is not None
        else [scenario.input or {}]
    )
    return [ModuleExecution(*execute_module(module, state), llm_calls=0) for state in states]


def _execute_decision(scenario: Scenario, folder: Path, options: RunOptions) -> ModuleExecution:
    assert scenario.input is not None
    # a module scenario is one cell: it records as the run was asked to
    transport = build.transport(
        scenario, folder, options.record_mode, strict=options.strict_cassettes
    )

    def completer_for(record: LlmDetails) -> LlmGateway:
        nonlocal transport
        if isinstance(transport, ScriptTransport) and transport.provider != record.provider:
            # the script speaks the wire of the model the module selected
            transport = ScriptTransport(record.provider, transport.replies)
        return _gateway(record.provider, transport)

    try:
        outputs, error = execute_module(decision_module(scenario, completer_for), scenario.input)
    finally:
        transport.close()
    return ModuleExecution(outputs, error, llm_calls=_calls_made(transport))


def _calls_made(transport: ScriptTransport | CassetteTransport) -> int:
    if isinstance(transport, ScriptTransport):
        return len(transport.requests)
    recorded = len(transport.cassette.raw) - len(transport.unplayed)
    return recorded + len(transport.recorded)


def _run_module(cell: Cell, options: RunOptions) -> list[Mismatch]:
    """A module cell, each execution checked right after it; a completion scenario's
    executions' mismatches are keyed `executions.<index>.<key>`."""
    scenario = cell.loaded.scenario
    ran = run_reference_module(scenario, cell.loaded.folder, options)
    if scenario.executions is None:
        (only,) = ran
        return check_module(
            scenario.expect, outputs=only.outputs, error=only.error, llm_calls=only.llm_calls
        )
    return [
        replace(mismatch, key=f"executions.{index}.{mismatch.key}")
        for index, (execution, done) in enumerate(zip(scenario.executions, ran, strict=True))
        for mismatch in check_module(
            execution.expect, outputs=done.outputs, error=done.error, llm_calls=done.llm_calls
        )
    ]


def _run_store_check(cell: Cell) -> list[Mismatch]:
    """Create the described store in a temporary folder, then check it as `harness stores check`
    would: status `completed` when it matches, `failed` with its differences otherwise."""
    import sqlite3
    import tempfile

    from harness.stores.check import check_store
    from harness.stores.migrations import RUNS_TABLE
    from harness.stores.sqlite import SQLiteStore

    spec = cell.loaded.scenario.store_check
    assert spec is not None
    with tempfile.TemporaryDirectory(prefix="harness-store-check-") as folder:
        path = Path(folder) / "runs.sqlite3"
        SQLiteStore(path, migrate_to=spec.schema_version).close()
        with sqlite3.connect(path) as connection:
            for column in spec.extra_columns:
                # the loader admits only plain names; quoting anyway keeps any name a name
                quoted = '"' + column.replace('"', '""') + '"'
                connection.execute(f"ALTER TABLE {RUNS_TABLE} ADD COLUMN {quoted} TEXT")
        found = check_store(f"sqlite:///{path}")
    differences = [str(difference) for difference in found.differences]
    expect = cell.loaded.scenario.expect
    mismatches: list[Mismatch] = []
    status = "completed" if found.matches else "failed"
    if expect.status is not None and expect.status != status:
        mismatches.append(Mismatch("status", expect.status, status))
    for wanted in expect.differences or []:
        if not any(wanted in difference for difference in differences):
            mismatches.append(Mismatch("differences", wanted, differences))
            break
    return mismatches


def run_scenario(loaded: LoadedScenario, options: RunOptions | None = None) -> list[CellResult]:
    """Every cell of one scenario."""
    options = options or RunOptions()
    return [run_cell(cell, options) for cell in expand([loaded], options)]
