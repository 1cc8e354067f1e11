"""The agent output envelope: the outputs the `xema/agent` workflow action declares.

Execution metadata (`allocationId`, `durationMs`, ...) is kept apart from the values a workflow
carries between jobs; the structured handoff is promoted to a versioned `json_payload` artifact and
referenced by `ArtifactRef`. `response` is declared but always null, and `deliverables` /
`deliverable` no longer exist: reading them is an error, never null.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue, StrictInt

from harness.errors import OutputNotDeclaredError
from harness.protocol._base import CamelWireModel
from harness.protocol.canonical import canonical_hash

AGENT_ACTION = "xema/agent@v1"
EnvelopeOutcome = Literal["succeeded", "empty-response", "partial"]
ARTIFACT_HASH_PATTERN = r"^sha256:[0-9a-f]{64}$"


class ArtifactRef(CamelWireModel):
    """A reference to one version of a stored artifact.

    `hash` is `sha256:` + the hex digest of the canonical JSON of the payload, so equal payloads
    have equal hashes whatever their key order.
    """

    artifact_id: str = Field(min_length=1)
    version_id: str = Field(min_length=1)
    version: Annotated[StrictInt, Field(gt=0)]
    hash: str = Field(pattern=ARTIFACT_HASH_PATTERN)
    type: Literal["json_payload"] = "json_payload"

    @classmethod
    def for_payload(
        cls, payload: JsonValue, *, artifact_id: str, version_id: str, version: int = 1
    ) -> ArtifactRef:
        """Reference `payload` as a `json_payload` artifact, hashing its canonical JSON."""
        return cls(
            artifact_id=artifact_id,
            version_id=version_id,
            version=version,
            hash=canonical_hash(payload),
        )


class AgentOutputEnvelope(CamelWireModel):
    """Every output `xema/agent@v1` declares, with the shapes its documentation gives."""

    allocation_id: str
    outcome: EnvelopeOutcome
    structured_output: ArtifactRef | None
    agent_result: dict[str, JsonValue] | None
    response: None = None
    duration_ms: Annotated[StrictInt, Field(ge=0)]
    session_id: str | None
    workspace_id: str | None
    worker_name: str | None = None
    worker_url: str | None = None
    worker_proxy_url: str | None = None
    allocation_status: str | None = None

    @classmethod
    def declared_outputs(cls) -> tuple[str, ...]:
        """The wire names of every declared output, in declaration order."""
        return tuple(field.alias or name for name, field in cls.model_fields.items())

    def output(self, name: str) -> JsonValue:
        """The JSON value of the declared output `name` (wire spelling).

        Raises `OutputNotDeclaredError` naming the field for anything the action does not
        declare, `deliverables` and `deliverable` included; it never answers null for them.
        """
        declared = self.declared_outputs()
        if name not in declared:
            raise OutputNotDeclaredError(name, f"the action {AGENT_ACTION}", list(declared))
        wire: dict[str, JsonValue] = self.model_dump(mode="json", by_alias=True)
        return wire[name]
