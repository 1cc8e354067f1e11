"""What running the scenario library on a target costs: `harness run --target` and
`--target-cmd` against the in-process runner, on the same 1,000 cells, in one run.

Builds the scripted library of `scenario_library` (200 realistic agent scenarios on the five
runtime profiles: 1,000 cells) in a temporary folder and runs it three ways, alternately, each
`--repeats` times (median):

1. **in process**: the reference loop, the runner `harness run` uses without a target;
2. **--target** `harness.scenarios.reference:run`: the same reference as a Python target, every
   cell through its own `harness serve` session over loopback HTTP, checked from its answer and
   the requests the server received;
3. **--target-cmd**: the same reference as a command speaking JSON lines on stdin and stdout.

The target: at most 2x the in-process time per cell (`--target`, the same code under test).

    .venv/bin/python -m benchmarks.target_overhead [--size 200] [--repeats 3]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from benchmarks._report import alternated, library_arguments
from benchmarks.scenario_library import realistic_cells
from harness.scenarios import RunOptions, run_cell
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.scenarios.run import Cell, CellResult, keep_loaded
from harness.targets import REFERENCE_TARGET

RATIO_TARGET: Final = 2.0
COMMAND: Final = (
    '{python} -c "import json, sys\nfrom harness.scenarios.reference import run\n'
    "for line in sys.stdin:\n"
    "    answer = run(json.loads(line))\n"
    "    if answer is None: break\n"
    '    print(json.dumps(answer), flush=True)"'
)


def timed(cells: list[Cell], run: Callable[[Cell], CellResult]) -> float:
    started = time.perf_counter()
    results = [run(cell) for cell in cells]
    elapsed = time.perf_counter() - started
    failed = [result.cell.id for result in results if not result.passed]
    if failed:
        raise SystemExit(f"benchmark library failed: {failed[:5]}")
    return elapsed


def through(spec: TargetSpec, cells: list[Cell], options: RunOptions) -> float:
    with target_runner(spec) as runner:
        return timed(cells, lambda cell: runner.run_cell(cell, options))


def main(argv: list[str] | None = None) -> int:
    arguments = library_arguments(__doc__, argv, repeats=3)
    with tempfile.TemporaryDirectory(prefix="target-bench-") as temporary:
        folder = Path(temporary)
        cells, options = realistic_cells(folder, arguments.size)
        modes: dict[str, Callable[[], float]] = {
            "in process": lambda: timed(cells, lambda cell: run_cell(cell, options)),
            "--target (Python callable)": lambda: through(
                TargetSpec(callable=REFERENCE_TARGET), cells, options
            ),
            "--target-cmd (JSON lines)": lambda: through(
                TargetSpec(command=COMMAND.format(python=sys.executable)), cells, options
            ),
        }
        with keep_loaded():  # as `harness run` does once its cells are loaded
            medians = alternated(modes, arguments.repeats)
    base = medians["in process"]
    print(f"\n| mode | {len(cells):,} cells | per cell | / in process |")
    print("|---|---|---|---|")
    for mode, seconds in medians.items():
        print(
            f"| {mode} | {seconds:.2f} s | {seconds / len(cells) * 1e3:.2f} ms | "
            f"{seconds / base:.2f}x |"
        )
    ratio = medians["--target (Python callable)"] / base
    verdict = "PASS" if ratio <= RATIO_TARGET else "FAIL"
    print(f"\n--target / in process: {ratio:.2f}x (target <= {RATIO_TARGET:g}x): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
