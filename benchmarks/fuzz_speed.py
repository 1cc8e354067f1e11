"""How fast `harness fuzz` searches, and how long it takes to shrink what it finds.

The measurements, in one run:

1. **harness fuzz**: `--cells` generated agent cells on the reference target (`--target
   harness.scenarios.reference:run --kind agent`), each run on the target and on the reference
   and compared; then every kind the reference runs (agent, decision and completion cells);
2. **harness run --compare-reference**: as many cells of the realistic scripted library
   (`benchmarks.scenario_library`) through the same target path, what a user runs instead of a
   search: the ratio is what generating and checking cells adds;
3. **the Python example target**: `--cells` agent cells on
   `examples/targets/python_openai_sdk` (`--target-cmd`, the official `openai` and `anthropic`
   SDKs over HTTP to a `harness serve` session), what a user's own runtime costs;
4. **shrink**: the time from the first difference to the written scenario file, on a one-line
   mutant of the reference (a wrong error code after a `max_tokens` cut), for `--seeds` seeds.

The target: at least 20 agent cells a second on the reference target, on two cores.

    .venv/bin/python -m benchmarks.fuzz_speed [--cells 200] [--repeats 3] [--seeds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from benchmarks._report import alternated, heading
from benchmarks.scenario_library import realistic_cells
from harness.fuzz import fuzz
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.scenarios.reference import run as reference
from harness.scenarios.run import keep_loaded
from harness.targets import REFERENCE_TARGET
from harness.targets.protocol import ScenarioKind

CELLS_PER_SECOND_TARGET: Final = 20.0
MUTANT: Final = "benchmarks.fuzz_speed:wrong_code_after_max_tokens"
PYTHON_EXAMPLE: Final = Path(__file__).resolve().parents[1] / "examples/targets/python_openai_sdk"


def wrong_code_after_max_tokens(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, except that a run failing after a `max_tokens` cut reports
    `framework_llm_call_failed`."""
    answer = reference(message)
    if answer is None or answer.get("type") != "result" or answer.get("status") != "failed":
        return answer
    if any(chunk.get("trigger") == "max_tokens" for chunk in answer["chunks"]):
        answer["error_code"] = "framework_llm_call_failed"
    return answer


def fuzz_seconds(
    target: TargetSpec, cells: int, folder: Path, kinds: list[ScenarioKind] | None
) -> float:
    outcome = fuzz(target, cells=cells, out=folder, kinds=kinds)
    if outcome.finding is not None:
        raise SystemExit(f"the target differs from the reference: {outcome.finding.differences}")
    return outcome.search_seconds


def compare_seconds(cells: int, folder: Path) -> float:
    library, options = realistic_cells(folder, max(1, cells // 5 + 1))
    library = library[:cells]
    with target_runner(TargetSpec(callable=REFERENCE_TARGET, compare_reference=True)) as runner:
        started = time.perf_counter()
        results = [runner.run_cell(cell, options) for cell in library]
        elapsed = time.perf_counter() - started
    failed = [result.cell.id for result in results if not result.passed]
    if failed:
        raise SystemExit(f"benchmark library failed: {failed[:5]}")
    return elapsed / len(library) * cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=5, help="mutant searches to shrink")
    arguments = parser.parse_args(argv)
    cells: int = arguments.cells
    print(heading(f"harness fuzz, {cells} cells on the reference target"))
    reference_target = TargetSpec(callable=REFERENCE_TARGET)
    python_example = TargetSpec(command=f"{sys.executable} {PYTHON_EXAMPLE / 'target.py'}")
    with tempfile.TemporaryDirectory(prefix="fuzz-bench-") as temporary:
        folder = Path(temporary)
        with keep_loaded():
            medians = alternated(
                {
                    "harness fuzz (agent cells)": lambda: fuzz_seconds(
                        reference_target, cells, folder / "fuzz", ["agent"]
                    ),
                    "harness fuzz (every kind)": lambda: fuzz_seconds(
                        reference_target, cells, folder / "fuzz", None
                    ),
                    "harness run --compare-reference": lambda: compare_seconds(
                        cells, Path(tempfile.mkdtemp(dir=folder))
                    ),
                },
                arguments.repeats,
            )
            example = fuzz_seconds(python_example, cells, folder / "example", ["agent"])
            shrinks: list[float] = []
            found_at: list[int] = []
            for seed in range(arguments.seeds):
                outcome = fuzz(
                    TargetSpec(callable=MUTANT), cells=200, seed=seed, out=folder, kinds=["agent"]
                )
                if outcome.finding is None:
                    raise SystemExit(f"the mutant was not found with --seed {seed}")
                shrinks.append(outcome.shrink_seconds)
                found_at.append(outcome.found_at)
    print(f"\n| mode | {cells} cells | cells/s | / --compare-reference |")
    print("|---|---|---|---|")
    base = medians["harness run --compare-reference"]
    for mode, seconds in medians.items():
        print(f"| {mode} | {seconds:.2f} s | {cells / seconds:.1f} | {seconds / base:.2f}x |")
    print(
        f"| harness fuzz, Python example target (agent cells, once) | {example:.2f} s | "
        f"{cells / example:.1f} | {example / base:.2f}x |"
    )
    rate = cells / medians["harness fuzz (agent cells)"]
    verdict = "PASS" if rate >= CELLS_PER_SECOND_TARGET else "FAIL"
    print(
        f"\nshrink (mutant, {arguments.seeds} seeds): median {statistics.median(shrinks):.2f} s, "
        f"max {max(shrinks):.2f} s; found at cell {min(found_at)}-{max(found_at)}"
    )
    print(
        f"harness fuzz on the reference target: {rate:.1f} agent cells/s "
        f"(target >= {CELLS_PER_SECOND_TARGET:g}): {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
