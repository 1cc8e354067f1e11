"""What an agent is: prompt, tools, output schema, budgets, skills, workspace, memory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from pydantic import (
    Field,
    JsonValue,
    NonNegativeInt,
    PositiveInt,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from harness.llm.models import Reasoning
from harness.protocol._base import WireModel

FINISH_TOOL: Final = "__finish__"
DEFAULT_MAX_STEPS: Final = 10
DEFAULT_MAX_COMPLETION_RETRIES: Final = 2


def _object_schema() -> dict[str, JsonValue]:
    return {"type": "object", "properties": {}}


class AgentTool(WireModel):
    """A tool with a scripted outcome: `result` (default `{"ok": true}`) or `error`."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
    description: str = ""
    parameters: dict[str, JsonValue] = Field(default_factory=_object_schema)
    result: JsonValue = None
    error: str | None = None
    requires_approval: bool = False

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name == FINISH_TOOL:
            raise ValueError(f"{FINISH_TOOL} is the completion tool; no agent tool may use it")
        return name


class Skill(WireModel):
    name: str = Field(min_length=1)
    description: str = ""
    body: str = ""


class Skills(WireModel):
    """The Level-1 catalog (names and descriptions) and the bodies preloaded into the prompt."""

    catalog: tuple[Skill, ...] = ()
    preloaded: tuple[Skill, ...] = ()


class Workspace(WireModel):
    """A workspace capability: its system-prompt fragment and its tools (bash, ...)."""

    fragment: str = "You have a workspace. Use its tools to read and change files."
    tools: tuple[AgentTool, ...] = ()


class Memory(WireModel):
    """Memories available to recall; recall injects them into each work call."""

    memories: tuple[str, ...] = ()


class AgentParts(WireModel):
    """What an agent is made of, declared once: `AgentDefinition` and a scenario file's agent
    block (`harness.agent.spec.AgentSpec`) both extend it, so a field or a bound added
    here holds for both, and a scenario refuses what a definition would refuse at the same key.
    """

    system_prompt: str = "You are a helpful agent."
    tools: tuple[AgentTool, ...] = ()
    output_schema: dict[str, JsonValue] | None = None
    max_steps: PositiveInt = DEFAULT_MAX_STEPS
    max_tokens: PositiveInt | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    stream: bool = False
    skills: Skills | None = None
    workspace: Workspace | None = None
    memory: Memory | None = None

    def parts(self) -> dict[str, object]:
        """These fields by name, values as they are (for building the other extension)."""
        return {name: getattr(self, name) for name in AgentParts.model_fields}


class AgentDefinition(AgentParts):
    """One agent. With `output_schema` it must end with schema-valid output or a coded failure."""

    name: str = "agent"
    model: str = Field(default="gpt-4o-mini", min_length=1)
    max_completion_retries: NonNegativeInt = DEFAULT_MAX_COMPLETION_RETRIES
    reasoning: Reasoning | None = None

    @model_validator(mode="after")
    def _unique_tool_names(self) -> AgentDefinition:
        """Work calls offer every tool by name, so two with one name cannot both be called.

        The error's `ctx` holds the refused name (`input`) and the `location` of the field that
        gave it (the author's tool, never a built-in skill tool), so a caller can point at it.
        """
        first: dict[str, tuple[int | str, ...] | None] = {}
        for location, tool in self._located_tools():
            if tool.name not in first:
                first[tool.name] = location
                continue
            clash = "is used twice" if location is not None else "is a built-in skill tool"
            raise PydanticCustomError(
                "tool_name_repeated",
                "tool names must be unique; '{input}' {clash}",
                {"input": tool.name, "clash": clash, "location": location or first[tool.name]},
            )
        return self

    def all_tools(self) -> tuple[AgentTool, ...]:
        """Agent tools, skill tools and workspace tools, as work calls offer them."""
        return tuple(tool for _, tool in self._located_tools())

    def _located_tools(self) -> Iterator[tuple[tuple[int | str, ...] | None, AgentTool]]:
        """`all_tools()`, each with the location of its name in the definition (None for the
        built-in skill tools)."""
        for index, tool in enumerate(self.tools):
            yield ("tools", index, "name"), tool
        if self.skills is not None and (self.skills.catalog or self.skills.preloaded):
            for tool in SKILL_TOOLS:
                yield None, tool
        for index, tool in enumerate(self.workspace.tools if self.workspace is not None else ()):
            yield ("workspace", "tools", index, "name"), tool


SKILL_TOOLS: Final = (
    AgentTool(
        name="load_skill",
        description="Load the full instructions of a skill from the catalog.",
        parameters={
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    ),
    AgentTool(
        name="read_skill_file",
        description="Read a file that belongs to a loaded skill.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
)
