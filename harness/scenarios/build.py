"""Turning scenario parts into the harness objects they describe."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
from pydantic import JsonValue

from harness.agent.definition import AgentDefinition, AgentTool, Memory, Skill, Skills, Workspace
from harness.agent.loop import LlmCallConfig, LlmConfigOverride, OverrideContext
from harness.agent.tools import ApprovalPolicy
from harness.cassettes import CassetteTransport, RecordMode
from harness.llm.models import LlmToolCall, Reasoning, ReasoningDisabled, ReasoningEffort
from harness.llm.script import ScriptTransport
from harness.modules.catalog import PolicyUnavailable, ToolCatalog
from harness.modules.models_acl import AuthenticatedSession, LlmDetails, LlmDetailsService
from harness.scenarios.format import AgentSpec, Scenario, ToolPolicySpec, ToolSpec


def tool(spec: ToolSpec) -> AgentTool:
    return AgentTool(
        name=spec.name,
        description=spec.description,
        parameters=spec.parameters,
        result=spec.result,
        error=spec.error,
        requires_approval=spec.requires_approval,
    )


def reasoning(value: str | None) -> Reasoning | None:
    if value is None:
        return None
    if value == "disabled":
        return ReasoningDisabled()
    return ReasoningEffort.model_validate({"effort": value})


def agent_definition(scenario: Scenario, spec: AgentSpec) -> AgentDefinition:
    default_model = "gpt-4o-mini" if scenario.provider == "openai" else "claude-sonnet-4-5"
    return AgentDefinition(
        name=scenario.name,
        system_prompt=spec.system_prompt,
        model=scenario.model or default_model,
        tools=tuple(tool(t) for t in spec.tools),
        output_schema=spec.output_schema,
        max_steps=spec.max_steps,
        max_completion_retries=spec.max_completion_retries,
        max_tokens=spec.max_tokens,
        temperature=spec.temperature,
        reasoning=reasoning(spec.reasoning),
        stream=spec.stream,
        skills=Skills(
            catalog=tuple(
                Skill(name=s.name, description=s.description) for s in spec.skills.catalog
            ),
            preloaded=tuple(Skill(name=s.name, body=s.body) for s in spec.skills.preloaded),
        )
        if spec.skills is not None
        else None,
        workspace=Workspace(
            fragment=spec.workspace.fragment, tools=tuple(tool(t) for t in spec.workspace.tools)
        )
        if spec.workspace is not None
        else None,
        memory=Memory(memories=tuple(spec.memory.memories)) if spec.memory is not None else None,
    )


def config_override(spec: AgentSpec) -> LlmConfigOverride | None:
    """The callback: in the forced phase it returns the scenario's override; else nothing."""
    override = spec.llm_config_override
    if override is None:
        return None
    changes = {k: v for k, v in override.model_dump().items() if v is not None}

    def callback(config: LlmCallConfig, context: OverrideContext) -> Mapping[str, object] | None:
        return changes if context.execution_phase == "forced_completion" else None

    return callback


def approval_policy(spec: AgentSpec) -> ApprovalPolicy:
    denied = set(spec.deny_approval)

    def approve(call: LlmToolCall, tool: AgentTool) -> bool:
        return call.name not in denied

    return approve


def transport(
    scenario: Scenario, folder: Path, mode: RecordMode, *, strict: bool
) -> httpx.BaseTransport:
    """The model's replies: a script rendered by the adapter, or a cassette."""
    if scenario.script is not None:
        return ScriptTransport(scenario.provider, list(scenario.script))
    assert scenario.cassette is not None
    return CassetteTransport(
        folder / scenario.cassette,
        mode=mode,
        volatile=scenario.volatile,
        strict=strict,
        provider=scenario.provider,
    )


def models_service(scenario: Scenario) -> LlmDetailsService:
    return LlmDetailsService.of(
        LlmDetails(
            id=spec.id,
            name=spec.name,
            provider=spec.provider,
            model=spec.model,
            visible_to=frozenset(spec.visible_to),
        )
        for spec in scenario.models
    )


def session(scenario: Scenario) -> AuthenticatedSession:
    spec = scenario.session
    if spec is None:
        return AuthenticatedSession(principal="alice")
    return AuthenticatedSession(
        principal=spec.principal,
        groups=frozenset(spec.groups),
        default_llm_details_id=spec.default_llm_details_id,
    )


class ScenarioToolPolicy:
    """The server tool-visibility policy a scenario describes."""

    def __init__(self, spec: ToolPolicySpec) -> None:
        self.spec = spec

    def filter(
        self, catalog: ToolCatalog, *, task: JsonValue, session: AuthenticatedSession
    ) -> ToolCatalog:
        if not self.spec.available:
            raise PolicyUnavailable
        if self.spec.allow is None:
            return catalog
        allowed = set(self.spec.allow)
        return ToolCatalog(tools=tuple(t for t in catalog.tools if t.name in allowed))


Factory = Callable[..., Any]
