"""Turning scenario parts into the harness objects they describe."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue, ValidationError
from pydantic_core import ErrorDetails

from harness.agent.definition import AgentDefinition, AgentTool
from harness.agent.loop import LlmCallConfig, LlmConfigOverride, OverrideContext
from harness.agent.spec import AgentSpec
from harness.agent.tools import ApprovalPolicy
from harness.cassettes.modes import RecordMode
from harness.errors import IllegalArgumentException
from harness.llm.models import LlmToolCall, Reasoning, ReasoningDisabled, ReasoningEffort
from harness.llm.script import ScriptTransport
from harness.providers import Provider, find_provider, unknown_provider
from harness.scenarios.format import Scenario, ToolPolicySpec

if TYPE_CHECKING:
    from harness.cassettes.transport import CassetteTransport
    from harness.modules.catalog import ToolCatalog
    from harness.modules.models_acl import AuthenticatedSession, LlmDetailsService


def reasoning(value: str | None) -> Reasoning | None:
    if value is None:
        return None
    if value == "disabled":
        return ReasoningDisabled()
    return ReasoningEffort.model_validate({"effort": value})


def agent_definition(scenario: Scenario, spec: AgentSpec) -> AgentDefinition:
    """The agent the scenario describes, validated as one document so that a refusal's location
    names the part at fault (`tools.1.name`); `agent_refusals` turns it into the scenario's."""
    return agent_named(spec, name=scenario.name, provider=scenario.provider, model=scenario.model)


def default_model(provider: Provider) -> str:
    """The model a scenario that names none runs on: the provider's `default_model`."""
    spec = find_provider(provider)
    if spec is None:
        raise IllegalArgumentException(unknown_provider(provider))
    return spec.default_model


def agent_named(
    spec: AgentSpec, *, name: str, provider: Provider, model: str | None
) -> AgentDefinition:
    """The agent `spec` describes, named `name`, on `model` (the provider's default model when
    None): `agent_definition` for a caller that holds the scenario's fields, not the scenario."""
    # An omitted budget is left out, so the definition's own default applies, as it does for
    # an agent defined without one.
    budget = (
        {}
        if spec.max_completion_retries is None
        else {"max_completion_retries": spec.max_completion_retries}
    )
    return AgentDefinition.model_validate(
        {
            **spec.parts(),
            **budget,
            "name": name,
            "model": model or default_model(provider),
            "reasoning": reasoning(spec.reasoning),
        }
    )


def agent_refusals(scenario: Scenario, spec: AgentSpec) -> list[ErrorDetails]:
    """What an agent run would refuse before its first call, located at scenario keys.

    The run builds the definition, then the call config the forced phase's override produces;
    both are built here with the same models, so a loader can refuse the scenario at
    `agent.tools.1.name` instead of the run failing. Empty when the agent is buildable.
    """
    try:
        agent = agent_definition(scenario, spec)
    except ValidationError as error:
        return [_definition_refusal(detail) for detail in error.errors()]
    override = spec.llm_config_override
    if override is None:
        return []
    base = {"model": agent.model, "max_tokens": agent.max_tokens, "temperature": agent.temperature}
    try:
        LlmCallConfig.model_validate(base | override.changes())
    except ValidationError as error:
        return [
            _located(detail, ("agent", "llm_config_override", *detail["loc"]))
            for detail in error.errors()
        ]
    return []


def _definition_refusal(detail: ErrorDetails) -> ErrorDetails:
    # A check across fields reports the item it refuses in `ctx` (its own location is the
    # whole model, and its input the whole definition, prompt included).
    context = detail.get("ctx") or {}
    location = tuple(context.get("location", detail["loc"]))
    if location[:1] not in (("name",), ("model",)):  # the scenario's own `name` and `model`
        location = ("agent", *location)
    located = _located(detail, location)
    located["input"] = context.get("input", detail["input"])
    return located


def _located(detail: ErrorDetails, location: tuple[int | str, ...]) -> ErrorDetails:
    located = detail.copy()
    located["loc"] = location
    return located


def config_override(spec: AgentSpec) -> LlmConfigOverride | None:
    """The callback: in the forced phase it returns the scenario's override, when the
    forced-completion state it is given matches the override's `when`; else nothing."""
    override = spec.llm_config_override
    if override is None:
        return None
    changes = override.changes()
    when = override.when

    def callback(config: LlmCallConfig, context: OverrideContext) -> Mapping[str, object] | None:
        if context.execution_phase != "forced_completion":
            return None
        if when is not None and not when.holds(context.forced_completion):
            return None
        return changes

    return callback


def approval_policy(spec: AgentSpec) -> ApprovalPolicy:
    denied = set(spec.deny_approval)

    def approve(call: LlmToolCall, tool: AgentTool) -> bool:
        return call.name not in denied

    return approve


def transport(
    scenario: Scenario, folder: Path, mode: RecordMode, *, strict: bool
) -> ScriptTransport | CassetteTransport:
    """The model's replies: a script rendered by the adapter, or a cassette."""
    if scenario.script is not None:
        return ScriptTransport(scenario.provider, list(scenario.script))
    assert scenario.cassette is not None
    from harness.cassettes.transport import CassetteTransport

    return CassetteTransport(
        folder / scenario.cassette,
        mode=mode,
        volatile=scenario.volatile,
        strict=strict,
        provider=scenario.provider,
    )


def models_service(scenario: Scenario) -> LlmDetailsService:
    from harness.modules.models_acl import LlmDetails, LlmDetailsService  # decision scenarios only

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
    from harness.modules.models_acl import AuthenticatedSession  # decision scenarios only

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
        from harness.modules.catalog import PolicyUnavailableError, ToolCatalog

        if not self.spec.available:
            raise PolicyUnavailableError
        if self.spec.allow is None:
            return catalog
        allowed = set(self.spec.allow)
        return ToolCatalog(tools=tuple(t for t in catalog.tools if t.name in allowed))


Factory = Callable[..., Any]
