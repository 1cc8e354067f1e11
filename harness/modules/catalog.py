"""The governed tool catalog the Agent Decision module offers the model.

Catalog names may contain dots (`workflow.execution.inspect`); provider tool names may not, so
each name has a wire spelling (`workflow_execution_inspect`) and replies are mapped back. Two
documented control tools turn a reply into `ASK_USER` or `WAIT_APPROVAL`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, Protocol

from pydantic import Field, JsonValue, ValidationError, field_validator, model_validator

from harness.errors import HarnessError, IllegalArgumentException
from harness.llm.models import ToolDefinition
from harness.modules.models_acl import AuthenticatedSession
from harness.modules.projection import truncate_utf16
from harness.protocol._base import WireModel

MAX_DESCRIPTION_UNITS: Final = 1_024
TOOL_NAME_PATTERN: Final = r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$"
ASK_USER_TOOL: Final = "agent.ask_user"
WAIT_APPROVAL_TOOL: Final = "agent.wait_approval"


def _object_schema() -> dict[str, JsonValue]:
    return {"type": "object"}


class CatalogTool(WireModel):
    """One server-authorized tool: name, bounded description, JSON-schema parameters."""

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = ""
    parameters: dict[str, JsonValue] = Field(default_factory=_object_schema)

    @field_validator("description")
    @classmethod
    def _bounded(cls, description: str) -> str:
        return truncate_utf16(description, MAX_DESCRIPTION_UNITS)

    @property
    def wire_name(self) -> str:
        return wire_tool_name(self.name)


class ToolCatalog(WireModel):
    """An ordered set of tools with unique names (and unique wire names)."""

    tools: tuple[CatalogTool, ...] = ()

    @model_validator(mode="after")
    def _unique(self) -> ToolCatalog:
        seen: dict[str, str] = {}
        for tool in self.tools:
            other = seen.get(tool.wire_name)
            if other is not None:
                raise ValueError(
                    f"tools {other!r} and {tool.name!r} have the same provider name "
                    f"{tool.wire_name!r}; rename one"
                )
            seen[tool.wire_name] = tool.name
        return self

    def names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    def by_wire_name(self) -> dict[str, CatalogTool]:
        return {tool.wire_name: tool for tool in self.tools}

    def with_tools(self, *tools: CatalogTool) -> ToolCatalog:
        """This catalog plus `tools`, except those whose name it already has; a tool whose
        provider name clashes with one of them is an `IllegalArgumentException` naming both."""
        present = set(self.names())
        try:
            return ToolCatalog(tools=(*self.tools, *(t for t in tools if t.name not in present)))
        except ValidationError as error:
            message = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
            raise IllegalArgumentException(f"agentToolCatalog is invalid: {message}") from None

    def to_definitions(self) -> tuple[ToolDefinition, ...]:
        return tuple(
            ToolDefinition(name=t.wire_name, description=t.description, parameters=t.parameters)
            for t in self.tools
        )

    def to_output(self) -> dict[str, JsonValue]:
        """The catalog as the `agentToolCatalog` output: exactly what was offered."""
        return {"tools": [tool.model_dump(mode="json") for tool in self.tools]}

    @classmethod
    def from_input(cls, value: object) -> ToolCatalog:
        """Parse the `agentToolCatalog` input (`{"tools": [...]}`), or fail closed by name."""
        if not isinstance(value, Mapping):
            raise IllegalArgumentException(
                "agentToolCatalog must be an object with a 'tools' array but got "
                f"a value of type {type(value).__name__}"
            )
        try:
            return cls.model_validate(dict(value))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise IllegalArgumentException(
                f"agentToolCatalog is invalid at {where or '(root)'}: {first['msg']}"
            ) from None


def wire_tool_name(name: str) -> str:
    """The provider-safe spelling of a catalog name (`[A-Za-z0-9_-]` only)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


CONTROL_TOOLS: Final = (
    CatalogTool(
        name=ASK_USER_TOOL,
        description="Ask the user one question when the task cannot continue without an answer.",
        parameters={
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
    ),
    CatalogTool(
        name=WAIT_APPROVAL_TOOL,
        description="Stop and wait for a human approval before a consequential action.",
        parameters={
            "type": "object",
            "properties": {"reason": {"type": "string"}},
            "required": ["reason"],
        },
    ),
)

BUILT_IN_CATALOG: Final = ToolCatalog(
    tools=(
        CatalogTool(
            name="workflow.execution.inspect",
            description="Read the status, steps and outputs of one workflow execution.",
            parameters={
                "type": "object",
                "properties": {"executionId": {"type": "string"}},
                "required": ["executionId"],
            },
        ),
        CatalogTool(
            name="workflow.execution.list",
            description="List recent executions of a workflow.",
            parameters={
                "type": "object",
                "properties": {"workflowId": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["workflowId"],
            },
        ),
        CatalogTool(
            name="artifact.read",
            description="Read one artifact version by reference.",
            parameters={
                "type": "object",
                "properties": {"artifactRef": {"type": "string"}},
                "required": ["artifactRef"],
            },
        ),
        CatalogTool(
            name="deployment.status",
            description="Read the health of a deployment and its production route.",
            parameters={
                "type": "object",
                "properties": {"deploymentId": {"type": "string"}},
                "required": ["deploymentId"],
            },
        ),
    )
)
"""The governed catalog used when the workflow supplies none."""


class PolicyUnavailableError(HarnessError):
    """Raised by a server tool-visibility policy (`ToolVisibilityPolicy`, yours or a scenario's
    `tool_policy`) that cannot decide right now. `AgentDecisionModule` never lets it through: it
    fails closed with `SecurityException`, with no unfiltered fallback."""

    code = "tool_policy_unavailable"
    retryable = True


class ToolVisibilityPolicy(Protocol):
    """The server-owned policy that filters a catalog for one task and session."""

    def filter(
        self, catalog: ToolCatalog, *, task: JsonValue, session: AuthenticatedSession
    ) -> ToolCatalog: ...


PolicyUnavailable = PolicyUnavailableError
"""The earlier name of `PolicyUnavailableError`, deprecated: kept until 1.0."""
