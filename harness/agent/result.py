"""What a finished run produces: output or coded failure, chunks, requests, the final state,
the agent-outcome record and the agent output envelope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from harness.agent.definition import AgentDefinition
from harness.agent.state import RunState, SentRequest
from harness.llm.models import LlmRequest
from harness.modules.completion import is_java_blank
from harness.protocol.chunks import ForcedCompletionChunk, StreamChunk
from harness.protocol.envelope import AgentOutputEnvelope, ArtifactRef, EnvelopeOutcome
from harness.protocol.outcome import (
    AgentOutcome,
    Cancelled,
    EndTurn,
    ErrorStop,
    LimitReached,
    StopKind,
)


@dataclass(frozen=True)
class RunResult:
    """A finished run, read from its final persisted state."""

    agent: AgentDefinition
    state: RunState
    duration_ms: int = 0
    crashes: int = 0
    engine: str = "simulated"
    """What drove the run: `simulated` (the in-process loop) or `real` (Temporal or DBOS)."""

    @property
    def status(self) -> str:
        return self.state.status

    @property
    def output(self) -> JsonValue:
        return self.state.output

    @property
    def error_code(self) -> str | None:
        return self.state.error_code

    @property
    def chunks(self) -> tuple[StreamChunk, ...]:
        return self.state.chunks

    def forced_chunks(self) -> list[ForcedCompletionChunk]:
        return [c for c in self.state.chunks if isinstance(c, ForcedCompletionChunk)]

    def requests(self, kind: Literal["work", "forced"] | None = None) -> list[LlmRequest]:
        return [s.request for s in self.sent(kind)]

    def sent(self, kind: Literal["work", "forced"] | None = None) -> list[SentRequest]:
        return [s for s in self.state.requests if kind is None or s.kind == kind]

    def stop_kind(self) -> StopKind:
        """The one canonical mapping from a run's end to the neutral stop vocabulary."""
        if self.state.status == "failed":
            return ErrorStop(message=self.state.error_code or "failed")
        if self.state.status == "cancelled":
            return Cancelled()
        if self.state.limit_reached and self.agent.output_schema is None:
            return LimitReached()
        return EndTurn()

    def outcome_record(self) -> AgentOutcome:
        """`text`: every answer; `final_message`: the last alone; `stop_reason` canonical."""
        answers = self.state.answers
        return AgentOutcome.new(
            text="\n".join(answers),
            final_message=answers[-1] if answers else "",
            stop=self.stop_kind(),
            session_id=self.state.session_id,
        )

    def envelope(self, *, allocation_id: str | None = None) -> AgentOutputEnvelope:
        """The `xema/agent` outputs: the structured output promoted to a `json_payload` artifact."""
        output = self.state.output
        has_output = self.state.status == "completed" and isinstance(output, dict)
        outcome: EnvelopeOutcome
        if has_output:
            outcome = "succeeded"
        elif any(not is_java_blank(answer) for answer in self.state.answers):
            outcome = "partial"
        else:
            outcome = "empty-response"
        reference = (
            ArtifactRef.for_payload(
                output,
                artifact_id=f"artifact-{self.state.run_id}",
                version_id=f"artifact-{self.state.run_id}-v1",
                version=1,
            )
            if has_output
            else None
        )
        return AgentOutputEnvelope(
            allocation_id=allocation_id or f"alloc-{self.state.run_id}",
            outcome=outcome,
            structured_output=reference,
            agent_result=output if has_output and isinstance(output, dict) else None,
            duration_ms=self.duration_ms,
            session_id=self.state.session_id,
            workspace_id=f"ws-{self.state.run_id}" if self.agent.workspace is not None else None,
        )
