"""A Temporal worker process for agent cells: `python -m harness.engines.temporal_worker`.

It polls two task queues of one Temporal namespace: `QUEUE`, with every activity, and
`QUEUE-without-persistForcedCompletion`, whose worker registers its activities explicitly and
leaves `persistForcedCompletion` out (the mistake the forced-completion migration guide warns
about). Its settings come from the environment the harness starts it with:

- `HARNESS_TEMPORAL_ADDRESS`, `HARNESS_TEMPORAL_NAMESPACE`, `HARNESS_TEMPORAL_QUEUE`;
- `HARNESS_ENGINE_HOST_URL` and `HARNESS_ENGINE_HOST_TOKEN`: the harness's side of the cells;
- `HARNESS_TEMPORAL_WORKFLOW`: the workflow class as `module:Class` (the agent cell workflow
  unless a test names another).

A team running the library on its own Temporal cluster starts as many of these as it likes on
its own machines (`harness run --temporal-address HOST:PORT --engine-workers N` starts N here).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.workflow import NondeterminismError

from harness.engines.host import HostClient
from harness.engines.temporal_workflow import PERSIST_FORCED_COMPLETION
from harness.engines.units import CellJob, Units

WITHOUT_PERSIST_FORCED_COMPLETION: Final = f"-without-{PERSIST_FORCED_COMPLETION}"
DEFAULT_WORKFLOW: Final = "harness.engines.temporal_workflow:AgentCellWorkflow"


def activities(units: Units, *, registers_persist_forced_completion: bool = True) -> list[Any]:
    """The activities of an agent cell, registered explicitly (as a `createActivities()` does)."""

    @activity.defn(name="startRun")
    def start_run(job: CellJob) -> str:
        return units.start(job)

    @activity.defn(name="advance")
    def advance(job: CellJob, state: str) -> dict[str, Any]:
        return dict(units.advance(job, state))

    @activity.defn(name="persistState")
    def persist_state(job: CellJob, state: str, point: str | None, occurrence: int) -> None:
        units.persist(job, state, point, occurrence)

    @activity.defn(name=PERSIST_FORCED_COMPLETION)
    def persist_forced_completion(
        job: CellJob, state: str, point: str | None, occurrence: int
    ) -> None:
        units.persist(job, state, point, occurrence)

    @activity.defn(name="cancelRun")
    def cancel_run(job: CellJob, state: str) -> str:
        return units.cancel(job, state)

    @activity.defn(name="failRun")
    def fail_run(job: CellJob, code: str, message: str) -> str:
        return units.fail(job, code, message)

    chosen = [start_run, advance, persist_state, cancel_run, fail_run]
    return [*chosen, persist_forced_completion] if registers_persist_forced_completion else chosen


def workflow_class(path: str) -> type:
    module, _, name = path.partition(":")
    found: type = getattr(importlib.import_module(module), name)
    return found


async def serve() -> None:
    environ = os.environ
    client = await Client.connect(
        environ["HARNESS_TEMPORAL_ADDRESS"],
        namespace=environ.get("HARNESS_TEMPORAL_NAMESPACE", "default"),
    )
    queue = environ["HARNESS_TEMPORAL_QUEUE"]
    workflow = workflow_class(environ.get("HARNESS_TEMPORAL_WORKFLOW") or DEFAULT_WORKFLOW)
    units = Units(
        HostClient(environ["HARNESS_ENGINE_HOST_URL"], environ["HARNESS_ENGINE_HOST_TOKEN"])
    )
    executor = ThreadPoolExecutor(max_workers=16)
    common: dict[str, Any] = {
        "workflows": [workflow],
        "activity_executor": executor,
        # No workflow stays cached on the worker that ran it: every workflow task replays the
        # history on whichever worker polls first, so a killed worker holds nothing up (a
        # sticky queue would keep its runs waiting for it) and every cell is replayed at every
        # step, not only after a crash.
        "max_cached_workflows": 0,
        # a workflow that decides differently on replay fails its run, instead of retrying its
        # workflow task for ever
        "workflow_failure_exception_types": [NondeterminismError],
        # one activity at a time: a crash fault kills its own cell's unit, never another's
        "max_concurrent_activities": 1,
    }
    workers = [
        Worker(client, task_queue=queue, activities=activities(units), **common),
        Worker(
            client,
            task_queue=queue + WITHOUT_PERSIST_FORCED_COMPLETION,
            activities=activities(units, registers_persist_forced_completion=False),
            **common,
        ),
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with workers[0], workers[1]:
        print("harness temporal worker: polling", queue, flush=True)
        await stop.wait()


def main() -> None:
    asyncio.run(serve())


if __name__ == "__main__":
    main()
