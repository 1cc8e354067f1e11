"""What persisting the run state costs a realistic cell, written whole at every save (as runs did
before) and by the runtime's `StateWriter` (each record serialised once per run, and a record a
request shares with an earlier request stored once), on the same states, in one run.

Runs the realistic scripted library of `scenario_library` (200 agent scenarios on the five runtime
profiles: 1,000 cells) once, keeping every `RunState` a runtime saved, in order. Then saves all of
them again `--repeats` times each way, the ways taking turns, to a fresh SQLite store (the default
store: WAL, synchronous=NORMAL), each exactly as `Runtime` does: serialise, build the `StoredRun`,
save. Before, the store's databases had SQLite's default 4 KiB pages; now it creates them with
16 KiB pages, and each way is measured on a database of its own page size. Every state `StateWriter` wrote must read back equal to the state, and this is checked. Prints
the persistence cost per cell each way, its share of a cell, the bytes per save, and the ratio.

Target: the persistence cost per cell at most half of writing the whole state at every save.

    .venv/bin/python -m benchmarks.persistence [--size 200] [--repeats 5]
"""

from __future__ import annotations

import contextlib
import gc
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from benchmarks._report import alternated, library_arguments
from benchmarks.scenario_library import realistic_cells
from harness.agent.state import RunState, StateWriter
from harness.runtimes.base import Runtime
from harness.scenarios import RunOptions, run_cell
from harness.scenarios.run import keep_loaded
from harness.stores.base import StoredRun
from harness.stores.sqlite import PAGE_SIZE, SQLiteStore

TARGET: Final = 0.5
BEFORE_PAGE_SIZE: Final = 4_096
"""SQLite's default page size, which the store's databases had before."""


def captured_states(cells: list[Any], options: RunOptions) -> tuple[list[RunState], float]:
    """Every state the library's runs saved, in order, and the time the runs took."""
    states: list[RunState] = []
    save = Runtime._save

    def keep(runtime: Runtime, state: RunState) -> None:
        states.append(state)
        save(runtime, state)

    Runtime._save = keep  # type: ignore[method-assign,assignment]
    try:
        started = time.perf_counter()
        results = [run_cell(cell, options) for cell in cells]
        elapsed = time.perf_counter() - started
    finally:
        Runtime._save = save  # type: ignore[method-assign]
    failed = [result.cell.id for result in results if not result.passed]
    if failed:
        raise SystemExit(f"benchmark library failed: {failed[:5]}")
    return states, elapsed


def whole(state: RunState) -> str:
    return state.model_dump_json()


def by_writer() -> Callable[[RunState], str]:
    """`StateWriter.dump`, with a writer for each run that lasts as long as the run, as each
    run's runtime has (the cells run one after the other, so their states come run by run)."""
    current: dict[str, StateWriter] = {}

    def dump(state: RunState) -> str:
        writer = current.get(state.run_id)
        if writer is None:
            current.clear()
            writer = current[state.run_id] = StateWriter()
        return writer.dump(state)

    return dump


def saved(
    states: list[RunState], folder: Path, dump: Callable[[RunState], str], *, page_size: int
) -> float:
    """Seconds to serialise and save every state, as `Runtime._save` does, to a new SQLite store
    whose database has pages of `page_size` bytes."""
    path = folder / f"runs-{time.monotonic_ns()}.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as database:  # the page size holds from here
        database.execute(f"PRAGMA page_size={page_size}")
        database.execute("VACUUM")
    store = SQLiteStore(path)
    try:
        started = time.perf_counter()
        for state in states:
            store.save(
                StoredRun(
                    run_id=state.run_id,
                    status=state.status,
                    state_json=dump(state),
                    forced_completion=state.forced_completion,
                )
            )
        return time.perf_counter() - started
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    arguments = library_arguments(__doc__, argv, repeats=5)
    with tempfile.TemporaryDirectory(prefix="persistence-bench-") as temporary:
        folder = Path(temporary)
        cells, options = realistic_cells(folder, arguments.size)
        with keep_loaded():
            states, run_seconds = captured_states(cells, options)
            # the states are this benchmark's fixture, not a run's: out of the collector's way
            # too, so its passes over them do not count as persistence
            gc.freeze()
            check = by_writer()
            written = [check(state) for state in states]
            for state, text in zip(states, written, strict=True):
                if RunState.model_validate_json(text) != state:
                    raise SystemExit(f"the state of run {state.run_id} does not read back")
            medians = alternated(
                {
                    "whole state at every save (before)": lambda: saved(
                        states, folder, whole, page_size=BEFORE_PAGE_SIZE
                    ),
                    "StateWriter (now)": lambda: saved(
                        states, folder, by_writer(), page_size=PAGE_SIZE
                    ),
                },
                arguments.repeats,
            )
    per_cell_run = run_seconds / len(cells)
    sizes = {
        "whole state at every save (before)": sum(len(whole(state)) for state in states),
        "StateWriter (now)": sum(len(text) for text in written),
    }
    print(
        f"\n{len(cells):,} cells, {len(states):,} saves ({len(states) / len(cells):.1f} per cell); "
        f"a cell takes {per_cell_run * 1e3:.2f} ms in all\n"
    )
    print("| state JSON | bytes per save | persistence per cell | share of a cell |")
    print("|---|---|---|---|")
    for way, seconds in medians.items():
        per_cell = seconds / len(cells)
        print(
            f"| {way} | {sizes[way] / len(states):,.0f} | {per_cell * 1e3:.2f} ms | "
            f"{per_cell / per_cell_run * 100:.0f}% |"
        )
    before, now = medians.values()
    ratio = now / before
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print(f"\nnow / before: {ratio:.2f} (target <= {TARGET:g}): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
