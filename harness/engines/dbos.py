"""Agent cells on a real DBOS: a system database (SQLite in a folder of the run's own, or the PostgreSQL
database of `--store-url`), worker processes that each run DBOS as one executor, and a
`DBOSClient` here that enqueues each cell and waits for its result.

Each cell is one workflow (`harness.engines.dbos_worker`), its units DBOS steps. The harness
runs no DBOS itself: it migrates the system database, registers the run's queue, and enqueues
cells onto it, as an application's client does. A worker killed by a crash fault is replaced by a
process with the same executor id and the same pinned application version, and DBOS recovers the
workflows its predecessor left pending there: it replays the finished steps from their
checkpoints and runs the interrupted one again.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from harness.engines.host import CellHost
from harness.engines.processes import EngineStartError, WorkerPool
from harness.engines.units import CellJob

if TYPE_CHECKING:
    from dbos import DBOSClient, WorkflowHandle

WORKFLOW_NAME: Final = "HarnessAgentCell"
APPLICATION_NAME: Final = "harness-agent-cells"
APPLICATION_VERSION: Final = "harness-agent-cell-1"
"""Pinned, so the worker that replaces a killed one recovers its workflows: DBOS recovers only
the workflows of its own application version, which it otherwise computes from the workflow
code. Change it when the workflow's sequence of steps changes."""
READY_MARKER: Final = "harness dbos worker: polling"
STARTUP_SECONDS: Final = 30.0
QUEUE_POLLING_SECONDS: Final = 0.02
"""How often a worker looks for enqueued (and recovered) cells; DBOS's default is a second."""
RESULT_POLLING_SECONDS: Final = 0.02
"""How often the harness looks for a cell's result; DBOS's default is a second."""

DATABASE_URL_ENV: Final = "HARNESS_DBOS_DATABASE_URL"
QUEUE_ENV: Final = "HARNESS_DBOS_QUEUE"
APPLICATION_VERSION_ENV: Final = "HARNESS_DBOS_APPLICATION_VERSION"
EXECUTOR_ID_ENV: Final = "HARNESS_DBOS_EXECUTOR_ID"


class ExecutorPool(WorkerPool):
    """Worker processes that are each one DBOS executor, named after its slot: the process that
    replaces a dead worker has the dead one's executor id, which is what DBOS recovers pending
    workflows by when it launches."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        environ: Mapping[str, str],
        count: int,
        logs: Path,
        executor_prefix: str,
    ) -> None:
        self.executor_prefix = executor_prefix
        super().__init__(command, environ=environ, count=count, logs=logs)

    def executor_id(self, index: int) -> str:
        return f"{self.executor_prefix}-worker-{index}"

    def environ_for(self, index: int) -> dict[str, str]:
        return {**super().environ_for(index), EXECUTOR_ID_ENV: self.executor_id(index)}


class DbosEngine:
    """DBOS over its system database (`database_url`, else SQLite in `folder`) with `workers`
    worker processes; `run` runs one cell on it. Open one per harness run and `close` it at the
    end.

    Queues, executor ids and workflow ids are the run's own, so several harness runs may share
    one PostgreSQL system database: none recovers or dequeues another's workflows."""

    def __init__(
        self,
        *,
        database_url: str | None = None,
        workers: int = 1,
        folder: Path | None = None,
    ) -> None:
        self._own_folder = folder is None
        self.folder = folder or Path(tempfile.mkdtemp(prefix="harness-dbos-"))
        self.database_url = database_url or f"sqlite:///{self.folder / 'dbos-system.sqlite'}"
        self.host = CellHost()
        self.queue = f"harness-cells-{uuid.uuid4().hex[:12]}"
        self.client: DBOSClient | None = None
        self.pool: ExecutorPool | None = None
        try:
            self.client = _client(self.database_url)
            self.client.register_queue(
                self.queue,
                polling_interval_sec=QUEUE_POLLING_SECONDS,
                worker_concurrency=1,  # a crash fault kills its own cell's worker, no other cell's
                on_conflict="never_update",
                application_name=APPLICATION_NAME,
            )
            self.pool = ExecutorPool(
                [sys.executable, "-m", "harness.engines.dbos_worker"],
                environ={
                    **os.environ,
                    DATABASE_URL_ENV: self.database_url,
                    QUEUE_ENV: self.queue,
                    APPLICATION_VERSION_ENV: APPLICATION_VERSION,
                    "HARNESS_ENGINE_HOST_URL": self.host.url,
                    "HARNESS_ENGINE_HOST_TOKEN": self.host.token,
                },
                count=workers,
                logs=self.folder,
                executor_prefix=self.queue,
            )
            self.pool.wait_ready(READY_MARKER, STARTUP_SECONDS)
        except BaseException:
            self.close()
            raise

    def run(self, job: CellJob, *, registers_persist_forced_completion: bool = True) -> str:
        """Run the cell `job` to its end as one workflow; returns the final state (JSON).
        A step that raised fails the workflow, and its exception is raised here.

        `registers_persist_forced_completion` is Temporal's: a DBOS step is registered by its
        decorator, so a DBOS worker has no way to leave one out."""
        if self.client is None:  # pragma: no cover - a closed engine is never asked again
            raise EngineStartError("the DBOS engine is closed")
        handle: WorkflowHandle[str] = self.client.enqueue(
            {
                "workflow_name": WORKFLOW_NAME,
                "queue_name": self.queue,
                "workflow_id": f"{job['run_id']}-{uuid.uuid4().hex[:8]}",
                "app_version": APPLICATION_VERSION,
            },
            dict(job),
        )
        return handle.get_result(polling_interval_sec=RESULT_POLLING_SECONDS)

    @property
    def restarts(self) -> int:
        return self.pool.restarts if self.pool is not None else 0

    def close(self) -> None:
        pool, client, self.pool, self.client = self.pool, self.client, None, None
        try:
            if pool is not None:
                pool.close()
            if client is not None:
                try:
                    client.delete_queue(self.queue)  # a shared database keeps no dead queue
                finally:
                    client.destroy()
        finally:
            self.host.close()
            if self._own_folder:
                shutil.rmtree(self.folder, ignore_errors=True)


def _client(database_url: str) -> DBOSClient:
    """A client of the system database at `database_url`, created or migrated first (a client
    never migrates, and the workers then need not race to)."""
    try:
        from dbos import DBOS, DBOSClient
    except ImportError as error:
        raise EngineStartError(
            "DBOS is not installed: install it with pip install 'completion-harness[dbos]'"
        ) from error
    try:
        DBOS.migrate(database_url)
        return DBOSClient(system_database_url=database_url, application_name=APPLICATION_NAME)
    except Exception as error:
        raise EngineStartError(
            f"the DBOS system database at {_redacted(database_url)} could not be opened: "
            f"{type(error).__name__}: {error}"
        ) from error


def _redacted(database_url: str) -> str:
    """`database_url` without its password."""
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(database_url).render_as_string(hide_password=True)
    except ArgumentError:  # an unparsable URL is named by its scheme alone
        return database_url.partition(":")[0] + ":..."
