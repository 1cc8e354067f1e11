"""Run an agent on a runtime profile and store, resuming after every simulated crash."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace

from harness.agent.definition import AgentDefinition
from harness.agent.loop import AgentLoop, LlmConfigOverride, MemoryExtractor
from harness.agent.result import RunResult
from harness.agent.state import PersistencePoint, RunState, StateWriter
from harness.agent.tools import ApprovalPolicy, approve_all
from harness.engines.settings import EngineSettings, engine_of
from harness.errors import HarnessError
from harness.llm.gateway import Completer
from harness.runtimes.base import (
    ActivityNotRegisteredError,
    Cancel,
    Fault,
    RunNotFoundError,
    RuntimeOptions,
    SimulatedCrashError,
    check_cancel,
)
from harness.runtimes.profiles import runtime_for
from harness.stores.base import StateStore, StoredRun
from harness.stores.memory import MemoryStore

MAX_RESUMES = 100


def run_agent(
    agent: AgentDefinition,
    completer: Completer,
    *,
    user_message: str,
    runtime: str = "js",
    store: StateStore | None = None,
    faults: Sequence[Fault] = (),
    run_id: str | None = None,
    session_id: str | None = None,
    llm_config_override: LlmConfigOverride | None = None,
    approve: ApprovalPolicy = approve_all,
    extract_memories: MemoryExtractor | None = None,
    options: RuntimeOptions | None = None,
    cancel: Cancel | None = None,
    engine: str = "simulated",
    engine_settings: EngineSettings | None = None,
) -> RunResult:
    """Run `agent` to its end. Each fault kills the runtime once; the run resumes from its store
    in a new runtime, as a restarted worker would. `cancel` ends the run `cancelled` where it
    says (refused up front by `check_cancel` if it never could); a fault or cancellation the run
    never reaches raises `FaultNotReachedError` or `CancelNotReachedError`.

    With `engine="real"`, the `temporal` and `dbos` runtimes run on the engine itself
    (`harness.engines`: a Temporal dev server or DBOS, worker processes a fault kills with
    SIGKILL, started once per process with `engine_settings`); the other runtimes have no real
    engine here and run simulated, as `RunResult.engine` says."""
    check_cancel(cancel, faults)
    real = engine_of(engine, runtime) == "real"
    store = store if store is not None else MemoryStore()
    run_id = run_id or f"run-{uuid.uuid4().hex[:12]}"
    session_id = session_id or f"session-{run_id}"
    if real:
        from harness.engines.run import run_on_engine

        options = options or RuntimeOptions()
        ran = run_on_engine(
            agent,
            completer,
            user_message=user_message,
            runtime=runtime,
            store=store,
            faults=faults,
            cancel=cancel,
            run_id=run_id,
            session_id=session_id,
            approve=approve,
            extract_memories=extract_memories,
            registers_persist_forced_completion=runtime != "temporal"
            or options.temporal_register_persist_forced_completion,
            settings=engine_settings or EngineSettings(),
        )
        unfired = [f for f in faults if (f.point, f.occurrence) not in ran.fired]
        if unfired:
            raise FaultNotReachedError(unfired, {})
        if cancel is not None and ran.result.state.status != "cancelled":
            raise CancelNotReachedError(cancel, {})
        return ran.result

    def new_loop() -> AgentLoop:
        return AgentLoop(
            agent,
            completer,
            llm_config_override=llm_config_override,
            approve=approve,
            extract_memories=extract_memories,
        )

    seen: dict[PersistencePoint, int] = {}
    driver = replace(runtime_for(runtime, store, faults, options), _seen=seen, cancel=cancel)
    duration = 0.0
    crashes = 0
    try:
        try:
            state = driver.start(
                new_loop(), run_id=run_id, session_id=session_id, user_message=user_message
            )
        except SimulatedCrashError:
            crashes += 1
            duration += driver.duration_seconds
            for _ in range(MAX_RESUMES):
                driver = replace(
                    runtime_for(runtime, store, faults, options), _seen=seen, cancel=cancel
                )
                try:
                    state = driver.resume(new_loop(), run_id)
                    break
                except SimulatedCrashError:
                    crashes += 1
                    duration += driver.duration_seconds
            else:  # pragma: no cover - a fault plan always ends
                raise
    except ActivityNotRegisteredError as error:
        state = _failed_by_worker(store, run_id, error.code, str(error))
    duration += driver.duration_seconds
    unfired = [f for f in faults if seen.get(f.point, 0) < f.occurrence]
    if unfired:
        raise FaultNotReachedError(unfired, seen)
    if cancel is not None and state.status != "cancelled":
        raise CancelNotReachedError(cancel, seen)
    return RunResult(agent=agent, state=state, duration_ms=int(duration * 1000), crashes=crashes)


class FaultNotReachedError(HarnessError, AssertionError):
    """Raised by `run_agent` when a fault plan named a persistence point the run never reached that
    often, so the fault could not fire."""

    code = "fault_not_reached"

    seen: dict[PersistencePoint, int]
    """How often the run reached each persistence point (crashed runs and resumes together)."""

    def __init__(self, faults: Sequence[Fault], seen: dict[PersistencePoint, int]) -> None:
        self.seen = dict(seen)
        described = ", ".join(
            f"crash_after {f.point} occurrence {f.occurrence} (reached {seen.get(f.point, 0)}x)"
            for f in faults
        )
        super().__init__(f"the run never reached: {described}; the fault cannot fire")


class CancelNotReachedError(HarnessError, AssertionError):
    """Raised by `run_agent` when a cancellation named a persistence point the run never reached
    that often, so the run could not be cancelled there."""

    code = "cancel_not_reached"

    def __init__(self, cancel: Cancel, seen: dict[PersistencePoint, int]) -> None:
        super().__init__(
            f"the run ended {_reached(cancel.point, seen)} before it could be cancelled after "
            f"{cancel.point} (occurrence {cancel.occurrence}); cancel after a point it reaches"
        )


def _reached(point: PersistencePoint, seen: dict[PersistencePoint, int]) -> str:
    count = seen.get(point, 0)
    return f"having reached {point} {count} time{'' if count == 1 else 's'}"


def _failed_by_worker(store: StateStore, run_id: str, code: str, message: str) -> RunState:
    """The workflow failed outside the loop (`code`, the worker's `message`): the last persisted
    state, marked failed and saved."""
    stored = store.load(run_id)
    if stored is None:  # pragma: no cover - run_started is always persisted first
        raise RunNotFoundError(f"no run {run_id!r} in its store to mark failed")
    failed = RunState.model_validate_json(stored.state_json).failed_outside(code, message)
    store.save(
        StoredRun(
            run_id=failed.run_id,
            status=failed.status,
            state_json=StateWriter().dump(failed),  # scrubbed, as every state a store keeps
            forced_completion=failed.forced_completion,
        )
    )
    return failed


CancelNotReached = CancelNotReachedError
"""The earlier name of `CancelNotReachedError`, deprecated: kept until 1.0."""

FaultNotReached = FaultNotReachedError
"""The earlier name of `FaultNotReachedError`, deprecated: kept until 1.0."""
