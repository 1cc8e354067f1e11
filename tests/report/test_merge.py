"""`harness report merge` on reports it did not expect: every text it writes goes through the
scrubber (the JUnit XML too), and a report that is not one, too deep, not Unicode, not a regular
file or too large exits 2 with an `error:` line naming the file, never a traceback."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from harness.cli import main

SCENARIO = """\
- name: capital
  stores: [memory]
  script: [{text: It is Lyon.}]
  agent: {user_message: "Capital?"}
  expect: {outcome_record: {final_message: It is Paris.}}
"""
CANARY = "gsk_" + "9e4f" * 10
"""The environment's key when the reports are merged, shaped like no known key."""
SHAPED = "sk-proj-" + "Mrg1" * 6


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The --json report of a run with one failing cell, in the current folder."""
    monkeypatch.chdir(tmp_path)
    Path("capital.yaml").write_text(SCENARIO, encoding="utf-8")
    result = CliRunner().invoke(main, ["run", "capital.yaml", "--json", "run.json"])
    assert result.exit_code == 1, result.output
    written: dict[str, Any] = json.loads(Path("run.json").read_text(encoding="utf-8"))
    return written


def merge(*arguments: str) -> Result:
    return CliRunner().invoke(main, ["report", "merge", *arguments])


def test_merged_reports_hold_no_key_in_any_text(
    report: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a report written where the key was not a secret (or edited): merging redacts it anyway
    (cell,) = report["cells"]
    cell["id"] = f"capital-{SHAPED}[js-memory]"
    cell["file"] = f"{CANARY}/capital.yaml"
    cell["failure_lines"].append(f"the model said {CANARY} and {SHAPED}")
    errored = dict(cell, id="errored", passed=False, error=f"E: {CANARY}\nmore", line=9)
    skipped = dict(cell, id="skipped", skipped=f"needs {SHAPED}", line=10)
    report["cells"] += [errored, skipped]
    Path("raw.json").write_text(json.dumps(report), encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    result = merge("raw.json", "--json", "all.json", "--junit-xml", "all.xml")
    assert result.exit_code == 1, result.output
    for written in ("all.xml", "all.json"):
        text = Path(written).read_text(encoding="utf-8")
        assert CANARY not in text
        assert SHAPED not in text
        assert "the model said [SCRUBBED] and [SCRUBBED]" in text
    suite = ElementTree.parse("all.xml").getroot()
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"capital-[SCRUBBED][js-memory]", "errored", "skipped"}
    error = cases["errored"].find("error")
    assert error is not None
    assert error.get("message") == "E: [SCRUBBED]"
    skip = cases["skipped"].find("skipped")
    assert skip is not None
    assert skip.get("message") == "needs [SCRUBBED]"
    assert cases["errored"].get("file") == "[SCRUBBED]/capital.yaml"


DEEP = b'{"cells": ' + b"[" * 5000 + b"]" * 5000 + b"}"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (DEEP, "bad.json:1:266: the JSON nests deeper than 256 levels"),
        (b'{"cells": [], "x": "\\ud800"}', "bad.json:1:20: a string holds half of a UTF-16"),
        (b'{"cells": [], "x": "\\udc00\\ud800"}', "bad.json:1:20: a string holds half of"),
        (b'{"cells": [], "x": "\xed\xa0\x80"}', "bad.json:1:21: the file is not UTF-8 (byte 0xed)"),
        (b"\xef\xbb\xbf{}", "bad.json:1:1: not valid JSON"),
        (b'{"cells": [], "x": 1e999}', "bad.json: not valid JSON: it holds a number JSON cannot"),
        (b"", "bad.json:1:1: not valid JSON (Expecting value)"),
        (b"[]", "bad.json: not a harness run --json report (it holds an array, not an object)"),
        (b"null", "(it holds null, not an object)"),
        (b'{"cells": {}}', "(at cells: Input should be a valid list)"),
        (b'{"cells": [{"id": 1}]}', "(at cells.0.id: Input should be a valid string)"),
    ],
)
def test_a_file_that_is_no_report_exits_2_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.json").write_bytes(content)
    result = merge("bad.json", "--json", "all.json", "--junit-xml", "all.xml")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ")
    assert problem in result.output
    assert "merge the files --json wrote" in result.output
    assert not Path("all.json").exists()
    assert not Path("all.xml").exists()


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("line", "3", "at cells.0.line: Input should be a valid integer"),
        ("line", True, "at cells.0.line: Input should be a valid integer"),
        ("duration_seconds", "0.1", "at cells.0.duration_seconds: Input should be a valid number"),
        ("failure_lines", [1], "at cells.0.failure_lines.0: Input should be a valid string"),
        ("error", ["E"], "at cells.0.error: Input should be a valid string"),
        ("passed", "yes", "at cells.0.passed: Input should be a valid boolean"),
        ("file", None, "at cells.0.file: Input should be a valid string"),
    ],
)
def test_a_cell_of_the_wrong_shape_exits_2_naming_the_field(
    report: dict[str, Any], field: str, value: Any, problem: str
) -> None:
    report["cells"][0][field] = value
    Path("odd.json").write_text(json.dumps(report), encoding="utf-8")
    result = merge("odd.json", "--junit-xml", "all.xml")
    assert result.exit_code == 2, result.output
    assert f"error: odd.json: not a harness run --json report ({problem}" in result.output


def test_a_cell_without_a_field_exits_2_naming_it(report: dict[str, Any]) -> None:
    del report["cells"][0]["failure_lines"]
    Path("short.json").write_text(json.dumps(report), encoding="utf-8")
    result = merge("short.json")
    assert result.exit_code == 2
    assert "(at cells.0.failure_lines: Field required)" in result.output


def test_a_fifo_a_folder_and_a_missing_file_exit_2_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")
    for name, problem in [
        ("fifo.json", "it is a FIFO (named pipe), not a regular file; give the path of a JSON"),
        ("missing.json", "missing.json: no such file"),
    ]:
        result = merge(str(tmp_path / name))
        assert result.exit_code == 2, result.output
        assert problem in result.output


def test_a_report_over_the_size_limit_exits_2_saying_how_to_raise_it(
    report: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MAX_JSON_BYTES", "100")
    result = merge("run.json")
    assert result.exit_code == 2
    assert (
        "error: run.json: the file is larger than 100 bytes; set HARNESS_MAX_JSON_BYTES to a "
        "larger number of bytes to read it; merge the files --json wrote"
    ) in result.output
    monkeypatch.setenv("HARNESS_MAX_JSON_BYTES", "lots")
    result = merge("run.json")
    assert result.exit_code == 2
    assert (
        "error: expected a whole number of at least 1 but got HARNESS_MAX_JSON_BYTES='lots'"
    ) in result.output
    monkeypatch.delenv("HARNESS_MAX_JSON_BYTES")
    assert merge("run.json").exit_code == 1, "within the default limit it merges"
