"""Agents and model replies for agent loop, runtime and store tests."""

from __future__ import annotations

import json
from typing import Any

from harness.agent.definition import AgentDefinition, AgentTool, Memory, Skill, Skills, Workspace
from harness.llm.models import LlmResponse, LlmToolCall, Usage
from harness.protocol.outcome import EndTurn, LimitReached, ToolUse

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["answer", "score"],
    "additionalProperties": False,
}
VALID = {"answer": "Paris", "score": 3}


def agent(**changes: Any) -> AgentDefinition:
    base: dict[str, Any] = {
        "system_prompt": "You are the research agent.",
        "tools": [AgentTool(name="search", result={"hits": 3})],
        "output_schema": SCHEMA,
        "max_steps": 4,
    }
    base.update(changes)
    return AgentDefinition.model_validate(base)


def full_agent(**changes: Any) -> AgentDefinition:
    """An agent with every capability the forced call must leave out."""
    return agent(
        skills=Skills(
            catalog=(Skill(name="cite", description="Cite sources"),),
            preloaded=(Skill(name="style", body="Write plainly."),),
        ),
        workspace=Workspace(
            fragment="Workspace at /work.", tools=(AgentTool(name="bash", result={"out": ""}),)
        ),
        memory=Memory(memories=("The user prefers metric units.",)),
        **changes,
    )


_ids = iter(range(1_000_000))


def reset_ids() -> None:
    """Restart tool-call ids, so two scripts built alike are equal."""
    global _ids
    _ids = iter(range(1_000_000))


def text(content: str, truncated: bool = False) -> LlmResponse:
    return LlmResponse(
        text=content, stop=LimitReached() if truncated else EndTurn(), usage=Usage(total_tokens=5)
    )


def call(name: str, arguments: Any, text: str = "", truncated: bool = False) -> LlmResponse:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return calls((name, raw), text=text, truncated=truncated)


def calls(*pairs: tuple[str, str], text: str = "", truncated: bool = False) -> LlmResponse:
    return LlmResponse(
        text=text,
        tool_calls=tuple(
            LlmToolCall(id=f"call_{next(_ids)}", name=name, arguments=arguments)
            for name, arguments in pairs
        ),
        stop=LimitReached() if truncated else ToolUse(),
        usage=Usage(total_tokens=5),
    )


def finish(output: Any = None) -> LlmResponse:
    return call("__finish__", VALID if output is None else output)
