"""Reaching an implementation under test: a Python callable, or a command spoken to in JSON lines.

Both speak the protocol of `harness.targets.protocol`; `exchange` sends one message and returns
the target's answer as a `dict`, or raises a `TargetError` subclass saying what went wrong (a
crash, a hang, output that is not the protocol, an answer carrying another cell's id or coming
twice). After a crash or a hang a command is ended, its whole process group with it, and started
again for the next cell, so one bad cell never ends the run, and nothing a target does (children
holding its pipes, ignoring SIGTERM, never reading) makes the harness wait without a bound.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import queue
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

from harness.json_body import json_nesting_depth
from harness.targets.errors import (
    TargetCrashedError,
    TargetError,
    TargetProtocolError,
    TargetSpecError,
    TargetTimeoutError,
)

DEFAULT_CELL_TIMEOUT: Final = 30.0
"""Seconds a target may take to answer one cell (`--cell-timeout`)."""
REFERENCE_TARGET: Final = "harness.scenarios.reference:run"
REAL_ENGINE_REFERENCE_TARGET: Final = "harness.scenarios.reference:run_on_real_engines"
"""The reference target running its `temporal` and `dbos` agent cells on Temporal and DBOS
themselves (started on first use, in this process), its other cells as `REFERENCE_TARGET`."""
"""The harness's own modules as a target: `harness run --target harness.scenarios.reference:run`."""
MOVED_TARGETS: Final = {"harness.targets.reference:run": REFERENCE_TARGET}
"""Targets of the harness that moved, by their earlier names, which keep working."""
STDERR_KEPT: Final = 200
"""Lines of a command's stderr kept per cell for its report."""
_SHUTDOWN_GRACE: Final = 5.0
"""Seconds a target may take to exit after `shutdown`, before its process group is ended."""
_KILL_GRACE: Final = 2.0
"""Seconds between SIGTERM and SIGKILL when a target's process group is ended."""
_EXIT_GRACE: Final = 1.0
"""Seconds for what follows an exit: its last lines to be read, the process to be reaped."""
MAX_ANSWER_DEPTH: Final = 512
"""The deepest an answer may nest, in arrays and objects (a line a command target writes, or what
a Python target returns): twice what any answer can hold (a JSON value in an answer is refused
past about 250 levels), and shallow enough that reading it never nears Python's recursion limit.
A deeper answer is a protocol error, found without recursion and without parsing it."""
_POLL_SECONDS: Final = 0.2
_READ_BYTES: Final = 65_536
_FINAL_READS: Final = 64
_ID_SHOWN: Final = 200


