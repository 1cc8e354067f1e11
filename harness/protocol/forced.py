"""The forced-completion phase's durable state and its failure codes.

`ForcedCompletionState` is what runtimes persist (a nullable `forced_completion` column in SQL
stores, a `forcedCompletion` hash field in Redis): the trigger, the attempts used, the budget,
the status, the last failure code and the step the phase was entered at. It is camelCase on the
wire, like the runtimes that persist it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, NonNegativeInt

from harness.protocol._base import CamelWireModel

ForcedTrigger = Literal["terminal_text", "max_tokens", "max_steps"]
ForcedStatus = Literal["active", "succeeded", "exhausted", "failed"]


class CompletionCode(StrEnum):
    """The five documented failure codes of an outputSchema agent's completion."""

    EXHAUSTED = "framework_forced_completion_exhausted"
    PROTOCOL_VIOLATION = "framework_completion_protocol_violation"
    TOOL_MISSING = "framework_completion_tool_missing"
    TOOL_CHOICE_UNSUPPORTED = "framework_completion_tool_choice_unsupported"
    INVALID_OUTPUT = "framework_completion_invalid_output"


class ForcedCompletionState(CamelWireModel):
    """The persisted lifecycle of one run's forced-completion phase."""

    trigger: ForcedTrigger
    attempts_used: NonNegativeInt = 0
    max_attempts: NonNegativeInt
    status: ForcedStatus = "active"
    last_failure_code: str | None = None
    entered_at_step: NonNegativeInt = Field(default=0)

    @property
    def attempts_left(self) -> int:
        return max(0, self.max_attempts - self.attempts_used)

    @property
    def next_attempt(self) -> int:
        return self.attempts_used + 1
