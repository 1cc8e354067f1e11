"""Scenario library benchmark: cassette replay versus scripted replies, and pytest -n 2 vs -n 0.

Builds a library of N agent scenarios (default 200) covering every forced-completion path, each
on the five runtime profiles with the default (SQLite) store, in a temporary folder: each scenario once with `script:` replies, and once replaying a cassette
recorded from that script through `CassetteTransport`. Then, in one run:

1. runs both libraries in process through the scenario runner (one core) and prints the time
   per library and the ratio cassette / scripted (target <= 1.5x; the 200-scenario library in
   under 10 s);
2. runs the cassette library with `pytest` through the harness plugin, with `-n 0` and `-n 2`,
   and prints the speed-up (target >= 1.6x).

    .venv/bin/python -m benchmarks.scenario_library [--size 200] [--repeats 3] [--no-pytest]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from harness.cassettes import CassetteTransport
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.llm.script import ScriptedReply, ScriptTransport
from harness.runtimes.run import run_agent
from harness.scenarios import RunOptions, expand, load_scenarios, run_cell
from harness.scenarios.build import agent_definition
from harness.scenarios.format import Scenario

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["city", "confidence"],
    "additionalProperties": False,
}
FINISH = {"tool_calls": [{"name": "__finish__", "arguments": {"city": "Paris", "confidence": 0.9}}]}


def search(n: int) -> dict[str, Any]:
    return {"tool_calls": [{"name": "search", "arguments": {"q": f"capital {n}"}}]}


def scenario(index: int) -> dict[str, Any]:
    """One of five shapes, varied by index so no two requests are alike."""
    shape = index % 5
    script: list[dict[str, Any]]
    expect: dict[str, Any]
    if shape == 0:  # completes in the work phase
        script, expect = [search(index), FINISH], {"status": "completed", "forced_calls": 0}
    elif shape == 1:  # terminal text
        script = [search(index), {"text": f"It is Paris ({index})."}, FINISH]
        expect = {"status": "completed", "forced_calls": 1}
    elif shape == 2:  # max_tokens
        script = [search(index), {"text": f"It is Pa ({index})", "truncated": True}, FINISH]
        expect = {"status": "completed", "forced_calls": 1}
    elif shape == 3:  # max_steps
        script = [search(index), search(index + 1), search(index + 2), FINISH]
        expect = {"status": "completed", "forced_calls": 1}
    else:  # exhausted after two failed attempts
        script = [{"text": f"Paris ({index})."}, {"text": "still prose"}, {"text": "again"}]
        expect = {"status": "failed", "error_code": "framework_forced_completion_exhausted"}
    return {
        "name": f"library-{index:04d}",
        "runtimes": ["js", "cloudflare-do", "cloudflare-workflows", "temporal", "dbos"],
        "provider": "openai",
        "script": script,
        "agent": {
            "system_prompt": f"You find capitals (variant {index}).",
            "user_message": f"Capital of France, case {index}?",
            "output_schema": SCHEMA,
            "max_steps": 3,
            "tools": [
                {"name": "search", "description": "Search the web", "result": {"hits": ["Paris"]}}
            ],
        },
        "expect": expect,
    }


def build_library(folder: Path, size: int) -> tuple[Path, Path]:
    scripted, cassettes = folder / "scripted", folder / "cassettes"
    scripted.mkdir(parents=True)
    cassettes.mkdir(parents=True)
    for index in range(size):
        data = scenario(index)
        (scripted / f"{data['name']}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        record(data, cassettes / f"{data['name']}.json")
        replay = {key: value for key, value in data.items() if key != "script"}
        replay["cassette"] = f"{data['name']}.json"
        (cassettes / f"{data['name']}.yaml").write_text(yaml.safe_dump(replay, sort_keys=False))
    return scripted, cassettes


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
    started = time.perf_counter()
    options = RunOptions(workdir=folder)
    results = [run_cell(cell, options) for cell in expand(load_scenarios([folder]), options)]
    elapsed = time.perf_counter() - started
    failed = [r.cell.id for r in results if not r.passed]
    if failed:
        raise SystemExit(f"benchmark library failed: {failed[:5]}")
    return elapsed


def pytest_seconds(folder: Path, workers: int) -> float:
    (folder.parent / "pytest.ini").write_text(f"[pytest]\nharness_scenarios = {folder.name}\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers)]
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=folder.parent, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(
            f"pytest -n {workers} failed:\n{completed.stdout[-2000:]}{completed.stderr[-2000:]}"
        )
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-pytest", action="store_true")
    parser.add_argument(
        "--pytest-size",
        type=int,
        default=0,
        help="also time pytest -n 0 / -n 2 over a library this large (0: only --size)",
    )
    arguments = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="harness-library-"))
    try:
        print(f"building {arguments.size} scenarios (scripted and cassette) in {folder} ...")
        scripted, cassettes = build_library(folder, arguments.size)
        run_library(scripted)  # warm-up: imports, caches
        scripted_times = [run_library(scripted) for _ in range(arguments.repeats)]
        cassette_times = [run_library(cassettes) for _ in range(arguments.repeats)]
        scripted_s, cassette_s = (
            statistics.median(scripted_times),
            statistics.median(cassette_times),
        )
        ratio = cassette_s / scripted_s
        print()
        print("| library | scenarios | median time | per scenario |")
        print("|---|---|---|---|")
        print(
            f"| scripted replies | {arguments.size} | {scripted_s:.2f} s | {scripted_s / arguments.size * 1000:.1f} ms |"
        )
        print(
            f"| cassette replay | {arguments.size} | {cassette_s:.2f} s | {cassette_s / arguments.size * 1000:.1f} ms |"
        )
        print()
        print(
            f"cassette / scripted: {ratio:.2f}x (target <= 1.5x): {'PASS' if ratio <= 1.5 else 'FAIL'}"
        )
        print(
            f"{arguments.size}-scenario library from cassettes: {cassette_s:.2f} s on one core "
            f"(target < 10 s): {'PASS' if cassette_s < 10 else 'FAIL'}"
        )
        if not arguments.no_pytest:
            print()
            print("| pytest over | cells | -n 0 | -n 2 | speed-up (target >= 1.6x) |")
            print("|---|---|---|---|---|")
            sizes = [(arguments.size, cassettes)]
            if arguments.pytest_size:
                _, big_cassettes = build_library(folder / "big", arguments.pytest_size)
                sizes.append((arguments.pytest_size, big_cassettes))
            for size, library in sizes:
                serial = pytest_seconds(library, 0)
                parallel = pytest_seconds(library, 2)
                speedup = serial / parallel
                verdict = "PASS" if speedup >= 1.6 else "FAIL"
                print(
                    f"| {size} scenarios | {size * 5} | {serial:.2f} s | {parallel:.2f} s | "
                    f"{speedup:.2f}x {verdict} |"
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENAI_BASE_URL", "https://api.openai.com")
    raise SystemExit(main())
