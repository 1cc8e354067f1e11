"""The pytest plugin's `--harness-html`: the same report as `harness run --html`, gathered from
the cells' reports (across pytest-xdist workers too), run out of process with `pytester`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.html_page import Element
from tests.support.html_report import CELLS, FAILING_CELL, SCENARIOS

pytest_plugins = ["pytester"]

INI = """
[pytest]
harness_scenarios = scenarios
addopts = --strict-markers --strict-config -p no:cacheprovider -p no:cassetter
filterwarnings = error
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "report.yaml").write_text(SCENARIOS, encoding="utf-8")
    return pytester


def cells_of(report: Path) -> dict[str, Element]:
    page = Element.parse(report.read_text(encoding="utf-8"))
    return {cell.one("span", "cell-id").text: cell for cell in page.all("details", "cell")}


def assert_the_whole_report(report: Path) -> None:
    cells = cells_of(report)
    assert len(cells) == CELLS
    assert [cells[name].attrs["data-failing"] for name in sorted(cells)].count("yes") == 1
    failing = cells[FAILING_CELL]
    assert "expect.status: expected 'completed', got 'failed'" in failing.one("ul").text
    assert len(failing.all("section", "call")) == 4
    removed = [row.text for row in failing.all("table", "diff")[0].all("tr", "removed")]
    assert "[fragment skills_catalog]" in removed
    for name, cell in cells.items():
        assert cell.all("div", "timeline"), f"{name} has its timeline"


def test_harness_html_writes_the_report_at_the_end(project: pytest.Pytester) -> None:
    result = project.runpytest("--harness-html", "out/report.html")
    result.assert_outcomes(passed=CELLS - 1, failed=1)
    result.stdout.fnmatch_lines(["*harness HTML report: out/report.html*"])
    assert_the_whole_report(project.path / "out" / "report.html")


@pytest.mark.subprocess
def test_under_xdist_the_controller_gathers_every_workers_cells(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest_subprocess("-n", "2", "--harness-html", "report.html")
    result.assert_outcomes(passed=CELLS - 1, failed=1)
    assert_the_whole_report(project.path / "report.html")


def test_an_unwritable_report_path_is_a_usage_error(project: pytest.Pytester) -> None:
    (project.path / "a-file").write_text("not a folder")
    result = project.runpytest("--harness-html", "a-file/report.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-html a-file/report.html: cannot write a report*"])


def test_without_the_option_no_report_is_written(project: pytest.Pytester) -> None:
    project.runpytest().assert_outcomes(passed=CELLS - 1, failed=1)
    assert list(project.path.rglob("*.html")) == []
