"""Scenario library benchmark: cassette replay versus scripted replies, and pytest -n 2 vs -n 0.

Builds a library of N agent scenarios (default 200, `_scenarios.py`, realistic shape by default),
each on the five runtime profiles with the default (SQLite) store, in a temporary folder: each
scenario once with `script:` replies, and once replaying a cassette recorded from that script
through `CassetteTransport`. Then, in one run:

1. runs both libraries in process through the scenario runner (one core) and prints the median
   time per library and the ratio cassette / scripted (target <= 1.5x), and whether the
   N-scenario library from cassettes runs in under 10 s;
2. runs cassette libraries of each `--pytest-sizes` size with `pytest` through the harness
   plugin, `-n 0` and `-n 2` alternately, and prints the median speed-up (target >= 1.6x).
   pytest runs as it would for a user who installed completion-harness, pytest and
   pytest-xdist: plugins that only this checkout's dev and bench groups install are disabled,
   and bytecode caches are written (to a temporary folder) and warmed first. From two sizes it
   fits `time = fixed + per_cell * cells` for each mode and prints the library size from which
   `-n 2` is 1.6x faster.

    .venv/bin/python -m benchmarks.scenario_library [--size 200] [--shape realistic|minimal]
        [--repeats 3] [--pytest-sizes 200,600] [--pytest-repeats 3] [--no-pytest]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml
from packaging.requirements import Requirement

from benchmarks._scenarios import RUNTIMES, SHAPES, Shape, scenario
from harness.cassettes import CassetteTransport
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.llm.script import ScriptedReply, ScriptTransport
from harness.runtimes.run import run_agent
from harness.scenarios import Cell, RunOptions, expand, load_scenarios, run_cell
from harness.scenarios.build import agent_definition
from harness.scenarios.format import Scenario

SPEEDUP_TARGET: Final = 1.6
REPLAY_TARGET: Final = 1.5
LIBRARY_SECONDS_TARGET: Final = 10.0
USER_DISTRIBUTIONS: Final = ("completion-harness", "pytest", "pytest-xdist")
"""What a user installs to run a scenario library under `pytest -n`."""


def build_library(folder: Path, size: int, shape: Shape) -> tuple[Path, Path]:
    """`size` scenarios as `folder/scripted/*.yaml` and, replaying cassettes recorded from
    those scripts, `folder/cassettes/*.yaml` (+ `.json`)."""
    scripted, cassettes = folder / "scripted", folder / "cassettes"
    scripted.mkdir(parents=True)
    cassettes.mkdir(parents=True)
    for index in range(size):
        data = scenario(index, shape)
        (scripted / f"{data['name']}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        record(data, cassettes / f"{data['name']}.json")
        replay = {key: value for key, value in data.items() if key != "script"}
        replay["cassette"] = f"{data['name']}.json"
        (cassettes / f"{data['name']}.yaml").write_text(yaml.safe_dump(replay, sort_keys=False))
    return scripted, cassettes


def realistic_cells(folder: Path, size: int) -> tuple[list[Cell], RunOptions]:
    """The cells of `size` realistic scripted scenarios built under `folder`, and the options
    they run with (working folder `folder`)."""
    scripted, _ = build_library(folder / "library", size, "realistic")
    options = RunOptions(workdir=folder)
    return expand(load_scenarios([scripted]), options), options


def record(data: dict[str, Any], path: Path) -> None:
    """Record the scenario's traffic from its own script (the cassette is what it replays)."""
    parsed = Scenario.model_validate(data)
    assert parsed.agent is not None
    assert parsed.script is not None
    inner = ScriptTransport("openai", [ScriptedReply.model_validate(r) for r in data["script"]])
    transport = CassetteTransport(path, mode="all", inner=inner)
    config = GatewayConfig(provider="openai", base_url="https://api.openai.com")
    try:
        run_agent(
            agent_definition(parsed, parsed.agent),
            LlmGateway(config, transport=transport),
            user_message=parsed.agent.user_message,
        )
    finally:
        transport.close()


