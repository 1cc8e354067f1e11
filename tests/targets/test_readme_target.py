"""The docs' 30-line Python target is the file CI runs, it passes the completion scenarios, and
the library catches its one-line mutant (`isBlank` as Python's `str.strip`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.scenarios import RunOptions, expand, load_scenarios
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.scenarios.report import failure_lines

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "targets" / "python_completion" / "harness_target.py"
COMPLETION = ROOT / "scenarios" / "completion"


def run_completion_scenarios(target: Path, monkeypatch: pytest.MonkeyPatch) -> list:  # type: ignore[type-arg]
    monkeypatch.syspath_prepend(str(target.parent))
    monkeypatch.delitem(__import__("sys").modules, target.stem, raising=False)
    cells = expand(load_scenarios([COMPLETION]), RunOptions())
    with target_runner(TargetSpec(callable=f"{target.stem}:run")) as runner:
        return [runner.run_cell(cell, RunOptions()) for cell in cells]


def test_the_docs_show_the_example_file_verbatim() -> None:
    page = (ROOT / "docs" / "targets.md").read_text(encoding="utf-8")
    section = page.split("## A 30-line Python target", 1)[1]
    (block,) = re.findall(r"```python\n(.*?)```", section.split("## Example targets", 1)[0], re.S)
    assert block == EXAMPLE.read_text(encoding="utf-8")


def test_the_example_passes_every_completion_scenario(monkeypatch: pytest.MonkeyPatch) -> None:
    results = run_completion_scenarios(EXAMPLE, monkeypatch)
    assert len(results) >= 17
    assert all(result.passed for result in results), [failure_lines(r) for r in results]


def test_is_blank_as_python_strip_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = EXAMPLE.read_text(encoding="utf-8")
    assert source.count("or is_blank(answer)") == 1
    mutant = tmp_path / "strip_target.py"
    mutant.write_text(source.replace("or is_blank(answer)", "or not answer.strip()"))
    results = run_completion_scenarios(mutant, monkeypatch)
    lines = [line for result in results for line in failure_lines(result)]
    assert any(
        "completion-non-breaking-space-is-content: expect.status: expected 'completed', got "
        "'failed'" in line
        for line in lines
    ), lines
