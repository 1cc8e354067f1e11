"""What one agent cell did, call by call: the detail an HTML report shows for a cell.

Collected only when a report asks for it (`RunOptions.collect_detail`), from the reference's
finished run or from a target's answer and the requests its session received. Every part is a
wire record, so the detail travels as JSON (from a pytest-xdist worker to the controller).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import NonNegativeInt, PositiveInt

from harness.agent.result import RunResult
from harness.llm.models import LlmRequest, LlmToolCall
from harness.protocol._base import WireModel
from harness.protocol.chunks import (
    ForcedCompletionChunk,
    StepFinishChunk,
    StepStartChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallChunk,
)
from harness.protocol.envelope import AgentOutputEnvelope
from harness.protocol.forced import ForcedCompletionState, ForcedTrigger
from harness.protocol.outcome import AgentOutcome

CallKind = Literal["work", "forced"]

if TYPE_CHECKING:
    from harness.targets.protocol import AgentResult  # a target run's answer


class ReplyDetail(WireModel):
    """A model reply as the run's chunks tell it: its text, its tool calls, and its canonical
    stop reason (`None`: the call failed before a reply finished)."""

    text: str = ""
    tool_calls: tuple[LlmToolCall, ...] = ()
    stop_reason: str | None = None


class CallDetail(WireModel):
    """One model call: work or forced, its step (work calls), its trigger and attempt (forced
    calls), what it sent, and what came back (`None`: no reply in the stream)."""

    kind: CallKind
    step: NonNegativeInt | None = None
    attempt: PositiveInt | None = None
    trigger: ForcedTrigger | None = None
    request: LlmRequest
    reply: ReplyDetail | None = None


class CellDetail(WireModel):
    """An agent cell's run: its calls in order, its chunk stream, the forced-completion state it
    persisted, its agent-outcome record and its output envelope."""

    status: str
    error_code: str | None = None
    calls: tuple[CallDetail, ...] = ()
    chunks: tuple[StreamChunk, ...] = ()
    forced_state: ForcedCompletionState | None = None
    forced_state_reported: bool = True
    """False when a target does not report the state it persisted."""
    outcome_record: AgentOutcome | None = None
    envelope: AgentOutputEnvelope | None = None


@dataclass
class _Reply:
    """A reply being read from the stream, keyed by its call: (`work`, work-call index) or
    (`forced`, attempt)."""

    kind: CallKind
    index: int
    trigger: ForcedTrigger | None = None
    text: str = ""
    tool_calls: list[LlmToolCall] = field(default_factory=list)
    stop_reason: str | None = None

    def detail(self) -> ReplyDetail:
        return ReplyDetail(
            text=self.text, tool_calls=tuple(self.tool_calls), stop_reason=self.stop_reason
        )


def agent_detail(result: RunResult, forced_state: ForcedCompletionState | None) -> CellDetail:
    """The detail of a reference run; `forced_state` is what its store holds."""
    sent = [(s.kind, s.step, s.attempt, s.request) for s in result.sent()]
    return CellDetail(
        status=result.status,
        error_code=result.error_code,
        calls=_calls(sent, result.chunks),
        chunks=result.chunks,
        forced_state=forced_state,
        outcome_record=result.outcome_record(),
        envelope=result.envelope(),
    )


def target_detail(reply: AgentResult, requests: Sequence[tuple[str, LlmRequest]]) -> CellDetail:
    """The detail of a target's run: its answer, and the requests its session received in order
    (a wire request has no fragment names, no step and no attempt: work calls are numbered in
    order, forced attempts counted from 1)."""
    sent: list[tuple[str, int | None, int | None, LlmRequest]] = []
    counts = {"work": 0, "forced": 0}
    for kind, request in requests:
        counts[kind] += 1
        if kind == "work":
            sent.append((kind, counts[kind] - 1, None, request))
        else:
            sent.append((kind, None, counts[kind], request))
    return CellDetail(
        status=reply.status,
        error_code=reply.error_code,
        calls=_calls(sent, reply.chunks),
        chunks=tuple(reply.chunks),
        forced_state=reply.counters.forced_state,
        forced_state_reported="forced_state" in reply.counters.model_fields_set,
        outcome_record=reply.outcome_record,
        envelope=reply.envelope,
    )


def _calls(
    sent: Iterable[tuple[str, int | None, int | None, LlmRequest]],
    chunks: Sequence[StreamChunk],
) -> tuple[CallDetail, ...]:
    """Each call with its reply: the n-th work call answers in the n-th work step of the stream,
    a forced attempt in the forced step after the chunk announcing that attempt."""
    replies = {(reply.kind, reply.index): reply for reply in _replies(chunks)}
    calls: list[CallDetail] = []
    work_calls = 0
    for kind, step, attempt, request in sent:
        if kind == "work":
            reply = replies.get(("work", work_calls))
            work_calls += 1
            calls.append(
                CallDetail(
                    kind="work",
                    step=step,
                    request=request,
                    reply=None if reply is None else reply.detail(),
                )
            )
        else:
            reply = replies.get(("forced", attempt or 0))
            calls.append(
                CallDetail(
                    kind="forced",
                    step=step,
                    attempt=attempt,
                    trigger=None if reply is None else reply.trigger,
                    request=request,
                    reply=None if reply is None else reply.detail(),
                )
            )
    return tuple(calls)


def _replies(chunks: Sequence[StreamChunk]) -> list[_Reply]:
    """The replies in the stream: each step start opens one, its text deltas, tool calls and
    step finish fill it. A forced step belongs to the attempt last announced."""
    replies: list[_Reply] = []
    announced: tuple[ForcedTrigger, int] | None = None
    work_steps = 0
    current: _Reply | None = None
    for chunk in chunks:
        if isinstance(chunk, ForcedCompletionChunk) and chunk.phase == "attempt_started":
            announced = (chunk.trigger, chunk.attempt or 0)
            current = None
        elif isinstance(chunk, StepStartChunk):
            if chunk.phase == "work":
                current = _Reply(kind="work", index=work_steps)
                work_steps += 1
            else:
                trigger, attempt = announced if announced is not None else (None, 0)
                current = _Reply(kind="forced", index=attempt, trigger=trigger)
            replies.append(current)
        elif current is None:
            continue
        elif isinstance(chunk, TextDeltaChunk):
            current.text += chunk.text
        elif isinstance(chunk, ToolCallChunk):
            current.tool_calls.append(
                LlmToolCall(id=chunk.tool_call_id, name=chunk.name, arguments=chunk.arguments)
            )
        elif isinstance(chunk, StepFinishChunk):
            current.stop_reason = chunk.stop_reason
    return replies
