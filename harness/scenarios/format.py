"""The scenario file format: one pydantic model per scenario kind, discriminated by `kind`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ScenarioModel(BaseModel):
    """Scenario parts refuse unknown keys so a misspelt key fails before anything runs."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ModuleExpect(ScenarioModel):
    """What must hold after a module ran: its status and either its outputs or its error."""

    status: Literal["completed", "failed"] = "completed"
    outputs: dict[str, Any] | None = None
    error_code: str | None = None
    error_type: str | None = None
    error_message: str | None = None

    @model_validator(mode="after")
    def _failure_fields_need_failed_status(self) -> ModuleExpect:
        failure_fields = (self.error_code, self.error_type, self.error_message)
        if self.status == "completed" and any(field is not None for field in failure_fields):
            raise ValueError("error_code, error_type and error_message need status: failed")
        return self


class CompletionScenario(ScenarioModel):
    """Runs `AgentCompletionModule` on `input` (the workflow state)."""

    name: str = Field(min_length=1)
    description: str = ""
    kind: Literal["completion"]
    input: dict[str, Any]
    config: dict[str, Any] = Field(default_factory=dict)
    expect: ModuleExpect


Scenario = Annotated[CompletionScenario, Field(discriminator="kind")]
