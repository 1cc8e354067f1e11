"""Running cells in worker processes (`harness run -n N`), and splitting them across machines
(`harness run --shard K/N`).

Workers are forked from the process that already loaded the scenario files and imported the
runner, so each starts at once with both; they take cells in batches of whole scenarios (a
recording scenario's cells stay on one worker, which records through its first cell and replays
in the others), and results come back in the order a serial run gives. Each worker has its own
default SQLite file (`runs-w0.sqlite3`, ...); PostgreSQL and Redis stores are shared as they are.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from harness.errors import HarnessError
from harness.json_body import JsonFileError, JsonFileMissingError, read_json_file
from harness.scenarios.run import Cell, CellResult, RunOptions, run_cell

if TYPE_CHECKING:
    from concurrent.futures import Future
    from multiprocessing.queues import Queue

    from harness.scenarios.on_target import TargetRunner, TargetSpec

WORKER_VARIABLE: Final = "HARNESS_WORKER"
"""Set in each worker to its name (`w0`, `w1`, ...): the default SQLite file is per worker."""
LAST_RUN: Final = Path(".harness") / "last-run.json"
"""Every `harness run` writes its JSON report here (under its working folder), for
`--last-failed`."""
BATCHES_PER_WORKER: Final = 25
"""Batches each worker takes on average: small enough that the last one leaves no core idle for
long (with 4, the 1,000-cell benchmark lost a second to it), large enough that the per-batch
messages stay negligible."""
WORKERS_PER_CORE: Final = 4
"""`-n` may ask for up to this many workers per CPU core: more only wait on each other (a cell
is CPU-bound), each costs a process, and thousands would exhaust the machine."""
_WHOLE_NUMBER: Final = re.compile(r"[0-9]+")
"""ASCII digits only: `int` also reads full-width and Arabic-Indic digits, and spaces around
them."""


class LastRunError(HarnessError, ValueError):
    """`--last-failed` has no readable report of a previous run."""

    code = "last_run_unreadable"


class WorkersError(HarnessError, ValueError):
    """`-n` is not `auto` or a whole number of workers from 0 to `max_workers()`."""

    code = "workers_invalid"


class ShardSpecError(HarnessError, ValueError):
    """`--shard` is not `K/N` with 1 <= K <= N."""

    code = "shard_invalid"


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str, *, option: str = "--shard") -> Shard:
        """`K/N` in ASCII digits with 1 <= K <= N and nothing around them (no space, no sign, no
        full-width digit); anything else is a `ShardSpecError` naming `option`."""
        index, slash, count = text.partition("/")
        shard = None
        if slash and _WHOLE_NUMBER.fullmatch(index) and _WHOLE_NUMBER.fullmatch(count):
            try:
                shard = cls(int(index), int(count))
            except ValueError:  # more digits than Python reads: no such shard
                shard = None
        if shard is None or not 1 <= shard.index <= shard.count:
            raise ShardSpecError(
                f"{option} {text!r}: expected K/N in digits with 1 <= K <= N, such as 2/4"
            )
        return shard

    def holds(self, cell: Cell) -> bool:
        """Whether this shard runs `cell`: decided by its scenario's file and name alone, so every
        cell of a scenario lands in one shard, and adding a scenario never moves another."""
        return scenario_slot(cell, self.count) == self.index - 1


def scenario_slot(cell: Cell, count: int) -> int:
    """`cell`'s scenario's slot among `count`: a hash of its file path (relative, as given) and
    its name, the same on every machine and in every run."""
    key = f"{cell.loaded.path.as_posix()}\0{cell.loaded.scenario.name}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % count


def failed_last_time(folder: Path, *, option: str = "--last-failed") -> set[str]:
    """The ids of the cells that failed in the last run in `folder`, or `LastRunError` (naming
    `option`) when there is no last run to read (a missing file, or one `read_json_file` refuses
    or that is not a report)."""
    path = folder / LAST_RUN
    try:
        report = read_json_file(path)
    except JsonFileMissingError:
        raise LastRunError(
            f"{option}: no previous run in {folder} ({path} is missing); run harness run first"
        ) from None
    except JsonFileError as error:
        raise LastRunError(f"{option}: {error}; delete it and run harness run again") from None
    cells = report.get("cells") if isinstance(report, dict) else None
    if not isinstance(cells, list) or not all(_is_cell(cell) for cell in cells):
        raise LastRunError(
            f"{option}: {path} is not the report of a harness run (each cell needs an id and "
            "passed); delete it and run harness run again"
        )
    return {cell["id"] for cell in cells if not cell["passed"] and not cell.get("skipped")}


def _is_cell(cell: object) -> bool:
    return (
        isinstance(cell, dict)
        and isinstance(cell.get("id"), str)
        and isinstance(cell.get("passed"), bool)
    )


def max_workers() -> int:
    """The most workers `-n` may ask for: `WORKERS_PER_CORE` per CPU core."""
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


def worker_count(text: str, *, option: str = "-n") -> int:
    """`-n`: `auto` for one worker per CPU core, or a whole number of workers in ASCII digits
    from 0 (run in this process) to `max_workers()`. Anything else (a sign, a space, a full-width
    digit, a larger number) is a `WorkersError` naming `option`; no integer is built from more
    digits than the cap has."""
    if text == "auto":
        return os.cpu_count() or 1
    cap = max_workers()
    digits = text.lstrip("0") if _WHOLE_NUMBER.fullmatch(text) else None
    if digits is None or len(digits) > len(str(cap)) or int(digits or "0") > cap:
        raise WorkersError(
            f"{option} {text[:40]!r}: expected auto (one worker per CPU core) or a whole number of "
            f"workers from 0 (run in this process) to {cap} ({WORKERS_PER_CORE} per CPU core)"
        )
    return int(digits or "0")


# -- workers ----------------------------------------------------------------------------------------

_CELLS: list[Cell] = []
_OPTIONS: RunOptions | None = None
_TARGET: TargetSpec | None = None
_RUNNERS: list[TargetRunner] = []
_KEPT_OPEN = ExitStack()
"""Holds the worker's target runner open for the worker's life (a context manager that is no
longer referenced is closed by the garbage collector)."""


def _start_worker(names: Queue[str]) -> None:
    from multiprocessing.util import Finalize

    os.environ[WORKER_VARIABLE] = names.get()
    # A worker ends without running atexit handlers: its target (in a process group of its own,
    # out of reach of a terminal's Ctrl-C) is shut down when the worker exits, however it exits.
    Finalize(None, _KEPT_OPEN.close, exitpriority=10)
    Finalize(None, _close_engines, exitpriority=10)


def _close_engines() -> None:
    """Stop the real engines this worker started (`--engine real`), if it started any."""
    engines = sys.modules.get("harness.engines.run")
    if engines is not None:
        engines.close_engines()


def _run_batch(indexes: list[int]) -> list[tuple[int, CellResult]]:
    assert _OPTIONS is not None
    run = run_cell if _TARGET is None else _runner().run_cell
    return [(index, _light(run(_CELLS[index], _OPTIONS))) for index in indexes]


def _runner() -> TargetRunner:
    """This worker's own target and replay server, opened on its first cell (never in the parent:
    a forked process must not inherit the server's thread)."""
    if not _RUNNERS:
        from harness.scenarios.on_target import target_runner

        assert _TARGET is not None
        _RUNNERS.append(_KEPT_OPEN.enter_context(target_runner(_TARGET)))
    return _RUNNERS[0]


