"""Driving a run: persist at each persistence point, crash where a fault says, resume.

A `Runtime` runs an `AgentLoop` to its end. After every unit of work it saves the run state to
its store, at the persistence points its profile persists at; a fault plan can kill the run right
after a given point, and `resume` continues from what the store holds. A cancellation ends the
run right after a given point, as a cancel request from outside would: the runtime saves the run
as `cancelled` and stops.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from harness.agent.loop import AgentLoop
from harness.agent.state import PersistencePoint, RunState, StateWriter
from harness.engines.settings import not_registered_message
from harness.errors import HarnessError
from harness.stores.base import StateStore, StoredRun

RuntimeName = Literal["js", "cloudflare-do", "cloudflare-workflows", "temporal", "dbos"]
"""The runtimes the harness models, one `RuntimeProfile` each (`harness.runtimes.PROFILES`)."""
RUNTIME_NAMES: Final[tuple[RuntimeName, ...]] = get_args(RuntimeName)


class SimulatedCrashError(HarnessError):
    """Raised by a runtime when a fault plan kills it at a persistence point (a test device);
    `run_agent` catches it and resumes the run from its store, as a restarted worker would."""

    code = "simulated_crash"

    def __init__(self, point: PersistencePoint, occurrence: int) -> None:
        super().__init__(f"simulated crash after {point} (occurrence {occurrence})")
        self.point = point
        self.occurrence = occurrence


class RunNotFoundError(HarnessError, LookupError):
    """Raised when a run is resumed by an id its store does not hold."""

    code = "run_not_found"


class ActivityNotRegisteredError(HarnessError):
    """Raised on the Temporal profile when the worker lacks an activity the workflow calls
    (`persistForcedCompletion`); `run_agent` reports it as the run's failure, with the message
    a real Temporal worker fails the activity with."""

    code = "temporal_activity_not_registered"

    def __init__(self, activity: str, workflow_id: str) -> None:
        super().__init__(not_registered_message(activity, workflow_id))
        self.activity = activity


@dataclass(frozen=True, kw_only=True)
class RuntimeOptions:
    """Per-runtime settings a scenario may change."""

    temporal_register_persist_forced_completion: bool = True


@dataclass(frozen=True, kw_only=True)
class RuntimeProfile:
    """What distinguishes one runtime: where it persists, which hooks it honours."""

    name: RuntimeName
    persists_at: frozenset[PersistencePoint]
    invokes_config_override: bool
    needs_forced_completion_activity: bool = False
    description: str = ""


@dataclass(frozen=True)
class Fault:
    """Kill the runtime right after the `occurrence`-th persistence at `point`."""

    point: PersistencePoint
    occurrence: int = 1


@dataclass(frozen=True)
class Cancel:
    """Cancel the run right after the `occurrence`-th persistence at `point`, as a cancel
    request from outside that the runtime honours there (`check_cancel` says which plans can
    act)."""

    point: PersistencePoint
    occurrence: int = 1


class CancelPlanInvalidError(HarnessError, ValueError):
    """Raised by `run_agent` (and the scenario loader) for a cancellation that could never act:
    after `run_finished`, or after the same persistence as a fault."""

    code = "cancel_plan_invalid"


def check_cancel(cancel: Cancel | None, faults: Sequence[Fault]) -> None:
    """Refuse a cancellation that could never act (`CancelPlanInvalidError`): one after
    `run_finished`, when the run is over, or one after the same persistence as a crash fault,
    where one of the two would silently not act."""
    if cancel is None:
        return
    if cancel.point == "run_finished":
        raise CancelPlanInvalidError(
            "a run is over at run_finished and cannot be cancelled there; cancel after an "
            "earlier persistence point"
        )
    if any((f.point, f.occurrence) == (cancel.point, cancel.occurrence) for f in faults):
        raise CancelPlanInvalidError(
            f"cancel and a fault both act after {cancel.point} (occurrence {cancel.occurrence});"
            " the run can either crash or be cancelled there, so move one of them"
        )


@dataclass
class Runtime:
    """One runtime profile over one store."""

    profile: RuntimeProfile
    store: StateStore
    faults: Sequence[Fault] = ()
    options: RuntimeOptions = field(default_factory=RuntimeOptions)
    cancel: Cancel | None = None
    _seen: dict[PersistencePoint, int] = field(default_factory=dict)
    _writer: StateWriter = field(default_factory=StateWriter)
    duration_seconds: float = 0.0

    def start(
        self, loop: AgentLoop, *, run_id: str, session_id: str, user_message: str
    ) -> RunState:
        """Start a run and drive it to its end (or to a simulated crash, or a cancellation)."""
        loop.invoke_config_override = self.profile.invokes_config_override
        self._writer = StateWriter()  # one run's records
        state = loop.start(run_id=run_id, session_id=session_id, user_message=user_message)
        state = self._persist(state, "run_started")
        return self._drive(loop, state)

    def resume(self, loop: AgentLoop, run_id: str) -> RunState:
        """Continue a run from the state its store holds."""
        loop.invoke_config_override = self.profile.invokes_config_override
        stored = self.store.load(run_id)
        if stored is None:
            raise RunNotFoundError(f"no run {run_id!r} in store {getattr(self.store, 'url', '?')}")
        self._writer = StateWriter()
        return self._drive(loop, RunState.model_validate_json(stored.state_json))

    def _drive(self, loop: AgentLoop, state: RunState) -> RunState:
        started = time.perf_counter()
        try:
            while not state.finished:
                state, point = loop.advance(state)
                state = self._persist(state, point)
        finally:
            self.duration_seconds += time.perf_counter() - started
        return state

    def _persist(self, state: RunState, point: PersistencePoint) -> RunState:
        """Save `state` at `point`; then crash if a fault says so, or end the run cancelled if
        the cancellation is due (saved too). Returns the state the run goes on from."""
        if (
            point == "forced_entered"
            and self.profile.needs_forced_completion_activity
            and not self.options.temporal_register_persist_forced_completion
        ):
            raise ActivityNotRegisteredError("persistForcedCompletion", state.run_id)
        if point in self.profile.persists_at or point == "run_finished":
            self._save(state)
        seen = self._seen.get(point, 0) + 1
        self._seen[point] = seen
        for fault in self.faults:
            if fault.point == point and fault.occurrence == seen:
                raise SimulatedCrashError(point, seen)
        cancel = self.cancel
        if cancel is not None and (cancel.point, cancel.occurrence) == (point, seen):
            state = state.cancelled()
            self._save(state)  # a cancelled run is saved on every profile, as a finished one is
        return state

    def _save(self, state: RunState) -> None:
        self.store.save(
            StoredRun(
                run_id=state.run_id,
                status=state.status,
                state_json=self._writer.dump(state),
                forced_completion=state.forced_completion,
            )
        )


ActivityNotRegistered = ActivityNotRegisteredError
"""The earlier name of `ActivityNotRegisteredError`, deprecated: kept until 1.0."""

CancelPlanInvalid = CancelPlanInvalidError
"""The earlier name of `CancelPlanInvalidError`, deprecated: kept until 1.0."""

RunNotFound = RunNotFoundError
"""The earlier name of `RunNotFoundError`, deprecated: kept until 1.0."""

SimulatedCrash = SimulatedCrashError
"""The earlier name of `SimulatedCrashError`, deprecated: kept until 1.0."""
