"""A run killed at any persistence point resumes from its store to the same result."""

from __future__ import annotations

import pytest

from harness.agent.state import PERSISTENCE_POINTS, PersistencePoint
from harness.runtimes.base import Fault
from harness.runtimes.run import run_agent
from harness.stores.memory import MemoryStore
from tests.support.agents import agent, call, finish, reset_ids, text
from tests.support.scripted import TestCompleter


def replies() -> TestCompleter:
    reset_ids()
    return TestCompleter([call("search", {}), text("Paris."), text("prose"), finish()])


def comparable(result: object) -> object:
    state = result.state  # type: ignore[attr-defined]
    return state.model_dump(exclude={"run_id", "session_id"})


REACHED_TWICE = ("work_step_persisted", "forced_attempt_persisted", "forced_attempt_finished")


@pytest.mark.parametrize(
    ("point", "occurrence"),
    [(point, 1) for point in PERSISTENCE_POINTS] + [(point, 2) for point in REACHED_TWICE],
)
def test_a_crash_at_any_point_resumes_to_the_same_result(
    point: PersistencePoint, occurrence: int
) -> None:
    baseline = run_agent(agent(), replies(), user_message="q", run_id="r", session_id="s")
    store = MemoryStore()
    completer = replies()
    resumed = run_agent(
        agent(),
        completer,
        user_message="q",
        run_id="r",
        session_id="s",
        store=store,
        faults=[Fault(point, occurrence)],
    )
    assert comparable(resumed) == comparable(baseline)
    assert len(completer.requests) == len(baseline.requests())
    forced = resumed.state.forced_completion
    assert forced is not None
    assert forced.attempts_used == 2
    assert resumed.state.forced_calls_returned == 2 <= forced.max_attempts
    stored = store.load("r")
    assert stored is not None
    assert stored.forced_completion == forced
    assert stored.status == "completed"
