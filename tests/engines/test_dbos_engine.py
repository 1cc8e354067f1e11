"""Agent cells on a real DBOS: a SQLite system database, worker processes a crash fault kills
with SIGKILL (DBOS recovers the workflow on the process that replaces the dead one, replaying the
finished steps from their checkpoints), cells run side by side, a cancellation, and an output the
schema refuses. Each run is compared with the simulated runtime's run of the same agent and
script."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import JsonValue

from harness import AgentDefinition, LlmGateway, run_agent
from harness.agent.result import RunResult
from harness.engines.dbos import DbosEngine
from harness.engines.run import close_engines, engine_for
from harness.engines.settings import EngineSettings
from harness.llm.gateway import Completer
from harness.llm.models import LlmRequest, LlmResponse
from harness.runtimes.base import Cancel, Fault
from tests.support.stores import fresh_postgres_database

pytestmark = [pytest.mark.subprocess, pytest.mark.engine, pytest.mark.xdist_group("dbos")]

SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
CAPITALS = AgentDefinition(
    system_prompt="You find capitals.", output_schema=SCHEMA, max_completion_retries=1
)
PROSE_THEN_FINISH: list[dict[str, Any]] = [
    {"text": "It is Paris."},
    {"tool_calls": [{"name": "__finish__", "arguments": {"city": "Paris"}}]},
]
SETTINGS = EngineSettings(workers=2)
WAIT_SECONDS = 30.0


@pytest.fixture(scope="module", autouse=True)
def engines() -> Iterator[None]:
    yield
    close_engines()


def run(
    engine: str,
    *,
    script: Sequence[Any] = PROSE_THEN_FINISH,
    model: Completer | None = None,
    settings: EngineSettings = SETTINGS,
    **options: Any,
) -> RunResult:
    return run_agent(
        CAPITALS,
        model or LlmGateway.scripted("openai", script),
        user_message="What is the capital of France?",
        runtime="dbos",
        run_id="run-capital",
        engine=engine,
        engine_settings=settings,
        **options,
    )


def same_run(real: RunResult, simulated: RunResult) -> None:
    assert real.engine == "real"
    assert simulated.engine == "simulated"
    assert (real.status, real.output, real.error_code, real.chunks, real.state.requests) == (
        simulated.status,
        simulated.output,
        simulated.error_code,
        simulated.chunks,
        simulated.state.requests,
    )
    assert real.state.model_dump() == simulated.state.model_dump()


def test_a_forced_completion_run_on_dbos_is_the_simulated_run() -> None:
    real, simulated = run("real"), run("simulated")
    assert (real.status, real.output, len(real.requests("forced")), real.crashes) == (
        "completed",
        {"city": "Paris"},
        1,
        0,
    )
    same_run(real, simulated)


@pytest.mark.parametrize("point", ["work_step_persisted", "forced_entered"])
def test_a_worker_killed_after_a_persistence_point_is_recovered_by_its_replacement(
    point: str,
) -> None:
    """The replacement has the dead worker's executor id, so DBOS recovers the workflow there.
    No finished step runs again: the harness fails the cell (`EngineFindingError`) when one
    sends its LLM request a second time."""
    engine = engine_for("dbos", SETTINGS)
    assert isinstance(engine, DbosEngine)
    restarts = engine.restarts
    faults = [Fault(point)]  # type: ignore[arg-type]  # a persistence point, by name
    real, simulated = run("real", faults=faults), run("simulated", faults=faults)
    assert real.crashes == simulated.crashes == 1
    assert engine.restarts == restarts + 1, "a new worker process replaced the killed one"
    same_run(real, simulated)


class Waiting:
    """The scripted model of a cell whose first call waits until `until()` holds (at most
    `WAIT_SECONDS`), having said it is waiting (`waiting`)."""

    def __init__(self, until: Callable[[], bool]) -> None:
        self.model = LlmGateway.scripted("openai", PROSE_THEN_FINISH)
        self.until = until
        self.waiting = threading.Event()

    def complete(self, request: LlmRequest) -> LlmResponse:
        if not self.waiting.is_set():
            self.waiting.set()
            deadline = time.monotonic() + WAIT_SECONDS
            while not self.until():
                assert time.monotonic() < deadline, "the condition never held"
                time.sleep(0.01)
        return self.model.complete(request)


def test_a_crash_kills_only_its_own_cell_not_the_one_running_beside_it() -> None:
    """A worker runs one cell at a time: the cell beside a killed one is in the middle of its
    model call when the crash comes, and loses nothing (a step run again would send its LLM
    request twice, and fail the cell with `EngineFindingError`)."""
    engine = engine_for("dbos", SETTINGS)
    assert isinstance(engine, DbosEngine)
    restarts = engine.restarts
    beside = Waiting(until=lambda: engine.restarts > restarts)
    crashing = Waiting(until=beside.waiting.is_set)
    plans = [(crashing, [Fault("work_step_persisted")]), (beside, [])]
    with ThreadPoolExecutor(len(plans)) as cells:
        reals = list(cells.map(lambda plan: run("real", model=plan[0], faults=plan[1]), plans))
    assert [real.crashes for real in reals] == [1, 0]
    for real, (_, faults) in zip(reals, plans, strict=True):
        same_run(real, run("simulated", faults=faults))


def test_a_cancellation_ends_the_run_as_on_the_simulated_runtime() -> None:
    cancel = Cancel("work_step_persisted")
    real, simulated = run("real", cancel=cancel), run("simulated", cancel=cancel)
    assert (real.status, real.output, real.requests("forced")) == ("cancelled", None, [])
    same_run(real, simulated)


def test_an_output_the_schema_refuses_fails_the_run_as_on_the_simulated_runtime() -> None:
    script = [
        {"text": "It is Paris."},
        {"tool_calls": [{"name": "__finish__", "arguments": {"city": 7}}]},
    ]
    real, simulated = run("real", script=script), run("simulated", script=script)
    assert (real.status, real.output) == ("failed", None)
    assert real.error_code is not None
    same_run(real, simulated)


@pytest.mark.server
def test_a_crash_on_a_postgresql_system_database_is_recovered_as_on_sqlite(
    postgres_url: str,
) -> None:
    settings = EngineSettings(dbos_database_url=fresh_postgres_database(postgres_url))
    faults = [Fault("forced_entered")]
    real = run("real", faults=faults, settings=settings)
    assert real.crashes == 1
    same_run(real, run("simulated", faults=faults))
