"""`harness run`: options, reports and exit codes."""

from __future__ import annotations

import gc
import json
import re
import sqlite3
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import harness.scenarios
from harness.cli import main
from harness.scenarios.load import LoadedScenario
from harness.scenarios.select import KeywordError, compile_keyword
from harness.stores.urls import default_store_url

ROOT = Path(__file__).resolve().parents[2]

PASSING = """\
- name: capital-pass
  tags: [smoke]
  runtimes: [js, dbos]
  stores: [memory]
  script:
    - text: It is Paris.
  agent: {user_message: "Capital?"}
  expect: {status: completed, outcome_record: {final_message: It is Paris.}}
- name: capital-fail
  stores: [memory]
  script:
    - text: It is Lyon.
  agent: {user_message: "Capital?"}
  expect:
    status: completed
    outcome_record: {final_message: It is Paris.}
"""


@pytest.fixture
def scenarios(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "capital.yaml"
    path.write_text(PASSING, encoding="utf-8")
    return path


def test_failures_exit_1_with_file_line_expected_and_actual(scenarios: Path) -> None:
    """The file is named relative to the working folder, however it was given."""
    result = CliRunner().invoke(main, ["run", str(scenarios)])
    assert result.exit_code == 1, result.output
    assert (
        "FAIL capital.yaml:16 capital-fail[js-memory]: expect.outcome_record: expected"
        in result.output
    )
    assert str(scenarios.parent) not in result.output
    assert "It is Lyon." in result.output
    assert "2 passed, 1 failed" in result.output


SKIPPING_TARGET = """
if message.get("type") == "hello":
    answer["features"] = []
"""


@pytest.mark.subprocess
def test_skips_are_counted_per_reason_and_verbose_lists_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first run on a target that declares no feature skips hundreds of cells: one line per
    reason says so; --verbose lists them one by one, as relative as the failures."""
    from tests.support.targets import stdio_target

    command = stdio_target(tmp_path, SKIPPING_TARGET)
    monkeypatch.chdir(ROOT)
    arguments = ["run", str(ROOT / "scenarios" / "runtimes"), "--runtime", "js"]
    arguments += ["--target-cmd", command]

    quiet = CliRunner().invoke(main, arguments)
    verbose = CliRunner().invoke(main, [*arguments, "--verbose"])

    assert quiet.exit_code == verbose.exit_code == 0, quiet.output + verbose.output
    counted = [
        re.fullmatch(r"SKIP (\d+) cells?: (.+)", line)
        for line in quiet.output.splitlines()
        if line.startswith("SKIP ")
    ]
    assert all(counted), quiet.output
    by_reason = {found.group(2): int(found.group(1)) for found in counted if found}
    assert len(by_reason) == len(counted) > 1, "one line per reason"
    assert "(--verbose lists each, with its file and line)" in quiet.output
    each = [
        re.fullmatch(r"SKIP (scenarios/runtimes/\S+\.yaml):\d+ \S+: skipped: (.+)", line)
        for line in verbose.output.splitlines()
        if line.startswith("SKIP ")
    ]
    assert all(each), verbose.output
    assert Counter(found.group(2) for found in each if found) == by_reason
    assert sum(by_reason.values()) > 2 * len(by_reason)
    assert str(ROOT) not in quiet.output + verbose.output
    assert "--verbose lists each" not in verbose.output


def test_the_bundled_library_s_files_are_named_from_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from elsewhere (a wheel's library is in site-packages), a library file is named
    `<library>/scenarios/...` (`harness library path` prints where that is); the JSON and
    JUnit reports give it whole, and a file inside the working folder relative to it."""
    from harness.scenarios.report import LIBRARY_MARK, ScenarioPaths

    monkeypatch.chdir(tmp_path)
    budgets = ROOT / "scenarios" / "forced" / "budgets.yaml"
    own = tmp_path / "mine" / "capital.yaml"
    paths = ScenarioPaths()
    assert paths.shown(budgets) == f"{LIBRARY_MARK}/scenarios/forced/budgets.yaml"
    assert paths.reported(budgets) == str(budgets)
    assert paths.shown(own) == paths.reported(own) == "mine/capital.yaml"
    assert paths.shown(Path("mine/capital.yaml")) == "mine/capital.yaml"
    assert paths.shown(ROOT / "pyproject.toml") == str(ROOT / "pyproject.toml"), "not the library"
    outside = tmp_path.parent / "elsewhere.yaml"
    assert paths.shown(outside) == paths.reported(outside) == str(outside)

    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        main, ["run", str(budgets), "-k", "budget-0", "--json", str(report), "--verbose"]
    )
    assert result.exit_code == 0, result.output
    cells = json.loads(report.read_text())["cells"]
    assert {cell["file"] for cell in cells} == {str(budgets)}


