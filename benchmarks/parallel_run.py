"""`harness run -n 2` against `-n 0` and against `pytest -n 2` on the same 1,000-cell library.

Builds the realistic scripted library of `scenario_library` (200 agent scenarios on the five
runtime profiles: 1,000 cells) in a temporary folder, warms the bytecode caches, then times,
alternately, `--repeats` times each (median wall time, the command started as a user starts it):

1. `harness run LIBRARY` (`-n 0`: one process);
2. `harness run LIBRARY -n 2`;
3. `pytest -q -n 2` over the same library through the harness plugin, with a user's plugins only
   (as in `scenario_library`).

Target: `-n 2` at least 1.8x faster than `-n 0` on two cores.

    .venv/bin/python -m benchmarks.parallel_run [--size 200] [--repeats 3]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from benchmarks._report import alternated, library_arguments
from benchmarks.scenario_library import PytestRunner, build_library, pytest_plugins

SPEEDUP_TARGET: Final = 1.8


def harness_seconds(library: Path, workers: int, environment: dict[str, str]) -> float:
    command = [sys.executable, "-c", "from harness.cli import main; main()", "run", library.name]
    command += ["-n", str(workers)]
    started = time.perf_counter()
    completed = subprocess.run(
        command, cwd=library.parent, env=environment, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"harness run -n {workers} failed:\n{completed.stdout[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    arguments = library_arguments(__doc__, argv, repeats=3)
    with tempfile.TemporaryDirectory(prefix="parallel-bench-") as temporary:
        folder = Path(temporary)
        library, _ = build_library(folder / "library", arguments.size, "realistic")
        pycache = folder / "pycache"
        environment = {**os.environ, "PYTHONPYCACHEPREFIX": str(pycache)}
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
        _, disabled = pytest_plugins()
        pytest = PytestRunner(disabled, pycache)
        modes: dict[str, Callable[[], float]] = {
            "harness run (-n 0)": lambda: harness_seconds(library, 0, environment),
            "harness run -n 2": lambda: harness_seconds(library, 2, environment),
            "pytest -n 2": lambda: pytest.seconds(library, 2),
        }
        for measure in modes.values():  # warm the bytecode caches and the default stores
            measure()
        medians = alternated(modes, arguments.repeats)
    cells = arguments.size * 5
    base = medians["harness run (-n 0)"]
    print(f"\n| mode | {cells:,} cells | per cell | speed-up over -n 0 |")
    print("|---|---|---|---|")
    for mode, seconds in medians.items():
        print(
            f"| {mode} | {seconds:.2f} s | {seconds / cells * 1e3:.2f} ms | {base / seconds:.2f}x |"
        )
    speedup = base / medians["harness run -n 2"]
    verdict = "PASS" if speedup >= SPEEDUP_TARGET else "FAIL"
    print(f"\nharness run -n 2 / -n 0: {speedup:.2f}x (target >= {SPEEDUP_TARGET:g}x): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