def run_library(folder: Path) -> float:
    """Every cell of the library in this process; the wall time. Any failing cell aborts."""
    started = time.perf_counter()
    options = RunOptions(workdir=folder)
    results = [run_cell(cell, options) for cell in expand(load_scenarios([folder]), options)]
    elapsed = time.perf_counter() - started
    failed = [r.cell.id for r in results if not r.passed]
    if failed:
        raise SystemExit(f"benchmark library failed: {failed[:5]}")
    return elapsed


# -- pytest as a user runs it -------------------------------------------------------------------


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def user_closure(roots: Iterable[str] = USER_DISTRIBUTIONS) -> set[str]:
    """The installed distributions `roots` require, transitively (extras not taken)."""
    seen: set[str] = set()
    pending = [_canonical(root) for root in roots]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(_canonical(requirement.name))
    return seen


def pytest_plugins() -> tuple[list[str], list[str]]:
    """(autoloaded plugins a user would have, plugins only this checkout has), by entry point."""
    closure = user_closure()
    kept: list[str] = []
    disabled: list[str] = []
    for distribution in importlib.metadata.distributions():
        for entry_point in distribution.entry_points.select(group="pytest11"):
            in_closure = _canonical(distribution.metadata["Name"]) in closure
            (kept if in_closure else disabled).append(entry_point.name)
    return sorted(kept), sorted(disabled)


class PytestRunner:
    """Runs `pytest -q -n N` over a library folder in a subprocess and times it."""

    def __init__(self, disabled_plugins: list[str], pycache: Path) -> None:
        self._disable = [argument for name in disabled_plugins for argument in ("-p", f"no:{name}")]
        self._environment = {**os.environ, "PYTHONPYCACHEPREFIX": str(pycache)}
        self._environment.pop("PYTHONDONTWRITEBYTECODE", None)

    def seconds(self, library: Path, workers: int) -> float:
        (library.parent / "pytest.ini").write_text(
            f"[pytest]\nharness_scenarios = {library.name}\n"
        )
        command = [sys.executable, "-m", "pytest", "-q", "-n", str(workers), *self._disable]
        started = time.perf_counter()
        completed = subprocess.run(
            command, cwd=library.parent, env=self._environment, capture_output=True, text=True
        )
        elapsed = time.perf_counter() - started
        if completed.returncode != 0:
            raise SystemExit(
                f"pytest -n {workers} failed:\n{completed.stdout[-2000:]}{completed.stderr[-2000:]}"
            )
        return elapsed

    def compare(self, library: Path, repeats: int) -> tuple[float, float]:
        """Median seconds of `-n 0` and of `-n 2`, run alternately after one warm-up of each."""
        self.seconds(library, 0)
        self.seconds(library, 2)
        serial: list[float] = []
        parallel: list[float] = []
        for _ in range(repeats):
            serial.append(self.seconds(library, 0))
            parallel.append(self.seconds(library, 2))
        return statistics.median(serial), statistics.median(parallel)


def break_even(rows: list[tuple[int, float, float]]) -> str:
    """Fit `seconds = fixed + per_cell * cells` to the smallest and largest size for each mode
    and say from how many cells `-n 2` is `SPEEDUP_TARGET` times faster."""
    (small, serial_a, parallel_a), (large, serial_b, parallel_b) = rows[0], rows[-1]
    serial_cell = (serial_b - serial_a) / (large - small)
    parallel_cell = (parallel_b - parallel_a) / (large - small)
    serial_fixed = serial_a - serial_cell * small
    parallel_fixed = parallel_a - parallel_cell * small
    fit = (
        f"fit: -n 0 = {serial_fixed:.2f} s + {serial_cell * 1000:.2f} ms/cell; "
        f"-n 2 = {parallel_fixed:.2f} s + {parallel_cell * 1000:.2f} ms/cell; "
        f"asymptotic speed-up {serial_cell / parallel_cell:.2f}x"
    )
    margin = serial_cell - SPEEDUP_TARGET * parallel_cell
    if margin <= 0:
        return f"{fit}; -n 2 never reaches {SPEEDUP_TARGET}x on this machine"
    cells = (SPEEDUP_TARGET * parallel_fixed - serial_fixed) / margin
    scenarios = max(cells, 0) / len(RUNTIMES)
    return f"{fit}; {SPEEDUP_TARGET}x from about {max(cells, 0):,.0f} cells ({scenarios:,.0f} scenarios)"