class Target(Protocol):
    """An implementation under test."""

    name: str

    def exchange(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """Send `message`; its answer, within `timeout` seconds."""
        ...

    def take_stderr(self) -> str:
        """What the target wrote to stderr since the last call (empty for a callable)."""
        ...

    def close(self, *, interrupted: bool = False) -> None:
        """Let the target go; `interrupted` (Ctrl-C ended the run): without waiting for it."""
        ...


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
        if _nested_deeper_than(answer, MAX_ANSWER_DEPTH):
            raise TargetProtocolError(_too_deep_message(self.name, "returned an answer"))
        check_answer_id(message, answer, self.name)
        return answer

    def take_stderr(self) -> str:
        return ""

    def close(self, *, interrupted: bool = False) -> None:
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
    stdin and stdout. What it writes to stderr is kept for the report of the cell being run.

    It runs in a process group of its own, with the environment `environ` (default: the minimal
    one of `harness.targets.environment`). The whole group (the command and every child it left
    behind) is ended, SIGTERM then SIGKILL, when a cell times out, after a crash and at `close`.
    Nothing here waits without a bound: not on the process, not on a pipe a child of the
    target still holds, not on a target that never reads its stdin. Each answer must carry the
    id of the message it answers, and a line no message asked for (a second answer) fails the
    cell it arrives in.
    """

    def __init__(self, command: str, *, environ: Mapping[str, str] | None = None) -> None:
        from harness.targets.environment import target_environment

        self.name = command
        self._argv = shlex.split(command)
        if not self._argv:
            raise TargetSpecError("--target-cmd is empty: give the command that starts the target")
        self._environ = dict(target_environment() if environ is None else environ)
        self._process: subprocess.Popen[bytes] | None = None
        self._stdin: int | None = None
        self._output: _Output | None = None
        self._stdout_ended = False
        self._answered: set[tuple[str, ...]] = set()
        self._awaiting = False
        self._stderr: deque[str] = deque(maxlen=STDERR_KEPT)
        self._stderr_lock = threading.Lock()
        self.starts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        try:
            process = subprocess.Popen(
                self._argv,
                stdin=stdin_read,
                stdout=stdout_write,
                stderr=stderr_write,
                env=self._environ,
                start_new_session=True,  # its own process group, ended whole; no terminal Ctrl-C
            )
        except (OSError, ValueError) as error:  # ValueError: a NUL byte in the command
            for fd in (stdin_write, stdout_read, stderr_read):
                os.close(fd)
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise TargetSpecError(f"cannot start --target-cmd {self.name!r}: {reason}") from None
        finally:
            for fd in (stdin_read, stdout_write, stderr_write):  # the target's ends
                os.close(fd)
        os.set_blocking(stdin_write, False)  # a target that never reads cannot block a write
        self._process, self._stdin = process, stdin_write
        self._output = _Output(stdout_read, stderr_read, self._keep_stderr, self.name)
        self._stdout_ended = False
        self._answered = set()
        self._awaiting = False
        self.starts += 1
        return process

    def _keep_stderr(self, line: str) -> None:
        with self._stderr_lock:
            self._stderr.append(line)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def exchange(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        if not self.running:
            self._stop()  # a target that exited by itself: end what it left behind
            self._start()
        key = _message_key(message)
        stale = self._drain()
        if stale:
            raise TargetProtocolError(
                f"{self.name} wrote {_described_line(stale[0], self._answered)} while no message "
                f"was waiting for an answer, so {_named(message)} was not sent; answer each "
                "message exactly once"
            )
        self._awaiting = True  # from here on, an interrupted exchange leaves the target busy
        self._send(json.dumps(message, ensure_ascii=False).encode() + b"\n", deadline, timeout)
        line = self._next_line(deadline, timeout)
        try:
            answer = _decoded(line, self.name)
        except TargetProtocolError as error:  # its answer may still follow: start afresh
            self._stop()
            raise TargetProtocolError(
                f"{error}. It was stopped and is started again for the next cell"
            ) from None
        found = _answer_key(answer)
        if found is not None and found != key and found in self._answered:
            # a second answer to an earlier message: this message's answer may follow or not,
            # so the conversation starts again from a new process
            described = _described_line(line, self._answered)
            self._stop()
            raise TargetProtocolError(
                f"{self.name} wrote {described} where the answer to {_named(message)} was due; "
                "answer each message exactly once. It was stopped and is started again for the "
                "next cell"
            )
        self._awaiting = False
        self._answered.add(key)
        check_answer_id(message, answer, self.name)
        return answer

    def _drain(self) -> list[bytes]:
        """The lines that arrived while no message was waiting for an answer."""
        stale: list[bytes] = []
        assert self._output is not None
        while True:
            try:
                line = self._output.lines.get_nowait()
            except queue.Empty:
                return stale
            if line is None:
                self._stdout_ended = True
            else:
                stale.append(line)

    def _send(self, data: bytes, deadline: float, timeout: float) -> None:
        assert self._stdin is not None
        fd, view = self._stdin, memoryview(data)
        writable = select.poll()
        writable.register(fd, select.POLLOUT)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._stop()
                raise TargetTimeoutError(
                    f"{self.name} did not read its stdin within {timeout:g}s (--cell-timeout); "
                    "it was stopped and is started again for the next cell"
                )
            if not writable.poll(max(1, int(remaining * 1000))):
                continue
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except OSError:
                self._stop()
                raise TargetCrashedError(
                    self._ended("closed its stdin before the message was sent")
                ) from None

    def _next_line(self, deadline: float, timeout: float) -> bytes:
        """The next line the target writes; a timeout or a crash ends the target and raises."""
        assert self._output is not None
        assert self._process is not None
        lines, process = self._output.lines, self._process
        while not self._stdout_ended:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._stop()
                raise TargetTimeoutError(
                    f"{self.name} did not answer within {timeout:g}s (--cell-timeout); it was "
                    "stopped and is started again for the next cell"
                )
            try:
                line = lines.get(timeout=min(remaining, _POLL_SECONDS))
            except queue.Empty:
                if process.poll() is None:
                    continue
                try:  # it exited: what it wrote before is in the pipe, read in a moment
                    line = lines.get(timeout=_EXIT_GRACE)
                except queue.Empty:
                    break  # a child of it holds its stdout open
            if line is None:
                self._stdout_ended = True
            else:
                return line
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(_EXIT_GRACE)  # its stdout closed: it is exiting
        what = "exited before answering" if process.poll() is not None else "closed its stdout"
        crashed = TargetCrashedError(self._ended(what))
        self._stop()
        raise crashed

    def _ended(self, what: str) -> str:
        code = self._process.poll() if self._process is not None else None
        status = f" with exit code {code}" if code is not None else ""
        return f"{self.name} {what}{status}; see its stderr below. It is started again for the next cell"

    def take_stderr(self) -> str:
        with self._stderr_lock:
            text = "\n".join(self._stderr)
            self._stderr.clear()
        return text

    def _stop(self, grace: float = _KILL_GRACE) -> None:
        """End the target's process group (SIGTERM, then SIGKILL after `grace` seconds) and let go
        of its pipes. Bounded, whatever the target or its children do."""
        process, self._process = self._process, None
        stdin, self._stdin = self._stdin, None
        output, self._output = self._output, None
        self._awaiting = False
        if stdin is not None:
            with contextlib.suppress(OSError):
                os.close(stdin)
        try:
            if process is not None:
                _end_group(process, grace)
        finally:
            if output is not None:
                output.close()

    def close(self, *, interrupted: bool = False) -> None:
        """Send `shutdown`, give the target a moment to exit, then end its process group. A
        target still busy with a cell, or any target when the run was `interrupted` (Ctrl-C), is
        ended at once (SIGTERM, then SIGKILL after 2 s); Ctrl-C while it shuts down ends it
        without waiting, and is raised again."""
        process = self._process
        if process is None:
            return
        try:
            if (
                not interrupted
                and not self._awaiting
                and process.poll() is None
                and self._stdin is not None
            ):
                with contextlib.suppress(TargetError):
                    self._send(b'{"type": "shutdown"}\n', time.monotonic() + _SHUTDOWN_GRACE, 0)
                if self._stdin is not None:
                    os.close(self._stdin)
                    self._stdin = None
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(_SHUTDOWN_GRACE)
        except BaseException:
            self._stop(grace=0)
            raise
        self._stop()


class _Output:
    """A target's stdout and stderr, read on a daemon thread that owns both pipes: stdout as
    lines for the answers (`None` at its end), stderr line by line to `on_stderr`. The thread
    ends at both pipes' end, or soon after `close`, even while a child of the target still holds
    them open; nothing ever joins it or closes a pipe under it."""

    def __init__(
        self, stdout: int, stderr: int, on_stderr: Callable[[str], None], name: str
    ) -> None:
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._lock = threading.Lock()
        self._open = True
        self._on_stderr = on_stderr
        self._partial = {stdout: b"", stderr: b""}
        self._stdout = stdout
        threading.Thread(target=self._read, daemon=True, name=f"harness-target {name}").start()

    def close(self) -> None:
        """Stop reading, after what the pipes hold now; never blocks."""
        with self._lock:
            if self._open:
                with contextlib.suppress(BlockingIOError):
                    os.write(self._wake_write, b"\0")

    def _read(self) -> None:
        readable = select.poll()
        for fd in (*self._partial, self._wake_read):
            readable.register(fd, select.POLLIN)
        try:
            while self._partial:
                events = readable.poll()
                if any(fd == self._wake_read for fd, _ in events):
                    for _ in range(_FINAL_READS):  # what is there already, then stop
                        ready = [fd for fd, _ in readable.poll(0) if fd in self._partial]
                        if not ready:
                            break
                        for fd in ready:
                            self._take(fd, readable)
                    return
                for fd, _ in events:
                    self._take(fd, readable)
        finally:
            with self._lock:
                self._open = False
                for fd in (*self._partial, self._wake_read, self._wake_write):
                    os.close(fd)
                self._partial.clear()

    def _take(self, fd: int, readable: select.poll) -> None:
        chunk = os.read(fd, _READ_BYTES)
        *lines, rest = (self._partial[fd] + chunk).split(b"\n")
        if not chunk:  # the pipe's end: a last line without its newline, then no more
            lines = [rest] if rest else []
            del self._partial[fd]
            readable.unregister(fd)
            os.close(fd)
        else:
            self._partial[fd] = rest
        for line in lines:
            if fd == self._stdout:
                self.lines.put(line)
            else:
                self._on_stderr(line.decode("utf-8", "replace").rstrip("\r"))
        if not chunk and fd == self._stdout:
            self.lines.put(None)


def _end_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to `process`'s process group, SIGKILL to whatever is left of it after `grace`
    seconds (at once on Ctrl-C); the process is reaped if it is gone within a moment. Children
    that left the group (`setsid`) are beyond reach: nothing here waits for them."""
    _signal_group(process.pid, signal.SIGTERM)
    try:
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_alive(process):
            time.sleep(_POLL_SECONDS / 4)
    finally:
        _signal_group(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(_EXIT_GRACE)


def _group_alive(process: subprocess.Popen[bytes]) -> bool:
    process.poll()  # reap the leader, which would otherwise count as a member
    try:
        os.killpg(process.pid, 0)
    except OSError:  # ProcessLookupError: no member left
        return False
    return True


def _signal_group(group: int, signal_number: int) -> None:
    with contextlib.suppress(OSError):  # the group is gone already
        os.killpg(group, signal_number)


def _message_key(message: Mapping[str, Any]) -> tuple[str, ...]:
    """What an answer to `message` is known by: the cell's id, or the message type (hello)."""
    ident = message.get("id")
    return ("id", ident) if isinstance(ident, str) else ("type", str(message.get("type")))


def _answer_key(answer: Mapping[str, Any]) -> tuple[str, ...] | None:
    ident = answer.get("id")
    if isinstance(ident, str):
        return ("id", ident)
    return ("type", "hello") if answer.get("type") == "hello" else None


def _named(message: Mapping[str, Any]) -> str:
    ident = message.get("id")
    return f"cell {ident}" if isinstance(ident, str) else str(message.get("type"))


def _described_line(line: bytes, answered: set[tuple[str, ...]]) -> str:
    """A line the target wrote, by what it answers, never by its content."""
    if _too_deep(line):
        return f"a line nested deeper than {MAX_ANSWER_DEPTH} levels ({len(line)} bytes)"
    try:
        answer = json.loads(line)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return f"a line that is not a JSON object ({len(line)} bytes)"
    key = _answer_key(answer)
    if key == ("type", "hello"):
        return "a second answer to hello" if key in answered else "an answer to hello"
    if key is not None:
        shown = _shown_id(key[1])
        return f"a second answer for {shown}" if key in answered else f"an answer for {shown}"
    return "an answer without an id"


def _shown_id(ident: str) -> str:
    return repr(ident) if _showable(ident) else f"an id of {len(ident)} characters (not shown)"


def _showable(ident: str) -> bool:
    """Whether an id that arrived has a cell id's shape (one line of printable characters, not
    too long) and may be quoted; any other is named by its length only: it may be anything."""
    return len(ident) <= _ID_SHOWN and ident.isprintable()


def check_answer_id(message: Mapping[str, Any], answer: Mapping[str, Any], name: str) -> None:
    """`TargetProtocolError` unless `answer` carries the id of the cell `message` sent (an
    `error` answer may leave it out: it fails the cell all the same). A hello has no id."""
    expected = message.get("id")
    if not isinstance(expected, str):
        return
    ident = answer.get("id")
    if ident == expected or (ident is None and answer.get("type") == "error"):
        return
    if "id" not in answer:
        arrived = "an answer without an id"
    elif isinstance(ident, str):
        arrived = f"id {ident!r}" if _showable(ident) else _shown_id(ident)
    else:
        arrived = f"an id of type {type(ident).__name__} (ids are strings)"
    raise TargetProtocolError(
        f"{name} answered cell {expected} with {arrived}; expected id {expected!r}: each answer "
        "carries the id of the message it answers"
    )


def _decoded(line: bytes, name: str) -> dict[str, Any]:
    if _too_deep(line):
        raise TargetProtocolError(_too_deep_message(name, f"wrote an answer ({len(line)} bytes)"))
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


def _too_deep(line: bytes) -> bool:
    """Whether `line` nests deeper than `MAX_ANSWER_DEPTH`, found without recursion (Python's
    JSON parser recurses once per level); counting brackets first keeps an answer cheap."""
    return (
        line.count(b"[") + line.count(b"{") > MAX_ANSWER_DEPTH
        and json_nesting_depth(line) > MAX_ANSWER_DEPTH
    )


def _nested_deeper_than(value: object, limit: int) -> bool:
    """Whether `value` holds lists, tuples or dicts more than `limit` levels deep, found without
    recursion, depth first: a structure that holds itself is found too, at once."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _too_deep_message(name: str, what: str) -> str:
    return (
        f"{name} {what} nested deeper than {MAX_ANSWER_DEPTH} levels of arrays and objects; no "
        "answer of the protocol nests that deep, so it was not read"
    )


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
    for `python -m`; an earlier name of the reference still names it), or `TargetSpecError`."""
    module_name, _, attribute = MOVED_TARGETS.get(spec, spec).partition(":")
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
"""The earlier name of `TargetCrashedError`, deprecated: kept until 1.0."""

TargetTimeout = TargetTimeoutError
"""The earlier name of `TargetTimeoutError`, deprecated: kept until 1.0."""
