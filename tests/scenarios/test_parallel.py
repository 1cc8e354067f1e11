"""`harness run -n`, `--shard`, `harness report merge` and `--last-failed`: the same cells, the
same results and reports, split across processes and machines."""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.scenarios import RunOptions, load_scenarios
from harness.scenarios.parallel import (
    LAST_RUN,
    WORKERS_PER_CORE,
    LastRunError,
    Shard,
    ShardSpecError,
    WorkersError,
    batches,
    failed_last_time,
    max_workers,
    worker_count,
)
from harness.scenarios.plan import select_cells
from harness.targets import REFERENCE_TARGET

ROOT = Path(__file__).resolve().parents[2]

LIBRARY = """\
- name: capital-{n}
  runtimes: [js, temporal, dbos]
  stores: [sqlite, memory]
  script:
    - text: It is {answer}.
  agent: {{user_message: "Capital?"}}
  expect: {{status: completed, outcome_record: {{final_message: It is Paris.}}}}
"""


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Ten scenarios of six cells each; capital-3 fails in every cell."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "library"
    folder.mkdir()
    for n in range(10):
        answer = "Lyon" if n == 3 else "Paris"
        (folder / f"capital-{n}.yaml").write_text(LIBRARY.format(n=n, answer=answer))
    return folder


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["run", *map(str, args)])


def cells_of(report: Path) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads(report.read_text())["cells"]
    for cell in cells:
        cell.pop("duration_seconds")
        cell.pop("run_id")  # a failing run's id is random, and the report names it
        cell.pop("kept_in")  # each worker keeps its runs in its own file
        cell["failure_lines"] = [
            re.sub(r"store \(.*\) as run_id '[^']*'", "store", line)
            for line in cell["failure_lines"]
        ]
    return cells


def test_workers_give_the_serial_results_in_the_serial_order(library: Path) -> None:
    serial = run(library, "--json", "serial.json", "--junit-xml", "serial.xml")
    parallel = run(library, "-n", "2", "--json", "parallel.json", "--junit-xml", "parallel.xml")
    assert serial.exit_code == parallel.exit_code == 1
    assert cells_of(Path("parallel.json")) == cells_of(Path("serial.json"))
    mismatch_lines = [
        [line for line in result.output.splitlines() if "expect." in line]
        for result in (serial, parallel)
    ]
    assert mismatch_lines[0] == mismatch_lines[1]
    assert len(mismatch_lines[0]) == 6
    kept = [line for line in parallel.output.splitlines() if "its run is kept" in line]
    assert len(kept) == 3, "sqlite cells keep their run; memory cells have none to keep"
    assert all(re.search(r"sqlite store \(\.harness/runs-w[01]\.sqlite3\)", line) for line in kept)
    assert parallel.output.splitlines()[-1] == "54 passed, 6 failed"
    names = sorted(path.name for path in Path(".harness").glob("runs-w*.sqlite3"))
    assert names == ["runs-w0.sqlite3", "runs-w1.sqlite3"], "each worker its own SQLite file"
    cases = ElementTree.parse("parallel.xml").getroot().iter("testcase")
    assert len(list(cases)) == 60


def test_workers_run_a_target_too(library: Path) -> None:
    result = run(library, "-n", "2", "--target", REFERENCE_TARGET)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == "54 passed, 6 failed"


def test_batches_keep_each_scenarios_cells_together(library: Path) -> None:
    cells = select_cells(load_scenarios([library]), RunOptions())
    grouped = batches(cells, workers=2)
    assert sorted(index for batch in grouped for index in batch) == list(range(len(cells)))
    for batch in grouped:
        scenarios = [cells[index].loaded.scenario.name for index in batch]
        assert scenarios == sorted(scenarios, key=scenarios.index), "scenarios are not split"
    holders = {
        cells[index].loaded.scenario.name: number
        for number, batch in enumerate(grouped)
        for index in batch
    }
    assert len(holders) == 10


