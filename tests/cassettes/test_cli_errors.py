"""`harness cassettes ...` and `harness schema records` over paths that are not what they should
be: a one-line `error:` and exit 2 for invalid input, exit 1 for verify problems, never a
traceback."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from harness.cassettes.cassette import MAX_BYTES_VARIABLE
from harness.cli import main
from tests.support.cassette_files import edit_cassette, record_every_shape


def run(*arguments: str, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(main, list(arguments), env=env)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return record_every_shape(tmp_path / "good" / "every.json")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


def special_paths(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    return {"fifo": fifo, "device": Path("/dev/null")}


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(lambda p, good: ["cassettes", "verify", str(p)], id="verify"),
        pytest.param(lambda p, good: ["cassettes", "show", str(p)], id="show"),
        pytest.param(lambda p, good: ["cassettes", "stats", str(p)], id="stats"),
        pytest.param(lambda p, good: ["cassettes", "diff", str(p), str(good)], id="diff-a"),
        pytest.param(lambda p, good: ["cassettes", "diff", str(good), str(p)], id="diff-b"),
    ],
)
def test_a_special_file_is_invalid_input(
    tmp_path: Path, good: Path, kind: str, command: Callable[[Path, Path], list[str]]
) -> None:
    path = special_paths(tmp_path)[kind]
    result = run(*command(path, good))
    assert result.exit_code == 2, result.output
    assert f"error: cassette {path} is a " in result.output
    assert "not a cassette file" in result.output


@pytest.mark.parametrize("command", ["show", "diff"])
def test_a_folder_where_a_file_is_needed_is_invalid_input(tmp_path: Path, command: str) -> None:
    arguments = [str(tmp_path)] * (2 if command == "diff" else 1)
    result = run("cassettes", command, *arguments)
    assert result.exit_code == 2
    assert "is a directory" in result.output


def test_verify_and_stats_read_folders_skipping_what_is_not_a_file(good: Path, fifo: Path) -> None:
    os.rename(fifo, good.parent / "pipe.json")  # a FIFO named like a cassette, inside the folder
    verified = run("cassettes", "verify", str(good.parent))
    assert verified.exit_code == 0, verified.output
    assert "1 cassette(s) verified" in verified.output
    stats = run("cassettes", "stats", str(good.parent))
    assert stats.exit_code == 0, stats.output
    assert stats.output.count("openai") == 1, "one row: the FIFO is not a cassette"


def test_verify_reports_content_problems_with_exit_1(good: Path) -> None:
    edit_cassette(good, lambda d: d["interactions"][1]["response"].update(status=99))
    result = run("cassettes", "verify", str(good))
    assert result.exit_code == 1
    assert "invalid interaction #1 at response.status" in result.output
    deep = good.parent / "deep.json"
    deep.write_text('{"format": "harness-cassette/1", "interactions": ' + "[" * 2_000)
    result = run("cassettes", "verify", str(good.parent))
    assert result.exit_code == 1
    assert "nested deeper than 256 levels" in result.output
    assert "2 problem(s) in 2 cassette(s)" in result.output


def test_a_cassette_over_the_size_limit_is_invalid_input(good: Path) -> None:
    for command in (["verify"], ["show"], ["stats"], ["diff", str(good)]):
        result = run("cassettes", *command, str(good), env={MAX_BYTES_VARIABLE: "10"})
        assert result.exit_code == 2, (command, result.output)
        assert f"error: cassette {good} is " in result.output
        assert "over the 10-byte limit" in result.output
    result = run("cassettes", "verify", str(good), env={MAX_BYTES_VARIABLE: "ten"})
    assert result.exit_code == 2
    assert f"error: expected a whole number of bytes above 0 but got {MAX_BYTES_VARIABLE}=" in (
        result.output
    )


def test_show_stats_and_diff_refuse_invalid_shapes_with_exit_2(good: Path) -> None:
    edit_cassette(good, lambda d: d["interactions"][0].update(request="GET /"))
    for command in (["show"], ["stats"], ["diff", str(good)]):
        result = run("cassettes", *command, str(good))
        assert result.exit_code == 2, (command, result.output)
        assert "invalid interaction #0 at request" in result.output


@pytest.fixture
def vcr_source(tmp_path: Path) -> Path:
    source = tmp_path / "src" / "one.yaml"
    source.parent.mkdir()
    interaction = {
        "request": {"method": "GET", "uri": "https://api.openai.com/v1/models", "headers": {}},
        "response": {"status": {"code": 200}, "headers": {}, "body": {"string": "{}"}},
    }
    source.write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    return source


@pytest.mark.parametrize(
    ("out", "complaint"),
    [
        pytest.param("/proc/harness-out", "error: cassette /proc/harness-out/one.json", id="proc"),
        pytest.param("/proc/self", "error: cassette /proc/self/one.json", id="proc-self"),
    ],
)
def test_import_vcr_into_an_unwritable_folder_is_invalid_input(
    vcr_source: Path, out: str, complaint: str
) -> None:
    result = run("cassettes", "import-vcr", str(vcr_source), "--out", out)
    assert result.exit_code == 2, result.output
    assert complaint in result.output


def test_import_vcr_out_naming_a_file_or_an_output_naming_a_folder_is_invalid_input(
    vcr_source: Path, tmp_path: Path
) -> None:
    existing = tmp_path / "file"
    existing.write_text("")
    result = run("cassettes", "import-vcr", str(vcr_source), "--out", str(existing))
    assert result.exit_code == 2
    assert "is a file" in result.output
    (tmp_path / "out" / "one.json").mkdir(parents=True)
    result = run("cassettes", "import-vcr", str(vcr_source), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert f"error: cassette {tmp_path / 'out' / 'one.json'} is a folder" in result.output


def test_import_vcr_of_a_special_file_is_invalid_input(tmp_path: Path, fifo: Path) -> None:
    result = run("cassettes", "import-vcr", str(fifo), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "error: expected an existing cassette file or folder" in result.output


@pytest.mark.parametrize("out", ["/proc/harness-schemas", "/proc/self"])
def test_schema_records_into_an_unwritable_folder_is_invalid_input(out: str) -> None:
    result = run("schema", "records", "--out", out)
    assert result.exit_code == 2, result.output
    assert f"error: cannot write the schemas into {out}: " in result.output


def test_schema_records_into_a_file_is_invalid_input(tmp_path: Path) -> None:
    existing = tmp_path / "file"
    existing.write_text("")
    result = run("schema", "records", "--out", str(existing))
    assert result.exit_code == 2
    assert "is a file" in result.output
    result = run("schema", "records", "--out", str(existing / "below"))
    assert result.exit_code == 2
    assert f"error: cannot write the schemas into {existing / 'below'}: " in result.output
