"""How long `harness run` takes on one scenario, and what its start-up imports cost.

Writes two one-scenario files to a temporary folder (a scripted forced-completion cell, whose
output is checked against its JSON Schema, and a plain scripted agent cell), warms the bytecode
caches, then runs `harness run` on each `--repeats` times as a user does (a new process each time)
and prints the medians beside the target, and the modules whose import costs most for the first
(`python -X importtime`, cumulative). In turns with them, for each, a process that only imports
the third-party packages such a run needs: the floor no change to the harness can go below.

Target: a one-scenario `harness run` under 0.3 s with warm bytecode caches.

    .venv/bin/python -m benchmarks.startup [--repeats 7]
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final, NamedTuple

from benchmarks._report import alternated, heading

TARGET_SECONDS: Final = 0.3
RUN: Final = "from harness.cli import main; main()"
FIRST_MODEL: Final = """
from pydantic import BaseModel

class First(BaseModel):
    x: int
"""


class Case(NamedTuple):
    """One one-scenario file, and the third-party imports a run of it cannot do without (and
    nothing of the harness), with the first pydantic model, which loads the rest of pydantic."""

    label: str
    file: str
    scenario: str
    floor: str


CASES: Final = (
    Case(
        "forced-completion cell",
        "capital.yaml",
        """\
name: capital
stores: [memory]
agent:
  output_schema: {type: object, properties: {city: {type: string}}, required: [city]}
script:
  - text: It is Paris.
  - tool_calls: [{name: __finish__, arguments: {city: Paris}}]
expect: {status: completed, forced_calls: 1}
""",
        # validating the output against its JSON Schema needs jsonschema
        "import click, httpx2, jsonschema, orjson, rich.console, rich.table, sqlite3, yaml"
        + FIRST_MODEL,
    ),
    Case(
        "plain agent cell",
        "plain.yaml",
        """\
name: plain
stores: [memory]
agent: {user_message: Capital?}
script:
  - text: It is Paris.
expect: {status: completed, outcome_record: {final_message: It is Paris.}}
""",
        "import click, httpx2, orjson, rich.console, rich.table, sqlite3, yaml" + FIRST_MODEL,
    ),
)


def run_once(folder: Path, environment: dict[str, str], file: str, code: str = RUN) -> float:
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", code, "run", file],
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
    folder: Path, environment: dict[str, str], file: str, count: int
) -> list[tuple[int, str]]:
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", RUN, "run", file],
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
        environment = {**os.environ, "PYTHONPYCACHEPREFIX": str(folder / "pycache")}
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
        modes = {}
        for case in CASES:
            (folder / case.file).write_text(case.scenario)
            modes[case.label] = functools.partial(run_once, folder, environment, case.file)
            modes[f"{case.label} floor"] = functools.partial(
                run_once, folder, environment, case.file, case.floor
            )
        for measure in modes.values():  # warm the bytecode caches
            measure()
        medians = alternated(modes, arguments.repeats)
        imports = heaviest_imports(folder, environment, CASES[0].file, 12)
    print(heading("a one-scenario harness run, warm bytecode caches"))
    print(f"\nmedian of {arguments.repeats}, target < {TARGET_SECONDS:g} s:\n")
    print(
        "| one-scenario harness run | run | third-party imports alone | the harness's own share |"
    )
    print("|---|---|---|---|")
    verdicts = []
    for case in CASES:
        run, floor = medians[case.label], medians[f"{case.label} floor"]
        verdicts.append(f"{case.label}: {'PASS' if run < TARGET_SECONDS else 'FAIL'}")
        print(f"| {case.label} | {run:.2f} s | {floor:.2f} s | {run - floor:.2f} s |")
    print(f"\n{'; '.join(verdicts)}")
    print(f"\nheaviest imports of the {CASES[0].label} run:")
    print("\n| cumulative import | module |\n|---|---|")
    for microseconds, module in imports:
        print(f"| {microseconds / 1000:.0f} ms | `{module.strip()}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
