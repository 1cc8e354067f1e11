"""Completion scenarios: loading with located errors, running, and the `harness run` command."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.scenarios import ScenarioFileError, load_scenarios, run_scenario

GOOD = """\
name: ok
kind: completion
input: {agentFinalAnswer: hi}
expect:
  outputs: {finalAnswer: hi, agentOutcome: final_answer}
"""


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_holds_one_scenario_or_a_list(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "one.yaml")
    write(tmp_path, "- " + GOOD.replace("\n", "\n  ").rstrip() + "\n", "list.yml")
    loaded = load_scenarios([tmp_path])
    assert [item.path.name for item in loaded] == ["list.yml", "one.yaml"]
    assert all(run_scenario(item.scenario).passed for item in loaded)


def test_an_unknown_key_is_located_and_a_close_one_suggested(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("  outputs:", "  output:"))
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    message = str(caught.value)
    assert message.startswith(f"{path}:5:3: expect.output: unknown key 'output'")
    assert "did you mean 'outputs'?" in message


def test_a_missing_key_and_a_wrong_type_are_located(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\nkind: completion\ninput: [1]\n")
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    message = str(caught.value)
    assert f"{path}:3:8: input: Input should be a valid dictionary (found [1])" in message
    assert "expect: required key is missing" in message


def test_invalid_yaml_and_empty_files_are_errors(tmp_path: Path) -> None:
    bad = write(tmp_path, "name: [unclosed\n", "bad.yaml")
    with pytest.raises(ScenarioFileError, match=r"bad.yaml:2:1: invalid YAML"):
        load_scenarios([bad])
    empty = write(tmp_path, "", "empty.yaml")
    with pytest.raises(ScenarioFileError, match="the file is empty"):
        load_scenarios([empty])
    with pytest.raises(ScenarioFileError, match="no such file"):
        load_scenarios([tmp_path / "missing.yaml"])


def test_an_unknown_kind_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("kind: completion", "kind: teleport"))
    with pytest.raises(ScenarioFileError, match="kind"):
        load_scenarios([path])


def test_failure_fields_need_a_failed_status(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("  outputs:", "  error_code: x\n  outputs:"))
    with pytest.raises(ScenarioFileError, match="need status: failed"):
        load_scenarios([path])


def test_mismatches_say_expected_and_actual(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("finalAnswer: hi", "finalAnswer: bye"))
    result = run_scenario(load_scenarios([path])[0].scenario)
    assert not result.passed
    assert [m.key for m in result.mismatches] == ["outputs"]
    assert result.mismatches[0].actual == {"finalAnswer": "hi", "agentOutcome": "final_answer"}

    failing = write(tmp_path, GOOD.replace("input: {agentFinalAnswer: hi}", "input: {}"), "f.yaml")
    result = run_scenario(load_scenarios([failing])[0].scenario)
    assert [(m.key, m.actual) for m in result.mismatches] == [
        ("status", "failed"),
        ("outputs", {}),
    ]
    expects_failure = write(
        tmp_path,
        GOOD.replace(
            "  outputs: {finalAnswer: hi, agentOutcome: final_answer}", "  status: failed"
        ),
        "g.yaml",
    )
    result = run_scenario(load_scenarios([expects_failure])[0].scenario)
    assert [(m.key, m.actual) for m in result.mismatches] == [("status", "completed")]


def test_harness_run_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    good = write(tmp_path, GOOD, "good.yaml")
    result = runner.invoke(main, ["run", str(good)])
    assert result.exit_code == 0, result.output
    assert "1 passed, 0 failed" in result.output

    bad = write(tmp_path, GOOD.replace("finalAnswer: hi", "finalAnswer: bye"), "bad.yaml")
    result = runner.invoke(main, ["run", str(bad)])
    assert result.exit_code == 1
    assert "expect.outputs: expected" in result.output

    invalid = write(tmp_path, "name: x\n", "invalid.yaml")
    result = runner.invoke(main, ["run", str(invalid)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output

    empty_dir = tmp_path / "none"
    empty_dir.mkdir()
    result = runner.invoke(main, ["run", str(empty_dir)])
    assert result.exit_code == 2
    assert "no scenario files" in result.output


def test_the_repository_scenarios_pass() -> None:
    root = Path(__file__).resolve().parents[2] / "scenarios"
    result = CliRunner().invoke(main, ["run", str(root)])
    assert result.exit_code == 0, result.output