def test_shards_split_the_cells_by_scenario_stably(library: Path) -> None:
    # relative paths, as a user passes them: the split is then the same on every machine
    relative = library.relative_to(Path.cwd())
    cells = select_cells(load_scenarios([relative]), RunOptions())
    shards = [[cell.id for cell in cells if Shard(k, 3).holds(cell)] for k in (1, 2, 3)]
    assert sorted(cell for shard in shards for cell in shard) == sorted(cell.id for cell in cells)
    assert all(shards), "these ten scenarios, by their relative paths, fill all three shards"
    again = [[cell.id for cell in cells if Shard(k, 3).holds(cell)] for k in (1, 2, 3)]
    assert again == shards, "the same split every time"
    (library / "capital-new.yaml").write_text(LIBRARY.format(n="new", answer="Paris"))
    grown = select_cells(load_scenarios([relative]), RunOptions())
    for k, before in enumerate(shards, start=1):
        after = [cell.id for cell in grown if Shard(k, 3).holds(cell)]
        assert set(before) <= set(after), "adding a scenario moves no other"


def test_shard_reports_merge_into_the_whole_runs_report(library: Path) -> None:
    # relative paths, as in CI: the same split on every machine
    assert library == Path.cwd() / "library"
    whole = run("library", "--json", "whole.json", "--junit-xml", "whole.xml")
    for k in (1, 2, 3):
        shard = run("library", "--shard", f"{k}/3", "--json", f"shard{k}.json")
        assert shard.exit_code in (0, 1), shard.output
    merged = CliRunner().invoke(
        main,
        [
            "report",
            "merge",
            "shard3.json",
            "shard1.json",
            "shard2.json",
            "--json",
            "all.json",
            "--junit-xml",
            "all.xml",
        ],
    )
    assert whole.exit_code == merged.exit_code == 1
    assert "3 report(s), 60 cells: 54 passed, 6 failed, 0 skipped" in merged.output
    # in the order the whole run reports them, whatever order the shards are given in
    assert cells_of(Path("all.json")) == cells_of(Path("whole.json"))
    suite = ElementTree.parse("all.xml").getroot().find("testsuite")
    assert suite is not None
    names = [case.get("name") for case in suite.iter("testcase")]
    assert names == [case.get("name") for case in ElementTree.parse("whole.xml").iter("testcase")]
    assert (suite.get("tests"), suite.get("failures")) == ("60", "6")
    again = CliRunner().invoke(main, ["report", "merge", "shard1.json", "shard1.json"])
    assert again.exit_code == 2
    assert "is also in shard1.json; merge each shard's report once" in again.output


def test_last_failed_reruns_only_the_failures(library: Path) -> None:
    assert run(library).exit_code == 1
    again = run(library, "--last-failed")
    assert again.exit_code == 1
    assert again.output.splitlines()[-1] == "0 passed, 6 failed"
    (library / "capital-3.yaml").write_text(LIBRARY.format(n=3, answer="Paris"))
    fixed = run(library, "--last-failed")
    assert fixed.output.splitlines()[-1] == "6 passed, 0 failed"
    everything = run(library, "--last-failed")
    assert everything.output.splitlines()[-1] == "60 passed, 0 failed", "none failed: run all"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["-n", "two"], "-n 'two': expected auto (one worker per CPU core) or a whole number of"),
        (["-n", "-1"], "-n '-1': expected auto"),
        (["-n", "10000"], f"to {max_workers()} ({WORKERS_PER_CORE} per CPU core)"),
        (["-n", "9" * 30], "expected auto"),
        (["--shard", "4/3"], "--shard '4/3': expected K/N in digits with 1 <= K <= N, such as"),
        (["--shard", "1-3"], "--shard '1-3': expected K/N"),
        (["--shard", " 1/2"], "--shard ' 1/2': expected K/N"),
        (["--shard", "1/\uff12"], "--shard '1/\uff12': expected K/N"),
    ],
)
def test_bad_split_options_exit_2_before_anything_runs(
    library: Path, options: list[str], message: str
) -> None:
    result = run(library, *options)
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.parametrize(
    "text", ["abc", "-1", "+2", " 2", "2 ", "\uff12", "\u0663", "2.0", "", "0x2", "autoo"]
)
def test_workers_must_be_auto_or_ascii_digits(text: str) -> None:
    with pytest.raises(WorkersError) as refused:
        worker_count(text)
    assert refused.value.code == "workers_invalid"
    assert "expected auto (one worker per CPU core) or a whole number of workers from 0" in str(
        refused.value
    )


