"""Reaching an implementation under test: a Python callable, or a command spoken to in JSON lines.

Both speak the protocol of `harness.targets.protocol`; `exchange` sends one message and returns
the target's answer as a `dict`, or raises a `TargetError` subclass saying what went wrong (a
crash, a hang, output that is not the protocol). After a crash or a hang a command is started
again for the next cell, so one bad cell never ends the run.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import queue
import shlex
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from harness.errors import HarnessError

DEFAULT_CELL_TIMEOUT: Final = 30.0
"""Seconds a target may take to answer one cell (`--cell-timeout`)."""
STDERR_KEPT: Final = 200
"""Lines of a command's stderr kept per cell for its report."""
_SHUTDOWN_GRACE: Final = 5.0


class TargetError(HarnessError):
    """The target did not answer as the protocol says. The cell fails; the run goes on."""

    code = "target_failed"


class TargetSpecError(TargetError, ValueError):
    """`--target` does not name an importable callable, or `--target-cmd` cannot be started."""

    code = "target_spec_invalid"


class TargetTimeoutError(TargetError, TimeoutError):
    code = "target_timeout"


class TargetCrashedError(TargetError):
    code = "target_crashed"


class TargetProtocolError(TargetError):
    code = "target_protocol_invalid"


class Target(Protocol):
    """An implementation under test."""

    name: str

    def exchange(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """Send `message`; its answer, within `timeout` seconds."""
        ...

    def take_stderr(self) -> str:
        """What the target wrote to stderr since the last call (empty for a callable)."""
        ...

    def close(self) -> None: ...


class CallableTarget:
    """`package.module:function`, called with each message as a dict, returning its answer."""

    def __init__(self, spec: str) -> None:
        self.name = spec
        self._function = load_callable(spec)
        self._worker: _Worker | None = None

    def exchange(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        # The callable runs on a worker thread, so one that never returns fails its cell, not
        # the run: the worker is abandoned and the next cell gets a new one.
        if self._worker is None:
            self._worker = _Worker(self._function, self.name)
        try:
            ok, answer = self._worker.call(dict(message), timeout)
        except queue.Empty:
            self._worker = None
            raise TargetTimeoutError(
                f"{self.name} did not return within {timeout:g}s (--cell-timeout)"
            ) from None
        if not ok:
            raise TargetCrashedError(
                f"{self.name} raised {type(answer).__name__}{_innermost(answer)}; its message "
                "is not shown since it may quote scenario content"
            )
        if not isinstance(answer, dict):
            raise TargetProtocolError(
                f"{self.name} returned {type(answer).__name__}; return the answer as a dict"
            )
        return answer

    def take_stderr(self) -> str:
        return ""

    def close(self) -> None:
        return None


class _Worker:
    """A daemon thread calling `function` with each message it is given."""

    def __init__(self, function: Callable[[dict[str, Any]], Any], name: str) -> None:
        self._function = function
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._answers: queue.Queue[tuple[bool, Any]] = queue.Queue()
        threading.Thread(target=self._serve, daemon=True, name=f"harness-target {name}").start()

    def _serve(self) -> None:
        while True:
            message = self._messages.get()
            try:
                self._answers.put((True, self._function(message)))
            except BaseException as error:  # reported as the cell's failure, by type only
                self._answers.put((False, error))

    def call(self, message: dict[str, Any], timeout: float) -> tuple[bool, Any]:
        """The function's answer (True, value) or exception (False, error); `queue.Empty` when
        it takes longer than `timeout`."""
        self._messages.put(message)
        return self._answers.get(timeout=timeout)


class CommandTarget:
    """A command started once (and again after it crashes or hangs), spoken to in JSON lines on
    stdin and stdout. What it writes to stderr is kept for the report of the cell being run."""

    def __init__(self, command: str, *, environ: Mapping[str, str] | None = None) -> None:
        self.name = command
        self._argv = shlex.split(command)
        if not self._argv:
            raise TargetSpecError("--target-cmd is empty: give the command that starts the target")
        self._environ = dict(os.environ if environ is None else environ)
        self._process: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=STDERR_KEPT)
        self._stderr_lock = threading.Lock()
        self._readers: list[threading.Thread] = []
        self.starts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        try:
            process = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._environ,
            )
        except OSError as error:
            raise TargetSpecError(
                f"cannot start --target-cmd {self.name!r}: {error.strerror or error}"
            ) from None
        self._lines = queue.Queue()
        lines = self._lines
        assert process.stdout is not None
        assert process.stderr is not None
        stdout, stderr = process.stdout, process.stderr

        def read_stdout() -> None:
            for line in stdout:
                lines.put(line)
            lines.put(None)

        def read_stderr() -> None:
            for line in stderr:
                with self._stderr_lock:
                    self._stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

        self._readers = [
            threading.Thread(target=read_stdout, daemon=True),
            threading.Thread(target=read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self._process = process
        self.starts += 1
        return process

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def exchange(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        process = self._process if self.running else self._start()
        assert process is not None
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
            process.stdin.flush()
        except OSError:
            self._stop()
            raise TargetCrashedError(
                self._ended("closed its stdin before the message was sent")
            ) from None
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self._stop()
            raise TargetTimeoutError(
                f"{self.name} did not answer within {timeout:g}s (--cell-timeout); it was stopped "
                "and is started again for the next cell"
            ) from None
        if line is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(_SHUTDOWN_GRACE)  # its stdout closed: it is exiting
            crashed = TargetCrashedError(self._ended("exited before answering"))
            self._stop()
            raise crashed
        return _decoded(line, self.name)

    def _ended(self, what: str) -> str:
        code = self._process.poll() if self._process is not None else None
        status = f" with exit code {code}" if code is not None else ""
        return f"{self.name} {what}{status}; see its stderr below. It is started again for the next cell"

    def take_stderr(self) -> str:
        with self._stderr_lock:
            text = "\n".join(self._stderr)
            self._stderr.clear()
        return text

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.kill()
        process.wait()
        for reader in self._readers:  # they end at the pipes' end, now the process is gone
            reader.join(_SHUTDOWN_GRACE)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def close(self) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            self._process = None
            return
        assert process.stdin is not None
        try:
            process.stdin.write(b'{"type": "shutdown"}\n')
            process.stdin.close()
            process.wait(_SHUTDOWN_GRACE)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self._stop()


def _decoded(line: bytes, name: str) -> dict[str, Any]:
    try:
        answer = json.loads(line)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise TargetProtocolError(
            f"{name} wrote a line to stdout that is not a JSON object ({len(line)} bytes); "
            "stdout carries the protocol only: write diagnostics to stderr"
        )
    return answer


def _innermost(error: BaseException) -> str:
    frame = None
    traceback = error.__traceback__
    while traceback is not None:
        frame, traceback = traceback.tb_frame, traceback.tb_next
    if frame is None:
        return ""
    return f" at {os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def load_callable(spec: str) -> Callable[[dict[str, Any]], Any]:
    """The callable `package.module:attribute` names (the current folder is importable, as
    for `python -m`), or `TargetSpecError`."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise TargetSpecError(
            f"--target {spec!r}: expected package.module:function, e.g. my_pkg.harness_target:run"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise TargetSpecError(f"--target {spec!r}: cannot import {module_name}: {error}") from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise TargetSpecError(f"--target {spec!r}: {module_name} has no callable {attribute!r}")
    return function  # type: ignore[no-any-return]


TargetCrashed = TargetCrashedError
"""The earlier name of `TargetCrashedError`, kept so existing code keeps working."""

TargetTimeout = TargetTimeoutError
"""The earlier name of `TargetTimeoutError`, kept so existing code keeps working."""
