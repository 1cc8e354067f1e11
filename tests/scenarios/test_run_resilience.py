"""A run always finishes its report: a crashing cell, a store that dies or hangs, bad report paths."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import harness.scenarios
from harness.cli import main
from harness.runtimes.run import run_agent
from harness.scenarios.run import Cell, CellResult, RunOptions
from harness.stores.postgres import PostgresStore
from harness.stores.redis import RedisStore
from harness.stores.timeouts import StoreTimeoutError, StoreTimeouts
from tests.support.servers import RunningServer, running_postgres, running_redis, silent_server

CANARY = "CANARY-confidential-7Qw3"

LIBRARY = """\
- name: first
  stores: [{store}]
  script: [{{text: It is Paris.}}]
  agent: {{user_message: "Capital?"}}
  expect: {{status: completed}}
- name: second
  stores: [{store}]
  script: [{{text: It is Rome.}}]
  agent: {{user_message: "Capital?"}}
  expect: {{status: completed}}
- name: third
  stores: [{store}]
  script: [{{text: It is Oslo.}}]
  agent: {{user_message: "Capital?"}}
  expect: {{status: completed}}
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_with_reports(
    library: Path, *options: str
) -> tuple[Result, dict[str, Any], ElementTree.Element]:
    json_report, junit = (
        library.parent / "out" / "report.json",
        library.parent / "out" / "junit.xml",
    )
    result = CliRunner().invoke(
        main, ["run", str(library), "--json", str(json_report), "--junit-xml", str(junit), *options]
    )
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    return result, json.loads(json_report.read_text(encoding="utf-8")), suite


