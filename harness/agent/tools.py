"""The governed tool step: scripted tools, approval gates, skill tools, and `__finish__`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import JsonValue

from harness.agent.definition import AgentDefinition, AgentTool
from harness.llm.models import LlmToolCall

ApprovalPolicy = Callable[[LlmToolCall, AgentTool], bool]
"""Decides an approval-gated call; the harness default approves every request."""

FINISH_ACKNOWLEDGED: dict[str, JsonValue] = {"acknowledged": True}


def approve_all(call: LlmToolCall, tool: AgentTool) -> bool:
    return True


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call produced, as the model will read it."""

    result: JsonValue
    is_error: bool = False
    approval: bool | None = None

    def content(self) -> str:
        return json.dumps(self.result, ensure_ascii=False, separators=(",", ":"))


def run_tool(agent: AgentDefinition, call: LlmToolCall, approve: ApprovalPolicy) -> ToolOutcome:
    """Run one non-finish call; an unknown tool or invalid arguments become an error result."""
    tool = next((t for t in agent.all_tools() if t.name == call.name), None)
    if tool is None:
        return ToolOutcome({"error": f"unknown tool {call.name!r}"}, is_error=True)
    try:
        arguments = call.parsed_arguments()
    except ValueError:
        return ToolOutcome({"error": "the arguments are not valid JSON"}, is_error=True)
    if not isinstance(arguments, dict):
        return ToolOutcome({"error": "the arguments must be a JSON object"}, is_error=True)
    granted: bool | None = None
    if tool.requires_approval:
        granted = approve(call, tool)
        if not granted:
            return ToolOutcome({"error": "approval denied"}, is_error=True, approval=False)
    if tool.name == "load_skill":
        return _load_skill(agent, arguments, granted)
    if tool.error is not None:
        return ToolOutcome({"error": tool.error}, is_error=True, approval=granted)
    result: JsonValue = tool.result if tool.result is not None else {"ok": True}
    return ToolOutcome(result, approval=granted)


def _load_skill(
    agent: AgentDefinition, arguments: dict[str, JsonValue], granted: bool | None
) -> ToolOutcome:
    skills = agent.skills
    name = arguments.get("name")
    known = [] if skills is None else [*skills.catalog, *skills.preloaded]
    skill = next((s for s in known if s.name == name), None)
    if skill is None:
        return ToolOutcome({"error": "unknown skill"}, is_error=True, approval=granted)
    return ToolOutcome({"name": skill.name, "body": skill.body}, approval=granted)
