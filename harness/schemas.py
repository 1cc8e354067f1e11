"""The JSON Schemas (draft 2020-12) of the public records: one table says which records there are,
what each one is and which model defines it; `harness schema records` writes one file per record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import TypeAdapter

from harness.cassettes.cassette import CassetteDocument
from harness.protocol.chunks import StreamChunk
from harness.protocol.decision import AgentDecision
from harness.protocol.envelope import AgentOutputEnvelope, ArtifactRef
from harness.protocol.forced import ForcedCompletionState
from harness.protocol.outcome import AgentOutcome
from harness.scenarios.format import Scenario

JSON_SCHEMA_DRAFT: Final = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True, kw_only=True)
class RecordSchema:
    """One public record: the type that validates it, and the description its schema carries
    when the type has no docstring of its own (a union such as `StreamChunk`)."""

    type: Any
    description: str
    title: str | None = None


RECORD_SCHEMAS: Final[Mapping[str, RecordSchema]] = {
    "agent-outcome": RecordSchema(
        type=AgentOutcome,
        description="The agent-outcome record: the one shape every agent harness emits.",
    ),
    "agent-decision": RecordSchema(
        type=AgentDecision,
        description="The provider-neutral typed decision of the Agent Decision module.",
    ),
    "agent-output-envelope": RecordSchema(
        type=AgentOutputEnvelope,
        description="Every output xema/agent@v1 declares.",
    ),
    "artifact-ref": RecordSchema(
        type=ArtifactRef,
        description="A reference to one version of a stored json_payload artifact.",
    ),
    "stream-chunk": RecordSchema(
        type=StreamChunk,
        description="One chunk of an agent run's stream (a union tagged by kind).",
        title="StreamChunk",
    ),
    "forced-completion-state": RecordSchema(
        type=ForcedCompletionState,
        description="The persisted state of the forced-completion phase.",
    ),
    "cassette": RecordSchema(
        type=CassetteDocument,
        description="A harness-cassette/2 (or /1) file of recorded LLM traffic.",
    ),
    "scenario": RecordSchema(
        type=Scenario,
        description="A harness scenario file: one scenario, or a list of scenarios.",
    ),
}
"""Record name -> its schema's source; `harness schema records` writes `<name>.schema.json`."""


def record_schema(name: str) -> dict[str, object]:
    """The JSON Schema (draft 2020-12, `$schema` set) of the public record `name`."""
    record = RECORD_SCHEMAS[name]
    if name == "scenario":
        return scenario_schema()
    generated = TypeAdapter(record.type).json_schema(ref_template="#/$defs/{model}")
    document: dict[str, object] = {
        "$schema": JSON_SCHEMA_DRAFT,
        "title": generated.pop("title", record.title or name),
        "description": generated.pop("description", record.description),
    }
    document.update(generated)
    return document


def record_schema_text(name: str) -> str:
    """`record_schema(name)` as the committed file holds it: 2-space JSON and a newline."""
    return json.dumps(record_schema(name), indent=2, ensure_ascii=False) + "\n"


def scenario_schema() -> dict[str, object]:
    """The schema of a scenario file: one scenario, or a list of them (`harness schema`)."""
    document: dict[str, object] = {
        "$schema": JSON_SCHEMA_DRAFT,
        "title": "harness scenario file",
        "description": "One scenario, or a list of scenarios.",
    }
    single = TypeAdapter(Scenario).json_schema(ref_template="#/$defs/{model}")
    definitions = single.pop("$defs", {})
    definitions["Scenario"] = single
    document["anyOf"] = [
        {"$ref": "#/$defs/Scenario"},
        {"type": "array", "items": {"$ref": "#/$defs/Scenario"}},
    ]
    document["$defs"] = definitions
    return document
