"""A DBOS worker process for agent cells: `python -m harness.engines.dbos_worker`.

It launches DBOS as one executor of the harness's application and dequeues cells from one queue.
Each cell is the workflow `agent_cell`: the reference runtime's drive loop, every unit a DBOS
step. Its settings come from the environment the harness starts it with:

- `HARNESS_DBOS_DATABASE_URL`: the system database (already migrated by the harness);
- `HARNESS_DBOS_QUEUE`: the queue it dequeues from (registered by the harness);
- `HARNESS_DBOS_APPLICATION_VERSION` and `HARNESS_DBOS_EXECUTOR_ID`: who it is to DBOS. A worker
  started with a dead worker's executor id and the same version recovers, as it launches, the
  workflows the dead one left pending;
- `HARNESS_ENGINE_HOST_URL` and `HARNESS_ENGINE_HOST_TOKEN`: the harness's side of the cells.
"""

from __future__ import annotations

import os
import signal
from typing import Any, Final

from harness.engines.dbos import (
    APPLICATION_NAME,
    APPLICATION_VERSION_ENV,
    DATABASE_URL_ENV,
    EXECUTOR_ID_ENV,
    QUEUE_ENV,
    READY_MARKER,
    WORKFLOW_NAME,
)
from harness.engines.host import HostClient
from harness.engines.units import PERSIST_FORCED_COMPLETION, CellJob, Units, due

PARENT_CHECK_SECONDS: Final = 1.0


def register(units: Units) -> None:
    """Register the agent cell workflow and its steps with DBOS, before it launches.

    The workflow decides only from its input and from what its steps returned: DBOS runs it
    again from the start when it recovers it, and hands back each finished step's checkpointed
    output instead of running the step. Its decisions are the simulated runtime's
    (`harness.runtimes.base.Runtime`): persist after every unit, count each persistence point,
    cancel where the plan says and persist the cancelled state. Steps are not retried: a step
    that raises fails the cell with its exception, and a model call is never sent twice."""
    from dbos import DBOS

    @DBOS.step(name="startRun")
    def start_run(job: CellJob) -> str:
        return units.start(job)

    @DBOS.step(name="advance")
    def advance(job: CellJob, state: str) -> dict[str, Any]:
        return dict(units.advance(job, state))

    @DBOS.step(name="persistState")
    def persist_state(job: CellJob, state: str, point: str | None, occurrence: int) -> None:
        units.persist(job, state, point, occurrence)

    @DBOS.step(name=PERSIST_FORCED_COMPLETION)
    def persist_forced_completion(
        job: CellJob, state: str, point: str | None, occurrence: int
    ) -> None:
        units.persist(job, state, point, occurrence)

    @DBOS.step(name="cancelRun")
    def cancel_run(job: CellJob, state: str) -> str:
        return units.cancel(job, state)

    @DBOS.workflow(name=WORKFLOW_NAME)
    def agent_cell(job: CellJob) -> str:
        seen: dict[str, int] = {}

        def persist(state: str, point: str) -> tuple[str, bool]:
            """Persist `state` at `point`; cancel the run after it when the plan says so."""
            occurrence = seen.get(point, 0) + 1
            seen[point] = occurrence
            save = persist_forced_completion if point == "forced_entered" else persist_state
            save(job, state, point, occurrence)
            if due(job, "cancel", point, occurrence):
                state = cancel_run(job, state)
                persist_state(job, state, None, 0)
                return state, True
            return state, False

        state, over = persist(start_run(job), "run_started")
        while not over:
            advanced = advance(job, state)
            state, cancelled = persist(advanced["state"], advanced["point"])
            over = bool(advanced["finished"]) or cancelled
        return state


def serve() -> None:
    """Launch DBOS on this process's queue and run cells until SIGTERM or SIGINT."""
    # Blocked before DBOS starts its threads, so they inherit the mask and only sigwait sees them.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    from dbos import DBOS

    environ = os.environ
    queue = environ[QUEUE_ENV]
    units = Units(
        HostClient(environ["HARNESS_ENGINE_HOST_URL"], environ["HARNESS_ENGINE_HOST_TOKEN"])
    )
    register(units)
    DBOS(
        config={
            "name": APPLICATION_NAME,
            "system_database_url": environ[DATABASE_URL_ENV],
            "application_version": environ[APPLICATION_VERSION_ENV],
            "executor_id": environ[EXECUTOR_ID_ENV],
            "run_migrations": False,  # the harness migrated it before starting any worker
            # what DBOS's SQLite listener sleeps between checks, and so what stopping waits for
            "notification_listener_polling_interval_sec": 0.05,
        }
    )
    DBOS.listen_queues([queue])
    DBOS.launch()
    print(READY_MARKER, queue, flush=True)
    parent = os.getppid()
    # a worker whose harness died without stopping it (SIGKILL) stops too
    while signal.sigtimedwait(stop_signals, PARENT_CHECK_SECONDS) is None:
        if os.getppid() != parent:
            break
    DBOS.destroy()
    units.client.close()


def main() -> None:
    serve()


if __name__ == "__main__":
    main()
