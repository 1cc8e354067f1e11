"""An agent run as a scenario gives it: the agent block of a scenario file, the crash points, the
cancellation and the Temporal options of its run.

Declared once, here, for both places they travel: a scenario file (`harness.scenarios.format`)
and the agent cell of the target protocol (`harness.targets.protocol.AgentCell`), which carries
them to a target exactly as the scenario gave them. So the scenario's JSON Schema, the
protocol's, and the TypeScript types generated from it hold one model of each.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue, PositiveInt, field_validator

from harness.agent.definition import AgentParts
from harness.agent.output import output_validator
from harness.agent.state import CancelPoint, PersistencePoint
from harness.errors import IllegalArgumentException
from harness.llm.models import Effort
from harness.protocol._base import WireModel
from harness.protocol.forced import ForcedCompletionState, ForcedTrigger


class OverrideWhen(WireModel):
    """Which forced calls an override applies to, read from the forced-completion state the
    callback is given (its third argument): every condition given must hold."""

    trigger: list[ForcedTrigger] | None = Field(
        default=None, min_length=1, description="the state's trigger is one of these"
    )
    from_attempt: PositiveInt | None = Field(
        default=None,
        description="the attempt about to be made (the state's attemptsUsed + 1) is at least this",
    )

    def holds(self, state: ForcedCompletionState | None) -> bool:
        """Whether a forced call whose callback was given `state` gets the override (never
        without a state: a forced call always has one)."""
        if state is None:
            return False
        if self.trigger is not None and state.trigger not in self.trigger:
            return False
        return self.from_attempt is None or state.next_attempt >= self.from_attempt


class ConfigOverrideSpec(WireModel):
    """What the agent's `llm_config_override` callback returns in the forced phase: its
    changes, on every forced call or, with `when`, on those whose forced-completion state says
    so (a later attempt, a trigger)."""

    model: str | None = None
    temperature: float | None = None
    max_tokens: PositiveInt | None = None
    when: OverrideWhen | None = None

    def changes(self) -> dict[str, object]:
        """The changes the callback returns, without the unset ones."""
        return {
            name: value
            for name, value in (
                ("model", self.model),
                ("temperature", self.temperature),
                ("max_tokens", self.max_tokens),
            )
            if value is not None
        }


# The fields every agent has come from `AgentParts`, the one declaration `AgentDefinition`
# extends too; the run's definition is built from this block and the scenario's name and model
# (`harness.scenarios.build.agent_definition`).
class AgentSpec(AgentParts):
    """The agent under test: its prompt, tools, output schema, budgets, skills, workspace and
    memory, the message it is given, and what the scenario scripts around its run."""

    user_message: str = "Do the task."

    @field_validator("output_schema")
    @classmethod
    def _a_json_schema(cls, schema: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        if schema is not None:
            try:
                output_validator(schema)  # cached: the run reuses it
            except IllegalArgumentException as error:
                raise ValueError(str(error)) from None
        return schema

    max_completion_retries: int | None = Field(
        default=None,
        ge=0,
        description="the forced-completion budget (maxAttempts); omitted, the runtime's own "
        "default applies (2)",
    )
    reasoning: Literal[Effort, "disabled"] | None = None
    llm_config_override: ConfigOverrideSpec | None = None
    deny_approval: list[str] = Field(
        default_factory=list, description="Approval-gated tools whose approval is denied."
    )


class FaultSpec(WireModel):
    crash_after: PersistencePoint
    occurrence: PositiveInt = 1


class CancelSpec(WireModel):
    """Cancel the run from outside: the runtime honours it right after the `occurrence`-th
    persistence at `after` and ends the run with status `cancelled`."""

    after: CancelPoint = Field(
        description="the persistence point after which the run is cancelled (any but "
        "run_finished, when the run is already over)"
    )
    occurrence: PositiveInt = Field(default=1, description="which time the run reaches `after`")


class TemporalSpec(WireModel):
    register_persist_forced_completion: bool = True
