"""The HTML report: what it shows of each cell (summary, filters, mismatch lines, the source
link, the timeline, the forced-vs-work diff), that it is self-contained and escaped, and that no
secret reaches it; and `harness run --html`."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.llm import FRAGMENT_WIRE
from harness.llm.models import FRAGMENT_SKILL_BODIES, FRAGMENT_SKILLS_CATALOG
from harness.scenarios.detail import CellDetail
from harness.scenarios.html import (
    CellView,
    cell_view,
    diff_rows,
    render_html,
    request_lines,
)
from harness.scenarios.load import load_file
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.scenarios.run import CellResult, RunOptions, expand, run_cell
from harness.scrub import PLACEHOLDER
from harness.targets import REFERENCE_TARGET
from tests.support.html_page import Element
from tests.support.html_report import (
    CELLS,
    FAILING_CELL,
    NAMED_SECRET,
    SHAPED_SECRET,
    run_with_detail,
    write_scenarios,
)

ENVIRONMENT_SECRET = "env-CANARY-api-key-value-42"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[CellResult]:
    folder = tmp_path_factory.mktemp("html")
    return run_with_detail(write_scenarios(folder), folder)


@pytest.fixture(scope="module")
def page(results: list[CellResult]) -> Element:
    return Element.parse(render_html([cell_view(result) for result in results]))


def cell_element(page: Element, cell_id: str) -> Element:
    return next(cell for cell in page.all("details", "cell") if cell_id in cell.text)


def detail_of(results: list[CellResult], cell_id: str) -> CellDetail:
    detail = next(r.detail for r in results if r.cell.id == cell_id)
    assert detail is not None
    return detail


def test_the_summary_and_a_filter_for_each_runtime_store_and_tag(page: Element) -> None:
    summary = " ".join(page.one("p", "summary").text.split())
    assert summary == f"{CELLS} cells 4 passed 1 failed 0 skipped"
    options = {
        select.attrs["id"]: [option.text for option in select.all("option")]
        for select in page.all("select")
    }
    assert options == {
        "filter-runtime": ["all", "dbos", "js", "temporal"],
        "filter-store": ["all", "memory", "sqlite"],
        "filter-tag": ["all", "forced", "prompt", "smoke"],
    }
    assert page.one("input").attrs["id"] == "failed-only"
    cells = page.all("details", "cell")
    assert len(cells) == CELLS
    assert [cell.attrs["data-failing"] for cell in cells].count("yes") == 1
    assert {cell.attrs["data-store"] for cell in cells} == {"memory", "sqlite"}


def test_a_failing_cell_opens_with_its_mismatch_lines_and_links_its_source(
    page: Element, results: list[CellResult]
) -> None:
    failing = next(r for r in results if r.cell.id == FAILING_CELL)
    cell = cell_element(page, FAILING_CELL)
    body = cell.one("div", "body")
    first = next(child for child in body.children if isinstance(child, Element))
    assert "mismatches" in first.classes, "the mismatch lines come first"
    lines = [item.text for item in first.all("li")]
    assert lines[0] == (
        f"{failing.cell.loaded.path}:{failing.cell.loaded.line_of('status')} {FAILING_CELL}: "
        "expect.status: expected 'completed', got 'failed'"
    )
    assert len(lines) == 2
    link = body.one("p", "source").one("a")
    source = failing.cell.loaded.path
    assert link.attrs["href"] == f"{source.resolve().as_uri()}#L{failing.cell.loaded.line}"
    assert link.text == f"{source}:{failing.cell.loaded.line}"
    passing = cell_element(page, "forced-call-is-trimmed[js-memory]")
    assert passing.all("ul", "mismatches") == []


def test_the_timeline_labels_each_call_with_its_request_and_reply(page: Element) -> None:
    cell = cell_element(page, FAILING_CELL)
    calls = cell.all("section", "call")
    labels = [" ".join(call.one("h3").text.split()) for call in calls]
    assert labels == [
        "work call 1: work, step 0",
        "work call 2: work, step 1",
        "forced call 3: forced, attempt 1, trigger terminal_text",
        "forced call 4: forced, attempt 2, trigger terminal_text",
    ]
    work, forced = calls[0], calls[2]
    request = {dt.text: dd.text for dt, dd in zip(forced.all("dt"), forced.all("dd"), strict=True)}
    assert request["tool choice"] == "__finish__"
    assert request["reasoning"] == "disabled"
    assert request["tools"] == "__finish__"
    assert [n.text for n in forced.all("span", "fragment-name")][:1] == ["base"]
    assert [n.text for n in work.all("span", "fragment-name")][:3] == [
        "base",
        FRAGMENT_SKILLS_CATALOG,
        FRAGMENT_SKILL_BODIES,
    ]
    assert forced.one("pre", "reply-call").text == '__finish__({"city":7})'
    assert work.one("pre", "reply-call").text == 'search({"q":"capital of France"})'
    messages = [m.one("span", "role").text for m in forced.all("div", "message")]
    assert messages == ["user", "assistant", "tool result: search", "assistant", "user"]
    assert "[completion] Finish now" in forced.all("div", "message")[-1].text
    assert "tool_use" in forced.text


def test_the_timeline_shows_the_chunks_the_forced_state_and_the_records(
    page: Element, results: list[CellResult]
) -> None:
    detail = detail_of(results, FAILING_CELL)
    cell = cell_element(page, FAILING_CELL)
    chunks = cell.one("table", "chunks").all("tr")
    assert [row.all("td")[1].text for row in chunks] == [c.kind for c in detail.chunks]
    state = cell.one("pre", "forced-state").text
    assert '"attemptsUsed": 2' in state
    assert '"status": "exhausted"' in state
    assert '"stop_reason": "error"' in cell.one("pre", "outcome-record").text
    assert '"outcome": "partial"' in cell.one("pre", "envelope").text


def test_a_forced_call_is_diffed_against_the_last_work_request(
    page: Element, results: list[CellResult]
) -> None:
    forced = cell_element(page, FAILING_CELL).all("section", "call")[2]
    diff = forced.one("table", "diff")
    removed = [row.one("td", "left").text for row in diff.all("tr", "removed")]
    assert f"[fragment {FRAGMENT_SKILLS_CATALOG}]" in removed
    assert f"[fragment {FRAGMENT_SKILL_BODIES}]" in removed
    assert "SKILL-BODY-MARKER always cite the source of a capital." in removed
    assert "search: Search the web" in removed
    changed = [
        (row.one("td", "left").text, row.one("td", "right").text)
        for row in diff.all("tr", "changed")
    ]
    assert ("[tool_choice] auto", "[tool_choice] __finish__") in changed
    assert ("[reasoning] high", "[reasoning] disabled") in changed
    kept = [row.one("td", "left").text for row in diff.all("tr", "equal")]
    assert "[fragment base]" in kept
    assert "against call 2: work, step 1" in forced.text
    # a work call has no diff
    assert cell_element(page, FAILING_CELL).all("section", "call")[0].all("table", "diff") == []


def test_diff_rows_pair_the_lines_side_by_side() -> None:
    rows = diff_rows(["a", "b", "c", "d"], ["a", "x", "d", "e"])
    assert rows == [
        {"tag": "equal", "left": "a", "right": "a"},
        {"tag": "changed", "left": "b", "right": "x"},
        {"tag": "changed", "left": "c", "right": None},
        {"tag": "equal", "left": "d", "right": "d"},
        {"tag": "added", "left": None, "right": "e"},
    ]


def test_request_lines_name_every_part_forced_completion_trims(
    results: list[CellResult],
) -> None:
    detail = detail_of(results, "forced-call-is-trimmed[js-memory]")
    work = request_lines(detail.calls[0].request)
    forced = request_lines(detail.calls[-1].request)
    assert [line for line in work if line.startswith("[")] == [
        "[fragment base]",
        f"[fragment {FRAGMENT_SKILLS_CATALOG}]",
        f"[fragment {FRAGMENT_SKILL_BODIES}]",
        "[tools]",
        "[tool_choice] auto",
        "[reasoning] high",
        "[settings] model gpt-4o-mini",
    ]
    assert forced[:2] == [
        "[fragment base]",
        "You find capitals. Finish with the structured answer.",
    ]


def test_each_call_gets_its_own_reply_from_the_stream(results: list[CellResult]) -> None:
    detail = detail_of(results, FAILING_CELL)
    replies = [call.reply for call in detail.calls]
    assert all(reply is not None for reply in replies)
    assert [r.text for r in replies if r is not None] == [
        "",
        "The capital of France is Paris.",
        "",
        "",
    ]
    assert [[c.arguments for c in r.tool_calls] for r in replies if r is not None] == [
        ['{"q":"capital of France"}'],
        [],
        ['{"city":7}'],
        ['{"town":"Paris"}'],
    ]
    assert [(c.kind, c.attempt, c.trigger) for c in detail.calls] == [
        ("work", None, None),
        ("work", None, None),
        ("forced", 1, "terminal_text"),
        ("forced", 2, "terminal_text"),
    ]
    assert detail.forced_state is not None
    assert detail.forced_state.status == "exhausted"


def test_a_target_cell_shows_what_its_answer_and_its_session_tell(tmp_path: Path) -> None:
    path = write_scenarios(tmp_path)
    options = RunOptions(collect_detail=True, workdir=tmp_path)
    cell = next(c for c in expand(load_file(path), options) if c.id == FAILING_CELL)
    with target_runner(TargetSpec(callable=REFERENCE_TARGET)) as runner:
        result = runner.run_cell(cell, options)
    assert result.detail is not None
    calls = result.detail.calls
    assert [(c.kind, c.step, c.attempt, c.trigger) for c in calls] == [
        ("work", 0, None, None),
        ("work", 1, None, None),
        ("forced", None, 1, "terminal_text"),
        ("forced", None, 2, "terminal_text"),
    ]
    # a wire request carries the system prompt as one text
    assert [f.name for f in calls[0].request.system] == [FRAGMENT_WIRE]
    assert calls[2].reply is not None
    assert calls[2].reply.tool_calls[0].arguments == '{"city":7}'
    assert result.detail.forced_state_reported
    text = render_html([cell_view(result)])
    assert f"[fragment {FRAGMENT_WIRE}]" in text
    assert "attempt 2, trigger terminal_text" in text


def test_no_secret_reaches_the_report(
    results: list[CellResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENVIRONMENT_SECRET)
    views = [cell_view(result) for result in results]
    # the environment's key in a place no other rule would catch
    views[0] = views[0].model_copy(update={"description": f"uses {ENVIRONMENT_SECRET}"})
    everything = "\n".join(view.model_dump_json() for view in views)
    assert NAMED_SECRET in everything, "the canaries are in what the report is made from"
    assert SHAPED_SECRET in everything
    html = render_html(views)
    for secret in (NAMED_SECRET, SHAPED_SECRET, ENVIRONMENT_SECRET):
        assert secret not in html
    assert PLACEHOLDER in html


def test_the_page_is_self_contained_and_escapes_what_it_shows(page: Element) -> None:
    assert page.all("link") == []
    assert page.all("img") == []
    assert all("src" not in element.attrs for element in page.all())
    hrefs = [a.attrs["href"] for a in page.all("a")]
    assert hrefs
    assert all(href.startswith("file:") for href in hrefs)
    policy = next(m for m in page.all("meta") if m.attrs.get("http-equiv"))
    assert policy.attrs["content"].startswith("default-src 'none'")
    assert page.all("b") == [], "a scenario's markup is shown, not obeyed"
    description = cell_element(page, FAILING_CELL).one("p", "description").text
    assert description == "The model never finishes properly: <b>not bold</b>."
    assert len(page.all("style")) == 1
    assert len(page.all("script")) == 1


def test_a_view_travels_as_json(results: list[CellResult]) -> None:
    views = [cell_view(result) for result in results]
    assert [CellView.model_validate_json(v.model_dump_json()) for v in views] == views


def test_the_template_ships_in_the_package() -> None:
    template = importlib.resources.files("harness.scenarios") / "templates" / "report.html.j2"
    assert template.is_file()


@pytest.fixture
def scenarios(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_scenarios(Path("."))


def test_harness_run_html_writes_the_report(scenarios: Path, tmp_path: Path) -> None:
    report = tmp_path / "out" / "report.html"
    result = CliRunner().invoke(main, ["run", str(scenarios), "--html", str(report)])
    assert result.exit_code == 1, result.output
    page = Element.parse(report.read_text(encoding="utf-8"))
    cells = page.all("details", "cell")
    assert len(cells) == CELLS
    failing = cell_element(page, FAILING_CELL)
    assert "scenarios/report.yaml:" in failing.one("p", "source").text
    assert len(failing.all("table", "diff")) == 2


def test_with_workers_every_cell_keeps_its_timeline(scenarios: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["run", str(scenarios), "-n", "2", "--html", str(report)])
    assert result.exit_code == 1, result.output
    cells = Element.parse(report.read_text(encoding="utf-8")).all("details", "cell")
    assert len(cells) == CELLS
    assert all(cell.all("div", "timeline") for cell in cells)


def test_a_plain_run_keeps_no_detail(scenarios: Path) -> None:
    options = RunOptions()
    results = [run_cell(cell, options) for cell in expand(load_file(scenarios), options)]
    assert [r.detail for r in results] == [None] * CELLS


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--html", "{tmp}/a-file/report.html"], "--html {tmp}/a-file/report.html: cannot write"),
        (
            ["--html", "{tmp}/same", "--json", "{tmp}/same"],
            "--html {tmp}/same: --json already writes that file",
        ),
    ],
)
def test_an_unwritable_html_path_exits_2_before_anything_runs(
    scenarios: Path, tmp_path: Path, arguments: list[str], named: str
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    given = [argument.format(tmp=tmp_path) for argument in arguments]
    result = CliRunner().invoke(main, ["run", str(scenarios), *given])
    assert result.exit_code == 2, result.output
    assert named.format(tmp=tmp_path) in result.output
    assert "passed" not in result.output, "nothing ran"
