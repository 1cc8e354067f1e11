"""README.md is the front page: about two screens, a 10-line scenario, the real output of a
failing cell, the same check in 8 lines of Python importing only from `harness`, and links that
lead somewhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt

from harness.cli import main
from tests.docs.fences import DOCS, ROOT, Fence, fences

README = ROOT / "README.md"
TWO_SCREENS = 120
RUN_ID = re.compile(r"run_id '([a-z0-9-]+)-[0-9a-f]{8}'")


def _only(language: str, path: Path = README) -> Fence:
    (fence,) = [f for f in fences(path) if f.language == language]
    return fence


def test_the_readme_fits_on_about_two_screens() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= TWO_SCREENS


def test_the_scenario_is_ten_lines_and_the_python_check_eight() -> None:
    assert len(_only("yaml").source.splitlines()) <= 10
    python = _only("python").source
    assert len(python.splitlines()) <= 8


def test_the_python_check_imports_only_from_harness() -> None:
    modules: set[str | None] = set()
    for node in ast.walk(ast.parse(_only("python").source)):
        if isinstance(node, ast.ImportFrom):
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    assert modules == {"harness"}


@pytest.mark.parametrize("page", [README, DOCS / "getting-started.md"], ids=lambda p: p.name)
def test_the_failing_cell_output_is_what_harness_run_prints(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = _first("yaml", page).source
    assert scenario.count("max_completion_retries: 1") == 1
    monkeypatch.chdir(tmp_path)
    # as a user runs it: not as a worker with its own SQLite file (pytest-xdist, harness run -n)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("HARNESS_WORKER", raising=False)
    Path("capital.yaml").write_text(scenario.replace("retries: 1", "retries: 0"), encoding="utf-8")
    result = CliRunner().invoke(main, ["run", "capital.yaml"])
    assert result.exit_code == 1, result.output
    printed = [RUN_ID.sub(r"run_id '\1-…'", line) for line in result.output.splitlines()]
    shown = [
        RUN_ID.sub(r"run_id '\1-…'", line)
        for line in _first("text", page).source.splitlines()
        if not line.startswith("$ ")
    ]
    assert shown, f"{page.name} shows no output"
    assert [line for line in printed if line in shown] == shown, result.output


def _first(language: str, page: Path) -> Fence:
    return next(f for f in fences(page) if f.language == language)


def test_the_readme_links_lead_to_files() -> None:
    tokens = MarkdownIt("commonmark").parse(README.read_text(encoding="utf-8"))
    targets = [
        str(child.attrs["href"])
        for token in tokens
        if token.children
        for child in token.children
        if child.type == "link_open"
    ]
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert local
    missing = [t for t in local if not (ROOT / t.split("#", 1)[0]).is_file()]
    assert not missing
