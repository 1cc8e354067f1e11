"""Run one agent on a real engine, and the engines a harness run opens.

`run_on_engine` is `run_agent` for `engine="real"`: the same agent, model, store, faults and
cancellation, the run driven by Temporal or DBOS instead of the in-process loop. An engine is
started once per process, on first use, with the settings of `EngineSettings`, and stopped when
the process ends (or by `close_engines`).
"""

from __future__ import annotations

import atexit
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Final, Protocol

from harness.agent.definition import AgentDefinition
from harness.agent.loop import MemoryExtractor
from harness.agent.result import RunResult
from harness.agent.state import RunState
from harness.agent.tools import ApprovalPolicy
from harness.engines.host import CellHost, HostedCell
from harness.engines.settings import REAL_RUNTIMES, EngineSettings, EngineUnknownError
from harness.engines.units import CellJob
from harness.errors import HarnessError
from harness.llm.gateway import Completer
from harness.stores.base import StateStore

if TYPE_CHECKING:
    from harness.runtimes.base import Cancel, Fault


class EngineFindingError(HarnessError, AssertionError):
    """Raised when a real engine ran a cell in a way the reference runtime never does: it sent a
    unit's LLM request twice (it ran a finished unit again after a crash), or resumed a run from
    another forced-completion state than the one persisted before the crash."""

    code: ClassVar[str] = "engine_finding"


@dataclass(frozen=True)
class EngineRun:
    """A run a real engine finished, and the faults (point, occurrence) that killed a worker."""

    result: RunResult
    fired: frozenset[tuple[str, int]] = field(default_factory=frozenset)


class Engine(Protocol):
    host: CellHost

    def run(self, job: CellJob, *, registers_persist_forced_completion: bool = True) -> str: ...

    def close(self) -> None: ...


_ENGINES: Final[dict[tuple[str, EngineSettings], Engine]] = {}
_ENGINES_LOCK: Final = threading.Lock()


def engine_for(runtime: str, settings: EngineSettings) -> Engine:
    """This process's engine for `runtime` with `settings`, started on first use."""
    with _ENGINES_LOCK:
        engine = _ENGINES.get((runtime, settings))
        if engine is None:
            engine = _start(runtime, settings)
            _ENGINES[(runtime, settings)] = engine
        return engine


def _start(runtime: str, settings: EngineSettings) -> Engine:
    if runtime == "temporal":
        from harness.engines.temporal import TemporalEngine

        return TemporalEngine(
            address=settings.temporal_address,
            namespace=settings.temporal_namespace,
            workers=settings.workers,
            workflow=settings.temporal_workflow,
        )
    if runtime == "dbos":
        from harness.engines.dbos import DbosEngine

        return DbosEngine(database_url=settings.dbos_database_url, workers=settings.workers)
    raise EngineUnknownError(
        f"expected a runtime with a real engine ({', '.join(REAL_RUNTIMES)}) but got "
        f"runtime={runtime!r}; run it on the simulated engine"
    )


def close_engines() -> None:
    """Stop every engine this process started (also done at exit)."""
    with _ENGINES_LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
    for engine in engines:
        engine.close()


atexit.register(close_engines)


def run_on_engine(
    agent: AgentDefinition,
    completer: Completer,
    *,
    user_message: str,
    runtime: str,
    store: StateStore,
    faults: Sequence[Fault],
    cancel: Cancel | None,
    run_id: str,
    session_id: str,
    approve: ApprovalPolicy,
    extract_memories: MemoryExtractor | None,
    registers_persist_forced_completion: bool,
    settings: EngineSettings,
) -> EngineRun:
    """Run `agent` to its end on the real engine of `runtime` (see the module docstring).
    Raises `EngineFindingError` when the engine ran it unlike the reference runtime."""
    engine = engine_for(runtime, settings)
    cell_id = uuid.uuid4().hex
    hosted = HostedCell(
        completer=completer,
        store=store,
        approve=approve,
        extract_memories=extract_memories,
        faults=faults,
        cancel=cancel,
    )
    job: CellJob = {
        "cell": cell_id,
        "agent": agent.model_dump(mode="json"),
        "run_id": run_id,
        "session_id": session_id,
        "user_message": user_message,
        "faults": [[f.point, f.occurrence] for f in faults],
        "cancel": [cancel.point, cancel.occurrence] if cancel is not None else None,
        "extracts_memories": extract_memories is not None,
    }
    engine.host.add(cell_id, hosted)
    started = time.perf_counter()
    try:
        final = engine.run(
            job,
            registers_persist_forced_completion=registers_persist_forced_completion,
        )
    finally:
        engine.host.remove(cell_id)
    duration = time.perf_counter() - started
    state = RunState.model_validate_json(final)
    findings = _findings(hosted)
    if findings:
        raise EngineFindingError(
            f"{runtime} ran run {run_id} unlike the reference: " + "; ".join(findings)
        )
    result = RunResult(
        agent=agent,
        state=state,
        duration_ms=int(duration * 1000),
        crashes=len(hosted.fired),
        engine="real",
    )
    return EngineRun(result=result, fired=frozenset(hosted.fired))


def _findings(hosted: HostedCell) -> list[str]:
    findings = [
        f"it sent the LLM request of one unit of work {hosted.units[unit]} times (unit {unit}): "
        "a unit that had finished was run again"
        for unit in hosted.repeated_units
    ]
    for (point, persisted), resumed in zip(hosted.crashed_at, hosted.resumed_with, strict=False):
        if resumed != persisted:
            findings.append(
                f"after the worker was killed at {point}, the run went on from forced-completion "
                f"state {resumed} instead of the persisted {persisted}"
            )
    return findings
