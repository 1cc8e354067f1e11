"""The HTML report in a real browser (headless Chromium): it loads with nothing fetched, its
filters show the failures, a failing cell's timeline opens, and its forced call's diff shows the
trimmed skills fragments as removed. The screenshot is kept under test-artifacts/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from playwright.sync_api import Page, sync_playwright

from harness.cli import main
from tests.support.browser import LAUNCH_ARGS, artifact_path, chromium_executable
from tests.support.html_report import CELLS, FAILING_CELL, write_scenarios

pytestmark = pytest.mark.browser

REMOVED_BACKGROUND = "rgb(255, 235, 233)"
"""`--removed-bg` of the report's style sheet."""


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    scenarios = write_scenarios(Path("."))
    result = CliRunner().invoke(main, ["run", str(scenarios), "--html", "report.html"])
    assert result.exit_code == 1, result.output
    return tmp_path / "report.html"


@pytest.fixture
def page() -> Iterator[Page]:
    executable = chromium_executable()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=list(LAUNCH_ARGS))
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 900})
        finally:
            browser.close()


def visible_cells(page: Page) -> list[str]:
    return page.locator("details.cell:visible span.cell-id").all_inner_texts()


def test_a_failing_forced_completion_cell_in_the_browser(page: Page, report: Path) -> None:
    requested: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(report.as_uri())
    assert len(visible_cells(page)) == CELLS

    page.check("#failed-only")
    assert visible_cells(page) == [FAILING_CELL]
    assert page.inner_text("#shown") == "1 shown"
    page.uncheck("#failed-only")
    page.select_option("#filter-runtime", "dbos")
    assert visible_cells(page) == ["forced-call-is-trimmed[dbos-memory]"]
    page.select_option("#filter-runtime", "")
    page.select_option("#filter-tag", "smoke")
    assert visible_cells(page) == ["plain-answer[temporal-memory]", "plain-answer[temporal-sqlite]"]
    page.select_option("#filter-store", "sqlite")
    assert visible_cells(page) == ["plain-answer[temporal-sqlite]"]
    page.select_option("#filter-store", "")
    page.select_option("#filter-tag", "")
    page.check("#failed-only")

    cell = page.locator("details.cell.failing")
    timeline = cell.locator("div.timeline")
    assert not timeline.is_visible()
    cell.locator("summary").first.click()
    assert timeline.is_visible()
    mismatches = cell.locator("ul.mismatches li").all_inner_texts()
    assert "expect.status: expected 'completed', got 'failed'" in mismatches[0]

    forced = cell.locator("section.call.forced").first
    assert "attempt 1, trigger terminal_text" in forced.locator("h3").inner_text()
    removed = forced.locator("table.diff tr.removed td.left")
    assert removed.first.is_visible()
    texts = removed.all_inner_texts()
    assert "[fragment skills_catalog]" in texts
    assert "[fragment skill_bodies]" in texts
    catalog = removed.filter(has_text="[fragment skills_catalog]")
    assert catalog.evaluate("cell => getComputedStyle(cell).backgroundColor") == REMOVED_BACKGROUND

    screenshot = artifact_path("html-report", "failing-forced-completion.png")
    page.screenshot(path=str(screenshot), full_page=True)
    print(f"screenshot: {screenshot}")
    assert screenshot.stat().st_size > 0
    assert requested == [report.as_uri()], "the report fetches nothing"
    assert errors == []
