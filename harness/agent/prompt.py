"""Building the two kinds of request: the full *work* call and the minimal *forced* call."""

from __future__ import annotations

from typing import Final

from pydantic import JsonValue

from harness.agent.definition import FINISH_TOOL, AgentDefinition
from harness.llm.models import (
    FRAGMENT_BASE,
    FRAGMENT_SKILL_BODIES,
    FRAGMENT_SKILLS_CATALOG,
    FRAGMENT_WORKSPACE,
    SystemFragment,
    ToolDefinition,
    UserMessage,
)
from harness.protocol.forced import ForcedCompletionState

FINISH_DESCRIPTION: Final = (
    "Finish the run: call this tool once with the final output. Its parameters are the output "
    "schema."
)
MEMORY_METADATA_KEY: Final = "memory"
FORCED_METADATA_KEY: Final = "forcedCompletion"
COMPLETION_PREFIX: Final = "[completion]"
OBSOLETE_NUDGE_PREFIX: Final = "[SYSTEM] You must call"
"""The hidden correction message forced completion replaced; it must never be sent."""


def work_fragments(agent: AgentDefinition) -> tuple[SystemFragment, ...]:
    """Every fragment: base prompt, skills catalog, preloaded skill bodies, workspace."""
    fragments = [SystemFragment(name=FRAGMENT_BASE, text=agent.system_prompt)]
    skills = agent.skills
    if skills is not None and skills.catalog:
        lines = "\n".join(f"- {skill.name}: {skill.description}" for skill in skills.catalog)
        fragments.append(
            SystemFragment(
                name=FRAGMENT_SKILLS_CATALOG,
                text=f"Available skills (load one with load_skill):\n{lines}",
            )
        )
    if skills is not None and skills.preloaded:
        bodies = "\n\n".join(f"## Skill: {skill.name}\n{skill.body}" for skill in skills.preloaded)
        fragments.append(SystemFragment(name=FRAGMENT_SKILL_BODIES, text=bodies))
    if agent.workspace is not None:
        fragments.append(SystemFragment(name=FRAGMENT_WORKSPACE, text=agent.workspace.fragment))
    return tuple(fragments)


def forced_fragments(agent: AgentDefinition) -> tuple[SystemFragment, ...]:
    """The minimum viable prompt: the base system prompt only."""
    return (SystemFragment(name=FRAGMENT_BASE, text=agent.system_prompt),)


def finish_tool(agent: AgentDefinition) -> ToolDefinition:
    """The completion tool; its parameters are the output schema."""
    schema: dict[str, JsonValue] = agent.output_schema or {"type": "object"}
    return ToolDefinition(name=FINISH_TOOL, description=FINISH_DESCRIPTION, parameters=schema)


def work_tools(agent: AgentDefinition) -> tuple[ToolDefinition, ...]:
    """Every tool plus `__finish__` when the agent has an output schema."""
    # The agent's tools were validated when the definition was built (a stricter name pattern
    # than ToolDefinition's); validating every schema again on every step cost more than a reply.
    tools = tuple(
        ToolDefinition.model_construct(
            name=t.name, description=t.description, parameters=t.parameters
        )
        for t in agent.all_tools()
    )
    return (*tools, finish_tool(agent)) if agent.output_schema is not None else tools


def memory_message(memories: tuple[str, ...]) -> UserMessage:
    """The recall injected into a work call (never persisted, never sent on a forced call)."""
    lines = "\n".join(f"- {memory}" for memory in memories)
    return UserMessage(
        content=f"<relevant_memories>\n{lines}\n</relevant_memories>",
        metadata={MEMORY_METADATA_KEY: True},
    )


def completion_message(state: ForcedCompletionState) -> UserMessage:
    """The concise `[completion]` message of one forced attempt, with its metadata."""
    attempt = state.next_attempt
    return UserMessage(
        content=(
            f"{COMPLETION_PREFIX} Finish now: call {FINISH_TOOL} with the final output that "
            f"satisfies its schema (attempt {attempt} of {state.max_attempts})."
        ),
        metadata={
            FORCED_METADATA_KEY: {
                "trigger": state.trigger,
                "attempt": attempt,
                "maxAttempts": state.max_attempts,
            }
        },
    )
