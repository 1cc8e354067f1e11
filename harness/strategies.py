"""Hypothesis strategies for property tests of agents built on `harness`.

Every strategy here is built from small primitives with `st.builds`, `st.fixed_dictionaries` and
`st.sampled_from` (no heavy `.filter`), so a failing example shrinks to something a person can
read: one short script, the smallest budget, the first tool name. Generated agents and scripts are
small on purpose (budgets 0..3, at most 3 work steps) so a property runs hundreds of whole agent
runs in seconds.

```python
from hypothesis import given
from harness.strategies import agent_runs
from harness.invariants import run_ends_validly

@given(agent_runs())
def test_my_agent_ends_validly(run):
    with run.completer() as gateway:
        run_ends_validly(run_agent(run.agent, gateway, user_message="Go."))
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from hypothesis import strategies as st
from pydantic import JsonValue

from harness import providers
from harness.agent.definition import (
    FINISH_TOOL,
    AgentDefinition,
    AgentTool,
    Memory,
    Skill,
    Skills,
    Workspace,
)
from harness.agent.output import output_validator
from harness.agent.spec import AgentSpec
from harness.errors import IllegalArgumentException
from harness.llm.capabilities import ALL_EFFORTS
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.llm.models import Effort, Reasoning, ReasoningDisabled, ReasoningEffort
from harness.llm.script import ScriptedError, ScriptedReply, ScriptedToolCall, ScriptTransport
from harness.modules.completion import INPUT_FINAL_ANSWER, MAX_ANSWER_UTF16_UNITS
from harness.providers import BUILT_IN, Provider, ProviderSpec, find_provider, unknown_provider
from harness.runtimes.base import RUNTIME_NAMES
from harness.scenarios.format import Scenario

__all__ = [
    "CANARY",
    "MODELS",
    "PROVIDERS",
    "RUNTIMES",
    "AgentRun",
    "ProviderName",
    "agent_runs",
    "agents",
    "completion_inputs",
    "decision_replies",
    "decision_states",
    "invalid_outputs",
    "output_schemas",
    "replies",
    "scenarios",
    "scripts",
    "valid_outputs",
]

ProviderName = Provider
"""The providers a scripted reply can be rendered as (`harness.providers.Provider`)."""
PROVIDERS: Final = providers.PROVIDERS
RUNTIMES: Final = RUNTIME_NAMES
"""The runtime profiles `run_agent` accepts."""
MODELS: Final[dict[ProviderName, tuple[str, ...]]] = {
    name: spec.tool_models for name, spec in BUILT_IN.items()
}
"""Models that accept tools and a forced tool choice (without extended thinking), per built-in
provider (`ProviderSpec.tool_models`; generated agents read any registered provider's spec)."""
CANARY: Final = "canary-7d1e-secret"
"""A marker generated into decision states; it must never appear in an error message."""

_PROPERTY_NAMES: Final = ("city", "count", "ok", "score", "note")
_TOOL_NAMES: Final = ("search", "lookup", "deploy")
_WORKSPACE_TOOL_NAMES: Final = ("bash", "edit")
_SCALAR_TYPES: Final = ("string", "integer", "boolean", "number")
_SAFE_TEXT: Final = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
_WORDS: Final = st.sampled_from(("", "Paris", "done", "It is Paris.", "ok", "é 😀"))

# -- output schemas and values -----------------------------------------------------------------


def output_schemas() -> st.SearchStrategy[dict[str, JsonValue]]:
    """Simple JSON object schemas: 1..3 scalar properties, at least one required.

    At least one property is always required, so `{}` never satisfies a generated schema (a
    provider that drops malformed tool input to `{}` still produces invalid output). Some schemas
    forbid additional properties. Shrinks towards `{"city": string}`, required, open.
    """

    def build(
        properties: dict[str, str], required_count: int, closed: bool
    ) -> dict[str, JsonValue]:
        names = list(properties)
        schema: dict[str, JsonValue] = {
            "type": "object",
            "properties": {name: {"type": kind} for name, kind in properties.items()},
            "required": list(names[: max(1, min(required_count, len(names)))]),
        }
        if closed:
            schema["additionalProperties"] = False
        return schema

    return st.builds(
        build,
        st.dictionaries(
            st.sampled_from(_PROPERTY_NAMES), st.sampled_from(_SCALAR_TYPES), min_size=1, max_size=3
        ),
        st.integers(1, 3),
        st.booleans(),
    )


def _value_of(kind: str) -> st.SearchStrategy[JsonValue]:
    if kind == "string":
        return _WORDS
    if kind == "integer":
        return st.integers(-1000, 1000)
    if kind == "boolean":
        return st.booleans()
    return st.integers(-1000, 1000) | st.floats(-1e6, 1e6, allow_nan=False, width=32)


def _wrong_value_for(kind: str) -> st.SearchStrategy[JsonValue]:
    wrong: dict[str, st.SearchStrategy[JsonValue]] = {
        "string": st.integers(0, 9) | st.booleans(),
        "integer": st.sampled_from(["1", 1.5, True]),
        "boolean": st.sampled_from(["true", 0, 1]),
        "number": st.sampled_from(["1", True]),
    }
    return st.none() | wrong.get(kind, st.none())


def _properties(schema: dict[str, JsonValue]) -> dict[str, str]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    kinds: dict[str, str] = {}
    for name, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        kinds[name] = kind if isinstance(kind, str) else "string"
    return kinds


def _required(schema: dict[str, JsonValue]) -> list[str]:
    required = schema.get("required")
    return (
        [name for name in required if isinstance(name, str)] if isinstance(required, list) else []
    )


def valid_outputs(schema: dict[str, JsonValue]) -> st.SearchStrategy[dict[str, JsonValue]]:
    """Objects that satisfy `schema` (a schema from `output_schemas()` or of the same shape).

    Every required property is present; optional ones may be. Values are short, so the output
    also passes the Agent Completion module's length bound. Each value is checked with
    `jsonschema` before it is returned.
    """
    properties = _properties(schema)
    required = set(_required(schema))
    mandatory = {name: _value_of(kind) for name, kind in properties.items() if name in required}
    optional = {name: _value_of(kind) for name, kind in properties.items() if name not in required}
    return st.fixed_dictionaries(mandatory, optional=optional).map(
        lambda value: _checked(schema, value, valid=True)
    )


def invalid_outputs(
    schema: dict[str, JsonValue], *, objects_only: bool = False
) -> st.SearchStrategy[JsonValue]:
    """JSON values that violate `schema`: a required property missing, a property of the wrong
    type, an extra property when the schema is closed, or not an object at all.

    Never a JSON string (a string would be sent as raw argument text). With `objects_only`, only
    JSON objects (Anthropic's `tool_use.input` is always an object). Checked with `jsonschema`.
    """
    properties = _properties(schema)
    required = _required(schema)
    valid = valid_outputs(schema)
    choices: list[st.SearchStrategy[JsonValue]] = []
    if not objects_only:
        choices.append(st.sampled_from([None, 0, True, [], [1]]))
    if required:

        def drop(value: dict[str, JsonValue], name: str) -> JsonValue:
            return {key: item for key, item in value.items() if key != name}

        choices.append(st.builds(drop, valid, st.sampled_from(required)))
    if properties:

        def retype(value: dict[str, JsonValue], name: str, wrong: JsonValue) -> JsonValue:
            return {**value, name: wrong}

        choices.append(
            st.sampled_from(sorted(properties)).flatmap(
                lambda name: st.builds(
                    retype, valid, st.just(name), _wrong_value_for(properties[name])
                )
            )
        )
    if schema.get("additionalProperties") is False:
        choices.append(st.builds(lambda value: {**value, "unexpected": 1}, valid))
    return st.one_of(choices).map(lambda value: _checked(schema, value, valid=False))


def _checked(schema: dict[str, JsonValue], value: Any, *, valid: bool) -> Any:
    is_valid = output_validator(schema).is_valid(value)
    if is_valid != valid:  # pragma: no cover - a bug in this module, not in the code under test
        raise AssertionError(f"generated {value!r} is {'in' if valid else ''}valid for {schema}")
    return value


# -- replies and scripts ------------------------------------------------------------------------


def _cut_off(value: JsonValue) -> str:
    """The raw JSON of `value` cut in half: what a token limit leaves of tool arguments."""
    import json

    text = json.dumps(value, separators=(",", ":"))
    return text[: max(1, len(text) // 2)]


def replies(
    schema: dict[str, JsonValue] | None = None,
    *,
    tools: Sequence[str] = (),
    provider_errors: bool = True,
    provider: ProviderName = "openai",
    output_tool: str = FINISH_TOOL,
) -> st.SearchStrategy[ScriptedReply]:
    """One model reply as a `ScriptedReply`.

    The kinds: text; text cut off by the token limit; a call to one of `tools` (valid JSON
    arguments, or raw cut-off JSON); a call to `output_tool` alone with output valid or invalid
    for `schema`; `output_tool` cut off by the token limit (mid-arguments, or just
    after them); `output_tool` with a sibling call (another tool or a second `output_tool`) made
    before or after it; two or three calls of `tools` and `output_tool` in one reply, in any
    order; `output_tool` with invalid output called before one or two of `tools`; and, with
    `provider_errors`, a provider error (HTTP 400/429/500/503/529). Without a `schema`, output
    calls use `{"type": "object"}` semantics and carry `{}`.

    `output_tool` is the tool your agent's model answers with: the harness's own loop calls it
    `__finish__` (the default); an agent of your own names it as it likes (`final_answer`).
    Replies are ones `provider` can send: where tool input is always an object (Anthropic's
    `tool_use.input`, `ProviderSpec.tool_input_is_object`), arguments that are not a JSON object
    appear only in replies cut off by the token limit.
    """
    output_tool = _tool_name(output_tool, "output_tool")
    objects_only = _spec(provider).tool_input_is_object
    schema = schema or {"type": "object"}
    output_valid = valid_outputs(schema) if _properties(schema) else st.just({})
    output: st.SearchStrategy[JsonValue] = output_valid
    if _properties(schema):
        output = output_valid | invalid_outputs(schema, objects_only=objects_only)

    def answer(arguments: JsonValue) -> ScriptedToolCall:
        return ScriptedToolCall(name=output_tool, arguments=arguments)

    output_call = st.builds(answer, output)
    kinds: list[st.SearchStrategy[ScriptedReply]] = [
        st.builds(ScriptedReply, text=_WORDS),
        st.builds(ScriptedReply, text=_WORDS, truncated=st.just(True)),
        st.builds(lambda call: ScriptedReply(tool_calls=(call,)), output_call),
        st.builds(
            lambda value, whole: ScriptedReply(
                tool_calls=(
                    ScriptedToolCall(
                        name=output_tool, arguments=value if whole else _cut_off(value)
                    ),
                ),
                truncated=True,
            ),
            output_valid,
            st.booleans(),
        ),
    ]
    sibling_names = [*tools, output_tool]
    kinds.append(
        st.builds(
            lambda call, sibling, output_first: ScriptedReply(
                tool_calls=(call, sibling) if output_first else (sibling, call)
            ),
            output_call,
            st.builds(ScriptedToolCall, name=st.sampled_from(sibling_names), arguments=st.just({})),
            st.booleans(),
        )
    )
    if tools:
        arguments = cast(
            "st.SearchStrategy[JsonValue]", st.fixed_dictionaries({}, optional={"q": _WORDS})
        )
        if not objects_only:
            arguments = arguments | st.just('{"q": "Pa')
        kinds.append(
            st.builds(
                lambda name, args, text: ScriptedReply(
                    text=text, tool_calls=(ScriptedToolCall(name=name, arguments=args),)
                ),
                st.sampled_from(list(tools)),
                arguments,
                st.none() | _WORDS,
            )
        )
        tool_call = st.builds(
            ScriptedToolCall, name=st.sampled_from(list(tools)), arguments=arguments
        )
        kinds.append(
            st.lists(tool_call | output_call, min_size=2, max_size=3).map(
                lambda calls: ScriptedReply(tool_calls=tuple(calls))
            )
        )
        if _properties(schema):
            # the output called too early, before the tools it needs: it fails, the run goes on,
            # and every result goes back in call order though `output_tool` runs last
            early = st.builds(answer, invalid_outputs(schema, objects_only=objects_only))
            kinds.append(
                st.builds(
                    lambda first, rest: ScriptedReply(tool_calls=(first, *rest)),
                    early,
                    st.lists(tool_call, min_size=1, max_size=2),
                )
            )
    if provider_errors:
        kinds.append(
            st.builds(
                lambda status, kind: ScriptedReply(
                    error=ScriptedError(status=status, type=kind, message="scripted failure")
                ),
                st.sampled_from([500, 429, 400, 503, 529]),
                st.sampled_from(["api_error", "rate_limit_error", "overloaded_error"]),
            )
        )
    return st.one_of(kinds)


def _spec(provider: str) -> ProviderSpec:
    spec = find_provider(provider)
    if spec is None:
        raise IllegalArgumentException(unknown_provider(provider))
    return spec


def _tool_name(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise IllegalArgumentException(
            f"expected a non-empty tool name but got {name}={value!r} (type={type(value).__name__})"
        )
    return value


def scripts(
    agent: AgentDefinition | None = None,
    *,
    schema: dict[str, JsonValue] | None = None,
    tools: Sequence[str] | None = None,
    output_tool: str = FINISH_TOOL,
    length: int | None = None,
    provider_errors: bool = True,
    provider: ProviderName = "openai",
) -> st.SearchStrategy[list[ScriptedReply]]:
    """A whole script: exactly `length` replies, each from `replies` (shrinks towards text-only
    scripts).

    For a harness `agent`, the script follows the agent: its output schema, its tools, and
    `max_steps + max_completion_retries` replies, the most model calls one run can make, so a run
    never exhausts its script. For an agent of your own (built on a provider SDK, say), give
    `schema`, `tools`, `output_tool` and `length` instead: `length` is the most model calls your
    agent may make, its work steps plus its retry budget, so a script it exhausts is a bug.

    Raises `IllegalArgumentException` when `agent` comes with `schema`, `tools`, `length` or an
    `output_tool` of its own (a harness agent answers with `__finish__`), or when there is no
    `agent` and `length` is not a positive integer.
    """
    if agent is not None:
        given = {"schema": schema, "tools": tools, "length": length}
        clashes = sorted(name for name, value in given.items() if value is not None)
        if output_tool != FINISH_TOOL:
            clashes.append("output_tool")
        if clashes:
            raise IllegalArgumentException(
                "expected either an agent or schema, tools, output_tool and length, but got an "
                f"agent and {', '.join(clashes)}; drop the agent to script an agent of your own"
            )
        schema = agent.output_schema
        tools = [tool.name for tool in agent.all_tools()]
        length = agent.max_steps + agent.max_completion_retries
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise IllegalArgumentException(
            "expected a positive script length (the most model calls your agent may make) but "
            f"got length={length!r} (type={type(length).__name__})"
        )
    reply = replies(
        schema,
        tools=tools or (),
        provider_errors=provider_errors,
        provider=provider,
        output_tool=output_tool,
    )
    return st.lists(reply, min_size=length, max_size=length)


# -- agents -------------------------------------------------------------------------------------


def _tools(names: tuple[str, ...]) -> st.SearchStrategy[tuple[AgentTool, ...]]:
    def build(chosen: list[str], failing: bool, gated: bool) -> tuple[AgentTool, ...]:
        return tuple(
            AgentTool(
                name=name,
                description=f"The {name} tool.",
                parameters={"type": "object", "properties": {"q": {"type": "string"}}},
                result={"hits": [name]},
                error="tool failed" if failing and index == 0 else None,
                requires_approval=gated and index == len(chosen) - 1,
            )
            for index, name in enumerate(chosen)
        )

    return st.builds(
        build,
        st.lists(st.sampled_from(names), unique=True, max_size=2),
        st.booleans(),
        st.booleans(),
    )


def _skills() -> st.SearchStrategy[Skills | None]:
    skill = st.builds(
        Skill, name=st.sampled_from(["cite", "style"]), description=_WORDS, body=_WORDS
    )
    return st.none() | st.builds(
        Skills,
        catalog=st.lists(skill, max_size=2).map(tuple),
        preloaded=st.lists(skill, max_size=1).map(tuple),
    )


def _reasonings() -> st.SearchStrategy[Reasoning | None]:
    return st.one_of(
        st.none(),
        st.just(ReasoningDisabled()),
        st.builds(ReasoningEffort, effort=st.sampled_from(ALL_EFFORTS)),
    )


def agents(
    *,
    provider: ProviderName = "openai",
    output_schema: bool = True,
    budgets: st.SearchStrategy[int] | None = None,
    max_steps: st.SearchStrategy[int] | None = None,
) -> st.SearchStrategy[AgentDefinition]:
    """`AgentDefinition`s with an output schema (unless `output_schema=False`), a forced-completion
    budget of 0..3, 1..3 steps, 0..2 tools (one may fail, one may need approval), and optionally
    skills, a workspace (with its own tools), memories, streaming and reasoning.

    Reasoning on Anthropic (extended thinking) makes a forced call impossible: such runs fail with
    `framework_completion_tool_choice_unsupported`, which is one of the documented outcomes.
    Anthropic counts thinking toward `max_tokens` (`thinking_counts_toward_max_tokens`), so with
    thinking on a small cap is raised to one the thinking budget fits under (Messages refuses
    anything else before it answers).
    """
    schema: st.SearchStrategy[dict[str, JsonValue] | None] = (
        output_schemas() if output_schema else st.none()
    )
    spec = _spec(provider)
    return st.builds(
        AgentDefinition,
        system_prompt=st.just("You find capitals."),
        model=st.sampled_from(spec.tool_models),
        tools=_tools(_TOOL_NAMES),
        output_schema=schema,
        max_steps=max_steps if max_steps is not None else st.integers(1, 3),
        max_completion_retries=budgets if budgets is not None else st.integers(0, 3),
        max_tokens=st.none() | st.just(256),
        reasoning=_reasonings(),
        stream=st.booleans(),
        skills=_skills(),
        workspace=st.none()
        | st.builds(
            Workspace, fragment=st.just("Workspace at /work."), tools=_tools(_WORKSPACE_TOOL_NAMES)
        ),
        memory=st.none()
        | st.builds(Memory, memories=st.lists(_WORDS.filter(bool), max_size=2).map(tuple)),
    ).map(_room_for_thinking if spec.thinking_counts_toward_max_tokens else _unchanged)


_THINKING_ROOM: Final = 20_000
"""A `max_tokens` every Anthropic thinking budget (at most 16,384 by default) fits under."""


def _room_for_thinking(agent: AgentDefinition) -> AgentDefinition:
    thinking = isinstance(agent.reasoning, ReasoningEffort)
    if thinking and agent.max_tokens is not None and agent.max_tokens <= _THINKING_ROOM:
        return agent.model_copy(update={"max_tokens": _THINKING_ROOM})
    return agent


def _unchanged(agent: AgentDefinition) -> AgentDefinition:
    return agent


@dataclass(frozen=True)
class AgentRun:
    """A generated agent, the provider its replies are rendered as, and its script."""

    agent: AgentDefinition
    provider: ProviderName
    replies: tuple[ScriptedReply, ...]

    def transport(self) -> ScriptTransport:
        """A fresh script transport (each run needs its own: it remembers its position)."""
        return ScriptTransport(self.provider, list(self.replies))

    def completer(self) -> LlmGateway:
        """A fresh gateway over a fresh script transport, through the real provider adapter.

        Close it when done (it is a context manager).
        """
        config = GatewayConfig(provider=self.provider, base_url="https://scripted.invalid")
        return LlmGateway(config, transport=self.transport())


def agent_runs(
    *,
    providers: Sequence[ProviderName] = PROVIDERS,
    provider_errors: bool = True,
    output_schema: bool = True,
    budgets: st.SearchStrategy[int] | None = None,
    max_steps: st.SearchStrategy[int] | None = None,
) -> st.SearchStrategy[AgentRun]:
    """An agent (see `agents`), a provider and a script long enough for any run of the agent."""

    def for_provider(provider: ProviderName) -> st.SearchStrategy[AgentRun]:
        return agents(
            provider=provider, output_schema=output_schema, budgets=budgets, max_steps=max_steps
        ).flatmap(
            lambda agent: st.builds(
                AgentRun,
                st.just(agent),
                st.just(provider),
                scripts(agent, provider_errors=provider_errors, provider=provider).map(tuple),
            )
        )

    return st.sampled_from(list(providers)).flatmap(for_provider)


# -- the Agent Decision module -------------------------------------------------------------------


def _cyclic_list(items: list[JsonValue]) -> list[Any]:
    value: list[Any] = list(items)
    value.append(value)
    return value


def _cyclic_dict(items: dict[str, JsonValue]) -> dict[str, Any]:
    value: dict[str, Any] = dict(items)
    value["self"] = value
    value["nested"] = {"back": value}
    return value


def _deep(depth: int) -> JsonValue:
    value: JsonValue = CANARY
    for level in range(depth):
        value = {"level": level, "inner": value} if level % 2 else [value]
    return value


def _wide(count: int) -> list[JsonValue]:
    return [f"{CANARY}-{index}" for index in range(count)]


def _long(units: int, astral: bool) -> str:
    if astral:
        return CANARY + "😀" * ((units - len(CANARY)) // 2)
    return CANARY + "x" * (units - len(CANARY))


def _state_values(*, json_only: bool) -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), _WORDS, st.just(CANARY))
    nested = st.recursive(
        leaves,
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3)
        ),
        max_leaves=8,
    )
    kinds = [
        nested,
        st.builds(_deep, st.integers(0, 12)),
        st.builds(_wide, st.sampled_from([0, 1, 63, 64, 65, 100])),
        st.builds(_long, st.sampled_from([15_999, 16_000, 16_001, 40_000]), st.booleans()),
    ]
    if not json_only:
        kinds += [
            st.builds(_cyclic_list, st.lists(leaves, max_size=2)),
            st.builds(
                _cyclic_dict, st.dictionaries(st.sampled_from(["a", "b"]), leaves, max_size=2)
            ),
            st.sampled_from([b"bytes", {1, 2}, float("nan"), {1: "int key"}]),
        ]
    return st.one_of(kinds)


def decision_states(*, json_only: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """Workflow states for `AgentDecisionModule.execute`: any subset of its inputs, with values
    that are deep (up to 12 levels), wide (up to 100 items), long (around the 16,000-unit text
    bound, astral characters included), cyclic (lists and dicts that contain themselves), not
    JSON-safe (bytes, sets, NaN, integer keys), or wrongly typed (a string step, a granted approval
    without a request). Many values carry `CANARY`, which no error may repeat.

    With `json_only`, only states JSON can carry (no cyclic or non-JSON values): what a workflow
    engine or a target process receives.

    Values are mutable and may be cyclic; compare them by identity, never by `==`.
    """
    values = _state_values(json_only=json_only)
    return st.fixed_dictionaries(
        {},
        optional={
            "agentTask": values,
            "agentUserMessage": _WORDS | st.builds(_long, st.just(16_001), st.booleans()),
            "agentProjectContext": st.dictionaries(
                st.sampled_from(["repo", "env"]), values, max_size=2
            ),
            "agentObservation": values,
            "agentArtifactRefs": st.lists(values, max_size=3),
            "agentApprovalGranted": st.booleans(),
            "agentApprovalRequest": st.fixed_dictionaries({"action": st.just(f"deploy {CANARY}")}),
            "agentStep": st.integers(0, 5) | st.sampled_from([-1, "3", True]),
            "agentPreviousFailure": _WORDS,
            "agentFailureAttempts": st.integers(0, 3),
            "sessionId": st.just("session-42"),
            # a model that is not visible (or not a UUID), a supplied catalog (with a canary in
            # a description, and names the control tools clash with), and contextual visibility
            # with no server policy: the selection, catalog and SecurityException paths
            "llmDetailsId": st.sampled_from(
                ["00000000-0000-4000-8000-00000000dead", "not-a-uuid", CANARY]
            ),
            "agentToolCatalog": st.sampled_from(
                [
                    {"tools": [{"name": "tickets.search", "description": CANARY}]},
                    {"tools": [{"name": "agent_ask_user"}]},
                    {"tools": "not a list"},
                ]
            ),
            "securityContextualToolVisibility": st.booleans(),
        },
    )


def decision_replies() -> st.SearchStrategy[ScriptedReply]:
    """Replies a decision model could give: calls to the built-in catalog (by wire name) and the
    control tools, with the arguments their schemas ask for, other or broken arguments,
    siblings, unknown tools, text, cut-off text, refusals and provider errors."""
    names = st.sampled_from(
        [
            "workflow_execution_inspect",
            "artifact_read",
            "agent_ask_user",
            "agent_wait_approval",
            "not_in_catalog",
        ]
    )
    arguments = cast(
        "st.SearchStrategy[JsonValue]",
        st.sampled_from(
            [{}, {"executionId": "release-42"}, {"question": "Which env?"}, {"reason": "deploy"}]
        )
        | st.sampled_from(['{"executionId": "rel', "[1]"]),
    )
    call = st.builds(ScriptedToolCall, name=names, arguments=arguments) | st.sampled_from(
        [  # a catalog tool or control tool with the arguments its schema asks for
            ScriptedToolCall(name="workflow_execution_inspect", arguments={"executionId": "r-42"}),
            ScriptedToolCall(name="deployment_status", arguments={"deploymentId": "prod"}),
            ScriptedToolCall(name="artifact_read", arguments={"artifactRef": "artifact://a/1"}),
            ScriptedToolCall(name="agent_ask_user", arguments={"question": "Which env?"}),
            ScriptedToolCall(name="agent_wait_approval", arguments={"reason": "deploy"}),
        ]
    )
    # empty text (no decision at all) is one case among several, not the simplest one
    words = st.sampled_from(("Release 42 is deployed.", "done", "é 😀", ""))
    return st.one_of(
        st.builds(ScriptedReply, text=words),
        st.builds(ScriptedReply, text=words, truncated=st.just(True)),
        st.builds(ScriptedReply, text=words, stop=st.just("refusal")),
        st.builds(ScriptedReply, tool_calls=st.lists(call, min_size=1, max_size=2).map(tuple)),
        st.builds(
            lambda status: ScriptedReply(error=ScriptedError(status=status)),
            st.sampled_from([500, 429, 400]),
        ),
    )


# -- the Agent Completion module -----------------------------------------------------------------


class _Shouting:
    """An object with a `__str__`: the completion module must refuse it, never convert it."""

    def __str__(self) -> str:
        return "converted"


class _StrSubclass(str):
    """A `str` subclass whose `__str__` lies: the module must copy the plain characters."""

    __slots__ = ()

    def __str__(self) -> str:
        return "lie"


_JAVA_BLANKS: Final = " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\u2028\u2029\u3000\u2003"
_CONTENT_LOOKALIKES: Final = "\u00a0\u2007\u202f\u200b\x85"


def completion_inputs(*, json_only: bool = False) -> st.SearchStrategy[dict[str, object]]:
    """Workflow states for `AgentCompletionModule.execute`: `{"agentFinalAnswer": value}` or `{}`.

    Values are any Python value: text (short, blank by Java's definition, non-breaking spaces and
    zero-width spaces that are content, and lengths around the 65,536 UTF-16 unit bound counted in
    ASCII, astral and mixed characters), `str` subclasses, None, bytes, numbers, booleans, lists,
    dicts, and objects with a `__str__`. With `json_only`, only values JSON can carry (no `str`
    subclasses, bytes or objects): what a workflow engine or a target process receives.
    """
    limit = MAX_ANSWER_UTF16_UNITS
    boundary = st.integers(-2, 2).map(lambda delta: limit + delta)
    texts = st.one_of(
        _SAFE_TEXT,
        st.text(alphabet=st.sampled_from(_JAVA_BLANKS), max_size=5),
        st.text(
            alphabet=st.sampled_from(_JAVA_BLANKS + _CONTENT_LOOKALIKES), min_size=1, max_size=5
        ),
        boundary.map(lambda units: "a" * units),
        boundary.map(lambda units: "😀" * (units // 2) + "a" * (units % 2)),
        boundary.map(lambda units: "a" * (units - 2) + "😀"),
    )
    others = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53) if json_only else st.integers(),
        st.floats(allow_nan=False, allow_infinity=not json_only),
        st.lists(_WORDS, max_size=2),
        st.dictionaries(_WORDS, _WORDS, max_size=2),
    )
    if not json_only:
        texts |= st.builds(_StrSubclass, _WORDS)
        others |= st.binary(max_size=5) | st.builds(_Shouting)
    present = st.builds(lambda value: {INPUT_FINAL_ANSWER: value}, texts | others)
    return present | st.just({})


# -- scenarios ----------------------------------------------------------------------------------


def _agent_spec(agent: AgentDefinition) -> AgentSpec:
    reasoning: Literal[Effort, "disabled"] | None = None
    if isinstance(agent.reasoning, ReasoningEffort):
        reasoning = agent.reasoning.effort
    elif isinstance(agent.reasoning, ReasoningDisabled):
        reasoning = "disabled"
    return AgentSpec.model_validate(
        {
            **agent.parts(),
            "max_completion_retries": agent.max_completion_retries,
            "reasoning": reasoning,
        }
    )


def scenarios(*, provider_errors: bool = True) -> st.SearchStrategy[Scenario]:
    """Valid agent `Scenario`s with a script: a generated agent and its script, a non-empty subset
    of the runtime profiles, the memory store, and no expectations (every run of a valid scenario
    satisfies an empty `expect`). Add your own `expect` with `model_copy(update=...)`."""

    def build(run: AgentRun, runtimes: list[str], name: str) -> Scenario:
        return Scenario.model_validate(
            {
                "name": name,
                "provider": run.provider,
                "model": run.agent.model,
                "runtimes": runtimes,
                "stores": ["memory"],
                "script": [reply.model_dump(exclude_defaults=True) for reply in run.replies],
                "agent": _agent_spec(run.agent).model_dump(exclude_defaults=True),
            }
        )

    return st.builds(
        build,
        agent_runs(provider_errors=provider_errors),
        st.lists(st.sampled_from(RUNTIMES), min_size=1, max_size=3, unique=True),
        st.sampled_from(["generated", "generated-agent", "property"]),
    )
