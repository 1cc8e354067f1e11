"""What an agent is: prompt, tools, output schema, budgets, skills, workspace, memory."""

from __future__ import annotations

from typing import Final

from pydantic import Field, JsonValue, NonNegativeInt, PositiveInt, model_validator

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

    @model_validator(mode="after")
    def _not_reserved(self) -> AgentTool:
        if self.name == FINISH_TOOL:
            raise ValueError(f"{FINISH_TOOL} is the completion tool; no agent tool may use it")
        return self


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


class AgentDefinition(WireModel):
    """One agent. With `output_schema` it must end with schema-valid output or a coded failure."""

    name: str = "agent"
    system_prompt: str = "You are a helpful agent."
    model: str = "gpt-4o-mini"
    tools: tuple[AgentTool, ...] = ()
    output_schema: dict[str, JsonValue] | None = None
    max_steps: PositiveInt = DEFAULT_MAX_STEPS
    max_completion_retries: NonNegativeInt = DEFAULT_MAX_COMPLETION_RETRIES
    max_tokens: PositiveInt | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    reasoning: Reasoning | None = None
    stream: bool = False
    skills: Skills | None = None
    workspace: Workspace | None = None
    memory: Memory | None = None

    @model_validator(mode="after")
    def _unique_tool_names(self) -> AgentDefinition:
        names = [tool.name for tool in self.all_tools()]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"tool names must be unique; repeated: {', '.join(duplicates)}")
        return self

    def all_tools(self) -> tuple[AgentTool, ...]:
        """Agent tools, skill tools and workspace tools, as work calls offer them."""
        skill_tools: tuple[AgentTool, ...] = ()
        if self.skills is not None and (self.skills.catalog or self.skills.preloaded):
            skill_tools = SKILL_TOOLS
        workspace_tools = self.workspace.tools if self.workspace is not None else ()
        return (*self.tools, *skill_tools, *workspace_tools)


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
