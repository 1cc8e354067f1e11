"""The typed stream a run emits: text, tool calls and results, step boundaries, and the
diagnostic `forced_completion` chunk.

`forced_completion` is not chat content: `chunks_to_messages` (what a chat UI would do) ignores
it, like `@helix-agents/ai-sdk`'s `convertToUIMessages`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue, NonNegativeInt, PositiveInt, TypeAdapter

from harness.protocol._base import WireModel
from harness.protocol.forced import ForcedTrigger
from harness.protocol.outcome import CanonicalStopReason

StepPhase = Literal["work", "forced"]
ForcedPhase = Literal["started", "attempt_started", "attempt_failed", "succeeded", "exhausted"]


class StepStartChunk(WireModel):
    kind: Literal["step_start"] = "step_start"
    step: NonNegativeInt
    phase: StepPhase = "work"


class TextDeltaChunk(WireModel):
    kind: Literal["text_delta"] = "text_delta"
    step: NonNegativeInt
    text: str


class ToolCallChunk(WireModel):
    kind: Literal["tool_call"] = "tool_call"
    step: NonNegativeInt
    tool_call_id: str
    name: str
    arguments: str


class ToolResultChunk(WireModel):
    kind: Literal["tool_result"] = "tool_result"
    step: NonNegativeInt
    tool_call_id: str
    name: str
    result: JsonValue
    is_error: bool = False


class ApprovalChunk(WireModel):
    """An approval-gated tool call asked for approval and got an answer."""

    kind: Literal["approval"] = "approval"
    step: NonNegativeInt
    tool_call_id: str
    name: str
    granted: bool


class StepFinishChunk(WireModel):
    kind: Literal["step_finish"] = "step_finish"
    step: NonNegativeInt
    stop_reason: CanonicalStopReason


class ForcedCompletionChunk(WireModel):
    """Diagnostic: where the forced-completion phase is. `code` is set on failure phases."""

    kind: Literal["forced_completion"] = "forced_completion"
    phase: ForcedPhase
    trigger: ForcedTrigger
    attempt: PositiveInt | None = None
    max_attempts: NonNegativeInt
    code: str | None = None


class RunFinishChunk(WireModel):
    kind: Literal["run_finish"] = "run_finish"
    status: Literal["completed", "failed", "cancelled"]
    error_code: str | None = None


StreamChunk = Annotated[
    StepStartChunk
    | TextDeltaChunk
    | ToolCallChunk
    | ToolResultChunk
    | ApprovalChunk
    | StepFinishChunk
    | ForcedCompletionChunk
    | RunFinishChunk,
    Field(discriminator="kind"),
]
STREAM_CHUNKS: TypeAdapter[list[StreamChunk]] = TypeAdapter(list[StreamChunk])


class ChatMessage(WireModel):
    """What a chat UI shows: a role and text (tool activity summarised by name)."""

    role: Literal["assistant", "tool"]
    text: str


def chunks_to_messages(chunks: list[StreamChunk]) -> list[ChatMessage]:
    """Convert a chunk stream into chat messages, ignoring diagnostic chunks.

    Consecutive text deltas of one step form one assistant message (forced attempts share a
    step number, so each `step_start` begins a new message); tool results become tool messages.
    `forced_completion`, step boundaries and approvals are not chat content.
    """
    messages: list[ChatMessage] = []
    current_step: int | None = None
    for chunk in chunks:
        if isinstance(chunk, StepStartChunk):
            current_step = None
        elif isinstance(chunk, TextDeltaChunk):
            if messages and messages[-1].role == "assistant" and current_step == chunk.step:
                last = messages.pop()
                messages.append(ChatMessage(role="assistant", text=last.text + chunk.text))
            else:
                messages.append(ChatMessage(role="assistant", text=chunk.text))
            current_step = chunk.step
        elif isinstance(chunk, ToolResultChunk):
            messages.append(ChatMessage(role="tool", text=chunk.name))
            current_step = None
    return messages