def _light(result: CellResult) -> CellResult:
    """The result without its cell (the parent has it): only what the cell did crosses back."""
    return replace(result, cell=None)  # type: ignore[arg-type]


class WorkerDiedError(HarnessError):
    """A worker process ended while it ran a batch of cells (killed, out of memory, or code the
    cell ran exited the process)."""

    code = "worker_died"


def _worker_died(cell: Cell) -> CellResult:
    """The result of a cell whose worker died before reporting it: an error, never a traceback;
    the run goes on and reports every cell."""
    died = WorkerDiedError(
        "the worker process running this cell's batch ended before reporting it (killed, out of "
        "memory, or the code under test exited the process); run it with -n 0 to see which cell"
    )
    return CellResult(cell, error=f"{type(died).__name__}: {died}", error_code=died.code)


def batches(cells: Sequence[Cell], workers: int) -> list[list[int]]:
    """Cell indexes in batches of whole scenarios, about `BATCHES_PER_WORKER` per worker."""
    by_scenario: list[list[int]] = []
    for index, cell in enumerate(cells):
        if by_scenario and cells[by_scenario[-1][0]].loaded is cell.loaded:
            by_scenario[-1].append(index)
        else:
            by_scenario.append([index])
    size = max(1, len(cells) // (workers * BATCHES_PER_WORKER))
    grouped: list[list[int]] = []
    for group in by_scenario:
        if grouped and len(grouped[-1]) + len(group) <= size:
            grouped[-1].extend(group)
        else:
            grouped.append(list(group))
    return grouped


def run_in_workers(
    cells: Sequence[Cell],
    options: RunOptions,
    workers: int,
    *,
    target: TargetSpec | None = None,
    on_result: Callable[[CellResult], None] = lambda result: None,
) -> Iterator[CellResult]:
    """Run `cells` in `workers` forked processes, never more than there are `batches` (on
    `target` when given: one per worker); yield every result in `cells`' order (each as soon as
    it and every one before it are done), calling `on_result` as each arrives. Fork before
    starting any thread in this process."""
    # Loaded here: a serial run (-n 0) pays nothing for the process pool.
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    planned = batches(cells, workers)
    if not planned:
        return
    workers = min(workers, len(planned))  # a worker without a batch would only cost a fork
    global _CELLS, _OPTIONS, _TARGET
    _CELLS, _OPTIONS, _TARGET = list(cells), options, target
    context = multiprocessing.get_context("fork")
    names = context.Queue()
    for number in range(workers):
        names.put(f"w{number}")
    done: dict[int, CellResult] = {}
    following = 0
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_start_worker, initargs=(names,)
    ) as pool:
        batch_of: dict[Future[list[tuple[int, CellResult]]], list[int]] = {
            pool.submit(_run_batch, batch): batch for batch in planned
        }
        pending = set(batch_of)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                try:
                    found = future.result()
                except BrokenProcessPool:
                    found = [(index, _worker_died(cells[index])) for index in batch_of[future]]
                for index, light in found:
                    light.cell = cells[index]
                    done[index] = light
                    on_result(light)
            while following in done:
                yield done.pop(following)
                following += 1
