"""A run cancelled from outside stops where it is told, on every profile, and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent.loop import AgentLoop
from harness.agent.state import PERSISTENCE_POINTS, PersistencePoint, RunState
from harness.protocol.chunks import ForcedCompletionChunk, RunFinishChunk
from harness.protocol.outcome import Cancelled
from harness.runtimes.base import Cancel, CancelPlanInvalidError, Fault
from harness.runtimes.profiles import PROFILES, runtime_for
from harness.runtimes.run import CancelNotReachedError, run_agent
from harness.stores.memory import MemoryStore
from harness.stores.urls import open_store
from tests.support.agents import agent, call, finish, reset_ids, text
from tests.support.scripted import TestCompleter
from tests.support.stores import STORE_KINDS, fresh_postgres_database

CANCELLABLE = [point for point in PERSISTENCE_POINTS if point != "run_finished"]
CALLS_BEFORE_CANCEL: dict[PersistencePoint, int] = {
    "run_started": 0,
    "work_step_persisted": 1,
    "forced_entered": 2,
    "forced_attempt_persisted": 2,
    "forced_attempt_finished": 3,
}


def replies() -> TestCompleter:
    """search, terminal text (the trigger), a failed forced attempt, a valid one."""
    reset_ids()
    return TestCompleter([call("search", {}), text("Paris."), text("prose"), finish()])


@pytest.mark.parametrize("runtime", sorted(PROFILES))
@pytest.mark.parametrize("point", CANCELLABLE)
def test_a_cancelled_run_stops_at_its_point_on_every_profile(
    point: PersistencePoint, runtime: str
) -> None:
    store = MemoryStore()
    completer = replies()
    result = run_agent(
        agent(),
        completer,
        user_message="q",
        run_id="r",
        session_id="s",
        runtime=runtime,
        store=store,
        cancel=Cancel(point),
    )
    assert len(completer.requests) == CALLS_BEFORE_CANCEL[point]
    state = result.state
    assert (state.status, state.phase, state.output, state.error_code) == (
        "cancelled",
        "finished",
        None,
        None,
    )
    assert state.chunks[-1] == RunFinishChunk(status="cancelled")
    assert [c for c in state.chunks if isinstance(c, RunFinishChunk)] == [state.chunks[-1]]
    assert result.stop_kind() == Cancelled()
    assert result.outcome_record().stop_reason == "cancelled"
    envelope = result.envelope()
    assert (envelope.structured_output, envelope.agent_result) == (None, None)
    assert envelope.outcome == ("partial" if state.answers else "empty-response")
    stored = store.load("r")
    assert stored is not None
    assert stored.status == "cancelled"
    assert RunState.model_validate_json(stored.state_json) == state
    assert stored.forced_completion == state.forced_completion


def test_a_cancelled_run_keeps_its_transcript_and_forced_state() -> None:
    result = run_agent(
        agent(),
        replies(),
        user_message="q",
        run_id="r",
        session_id="s",
        cancel=Cancel("forced_attempt_finished"),
    )
    forced = result.state.forced_completion
    assert forced is not None
    assert (forced.status, forced.attempts_used, forced.last_failure_code) == (
        "active",
        1,
        "framework_completion_tool_missing",
    )
    phases = [c.phase for c in result.state.chunks if isinstance(c, ForcedCompletionChunk)]
    assert phases == ["started", "attempt_started", "attempt_failed"]
    assert result.state.answers == ("Paris.", "prose")


def test_a_cancellation_before_run_finished_wins_over_a_decided_outcome() -> None:
    result = run_agent(
        agent(),
        replies(),
        user_message="q",
        run_id="r",
        session_id="s",
        cancel=Cancel("forced_attempt_finished", occurrence=2),
    )
    assert (result.status, result.output) == ("cancelled", None)
    assert result.envelope().outcome == "partial"


def test_a_cancelled_run_extracts_no_memory() -> None:
    extracted: list[object] = []
    result = run_agent(
        agent(memory={"memories": ["metric units"]}),
        replies(),
        user_message="q",
        extract_memories=extracted.append,
        cancel=Cancel("forced_entered"),
    )
    assert result.state.memory_extractions == 0
    assert extracted == []


def test_a_run_resumed_after_a_crash_is_still_cancelled() -> None:
    store = MemoryStore()
    result = run_agent(
        agent(),
        replies(),
        user_message="q",
        run_id="r",
        store=store,
        faults=[Fault("forced_entered")],
        cancel=Cancel("forced_attempt_persisted"),
    )
    assert (result.status, result.crashes) == ("cancelled", 1)


def test_a_cancellation_the_run_never_reaches_is_an_error() -> None:
    with pytest.raises(CancelNotReachedError) as raised:
        run_agent(
            agent(), replies(), user_message="q", cancel=Cancel("forced_attempt_persisted", 3)
        )
    assert raised.value.code == "cancel_not_reached"
    assert str(raised.value) == (
        "the run ended having reached forced_attempt_persisted 2 times before it could be "
        "cancelled after forced_attempt_persisted (occurrence 3); cancel after a point it reaches"
    )


@pytest.mark.parametrize(
    ("cancel", "faults", "message"),
    [
        (
            Cancel("run_finished"),
            [],
            "a run is over at run_finished and cannot be cancelled there; cancel after an "
            "earlier persistence point",
        ),
        (
            Cancel("forced_entered"),
            [Fault("forced_entered")],
            "cancel and a fault both act after forced_entered (occurrence 1); the run can "
            "either crash or be cancelled there, so move one of them",
        ),
    ],
)
def test_a_cancellation_that_could_never_act_is_refused_before_the_run(
    cancel: Cancel, faults: list[Fault], message: str
) -> None:
    completer = replies()
    with pytest.raises(CancelPlanInvalidError) as raised:
        run_agent(agent(), completer, user_message="q", faults=faults, cancel=cancel)
    assert str(raised.value) == message
    assert raised.value.code == "cancel_plan_invalid"
    assert isinstance(raised.value, ValueError)
    assert completer.requests == []


def test_a_fault_at_another_occurrence_of_the_cancel_point_is_allowed() -> None:
    result = run_agent(
        agent(),
        replies(),
        user_message="q",
        faults=[Fault("forced_attempt_finished")],
        cancel=Cancel("forced_attempt_finished", occurrence=2),
    )
    assert (result.status, result.crashes) == ("cancelled", 1)


def store_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh store of `kind`; PostgreSQL and Redis are real servers (marked `server`)."""
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.sqlite3'}"
    request.applymarker(pytest.mark.server)
    if kind == "postgres":
        return fresh_postgres_database(request.getfixturevalue("postgres_url"))
    return str(request.getfixturevalue("redis_url"))


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_every_store_keeps_a_cancelled_run_and_resuming_it_changes_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = open_store(store_url(kind, tmp_path, request))
    try:
        run_id = f"cancel-{tmp_path.name}"
        result = run_agent(
            agent(),
            replies(),
            user_message="q",
            run_id=run_id,
            runtime="temporal",
            store=store,
            cancel=Cancel("forced_attempt_finished"),
        )
        stored = store.load(run_id)
        assert stored is not None
        assert stored.status == "cancelled"
        assert stored.forced_completion == result.state.forced_completion
        completer = replies()
        resumed = runtime_for("temporal", store).resume(AgentLoop(agent(), completer), run_id)
        assert resumed == result.state
        assert completer.requests == [], "a cancelled run is finished: resuming calls nothing"
    finally:
        store.close()
