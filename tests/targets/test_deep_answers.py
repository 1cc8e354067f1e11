"""An answer nested 100,000 levels deep (`[[[[...]]]]`) is the target's protocol error, naming the
target and the limit, never a crash of the harness: Python's JSON parser would recurse once per
level into a `RecursionError`, so the depth is measured first, without recursion. The cell fails,
the target is started again, and the next cell runs."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Final

import pytest

from harness.scenarios import RunOptions, expand, load_scenarios
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.scenarios.report import failure_lines
from harness.scenarios.run import CellResult
from harness.targets.base import MAX_ANSWER_DEPTH

DEPTH: Final = 100_000
TWO_CELLS: Final = """\
- name: deep
  kind: completion
  input: {agentFinalAnswer: done}
  expect: {status: completed, outputs: {finalAnswer: done, agentOutcome: final_answer}}
- name: plain
  kind: completion
  input: {agentFinalAnswer: done}
  expect: {status: completed, outputs: {finalAnswer: done, agentOutcome: final_answer}}
"""
TARGET: Final = """\
import json, sys

DEEP = "[" * {depth} + "]" * {depth}
deep_at = sys.argv[1]
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "hello":
        answer = '{{"type": "hello", "protocol": 1, "name": "deep", "kinds": ["completion"]}}'
        if deep_at == "hello":
            answer = answer[:-1] + ', "runtimes": ' + DEEP + "}}"
    elif message["type"] == "cell":
        outputs = {{"finalAnswer": "done", "agentOutcome": "final_answer"}}
        answer = json.dumps({{"type": "result", "id": message["id"], "executions": [{{"outputs": outputs}}]}})
        if message["scenario"] == "deep" and deep_at == "cell":
            answer = answer.replace('"done"', DEEP, 1)
        if message["scenario"] == "deep" and deep_at == "between":
            answer += "\\n" + DEEP
    else:
        break
    sys.stdout.write(answer + "\\n")
    sys.stdout.flush()
"""
"""A completion target with nothing but the standard library, writing a line nested `DEPTH`
levels deep: as its hello, as the answer to the cell `deep`, or after that answer, between two
cells."""


def run_on(spec: TargetSpec, path: Path) -> list[CellResult]:
    with target_runner(spec) as runner:
        return [
            runner.run_cell(cell, RunOptions())
            for cell in expand(load_scenarios([path]), RunOptions())
        ]


@pytest.fixture
def two_cells(tmp_path: Path) -> Path:
    path = tmp_path / "cells.yaml"
    path.write_text(TWO_CELLS)
    return path


def deep_target(folder: Path, deep_at: str) -> str:
    (folder / "deep_target.py").write_text(TARGET.format(depth=DEPTH))
    return shlex.join([sys.executable, str(folder / "deep_target.py"), deep_at])


@pytest.mark.subprocess
def test_an_answer_nested_100000_levels_deep_fails_its_cell_naming_the_target(
    tmp_path: Path, two_cells: Path
) -> None:
    command = deep_target(tmp_path, "cell")
    deep, plain = run_on(TargetSpec(command=command), two_cells)
    assert deep.error_code == "target_protocol_invalid", deep.error
    assert re.fullmatch(
        f"TargetProtocolError: {re.escape(command)} wrote an answer \\(\\d+ bytes\\) nested "
        f"deeper than {MAX_ANSWER_DEPTH} levels of arrays and objects; no answer of the protocol "
        "nests that deep, so it was not read. It was stopped and is started again for the next "
        "cell",
        deep.error or "",
    ), deep.error
    assert plain.passed, failure_lines(plain)


@pytest.mark.subprocess
@pytest.mark.parametrize("deep_at", ["hello", "between"])
def test_a_line_nested_100000_levels_deep_anywhere_fails_a_cell_naming_the_target(
    tmp_path: Path, two_cells: Path, deep_at: str
) -> None:
    """As the hello (every cell fails: the target is started again for each), or between two
    cells (the next one fails)."""
    command = deep_target(tmp_path, deep_at)
    deep, plain = run_on(TargetSpec(command=command), two_cells)
    failed = [deep, plain] if deep_at == "hello" else [plain]
    for result in failed:
        assert result.error_code == "target_protocol_invalid", result.error
        assert f"{command} wrote a" in (result.error or "")
        assert f"nested deeper than {MAX_ANSWER_DEPTH} levels" in (result.error or "")
    if deep_at == "between":
        assert deep.passed, failure_lines(deep)


PYTHON_TARGET: Final = f"""\
def run(message):
    if message["type"] == "hello":
        return {{"type": "hello", "protocol": 1, "name": "deep", "kinds": ["completion"]}}
    deep = []
    for _ in range({DEPTH}):
        deep = [deep]
    return {{"type": "result", "id": message["id"], "executions": [{{"outputs": {{"a": deep}}}}]}}
"""
"""A Python target answering every cell with an output nested `DEPTH` levels deep."""


def test_a_python_target_returning_an_answer_nested_100000_levels_deep_fails_its_cells(
    tmp_path: Path, two_cells: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "deep_python_target.py").write_text(PYTHON_TARGET)
    monkeypatch.syspath_prepend(tmp_path)
    for result in run_on(TargetSpec(callable="deep_python_target:run"), two_cells):
        assert result.error == (
            "TargetProtocolError: deep_python_target:run returned an answer nested deeper than "
            f"{MAX_ANSWER_DEPTH} levels of arrays and objects; no answer of the protocol nests "
            "that deep, so it was not read"
        )
