"""The committed record schemas under schemas/ are what the models generate today."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from harness.cli import main
from harness.protocol.chunks import ForcedCompletionChunk
from harness.protocol.envelope import ArtifactRef
from harness.protocol.forced import ForcedCompletionState
from harness.protocol.outcome import AgentOutcome, EndTurn
from harness.schemas import RECORD_SCHEMAS, record_schema, record_schema_text

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
FIX = "regenerate them with `.venv/bin/harness schema records` and commit schemas/"


@pytest.mark.parametrize("name", list(RECORD_SCHEMAS))
def test_committed_schema_matches_the_model(name: str) -> None:
    path = SCHEMAS / f"{name}.schema.json"
    assert path.is_file(), f"{path} is missing; {FIX}"
    committed = path.read_text(encoding="utf-8")
    assert committed == record_schema_text(name), (
        f"{path} no longer matches its model (a wire record changed); {FIX}"
    )


@pytest.mark.parametrize("name", list(RECORD_SCHEMAS))
def test_every_schema_is_valid_draft_2020_12(name: str) -> None:
    schema = record_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_no_stray_schema_files() -> None:
    committed = {path.name for path in SCHEMAS.glob("*.schema.json")}
    assert committed == {f"{name}.schema.json" for name in RECORD_SCHEMAS}


def test_records_validate_against_their_schemas() -> None:
    outcome = AgentOutcome.new("a\nb", "b", EndTurn(), "sess-1")
    record = json.loads(outcome.into_payload().bytes)
    Draft202012Validator(record_schema("agent-outcome")).validate(record)
    stale = {key: value for key, value in record.items() if key != "session_id"}
    assert not Draft202012Validator(record_schema("agent-outcome")).is_valid(stale)
    ref = ArtifactRef.for_payload({"a": 1}, artifact_id="a", version_id="v")
    Draft202012Validator(record_schema("artifact-ref")).validate(ref.model_dump(mode="json"))
    state = ForcedCompletionState(trigger="max_steps", max_attempts=2)
    Draft202012Validator(record_schema("forced-completion-state")).validate(
        state.model_dump(mode="json")
    )
    chunk = ForcedCompletionChunk(phase="started", trigger="max_steps", max_attempts=2)
    validator = Draft202012Validator(record_schema("stream-chunk"))
    assert validator.is_valid(chunk.model_dump(mode="json"))
    assert not validator.is_valid({"kind": "no_such_chunk"})


def test_schema_records_writes_one_file_per_record(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["schema", "records", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    for name in RECORD_SCHEMAS:
        assert (tmp_path / f"{name}.schema.json").read_text() == record_schema_text(name)
    again = CliRunner().invoke(main, ["schema", "records", "--out", str(tmp_path)])
    assert again.output.count("unchanged") == len(RECORD_SCHEMAS)


def test_schema_without_subcommand_still_prints_the_scenario_schema() -> None:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0
    committed = (SCHEMAS.parent / "scenarios" / "scenario.schema.json").read_text()
    assert json.loads(result.output) == json.loads(committed)