# -- report -------------------------------------------------------------------------------------


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _header(arguments: argparse.Namespace) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.machine()}, {os.cpu_count()} cores; "
        f"Python {platform.python_version()}; pytest {importlib.metadata.version('pytest')}, "
        f"pytest-xdist {importlib.metadata.version('pytest-xdist')}; "
        f"completion-harness at {commit or 'unknown commit'}\n"
        f"{arguments.shape} scenarios x {len(RUNTIMES)} runtimes, SQLite store; "
        f"{arguments.repeats} in-process repeats, {arguments.pytest_repeats} pytest repeats"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=200, help="scenarios run in process")
    parser.add_argument("--shape", choices=SHAPES, default="realistic")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-pytest", action="store_true")
    parser.add_argument(
        "--pytest-sizes",
        default="200,600",
        help="library sizes (scenarios) run under pytest -n 0 and -n 2, comma-separated",
    )
    parser.add_argument("--pytest-repeats", type=int, default=3)
    arguments = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="harness-library-"))
    try:
        print(_header(arguments))
        print(f"building {arguments.size} scenarios (scripted and cassette) ...", flush=True)
        scripted, cassettes = build_library(folder / "main", arguments.size, arguments.shape)
        run_library(scripted)  # warm-up: imports, caches
        scripted_s = statistics.median(run_library(scripted) for _ in range(arguments.repeats))
        cassette_s = statistics.median(run_library(cassettes) for _ in range(arguments.repeats))
        ratio = cassette_s / scripted_s
        cells = arguments.size * len(RUNTIMES)
        print()
        print("| library | scenarios (cells) | median time | per cell |")
        print("|---|---|---|---|")
        for label, seconds in (("scripted replies", scripted_s), ("cassette replay", cassette_s)):
            print(
                f"| {label} | {arguments.size} ({cells:,}) | {seconds:.2f} s | "
                f"{seconds / cells * 1000:.2f} ms |"
            )
        print()
        print(
            f"cassette / scripted: {ratio:.2f}x (target <= {REPLAY_TARGET}x): "
            f"{_verdict(ratio <= REPLAY_TARGET)}"
        )
        print(
            f"the {arguments.size}-scenario library from cassettes on one core: {cassette_s:.2f} s "
            f"(target < {LIBRARY_SECONDS_TARGET:.0f} s): "
            f"{_verdict(cassette_s < LIBRARY_SECONDS_TARGET)}"
        )
        if not arguments.no_pytest:
            _pytest_section(arguments, folder, cassettes)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def _pytest_section(arguments: argparse.Namespace, folder: Path, built: Path) -> None:
    kept, disabled = pytest_plugins()
    print()
    print(f"pytest plugins autoloaded (a user's): {', '.join(kept)}")
    print(f"disabled (this checkout's dev and bench groups only): {', '.join(disabled) or 'none'}")
    runner = PytestRunner(disabled, folder / "pycache")
    sizes = sorted({int(size) for size in arguments.pytest_sizes.split(",") if size.strip()})
    print()
    print(f"| pytest over | cells | -n 0 | -n 2 | speed-up (target >= {SPEEDUP_TARGET}x) |")
    print("|---|---|---|---|---|")
    rows: list[tuple[int, float, float]] = []
    for size in sizes:
        library = built
        if size != arguments.size:
            _, library = build_library(folder / f"size-{size}", size, arguments.shape)
        serial, parallel = runner.compare(library, arguments.pytest_repeats)
        speedup = serial / parallel
        rows.append((size * len(RUNTIMES), serial, parallel))
        print(
            f"| {size} scenarios | {size * len(RUNTIMES):,} | {serial:.2f} s | {parallel:.2f} s | "
            f"{speedup:.2f}x {_verdict(speedup >= SPEEDUP_TARGET)} |",
            flush=True,
        )
    if len(rows) >= 2:
        print()
        print(break_even(rows))


if __name__ == "__main__":
    os.environ.setdefault("OPENAI_BASE_URL", "https://api.openai.com")
    raise SystemExit(main())
