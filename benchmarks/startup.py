"""How long `harness run` takes on one scenario, and what its start-up imports cost.

Writes a one-scenario file (a scripted forced-completion cell) to a temporary folder, warms the
bytecode caches, then runs `harness run` on it `--repeats` times as a user does (a new process each
time) and prints the median wall time beside the target, and the modules whose import costs most
(`python -X importtime`, cumulative).

Target: a one-scenario `harness run` under 0.3 s with warm bytecode caches.

    .venv/bin/python -m benchmarks.startup [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

TARGET_SECONDS: Final = 0.3
SCENARIO: Final = """\
name: capital
stores: [memory]
agent:
  output_schema: {type: object, properties: {city: {type: string}}, required: [city]}
script:
  - text: It is Paris.
  - tool_calls: [{name: __finish__, arguments: {city: Paris}}]
expect: {status: completed, forced_calls: 1}
"""
RUN: Final = "from harness.cli import main; main()"


def run_once(folder: Path, environment: dict[str, str]) -> float:
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", RUN, "run", "capital.yaml"],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"harness run failed:\n{completed.stdout[-2000:]}")
    return elapsed


def heaviest_imports(
    folder: Path, environment: dict[str, str], count: int
) -> list[tuple[int, str]]:
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", RUN, "run", "capital.yaml"],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
    )
    rows = []
    for line in completed.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=7)
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as temporary:
        folder = Path(temporary)
        (folder / "capital.yaml").write_text(SCENARIO)
        environment = {**os.environ, "PYTHONPYCACHEPREFIX": str(folder / "pycache")}
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
        run_once(folder, environment)  # warm the bytecode caches
        times = [run_once(folder, environment) for _ in range(arguments.repeats)]
        imports = heaviest_imports(folder, environment, 12)
    median = statistics.median(times)
    verdict = "PASS" if median < TARGET_SECONDS else "FAIL"
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.machine()}, {os.cpu_count()} cores; "
        f"Python {platform.python_version()}"
    )
    print(
        f"\none-scenario harness run, median of {arguments.repeats}: {median:.2f} s "
        f"(target < {TARGET_SECONDS:g} s): {verdict}"
    )
    print("\n| cumulative import | module |\n|---|---|")
    for microseconds, module in imports:
        print(f"| {microseconds / 1000:.0f} ms | `{module.strip()}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
