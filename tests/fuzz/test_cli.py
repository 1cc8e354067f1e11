"""Misusing the command line: every invocation ends with exit 0, 1 or 2 and a message, never a
traceback. A table of known misuses, then hypothesis over random argument lists."""

from __future__ import annotations

import copy
import json
import os
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main

SCENARIO = """\
- name: tiny
  stores: [memory]
  script: [{text: It is Paris.}]
  agent: {user_message: "Capital?"}
  expect: {status: completed}
"""


@pytest.fixture(scope="module")
def playground(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder with one of everything a command may be pointed at."""
    folder = tmp_path_factory.mktemp("cli-misuse")
    (folder / "tiny.yaml").write_text(SCENARIO, encoding="utf-8")
    (folder / "empty.json").write_bytes(b"")
    (folder / "text.json").write_text("not json", encoding="utf-8")
    (folder / "cassette.json").write_text(
        '{"format": "harness-cassette/1", "metadata": {"harness_version": "0", '
        '"recorded_at": "2026-01-01T00:00:00+00:00"}, "interactions": []}\n',
        encoding="utf-8",
    )
    (folder / "folder").mkdir()
    os.mkfifo(folder / "fifo.yaml")
    os.mkfifo(folder / "fifo.json")
    previous = Path.cwd()
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(previous)


def invoke(arguments: list[str]) -> Result:
    return CliRunner().invoke(main, arguments, catch_exceptions=True)


def assert_clean(result: Result, arguments: list[str]) -> None:
    assert result.exit_code in (0, 1, 2), (arguments, result.exit_code, result.output)
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), (
            f"{arguments!r} raised {type(result.exception).__name__}: {result.exception}"
        )
    assert "Traceback" not in result.output


MISUSES: list[list[str]] = [
    ["run", "/proc/self/status"],
    ["run", "/dev/null"],
    ["run", "fifo.yaml"],
    ["run", "folder"],
    ["run", "nowhere"],
    ["run", "tiny.yaml", "--json", "/proc/report.json"],
    ["run", "tiny.yaml", "--json", "/dev/null"],
    ["run", "tiny.yaml", "--json", "x.json", "--junit-xml", "x.json"],
    ["run", "tiny.yaml", "--store-url", "sqlite:///"],
    ["run", "tiny.yaml", "--store-url", "sqlite:////proc/runs.sqlite3", "--store", "sqlite"],
    ["run", "tiny.yaml", "--store-url", "postgresql://x:y@[::1"],
    ["run", "tiny.yaml", "--store-url", "redis://h:99999999"],
    ["run", "tiny.yaml", "--store-url", "ftp://x"],
    ["run", "tiny.yaml", "-k", "(("],
    ["run", "tiny.yaml", "-k", "and or"],
    ["run", "tiny.yaml", "--record-mode", "sometimes"],
    ["record", "tiny.yaml", "--provider", "openai"],
    ["record", "fifo.yaml", "--provider", "anthropic"],
    ["cassettes", "verify", "/dev/null"],
    ["cassettes", "verify", "fifo.json"],
    ["cassettes", "verify", "folder"],
    ["cassettes", "verify", "text.json", "empty.json"],
    ["cassettes", "show", "/dev/null"],
    ["cassettes", "show", "fifo.json"],
    ["cassettes", "show", "folder"],
    ["cassettes", "stats", "fifo.json"],
    ["cassettes", "stats", "/proc/self/status"],
    ["cassettes", "diff", "cassette.json", "text.json"],
    ["cassettes", "diff", "fifo.json", "cassette.json"],
    ["cassettes", "import-vcr", "tiny.yaml", "--out", "/dev/null"],
    ["cassettes", "import-vcr", "tiny.yaml", "--out", "/proc/imported"],
    ["cassettes", "import-vcr", "tiny.yaml", "--out", "cassette.json"],
    ["cassettes", "import-vcr", "fifo.yaml", "--out", "imported"],
    ["cassettes", "import-vcr", "/dev/null", "--out", "imported"],
    ["schema", "records", "--out", "/proc/schemas"],
    ["schema", "records", "--out", "cassette.json"],
    ["schema", "records", "--out", "/dev/null"],
    ["stores", "check", ""],
    ["stores", "check", "sqlite://"],
    ["stores", "check", "sqlite:////proc/self/status"],
    ["stores", "check", "sqlite:///fifo.json"],
    ["stores", "check", "sqlite:///folder"],
    ["stores", "check", "redis://:999999"],
    ["stores", "check", "postgresql://x:y@[::1"],
    ["run", "\x00"],
    ["run", "tiny.yaml", "-n", "10000"],
    ["run", "tiny.yaml", "-n", "9" * 5000],
    ["run", "tiny.yaml", "-n", "\uff12"],
    ["run", "tiny.yaml", "--shard", " 1/2"],
    ["report", "merge", "fifo.json"],
    ["report", "merge", "text.json", "--junit-xml", "m.xml"],
    ["report", "merge", "empty.json"],
    ["report", "merge", "folder"],
    ["run", "tiny.yaml", "--json", "r\x00.json"],
    ["run", "tiny.yaml", "--store-url", "sqlite:///a\x00.sqlite3", "--store", "sqlite"],
    ["stores", "check", "sqlite:///a\x00b"],
    ["cassettes", "verify", "a\x00"],
    ["cassettes", "import-vcr", "tiny.yaml", "--out", "o\x00"],
    ["schema", "records", "--out", "o\x00"],
    ["modules", "show", ""],
    ["modules", "show", "\x00"],
]


@pytest.mark.parametrize("arguments", MISUSES, ids=lambda arguments: " ".join(arguments))
def test_a_misuse_exits_cleanly(playground: Path, arguments: list[str]) -> None:
    result = invoke(arguments)
    assert_clean(result, arguments)
    assert result.exit_code != 0 or arguments[0] in {"run", "schema"}, result.output


WORDS = st.sampled_from(
    [
        "run",
        "cassettes",
        "verify",
        "show",
        "stats",
        "diff",
        "import-vcr",
        "schema",
        "records",
        "stores",
        "check",
        "modules",
        "list",
        "report",
        "merge",
        "-n",
        "--shard",
        "--last-failed",
        "--json",
        "--junit-xml",
        "--out",
        "--store-url",
        "--store",
        "--runtime",
        "--record-mode",
        "-k",
        "tiny.yaml",
        "cassette.json",
        "text.json",
        "empty.json",
        "folder",
        "fifo.json",
        "fifo.yaml",
        "/dev/null",
        "/proc/self/status",
        "sqlite:///folder",
        "memory://",
        "redis://h:0",
        "nowhere",
        "",
        "-",
        "--",
        "sqlite",
        "js",
    ]
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(WORDS | st.text(max_size=8), min_size=1, max_size=6))
def test_any_argument_list_exits_cleanly(playground: Path, arguments: list[str]) -> None:
    if arguments[:1] == ["record"]:
        return  # needs a provider key; covered by the table above
    assert_clean(invoke(arguments), arguments)


# -- JSON files the harness reads: report merge and --last-failed ---------------------------------

JSON_PIECES = st.sampled_from(
    [b"{", b"}", b"[", b"]", b'"cells"', b'"id"', b'"passed"', b'"line"', b'"file"', b":",
     b",", b" ", b"\n", b"true", b"false", b"null", b"0", b"-1", b"1e999", b"NaN", b"Infinity",
     b'"x"', b'"\\ud800"', b'"\\udc00"', b'"\\ud83d\\ude00"', b'"\\\\ud800"', b"\xff",
     b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00", b'"a\x01"', b"9" * 5000]
)  # fmt: skip
FINITE_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)
NESTED = st.integers(min_value=200, max_value=20_000).map(lambda depth: b"[" * depth + b"]" * depth)


@pytest.fixture(scope="module")
def valid_report(playground: Path) -> dict[str, Any]:
    """The --json report of a run in the playground, for structured mutations."""
    result = invoke(["run", "tiny.yaml", "--json", "valid.json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads((playground / "valid.json").read_text(encoding="utf-8"))
    return report


@st.composite
def mutated_reports(draw: st.DrawFn, report: dict[str, Any]) -> bytes:
    """`report` with one member of the report or of its cell replaced, added or removed."""
    changed = copy.deepcopy(report)
    target = draw(st.sampled_from([changed, changed["cells"][0]]))
    name = draw(st.sampled_from([*target, "extra"]))
    if draw(st.booleans()) and name in target:
        del target[name]
    else:
        target[name] = draw(FINITE_JSON)
    return json.dumps(changed, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


def hostile_json(report: dict[str, Any]) -> st.SearchStrategy[bytes]:
    return (
        st.binary(max_size=100)
        | st.lists(JSON_PIECES, max_size=30).map(b"".join)
        | NESTED
        | mutated_reports(report)
    )


def assert_result_or_error_line(result: Result, arguments: list[str]) -> None:
    assert_clean(result, arguments)
    if result.exit_code == 2:
        assert result.output.startswith("error: "), result.output
        assert len(result.output.splitlines()) == 1, result.output


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_bytes_as_a_report_merge_or_exit_2(
    playground: Path, valid_report: dict[str, Any], data: st.DataObject
) -> None:
    content = data.draw(hostile_json(valid_report))
    (playground / "hostile.json").write_bytes(content)
    arguments = ["report", "merge", "hostile.json", "--json", "m.json", "--junit-xml", "m.xml"]
    result = invoke(arguments)
    assert_result_or_error_line(result, arguments)
    if result.exit_code != 2:
        ElementTree.parse(playground / "m.xml")  # the JUnit XML is well formed
        json.loads((playground / "m.json").read_text(encoding="utf-8"))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_bytes_as_the_last_run_run_or_exit_2(
    playground: Path, valid_report: dict[str, Any], data: st.DataObject
) -> None:
    content = data.draw(hostile_json(valid_report))
    (playground / ".harness").mkdir(exist_ok=True)
    (playground / ".harness" / "last-run.json").write_bytes(content)
    arguments = ["run", "tiny.yaml", "--last-failed"]
    result = invoke(arguments)
    assert_result_or_error_line(result, arguments)
    if result.exit_code == 2:
        assert result.output.startswith("error: --last-failed: ")


def test_a_fifo_as_the_last_run_exits_2_at_once(playground: Path) -> None:
    last_run = playground / ".harness" / "last-run.json"
    last_run.parent.mkdir(exist_ok=True)
    last_run.unlink(missing_ok=True)
    os.mkfifo(last_run)
    try:
        result = invoke(["run", "tiny.yaml", "--last-failed"])
    finally:
        last_run.unlink()
    assert result.exit_code == 2
    assert "it is a FIFO (named pipe), not a regular file" in result.output
