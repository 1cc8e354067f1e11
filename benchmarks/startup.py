"""How long `harness run` takes on one scenario, and what its start-up imports cost.

Writes a one-scenario file (a scripted forced-completion cell) to a temporary folder, warms the
bytecode caches, then runs `harness run` on it `--repeats` times as a user does (a new process each
time) and prints the median wall time beside the target, and the modules whose import costs most
(`python -X importtime`, cumulative). Beside it, in turns, a process that only imports the
third-party packages such a run needs: the floor no change to the harness can go below.

Target: a one-scenario `harness run` under 0.3 s with warm bytecode caches.

    .venv/bin/python -m benchmarks.startup [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from benchmarks._report import alternated, heading

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
DEPENDENCIES: Final = """\
import click, httpx2, jsonschema, orjson, rich.console, rich.table, sqlite3, yaml
from pydantic import BaseModel

class First(BaseModel):
    x: int
"""
"""What a one-scenario run cannot do without, and nothing of the harness: the third-party
packages it imports (validating the output against its JSON Schema needs `jsonschema`) and the
first pydantic model, which loads the rest of pydantic."""


def run_once(folder: Path, environment: dict[str, str], code: str = RUN) -> float:
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", code, "run", "capital.yaml"],
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
        run_once(folder, environment, DEPENDENCIES)
        medians = alternated(
            {
                "run": lambda: run_once(folder, environment),
                "floor": lambda: run_once(folder, environment, DEPENDENCIES),
            },
            arguments.repeats,
        )
        imports = heaviest_imports(folder, environment, 12)
    median, floor = medians["run"], medians["floor"]
    verdict = "PASS" if median < TARGET_SECONDS else "FAIL"
    print(heading("a one-scenario harness run, warm bytecode caches"))
    print(
        f"\none-scenario harness run, median of {arguments.repeats}: {median:.2f} s "
        f"(target < {TARGET_SECONDS:g} s): {verdict}"
    )
    print(
        f"its third-party imports alone, in a process of their own: {floor:.2f} s; "
        f"the harness's own share: {median - floor:.2f} s"
    )
    print("\n| cumulative import | module |\n|---|---|")
    for microseconds, module in imports:
        print(f"| {microseconds / 1000:.0f} ms | `{module.strip()}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
