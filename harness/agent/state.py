"""The durable run state: everything a runtime persists between steps, and nothing else.

A run resumed from its last persisted `RunState` continues exactly where it stopped: the message
history, the step count, the forced-completion state (with an attempt that was announced but not
yet made), the answers so far, the chunk stream and every request sent.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from pydantic import Field, JsonValue, NonNegativeInt, PositiveInt

from harness.llm.models import LlmRequest, Message
from harness.protocol._base import WireModel
from harness.protocol.chunks import RunFinishChunk, StreamChunk
from harness.protocol.forced import ForcedCompletionState, ForcedTrigger

RunStatus = Literal["running", "completed", "failed", "cancelled"]
RunPhase = Literal["work", "forced", "finishing", "finished"]
CancelPoint = Literal[
    "run_started",
    "work_step_persisted",
    "forced_entered",
    "forced_attempt_persisted",
    "forced_attempt_finished",
]
"""Every persistence point a run can be cancelled after: all but `run_finished`, after which the
run is over and nothing is left to cancel."""
PersistencePoint = Literal[CancelPoint, "run_finished"]
"""Where a runtime saves the run state, in the order a run first reaches them."""
PERSISTENCE_POINTS: Final[tuple[PersistencePoint, ...]] = get_args(PersistencePoint)


class SentRequest(WireModel):
    """One request the run sent, tagged with its kind (and attempt, for forced calls)."""

    kind: Literal["work", "forced"]
    step: NonNegativeInt
    attempt: PositiveInt | None = None
    request: LlmRequest


class OverrideCall(WireModel):
    """One invocation of the agent's `llm_config_override` callback, as the runtime made it."""

    execution_phase: Literal["work", "forced_completion"]
    step: NonNegativeInt
    forced_completion: ForcedCompletionState | None = None


class RunState(WireModel):
    """The persisted state of one run."""

    run_id: str = Field(min_length=1)
    session_id: str = Field(min_length=1)
    status: RunStatus = "running"
    phase: RunPhase = "work"
    step: NonNegativeInt = 0
    messages: tuple[Message, ...] = ()
    answers: tuple[str, ...] = ()
    pending_trigger: ForcedTrigger | None = None
    forced_completion: ForcedCompletionState | None = None
    pending_forced_attempt: PositiveInt | None = None
    output: JsonValue = None
    error_code: str | None = None
    error_message: str | None = None
    limit_reached: bool = False
    chunks: tuple[StreamChunk, ...] = ()
    requests: tuple[SentRequest, ...] = ()
    forced_calls_returned: NonNegativeInt = 0
    memory_recalls: NonNegativeInt = 0
    memory_extractions: NonNegativeInt = 0
    override_calls: tuple[OverrideCall, ...] = ()

    @property
    def finished(self) -> bool:
        return self.phase == "finished"

    def with_chunks(self, *chunks: StreamChunk) -> RunState:
        return self.evolve(chunks=(*self.chunks, *chunks))

    def cancelled(self) -> RunState:
        """The run ended from outside before `run_finished`: status `cancelled`, no output and
        no error (even when the loop had already decided an outcome it had not yet finished),
        and a `run_finish` chunk saying so. The transcript, answers and forced-completion state
        stay as they were, and no memory is extracted: the run reached no terminal outcome."""
        return self.evolve(
            status="cancelled",
            phase="finished",
            output=None,
            error_code=None,
            error_message=None,
        ).with_chunks(RunFinishChunk(status="cancelled"))