def test_a_terminal_shows_the_progress_bar_and_a_captured_run_prints_only_the_results(
    scenarios: Path,
) -> None:
    plain = {"FORCE_COLOR": None, "TTY_COMPATIBLE": None, "NO_COLOR": None}
    terminal = CliRunner().invoke(main, ["run", str(scenarios)], env={**plain, "FORCE_COLOR": "1"})
    captured = CliRunner().invoke(main, ["run", str(scenarios)], env=plain)
    assert "scenarios" in terminal.output
    assert "100%" in terminal.output
    assert "\x1b[" not in captured.output
    assert "100%" not in captured.output
    assert captured.output.lstrip(" ").startswith("harness run")  # the table comes first
    for result in (terminal, captured):
        assert result.exit_code == 1
        assert "2 passed, 1 failed" in result.output


def test_no_collector_pass_runs_while_the_scenarios_load_and_it_runs_again_after(
    scenarios: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collecting_while_loading: list[bool] = []
    load = harness.scenarios.load_scenarios

    def watched(paths: list[Path]) -> list[LoadedScenario]:
        collecting_while_loading.append(gc.isenabled())
        return load(paths)

    monkeypatch.setattr("harness.scenarios.plan.load_scenarios", watched)
    assert CliRunner().invoke(main, ["run", str(scenarios)]).exit_code == 1
    (scenarios.parent / "broken.yaml").write_text("name: [", encoding="utf-8")
    assert CliRunner().invoke(main, ["run", str(scenarios.parent)]).exit_code == 2
    assert collecting_while_loading == [False, False]
    assert gc.isenabled(), "the collector runs again however the command ends"
    assert gc.get_freeze_count() == 0, "nothing the run loaded stays frozen"
    gc.disable()
    try:  # a caller that had switched it off keeps it off
        CliRunner().invoke(main, ["run", str(scenarios)])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_k_selects_cells_and_options_filter_the_matrix(scenarios: Path) -> None:
    runner = CliRunner()
    smoke = runner.invoke(main, ["run", str(scenarios), "-k", "smoke and not dbos"])
    assert smoke.exit_code == 0, smoke.output
    assert "1 passed, 0 failed" in smoke.output
    dbos = runner.invoke(main, ["run", str(scenarios), "--runtime", "dbos"])
    assert dbos.exit_code == 0
    assert "1 passed, 0 failed" in dbos.output
    none = runner.invoke(main, ["run", str(scenarios), "-k", "nothing-like-this"])
    assert none.exit_code == 2


def test_reports_in_junit_and_json(scenarios: Path, tmp_path: Path) -> None:
    junit, report = tmp_path / "out" / "junit.xml", tmp_path / "out" / "report.json"
    result = CliRunner().invoke(
        main, ["run", str(scenarios), "--junit-xml", str(junit), "--json", str(report)]
    )
    assert result.exit_code == 1
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "3"
    assert suite.get("failures") == "1"
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert cases["capital-fail[js-memory]"].find("failure") is not None
    assert cases["capital-pass[dbos-memory]"].find("failure") is None
    data = json.loads(report.read_text())
    assert data["summary"] == {
        "cells": 3,
        "passed": 2,
        "failed": 1,
        "skipped": 0,
        "skipped_expectations": 0,
        "errors": 0,
    }
    failing = next(c for c in data["cells"] if not c["passed"])
    assert failing["mismatches"][0]["key"] == "outcome_record"
    assert failing["mismatches"][0]["line"] == 16
    # a file inside the working folder is named relative to it, as the terminal names it
    assert {cell["file"] for cell in data["cells"]} == {"capital.yaml"}
    assert failing["failure_lines"][0].startswith("capital.yaml:16 capital-fail[js-memory]: ")
    assert {case.get("file") for case in cases.values()} == {"capital.yaml"}
    again = CliRunner().invoke(main, ["run", str(scenarios), "--last-failed"])
    assert "0 passed, 1 failed" in again.output, again.output


@pytest.mark.parametrize(
    "arguments",
    [
        ["--record-mode", "sometimes"],
        ["--runtime", "lambda"],
        ["--store", "mongo"],
        ["-k", "and or"],
    ],
)
def test_invalid_options_exit_2_without_a_traceback(scenarios: Path, arguments: list[str]) -> None:
    result = CliRunner().invoke(main, ["run", str(scenarios), *arguments])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_a_cassette_miss_is_a_failure_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cassette = ROOT / "cassettes" / "agent" / "trigger-terminal-text-openai.json"
    (tmp_path / "miss.yaml").write_text(
        f"name: miss\nstores: [memory]\ncassette: {cassette}\nagent: {{user_message: other}}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["run", str(tmp_path / "miss.yaml")])
    assert result.exit_code == 1
    assert "CassetteMissError" in result.output
    assert "Nearest recorded requests" in result.output


def test_a_store_without_a_url_is_reported(
    scenarios: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_REDIS_URL", raising=False)
    text = scenarios.read_text().replace("stores: [memory]", "stores: [redis]", 1)
    scenarios.write_text(text)
    result = CliRunner().invoke(main, ["run", str(scenarios), "-k", "capital-pass"])
    assert result.exit_code == 1
    assert "store redis needs a URL: pass --store-url or set HARNESS_REDIS_URL" in result.output


def run_passing_cell_on_redis(scenarios: Path, store_url: str) -> Result:
    """`harness run` of the passing scenario moved to the redis store, with `--store-url`."""
    scenarios.write_text(scenarios.read_text().replace("stores: [memory]", "stores: [redis]", 1))
    arguments = ["run", str(scenarios), "-k", "capital-pass", "--store-url", store_url]
    return CliRunner().invoke(main, arguments)


def test_a_store_url_serves_only_the_cells_of_its_own_kind(
    scenarios: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_REDIS_URL", raising=False)
    result = run_passing_cell_on_redis(scenarios, "postgresql://harness@127.0.0.1:1/runs")
    assert result.exit_code == 1
    assert "store redis needs a URL" in result.output, "a PostgreSQL URL never serves redis"


def test_a_store_that_cannot_be_opened_is_a_cell_error_without_its_url(
    scenarios: Path,
) -> None:
    result = run_passing_cell_on_redis(scenarios, "redis://:hunter2-password@127.0.0.1:1/0")
    assert result.exit_code == 1
    assert "cannot open the redis store (--store-url or HARNESS_REDIS_URL)" in result.output
    assert "hunter2" not in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--store-url", "mysql://db"], "expected a store URL such as"),
        (["--json", "{file}/report.json"], "--json"),
        (["--junit-xml", "{tmp}"], "--junit-xml"),
    ],
)
def test_bad_store_urls_and_report_paths_exit_2_before_anything_runs(
    scenarios: Path, tmp_path: Path, arguments: list[str], message: str
) -> None:
    given = [a.format(file=scenarios, tmp=tmp_path) for a in arguments]
    result = CliRunner().invoke(main, ["run", str(scenarios), *given])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "passed" not in result.output, "nothing ran"
    assert "Traceback" not in result.output


def test_every_broken_request_field_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "forced.yaml"
    path.write_text(
        """\
name: forced-fields
stores: [memory]
script:
  - text: It is Paris.
  - tool_calls: [{name: __finish__, arguments: {city: Paris}}]
agent:
  output_schema: {type: object, properties: {city: {type: string}}, required: [city]}
expect:
  status: completed
  forced_request:
    tools: [search]
    tool_choice: auto
    memory_injected: true
""",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 1
    for field in ("tools", "tool_choice", "memory_injected"):
        assert f"expect.forced_request.{field}: expected" in result.output


def test_a_completion_scenario_makes_no_llm_calls(tmp_path: Path) -> None:
    path = tmp_path / "completion.yaml"
    path.write_text(
        "name: c\nkind: completion\ninput: {agentFinalAnswer: hi}\nexpect: {llm_calls: 0}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 0, result.output


def test_keyword_expressions() -> None:
    match = compile_keyword("(forced or decision) and not slow")
    assert match({"forced-trigger[js-sqlite]"})
    assert not match({"forced-trigger", "slow"})
    assert not match({"completion"})
    assert compile_keyword("")({"anything"})
    for bad in ("(forced", "forced and", "or x", "a b"):
        with pytest.raises(KeywordError):
            compile_keyword(bad)


def test_the_schema_command_matches_the_committed_copy() -> None:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0
    committed = (ROOT / "scenarios" / "scenario.schema.json").read_text()
    assert json.loads(result.output) == json.loads(committed), (
        "the scenario format changed: run `harness schema > scenarios/scenario.schema.json`"
    )
    schema = json.loads(result.output)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "Scenario" in schema["$defs"]


def test_the_repository_scenarios_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", str(ROOT / "scenarios")])
    assert result.exit_code == 0, result.output[-3000:]


def test_passing_runs_leave_the_store_and_a_failing_run_stays_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "capital.yaml"
    path.write_text(PASSING.replace("stores: [memory]", "stores: [sqlite]"), encoding="utf-8")
    report = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["run", str(path), "--json", str(report)])
    assert result.exit_code == 1, result.output
    failing = next(c for c in json.loads(report.read_text())["cells"] if not c["passed"])
    run_id = failing["run_id"]
    assert run_id.startswith("capital-fail-js-sqlite-")
    database = default_store_url(tmp_path).removeprefix("sqlite:///")  # per xdist worker
    shown = Path(database).relative_to(Path.cwd()) if tmp_path == Path.cwd() else database
    assert (
        f"capital-fail[js-sqlite]: its run is kept in the sqlite store ({shown}) "
        f"as run_id '{run_id}'"
    ) in result.output.replace("\n", "")
    with sqlite3.connect(database) as connection:
        stored = [row[0] for row in connection.execute("SELECT run_id FROM harness_runs")]
    assert stored == [run_id]


def test_a_large_run_lists_only_the_files_with_problems_and_every_failure_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    passing = "".join(
        f"""\
- name: capital-{index}
  stores: [memory]
  script:
    - text: It is Paris.
  agent: {{user_message: "Capital?"}}
  expect: {{status: completed}}
"""
        for index in range(25)
    )
    (tmp_path / "first.yaml").write_text(passing, encoding="utf-8")
    (tmp_path / "second.yaml").write_text(passing.replace("capital-", "city-"), encoding="utf-8")
    (tmp_path / "broken.yaml").write_text(PASSING, encoding="utf-8")

    result = CliRunner().invoke(main, ["run", "first.yaml", "second.yaml", "broken.yaml"])

    assert result.exit_code == 1, result.output
    assert "harness run: 53 cells in 3 files" in result.output
    rows = [
        [cell.strip() for cell in line.strip("│").split("│")]
        for line in result.output.splitlines()
        if line.startswith("│")
    ]
    assert [row[:5] for row in rows] == [
        ["broken.yaml", "3", "2", "1", "0"],
        ["2 other files, all passed", "50", "50", "0", "0"],
    ]
    fails = [line for line in result.output.splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 1
    assert "capital-fail[js-memory]: expect.outcome_record" in fails[0]
    assert "52 passed, 1 failed" in result.output


def test_a_run_freezes_what_it_loaded_only_while_its_cells_run(
    scenarios: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cells run with the loaded library out of the collector's passes; a host process (this
    test session) gets its collector back as it was, also when the run fails."""
    import gc

    import harness.scenarios.run as running

    frozen_during: list[int] = []
    run_cell = running.run_cell

    def watched(*args: object, **kwargs: object) -> object:
        frozen_during.append(gc.get_freeze_count())
        return run_cell(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("harness.scenarios.plan.run_cell", watched)
    assert gc.get_freeze_count() == 0
    result = CliRunner().invoke(main, ["run", str(scenarios)])
    assert result.exit_code == 1, result.output
    assert frozen_during
    assert all(count > 0 for count in frozen_during)
    assert gc.get_freeze_count() == 0


CANARY = "gsk_" + "5d2b" * 10
"""A developer's key as an environment variable holds it, shaped like no known key."""
ECHOES = f"""\
- name: echo-passes
  runtimes: [js, temporal]
  stores: [sqlite, memory]
  script: [{{text: "Your key is {CANARY}."}}]
  agent: {{user_message: "What is my key?"}}
  expect: {{status: completed}}
- name: echo-resumes-and-fails-{CANARY}
  stores: [sqlite]
  faults: [{{crash_after: work_step_persisted}}]
  script:
    - tool_calls: [{{name: search, arguments: {{q: key}}}}]
    - text: "It is {CANARY}."
  agent:
    user_message: Key?
    tools: [{{name: search, result: {{hits: []}}}}]
  expect: {{status: completed, outcome_record: {{final_message: something else}}}}
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_no_file_the_run_leaves_holds_a_key_the_model_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("COLUMNS", "200")  # the summary table shows whole scenario names
    scenarios = tmp_path / "scenarios" / "echo.yaml"
    scenarios.parent.mkdir()
    scenarios.write_text(ECHOES, encoding="utf-8")
    reports = ["--json", "out/r.json", "--junit-xml", "out/r.xml", "--html", "out/r.html"]
    result = CliRunner().invoke(main, ["run", "scenarios", "-n", workers, *reports])
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[-1] == "4 passed, 1 failed"
    assert CANARY not in result.output
    left = [path for path in tmp_path.rglob("*") if path.is_file() and path != scenarios]
    names = {path.name for path in left}
    assert {"r.json", "r.xml", "r.html", "last-run.json"} <= names
    databases = [path for path in left if path.suffix == ".sqlite3"]
    assert databases, "the sqlite cells stored their runs"
    for path in left:  # the databases, their journals, the reports and the last run
        assert CANARY.encode() not in path.read_bytes(), path
    kept = []
    for database in databases:
        with sqlite3.connect(database) as connection:
            kept += [row[0] for row in connection.execute("SELECT state_json FROM harness_runs")]
    assert len(kept) == 1, "the failing cell's run is kept, for inspection"
    assert "It is [SCRUBBED]." in kept[0]
    assert "echo-resumes-and-fails-[SCRUBBED]" in result.output, "the summary table's row"
    report = json.loads((tmp_path / "out" / "r.json").read_text())
    assert "It is [SCRUBBED]." in report["cells"][-1]["failure_lines"][0]


RECORDED_ECHO = """\
- name: echo-recorded
  runtimes: [js]
  stores: [sqlite]
  cassette: cassettes/echo.json
  agent: {user_message: "What is my key?"}
  expect: {status: completed}
"""


def test_no_file_a_recording_run_leaves_holds_a_key_the_provider_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.llm.script import ScriptedReply
    from tests.support.recordings import scripted_provider

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    scenarios = tmp_path / "scenarios" / "echo.yaml"
    scenarios.parent.mkdir()
    scenarios.write_text(RECORDED_ECHO, encoding="utf-8")
    reports = ["--json", "out/r.json", "--junit-xml", "out/r.xml", "--html", "out/r.html"]
    echo = [ScriptedReply(text=f"Your key is {CANARY}, and the header said Bearer {CANARY}.")]
    with scripted_provider("openai", echo) as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        result = CliRunner().invoke(main, ["run", "scenarios", "--record-mode", "once", *reports])
    assert result.exit_code == 0, result.output
    assert CANARY not in result.output
    left = [path for path in tmp_path.rglob("*") if path.is_file() and path != scenarios]
    names = {path.name for path in left}
    assert {"echo.json", "r.json", "r.xml", "r.html", "last-run.json"} <= names
    for path in left:  # the cassette, the run store, the reports and the last run
        assert CANARY.encode() not in path.read_bytes(), path
    assert b"[SCRUBBED]" in (tmp_path / "scenarios" / "cassettes" / "echo.json").read_bytes()
