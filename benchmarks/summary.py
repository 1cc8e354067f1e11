"""What `harness run`'s closing summary costs per cell: the summary a large run prints now (a row
per scenario file, failures in full) beside a row per cell (what every run printed before), on the
same results, in one run.

Builds the scripted realistic library of `scenario_library` (200 scenarios on five runtime
profiles: 1,000 cells; `--size`), gives each cell a result without running it (1 in 50 failing
with two mismatches, 1 in 100 skipped), and prints the summary `--repeats` times each way,
alternately, to a terminal console writing into memory (120 columns, colour on, as in CI logs).

The target: the summary at most 0.1 ms per cell.

    .venv/bin/python -m benchmarks.summary [--size 200] [--repeats 5]
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Final

from rich.console import Console

from benchmarks._report import alternated, library_arguments
from benchmarks.scenario_library import realistic_cells
from harness.cli import print_summary
from harness.scenarios.expect import Mismatch
from harness.scenarios.run import CellResult

TARGET_MS: Final = 0.1


def results_for(size: int, folder: Path) -> list[CellResult]:
    cells, _ = realistic_cells(folder, size)
    results = []
    for index, cell in enumerate(cells):
        result = CellResult(cell, duration=0.008 + index % 7 / 1000)
        if index % 50 == 7:
            result.mismatches.extend(
                [
                    Mismatch("status", "completed", "failed"),
                    Mismatch("forced_request.tools", ["__finish__"], ["search", "__finish__"]),
                ]
            )
        elif index % 100 == 3:
            result.skipped = "the target does not declare the feature(s) memory (hello.features)"
        results.append(result)
    return results


def printed(results: list[CellResult], per_cell: bool | None) -> float:
    console = Console(file=io.StringIO(), width=120, force_terminal=True, color_system="standard")
    started = time.perf_counter()
    print_summary(console, results, per_cell=per_cell)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    arguments = library_arguments(__doc__, argv, repeats=5)
    with tempfile.TemporaryDirectory(prefix="summary-bench-") as temporary:
        results = results_for(arguments.size, Path(temporary))
    ways = {"a row per cell (before)": True, "as harness run prints it (now)": None}
    printed(results, None)  # warm: rich's first table builds its caches
    medians = alternated(
        {way: partial(printed, results, per_cell) for way, per_cell in ways.items()},
        arguments.repeats,
    )
    print(f"\n| summary of {len(results):,} cells | total | per cell |")
    print("|---|---|---|")
    per_cell_ms = {}
    for way, seconds in medians.items():
        per_cell_ms[way] = seconds / len(results) * 1e3
        print(f"| {way} | {seconds * 1e3:.1f} ms | {per_cell_ms[way]:.3f} ms |")
    now = per_cell_ms["as harness run prints it (now)"]
    verdict = "PASS" if now <= TARGET_MS else "FAIL"
    print(f"\nsummary per cell: {now:.3f} ms (target <= {TARGET_MS:g} ms): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
