"""The forced-completion phase: one budget, one owner, and the classification of a reply.

`ForcedCompletion` holds the durable `ForcedCompletionState` and is the only place attempts are
counted (`consume_attempt`). A forced reply is classified into success or exactly one of the
documented failure codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import JsonValue

from harness.agent.definition import FINISH_TOOL
from harness.agent.output import InvalidOutput, validate_output
from harness.llm.models import LlmResponse
from harness.protocol.forced import CompletionCode, ForcedCompletionState, ForcedTrigger

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator


class ForcedCompletionExhausted(Exception):
    """The budget is spent; `cause` is the last attempt's failure code (None for budget 0)."""

    def __init__(self, state: ForcedCompletionState) -> None:
        super().__init__(
            f"forced completion exhausted after {state.attempts_used} of {state.max_attempts} "
            f"attempt(s)"
            + (f"; last cause: {state.last_failure_code}" if state.last_failure_code else "")
        )
        self.state = state
        self.cause = state.last_failure_code


@dataclass(frozen=True)
class ForcedCompletion:
    """Operations on one run's forced-completion state; each returns the next state."""

    state: ForcedCompletionState

    @classmethod
    def enter(cls, trigger: ForcedTrigger, max_attempts: int, step: int) -> ForcedCompletion:
        return cls(
            ForcedCompletionState(trigger=trigger, max_attempts=max_attempts, entered_at_step=step)
        )

    def check_budget(self) -> None:
        """Raise `ForcedCompletionExhausted` when no attempt is left (budget 0 included)."""
        if self.state.attempts_used >= self.state.max_attempts:
            raise ForcedCompletionExhausted(self.state.evolve(status="exhausted"))

    def consume_attempt(self, code: str) -> ForcedCompletionState:
        """Count one failed attempt; raise `ForcedCompletionExhausted` from it when none is left."""
        state = self.state.evolve(
            attempts_used=self.state.attempts_used + 1, last_failure_code=code
        )
        if state.attempts_used >= state.max_attempts:
            raise ForcedCompletionExhausted(state.evolve(status="exhausted"))
        return state

    def succeed(self) -> ForcedCompletionState:
        return self.state.evolve(attempts_used=self.state.attempts_used + 1, status="succeeded")

    def fail(self, code: str) -> ForcedCompletionState:
        """End the phase with a non-budget failure (the attempt is not counted)."""
        return self.state.evolve(status="failed", last_failure_code=code)


@dataclass(frozen=True)
class ForcedReply:
    """A classified forced reply: `output` on success, else `code` and the problems."""

    output: JsonValue = None
    code: CompletionCode | None = None
    problems: tuple[str, ...] = ()

    @property
    def succeeded(self) -> bool:
        return self.code is None


def classify(response: LlmResponse, validator: Draft202012Validator) -> ForcedReply:
    """Exactly one schema-valid `__finish__` call succeeds; everything else has one code.

    No tool call is `tool_missing`; a `__finish__` with any sibling, or any other tool, is
    `protocol_violation`; arguments that are not valid JSON or fail the schema, and any reply cut
    off by the token limit, are `invalid_output`.
    """
    calls = response.tool_calls
    if not calls:
        return ForcedReply(code=CompletionCode.TOOL_MISSING)
    if len(calls) > 1 or calls[0].name != FINISH_TOOL:
        return ForcedReply(code=CompletionCode.PROTOCOL_VIOLATION)
    if response.truncated:
        # input cut off by the token limit is incomplete, even when what arrived parses
        return ForcedReply(
            code=CompletionCode.INVALID_OUTPUT,
            problems=("the reply was cut off by the token limit",),
        )
    try:
        return ForcedReply(output=validate_output(validator, calls[0].arguments))
    except InvalidOutput as invalid:
        return ForcedReply(code=CompletionCode.INVALID_OUTPUT, problems=tuple(invalid.problems))