def test_workers_are_capped_per_core_without_building_a_huge_number() -> None:
    cap = max_workers()
    assert cap == WORKERS_PER_CORE * (os.cpu_count() or 1)
    assert worker_count(str(cap)) == cap
    assert worker_count("0" * 50 + "2") == 2, "leading zeros are still a whole number"
    assert worker_count("0") == 0
    assert worker_count("auto") == (os.cpu_count() or 1)
    for too_many in (str(cap + 1), "10000", "99999999999999999999", "9" * 100_000):
        with pytest.raises(WorkersError) as refused:
            worker_count(too_many)  # 100,000 digits: more than int() reads, refused before it
        assert f"to {cap} ({WORKERS_PER_CORE} per CPU core)" in str(refused.value)
        assert len(str(refused.value)) < 300, "the message quotes the value cut short"


@pytest.mark.parametrize("text", [" 1/2", "1/2 ", "1 /2", "+1/2", "1/\uff12", "\uff11/2", "1/2/3"])
def test_a_shard_is_ascii_digits_without_spaces(text: str) -> None:
    with pytest.raises(ShardSpecError):
        Shard.parse(text)
    assert Shard.parse("1/2") == Shard(1, 2)
    with pytest.raises(ShardSpecError):
        Shard.parse("1/" + "9" * 5000)  # more digits than int() reads


