"""`AgentDecision`: the provider-neutral typed decision the Agent Decision module emits.

camelCase on the wire (`toolCalls`), snake_case in Python (`tool_calls`), as in the example of the
Agent Decision module's contract.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, JsonValue, field_serializer, model_validator

from harness.protocol._base import CamelWireModel


class DecisionOutcome(StrEnum):
    """The closed set of decision outcomes; `.normalized` is the lower-case output string."""

    TOOL_CALLS = "TOOL_CALLS"
    FINAL_ANSWER = "FINAL_ANSWER"
    ASK_USER = "ASK_USER"
    WAIT_APPROVAL = "WAIT_APPROVAL"
    CONTINUE = "CONTINUE"
    FAILED = "FAILED"

    @property
    def normalized(self) -> str:
        """The normalised outcome emitted as `agentDecisionOutcome`, e.g. `tool_calls`."""
        return self.value.lower()


class ToolCall(CamelWireModel):
    """One proposed tool call; inert until a governed tool step validates and runs it.

    `arguments` is always a JSON object, never a string to be parsed later.
    """

    id: str | None = None
    name: str = Field(min_length=1)
    arguments: dict[str, JsonValue]


class AgentDecision(CamelWireModel):
    """One validated decision. `TOOL_CALLS` requires at least one call; no other outcome has any."""

    outcome: DecisionOutcome
    tool_calls: tuple[ToolCall, ...] = ()
    text: str | None = None

    @model_validator(mode="after")
    def _tool_calls_match_outcome(self) -> AgentDecision:
        if self.outcome is DecisionOutcome.TOOL_CALLS and not self.tool_calls:
            raise ValueError("a TOOL_CALLS decision needs at least one entry in toolCalls")
        if self.outcome is not DecisionOutcome.TOOL_CALLS and self.tool_calls:
            raise ValueError(
                f"toolCalls is only allowed with outcome TOOL_CALLS, not {self.outcome.value}"
            )
        return self

    @field_serializer("outcome")
    def _outcome_as_string(self, outcome: DecisionOutcome) -> str:
        return outcome.value

    @property
    def normalized_outcome(self) -> str:
        """The lower-case outcome, e.g. `tool_calls` or `final_answer`."""
        return self.outcome.normalized

    def to_wire(self) -> dict[str, JsonValue]:
        """The camelCase JSON object without empty optional fields, as in the example of the
        Agent Decision module's contract."""
        return self.model_dump(mode="json", exclude_defaults=True)
