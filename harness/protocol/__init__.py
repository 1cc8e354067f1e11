"""Every wire record of `harness`, one module per wire family."""

from harness.protocol.canonical import canonical_hash, canonical_json, sha256_digest
from harness.protocol.decision import AgentDecision, DecisionOutcome, ToolCall
from harness.protocol.envelope import (
    AGENT_ACTION,
    AgentOutputEnvelope,
    ArtifactRef,
    EnvelopeOutcome,
)
from harness.protocol.outcome import (
    CANONICAL_STOP_REASONS,
    AgentOutcome,
    AnyStopKind,
    Cancelled,
    ContentType,
    EndTurn,
    ErrorStop,
    LimitReached,
    OtherStop,
    Payload,
    StopKind,
    ToolUse,
)

__all__ = [
    "AGENT_ACTION",
    "CANONICAL_STOP_REASONS",
    "AgentDecision",
    "AgentOutcome",
    "AgentOutputEnvelope",
    "AnyStopKind",
    "ArtifactRef",
    "Cancelled",
    "ContentType",
    "DecisionOutcome",
    "EndTurn",
    "EnvelopeOutcome",
    "ErrorStop",
    "LimitReached",
    "OtherStop",
    "Payload",
    "StopKind",
    "ToolCall",
    "ToolUse",
    "canonical_hash",
    "canonical_json",
    "sha256_digest",
]