def test_never_more_workers_than_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-n 8` over three one-cell scenarios forks three workers, not eight."""
    import concurrent.futures

    monkeypatch.chdir(tmp_path)
    for n in range(3):
        Path(f"one-{n}.yaml").write_text(
            LIBRARY.format(n=n, answer="Paris")
            .replace("[js, temporal, dbos]", "[js]")
            .replace("[sqlite, memory]", "[memory]")
        )
    started: list[int | None] = []
    real_pool = concurrent.futures.ProcessPoolExecutor

    def counting_pool(*args: Any, **kwargs: Any) -> Any:
        started.append(kwargs.get("max_workers"))
        return real_pool(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counting_pool)
    result = run(".", "-n", str(min(8, max_workers())), "--json", "report.json")
    assert result.exit_code == 0, result.output
    assert started == [3]
    assert result.output.splitlines()[-1] == "3 passed, 0 failed"
    shards = [run(".", "-n", "2", "--shard", f"{k}/4") for k in (1, 2, 3, 4)]
    assert [shard.exit_code for shard in shards] == [0, 0, 0, 0]
    assert any("holds none of the selected scenarios" in shard.output for shard in shards)


def test_last_failed_refuses_a_fifo_at_once(library: Path) -> None:
    Path(LAST_RUN).parent.mkdir(exist_ok=True)
    Path(LAST_RUN).unlink(missing_ok=True)
    os.mkfifo(LAST_RUN)  # read with a blocking open, it would hang the run for good
    result = run(library, "--last-failed")
    assert result.exit_code == 2
    assert (
        f"error: --last-failed: {Path.cwd() / LAST_RUN}: it is a FIFO (named pipe), not a regular"
        " file; give the path of a JSON file; delete it and run harness run again"
    ) in result.output


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"[" * 100_000 + b"]" * 100_000, ":1:257: the JSON nests deeper than 256 levels"),
        (b'{"cells": [{"id": "\\ud800", "passed": false}]}', ":1:19: a string holds half of"),
        (b'{"cells": [{"id": "a", "passed": 0}]}', "is not the report of a harness run"),
        (b'{"cells": {"id": "a"}}', "is not the report of a harness run"),
        (b"\xff", ":1:1: the file is not UTF-8 (byte 0xff)"),
        (b'{"cells": [], "x": NaN}', "not valid JSON: it holds a number JSON cannot hold"),
    ],
)
def test_last_failed_refuses_a_file_no_run_wrote(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    (tmp_path / LAST_RUN).parent.mkdir()
    (tmp_path / LAST_RUN).write_bytes(content)
    with pytest.raises(LastRunError) as refused:
        failed_last_time(tmp_path)
    assert problem in str(refused.value)
    assert "delete it and run harness run again" in str(refused.value)


def test_last_failed_reads_an_escaped_backslash_as_text(tmp_path: Path) -> None:
    (tmp_path / LAST_RUN).parent.mkdir()
    (tmp_path / LAST_RUN).write_bytes(
        b'{"cells": [{"id": "\\\\ud800 \\ud83d\\ude00", "passed": false}]}'
    )
    assert failed_last_time(tmp_path) == {"\\ud800 \U0001f600"}, "no surrogate: a plain id"


def test_last_failed_without_a_previous_run_says_so(library: Path) -> None:
    shutil.rmtree(".harness", ignore_errors=True)
    result = run(library, "--last-failed")
    assert result.exit_code == 2
    assert "--last-failed: no previous run in" in result.output


def test_the_ci_example_uses_real_options() -> None:
    """Every `harness ...` command of the documented GitHub Actions example parses."""
    import shlex

    import click
    import yaml

    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "github-actions-shards.yml").read_text())
    commands = [
        step["run"].replace("${{ matrix.shard }}", "1")
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if step.get("run", "").startswith("harness ")
    ]
    assert len(commands) == 2
    for command in commands:
        arguments = shlex.split(command)[1:]
        command_: click.Command = main
        name = "harness"
        while isinstance(command_, click.Group):
            name, arguments = arguments[0], arguments[1:]
            command_ = command_.commands[name]
        command_.make_context(name, arguments)  # unknown options raise click.UsageError


def test_a_worker_that_dies_fails_its_cells_and_the_run_reports_every_cell(
    library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers are forked, so a cell that ends its process (as code under test may) is simulated
    by replacing the runner before they start."""
    import os

    from harness.scenarios import parallel
    from harness.scenarios.run import run_cell as real_run_cell

    def dies_on_capital_5(cell: Any, options: Any) -> Any:
        if cell.loaded.scenario.name == "capital-5":
            os._exit(3)
        return real_run_cell(cell, options)

    monkeypatch.setattr(parallel, "run_cell", dies_on_capital_5)
    result = run(library, "-n", "2", "--json", "report.json")
    assert result.exit_code == 1
    cells = json.loads(Path("report.json").read_text())["cells"]
    assert len(cells) == 60, "every cell is reported"
    died = [cell for cell in cells if cell["error_code"] == "worker_died"]
    assert {cell["scenario"] for cell in died} >= {"capital-5"}
    assert "run it with -n 0 to see which cell" in died[0]["error"]


def test_an_empty_shard_passes_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More CI runners than scenarios: a shard with nothing to run is not a failure."""
    monkeypatch.chdir(tmp_path)
    Path("one.yaml").write_text(LIBRARY.format(n=0, answer="Paris"))
    results = [run("one.yaml", "--shard", f"{k}/4", "--json", f"s{k}.json") for k in (1, 2, 3, 4)]
    assert [result.exit_code for result in results] == [0, 0, 0, 0]
    empty = [
        result for result in results if "holds none of the selected scenarios" in result.output
    ]
    assert len(empty) == 3
    assert all(result.output.splitlines()[-1] == "0 passed, 0 failed" for result in empty)
    merged = CliRunner().invoke(main, ["report", "merge", *(f"s{k}.json" for k in (1, 2, 3, 4))])
    assert merged.exit_code == 0
    assert "4 report(s), 6 cells: 6 passed, 0 failed, 0 skipped" in merged.output