def test_a_crashing_cell_fails_alone_and_every_report_is_complete(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = workdir / "library.yaml"
    library.write_text(LIBRARY.format(store="memory"), encoding="utf-8")
    real = run_agent

    def crash_on_second(agent: Any, *args: Any, **kwargs: Any) -> Any:
        if agent.name == "second":
            raise KeyError(CANARY)  # a bug that quotes the user's content
        return real(agent, *args, **kwargs)

    monkeypatch.setattr("harness.scenarios.run.run_agent", crash_on_second)
    result, report, suite = run_with_reports(library)
    assert result.exit_code == 1, result.output
    assert "2 passed, 1 failed" in result.output
    assert "Traceback" not in result.output
    cells = {cell["scenario"]: cell for cell in report["cells"]}
    assert report["summary"] == {
        "cells": 3,
        "passed": 2,
        "failed": 1,
        "skipped": 0,
        "skipped_expectations": 0,
        "errors": 1,
    }
    assert cells["second"]["error_code"] == "cell_crashed"
    assert "KeyError" in cells["second"]["error"]
    assert "test_run_resilience.py:" in cells["second"]["error"], "names where it was raised"
    assert "(in crash_on_second)" in cells["second"]["error"]
    assert cells["first"]["passed"]
    assert cells["third"]["passed"]
    assert suite.get("tests") == "3"
    assert suite.get("errors") == "1"
    everything = result.output + json.dumps(report) + ElementTree.tostring(suite, "unicode")
    assert CANARY not in everything


class StopAfterFirstCell:
    """Runs cells as `harness run` does, and stops the store's server after the first one."""

    def __init__(self, server: RunningServer) -> None:
        self.server = server
        self.ran = 0
        self.real: Callable[[Cell, RunOptions], CellResult] = harness.scenarios.run_cell

    def __call__(self, cell: Cell, options: RunOptions) -> CellResult:
        result = self.real(cell, options)
        self.ran += 1
        if self.ran == 1:
            self.server.stop()
        return result


@pytest.mark.server
@pytest.mark.parametrize(
    ("kind", "start"), [("postgres", running_postgres), ("redis", running_redis)]
)
def test_a_store_that_dies_mid_run_fails_its_cells_and_the_report_is_complete(
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    start: Callable[[], AbstractContextManager[RunningServer]],
) -> None:
    library = workdir / "library.yaml"
    library.write_text(LIBRARY.format(store=kind), encoding="utf-8")
    monkeypatch.setenv("HARNESS_STORE_CONNECT_TIMEOUT", "2")
    monkeypatch.setenv("HARNESS_STORE_STATEMENT_TIMEOUT", "2")
    with start() as server:
        # trust authentication ignores the password, so it may stand in for a real one
        url = server.url.replace("harness@", "harness:pw-CANARY@").replace(
            "//127", "//:pw-CANARY@127"
        )
        monkeypatch.setattr("harness.scenarios.plan.run_cell", StopAfterFirstCell(server))
        started = time.monotonic()
        result, report, suite = run_with_reports(library, "--store-url", url)
        elapsed = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert elapsed < 60, "a dead store never hangs the run"
    assert "1 passed, 2 failed" in result.output
    cells = {cell["scenario"]: cell for cell in report["cells"]}
    assert cells["first"]["passed"]
    for name in ("second", "third"):
        assert cells[name]["error_code"] in {"store_unavailable", "scenario_setup_invalid"}
        assert f"{kind} store" in cells[name]["error"]
    assert report["summary"]["cells"] == 3
    assert suite.get("tests") == "3"
    everything = result.output + json.dumps(report) + ElementTree.tostring(suite, "unicode")
    assert "pw-CANARY" not in everything
    assert "Traceback" not in result.output


@pytest.fixture
def hung_server() -> Iterator[int]:
    with silent_server() as port:
        yield port


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
def test_a_server_that_never_answers_times_out_in_stores_check(
    hung_server: int, monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    monkeypatch.setenv("HARNESS_STORE_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("HARNESS_STORE_STATEMENT_TIMEOUT", "1")
    url = f"{scheme}://user:pw-CANARY@127.0.0.1:{hung_server}/0"
    started = time.monotonic()
    result = CliRunner().invoke(main, ["stores", "check", url])
    assert time.monotonic() - started < 15
    assert result.exit_code == 2, result.output
    assert "cannot connect" in result.output or "cannot inspect" in result.output
    assert "pw-CANARY" not in result.output


def test_a_hung_store_fails_its_cells_once_each_and_quickly(
    workdir: Path, hung_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = workdir / "library.yaml"
    library.write_text(LIBRARY.format(store="postgres"), encoding="utf-8")
    monkeypatch.setenv("HARNESS_STORE_CONNECT_TIMEOUT", "1")
    url = f"postgresql://user:pw-CANARY@127.0.0.1:{hung_server}/db"
    started = time.monotonic()
    result, report, _ = run_with_reports(library, "--store-url", url)
    # one connect timeout (libpq's minimum is 2 s) for the whole run, not one per cell
    assert time.monotonic() - started < 10
    assert result.exit_code == 1
    assert [cell["error_code"] for cell in report["cells"]] == ["scenario_setup_invalid"] * 3
    assert all("postgres store" in cell["error"] for cell in report["cells"])
    assert "pw-CANARY" not in result.output + json.dumps(report)


def test_timeouts_come_from_the_environment() -> None:
    assert StoreTimeouts.from_environment({}) == StoreTimeouts(
        connect_seconds=5.0, statement_seconds=10.0
    )
    custom = StoreTimeouts.from_environment(
        {"HARNESS_STORE_CONNECT_TIMEOUT": "0.5", "HARNESS_STORE_STATEMENT_TIMEOUT": "2.5"}
    )
    assert custom == StoreTimeouts(connect_seconds=0.5, statement_seconds=2.5)
    assert custom.connect_whole_seconds == 2, "libpq's smallest useful connect_timeout"


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf"])
def test_a_bad_timeout_names_the_variable(value: str) -> None:
    with pytest.raises(StoreTimeoutError, match="HARNESS_STORE_STATEMENT_TIMEOUT"):
        StoreTimeouts.from_environment({"HARNESS_STORE_STATEMENT_TIMEOUT": value})


def test_a_bad_timeout_exits_2_before_anything_runs(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = workdir / "library.yaml"
    library.write_text(LIBRARY.format(store="memory"), encoding="utf-8")
    monkeypatch.setenv("HARNESS_STORE_CONNECT_TIMEOUT", "soon")
    result = CliRunner().invoke(main, ["run", str(library)])
    assert result.exit_code == 2
    assert "HARNESS_STORE_CONNECT_TIMEOUT" in result.output


@pytest.mark.server
def test_postgres_sessions_carry_the_statement_timeout_unless_the_url_sets_one(
    postgres_url: str,
) -> None:
    timeouts = StoreTimeouts(connect_seconds=3, statement_seconds=1.5)
    store = PostgresStore(postgres_url, timeouts=timeouts)
    own = PostgresStore(f"{postgres_url}?options=-c%20statement_timeout%3D4000", timeouts=timeouts)
    try:
        assert store._connection.execute("SHOW statement_timeout").fetchone() == ("1500ms",)
        assert own._connection.execute("SHOW statement_timeout").fetchone() == ("4s",)
    finally:
        store.close()
        own.close()


@pytest.mark.server
def test_redis_commands_carry_the_socket_timeout(redis_url: str) -> None:
    store = RedisStore(redis_url, timeouts=StoreTimeouts(connect_seconds=1, statement_seconds=2))
    try:
        kwargs = store._client.connection_pool.connection_kwargs
        assert (kwargs["socket_connect_timeout"], kwargs["socket_timeout"]) == (1, 2)
    finally:
        store.close()


def test_two_reports_to_one_path_exit_2_before_anything_runs(workdir: Path) -> None:
    library = workdir / "library.yaml"
    library.write_text(LIBRARY.format(store="memory"), encoding="utf-8")
    same = workdir / "out" / "report"
    result = CliRunner().invoke(
        main,
        ["run", str(library), "--json", str(same), "--junit-xml", f"{workdir}/out/../out/report"],
    )
    assert result.exit_code == 2
    assert "give each report its own path" in result.output
    assert not same.exists()


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("/proc/harness-report.json", "cannot write a report there"),
        ("/dev/null", "cannot write a report there (not a regular file)"),
        ("folder", "is a directory"),
    ],
)
def test_a_report_path_that_cannot_take_a_file_exits_2(
    workdir: Path, where: str, message: str
) -> None:
    library = workdir / "library.yaml"
    library.write_text(LIBRARY.format(store="memory"), encoding="utf-8")
    (workdir / "folder").mkdir()
    result = CliRunner().invoke(main, ["run", str(library), "--json", where])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_reports_replace_the_previous_ones_whole_and_leave_no_temporary_file(workdir: Path) -> None:
    library = workdir / "library.yaml"
    library.write_text(LIBRARY.format(store="memory"), encoding="utf-8")
    out = workdir / "out"
    out.mkdir()
    (out / "report.json").write_text("stale", encoding="utf-8")
    result, report, _ = run_with_reports(library)
    assert result.exit_code == 0, result.output
    assert report["summary"]["passed"] == 3
    assert sorted(path.name for path in out.iterdir()) == ["junit.xml", "report.json"]


def test_junit_holds_only_characters_xml_allows(workdir: Path) -> None:
    library = workdir / "library.yaml"
    library.write_text(
        '- name: "bell\\a-and-escape\\e"\n  stores: [memory]\n  script: [{text: Hi.}]\n'
        "  agent: {}\n  expect: {status: failed}\n",
        encoding="utf-8",
    )
    result, report, suite = run_with_reports(library)
    assert result.exit_code == 1
    (case,) = suite.iter("testcase")
    assert case.get("name") == "bell\ufffd-and-escape\ufffd[js-memory]"
    assert report["cells"][0]["scenario"] == "bell\a-and-escape\x1b"


def test_reports_never_show_an_environment_key_or_a_key_shaped_value(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "gsk_" + "0f3a9c" * 7  # shaped like no known pattern: only its exact value gives it away
    monkeypatch.setenv("GROQ_API_KEY", key)
    library = workdir / "library.yaml"
    library.write_text(
        "- name: leaky\n  stores: [memory]\n"
        f"  script: [{{text: 'my keys are {key} and sk-proj-{'Ab1' * 8}'}}]\n"
        "  agent: {}\n  expect: {outcome_record: {final_message: nothing}}\n",
        encoding="utf-8",
    )
    result, report, suite = run_with_reports(library)
    assert result.exit_code == 1
    everything = result.output + json.dumps(report) + ElementTree.tostring(suite, "unicode")
    assert (
        "my keys are [SCRUBBED] and [SCRUBBED]"
        in report["cells"][0]["mismatches"][0]["actual"]["final_message"]
    )
    assert key not in everything
    assert "Ab1Ab1Ab1" not in everything
