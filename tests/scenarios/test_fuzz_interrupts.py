"""`harness fuzz` honours the first Ctrl-C, whenever it comes: while the target starts, while
cells are searched, while a cell hangs on the target, while a difference is shrunk. Each time it
exits 130 within seconds, says how far it got, ends the target and writes no scenario file.

Python may drop a `KeyboardInterrupt` raised inside a garbage-collector callback (hypothesis
installs one) and go on; the search then ran to its end. Each moment below runs in its own
`harness fuzz` process, all at once, forked from one process that imported the harness
(`tests/support/harness_forks.py`), against a completion target that needs nothing but the
standard library (`tests/support/completion_target.py`), so the whole test takes a few seconds.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

import pytest

from tests.support import completion_target, harness_forks

STOP_SECONDS: Final = 5.0
"""How soon after Ctrl-C `harness fuzz` must have exited, the target ended."""
WAIT_SECONDS: Final = 60.0
"""How long a moment may take to come before the test fails instead of hanging; never a measure
of how fast anything is."""
DIFFER_OVER: Final = 1_000
"""The target differs on cells longer than this: those holding a text of about 65,536
characters, which the search draws within its first cells."""


def number(folder: Path, name: str) -> int:
    try:
        return int((folder / name).read_text())
    except FileNotFoundError:
        return 0


@dataclass(kw_only=True)
class Moment:
    """When Ctrl-C is pressed: once `reached(folder)` holds for the target's notes."""

    name: str
    reached: Callable[[Path], bool]
    differ: bool = False
    hang: str = "0"
    says: str = "interrupted "


MOMENTS: Final = (
    Moment(name="the target has started", reached=lambda folder: number(folder, "pid") > 0),
    Moment(
        name="the first cells are searched",
        reached=lambda folder: number(folder, "cells") >= 2,
        says="no difference from the reference so far; nothing was written",
    ),
    Moment(
        name="later in the search",
        reached=lambda folder: number(folder, "cells") >= 40,
        says="no difference from the reference so far; nothing was written",
    ),
    Moment(
        name="a cell hangs on the target",
        hang="5",
        reached=lambda folder: (folder / "hanging").exists(),
        says="interrupted after 4 cells (--seed 0): no difference from the reference so far",
    ),
    Moment(
        name="shrinking begins",
        differ=True,
        reached=lambda folder: number(folder, "cells") > number(folder, "differed") > 0,
        says="shrinking was cut short and nothing was written",
    ),
    Moment(
        name="later in shrinking",
        differ=True,
        reached=lambda folder: number(folder, "cells") >= number(folder, "differed") + 4 > 4,
        says="shrinking was cut short and nothing was written",
    ),
    Moment(
        name="a cell hangs on the target while shrinking",
        differ=True,
        hang="+2",
        reached=lambda folder: (folder / "hanging").exists(),
        says="shrinking was cut short and nothing was written",
    ),
)


@dataclass(kw_only=True)
class Run:
    moment: Moment
    folder: Path
    pid: int = 0
    interrupted_at: float | None = None
    exited_at: float | None = None
    code: int | None = None

    def command(self) -> tuple[str, list[str]]:
        """Its folder and its `harness` arguments, for `harness_forks`."""
        self.folder.mkdir()
        target = shlex.join(
            [
                sys.executable,
                completion_target.__file__,
                str(self.folder),
                str(DIFFER_OVER if self.moment.differ else 0),
                self.moment.hang,
            ]
        )
        out = str(self.folder / "out")
        return str(self.folder), ["fuzz", "--target-cmd", target, "--cells", "200", "--out", out]

    def said(self) -> str:
        return "\n".join(
            [
                f"Ctrl-C when {self.moment.name}:",
                self.stdout(),
                (self.folder / "stderr").read_text(),
            ]
        )

    def stdout(self) -> str:
        return (self.folder / "stdout").read_text()


def gone(pid: int) -> bool:
    """Whether `pid` has exited (a zombie waiting for its reaper counts as exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def running(pid: int, program: str) -> bool:
    """Whether `pid` is still `program` (not another process that got its number since)."""
    try:
        return program.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False


def events(stream: IO[str], into: queue.Queue[list[str]]) -> None:
    """Each line `harness_forks` writes, as its words."""
    for line in stream:
        into.put(line.split())


@pytest.mark.subprocess
def test_the_first_ctrl_c_stops_harness_fuzz_at_any_moment(tmp_path: Path) -> None:
    runs = [Run(moment=moment, folder=tmp_path / f"moment-{i}") for i, moment in enumerate(MOMENTS)]
    forks = subprocess.Popen(
        [sys.executable, harness_forks.__file__, json.dumps([run.command() for run in runs])],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert forks.stdout is not None
    happened: queue.Queue[list[str]] = queue.Queue()
    reader = threading.Thread(target=events, args=(forks.stdout, happened), daemon=True)
    reader.start()
    by_pid: dict[int, Run] = {}
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while any(run.exited_at is None for run in runs):
            assert time.monotonic() < deadline, [r.moment.name for r in runs if not r.exited_at]
            while not happened.empty():
                event = happened.get()
                if event[0] == "started":
                    run = runs[int(event[1])]
                    run.pid = int(event[2])
                    by_pid[run.pid] = run
                elif event[0] == "exited":
                    run = by_pid[int(event[1])]
                    run.code, run.exited_at = int(event[2]), float(event[3])
            for run in runs:
                if run.pid and run.interrupted_at is None and run.moment.reached(run.folder):
                    run.interrupted_at = time.monotonic()
                    os.kill(run.pid, signal.SIGINT)
            time.sleep(0.01)
    finally:  # a failing test leaves nothing running
        for run in runs:
            if run.pid and run.exited_at is None:
                os.kill(run.pid, signal.SIGKILL)
            target = number(run.folder, "pid")
            if target and not gone(target) and running(target, completion_target.__file__):
                os.kill(target, signal.SIGKILL)
        forks.wait(WAIT_SECONDS)
        reader.join(WAIT_SECONDS)
        forks.stdout.close()

    for run in runs:
        assert run.interrupted_at is not None, f"it ended before Ctrl-C; {run.said()}"
        assert run.exited_at is not None
        assert run.code == 130, run.said()
        assert run.exited_at - run.interrupted_at < STOP_SECONDS, run.said()
        assert run.stdout().startswith("interrupted "), run.said()
        assert run.moment.says in run.stdout(), run.said()
        assert (run.folder / "stderr").read_text() == "", run.said()  # no traceback, no "Aborted"
        assert gone(number(run.folder, "pid")), f"the target outlived the run; {run.said()}"
        assert not (run.folder / "out").exists() or not any((run.folder / "out").iterdir())
