"""Loading scenario files: one or many per file, and errors located at file:line:column."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenarios import RunOptions, ScenarioFileError, expand, load_scenarios, run_scenario

GOOD = """\
name: ok
kind: completion
input: {agentFinalAnswer: hi}
expect:
  outputs: {finalAnswer: hi, agentOutcome: final_answer}
"""

AGENT = """\
name: agent-ok
runtimes: [js, temporal]
stores: [memory, sqlite]
script:
  - text: done
agent:
  user_message: hi
expect:
  status: completed
  outcome_record: {final_message: done}
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
    assert all(r.passed for item in loaded for r in run_scenario(item))


def test_the_matrix_expands_runtime_by_store(tmp_path: Path) -> None:
    loaded = load_scenarios([write(tmp_path, AGENT)])
    cells = expand(loaded, RunOptions(workdir=tmp_path))
    assert [c.id for c in cells] == [
        "agent-ok[js-memory]",
        "agent-ok[js-sqlite]",
        "agent-ok[temporal-memory]",
        "agent-ok[temporal-sqlite]",
    ]
    assert [c.id for c in expand(loaded, RunOptions(runtimes=["temporal"], stores=["memory"]))] == [
        "agent-ok[temporal-memory]"
    ]
    results = [r for item in loaded for r in run_scenario(item, RunOptions(workdir=tmp_path))]
    assert all(r.passed for r in results), [r.mismatches for r in results]
    assert list((tmp_path / ".harness").glob("runs*.sqlite3")), "SQLite is the default store"


def test_an_unknown_key_is_located_and_a_close_one_suggested(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("  outputs:", "  outptus:"))
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    message = str(caught.value)
    assert message.startswith(f"{path}:5:3: expect.outptus: unknown key 'outptus'")
    assert "did you mean 'outputs'?" in message


def test_unknown_keys_deep_in_lists_are_located(tmp_path: Path) -> None:
    text = AGENT.replace(
        "  user_message: hi\n", "  user_message: hi\n  tools:\n    - {name: s, reslt: 1}\n"
    )
    path = write(tmp_path, text)
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    assert f"{path}:9:17:" in str(caught.value)
    assert "agent.tools.0.reslt: unknown key 'reslt'; did you mean 'result'?" in str(caught.value)


def test_a_wrong_type_says_what_was_expected_and_found(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\nkind: completion\ninput: [1]\n")
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    assert f"{path}:3:8: input: Input should be a valid dictionary (found [1])" in str(caught.value)


def test_inconsistent_scenarios_are_refused(tmp_path: Path) -> None:
    no_replies = write(tmp_path, "name: x\nagent: {}\n", "a.yaml")
    with pytest.raises(ScenarioFileError, match="needs the model's replies"):
        load_scenarios([no_replies])
    both = write(tmp_path, AGENT + "cassette: x.json\n", "b.yaml")
    with pytest.raises(ScenarioFileError, match="either cassette or script"):
        load_scenarios([both])
    runtime = write(tmp_path, AGENT.replace("temporal", "lambda"), "c.yaml")
    with pytest.raises(ScenarioFileError, match=r"runtimes\.1"):
        load_scenarios([runtime])


def test_invalid_yaml_and_empty_files_are_errors(tmp_path: Path) -> None:
    bad = write(tmp_path, "name: [unclosed\n", "bad.yaml")
    with pytest.raises(ScenarioFileError, match=r"bad.yaml:2:1: invalid YAML"):
        load_scenarios([bad])
    empty = write(tmp_path, "", "empty.yaml")
    with pytest.raises(ScenarioFileError, match="the file is empty"):
        load_scenarios([empty])
    with pytest.raises(ScenarioFileError, match="no such file"):
        load_scenarios([tmp_path / "missing.yaml"])


def test_mismatches_carry_expected_actual_and_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("finalAnswer: hi,", "finalAnswer: bye,"))
    loaded = load_scenarios([path])[0]
    result = run_scenario(loaded)[0]
    assert not result.passed
    assert [m.key for m in result.mismatches] == ["outputs"]
    assert result.mismatches[0].actual == {"finalAnswer": "hi", "agentOutcome": "final_answer"}
    assert loaded.line_of("outputs") == 5


def test_a_file_that_is_not_utf8_is_located(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: v\ndescription: caf\xe9\n")
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    assert str(caught.value) == (
        f"{path}:2:17: the file is not UTF-8 (byte 0xe9); save it as UTF-8"
    )


def test_model_ids_must_be_uuids_when_the_file_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "name: d\nkind: decision\ninput: {agentTask: t}\nmodels:\n  - {id: not-a-uuid, name: m}\n"
        "session: {default_llm_details_id: 7}\nscript: [{text: done}]\n",
    )
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    message = str(caught.value)
    assert f"{path}:5:10: models.0.id: Input should be a valid UUID" in message
    assert "session.default_llm_details_id: UUID input should be" in message


def test_an_invalid_output_schema_fails_at_its_key_before_anything_runs(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        AGENT.replace("  user_message: hi\n", "  user_message: hi\n  output_schema: {type: 12}\n"),
    )
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    assert f"{path}:8:18: agent.output_schema: Value error, output_schema is not a valid JSON" in (
        str(caught.value)
    )


def test_every_library_scenario_validates_against_the_published_schema() -> None:
    import json

    import yaml
    from jsonschema import Draft202012Validator

    root = Path(__file__).resolve().parents[2] / "scenarios"
    validator = Draft202012Validator(json.loads((root / "scenario.schema.json").read_text()))
    files = sorted(root.rglob("*.yaml"))
    assert files
    for path in files:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert errors == [], f"{path}: an editor using the schema would flag {errors[:2]}"


def test_a_repeated_key_is_an_error_not_a_silently_dropped_expectation(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "expect:\n  status: completed\n")
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    assert str(caught.value) == (
        f"{path}:6:1: key 'expect' is repeated (first at line 4); YAML would keep only the last one"
    )
    nested = write(tmp_path, "- name: a\n  agent: {user_message: x, user_message: y}\n", "n.yaml")
    with pytest.raises(ScenarioFileError, match=r"n.yaml:2:28: key 'user_message' is repeated"):
        load_scenarios([nested])
