"""The property kit: strategies, factories and invariants, and the invariants over generated
agents, scripts and runtime profiles (run-level properties live in tests/properties/)."""

from __future__ import annotations

import ast
import inspect
import json
import uuid
from types import ModuleType
from typing import Any

import jsonschema
import pytest
from hypothesis import find, given
from hypothesis import strategies as st
from pydantic import BaseModel, JsonValue

import harness.factories
import harness.invariants
import harness.strategies
from harness.errors import IllegalArgumentException
from harness.factories import (
    FACTORIES,
    AgentDecisionFactory,
    AgentDefinitionFactory,
    InteractionFactory,
)
from harness.invariants import (
    completion_module_contract,
    decision_outputs_safe,
    request_key_canonical,
    request_key_distinguishes,
)
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.llm.script import ScriptedReply, ScriptTransport
from harness.modules.decision import AgentDecisionModule
from harness.modules.models_acl import AuthenticatedSession, LlmDetails, LlmDetailsService
from harness.protocol.decision import DecisionOutcome
from harness.scenarios.format import Scenario
from harness.strategies import (
    CANARY,
    completion_inputs,
    decision_replies,
    decision_states,
    invalid_outputs,
    output_schemas,
    replies,
    scenarios,
    scripts,
    valid_outputs,
)

# -- the public surface -------------------------------------------------------------------------


def defined_names(module: ModuleType) -> set[str]:
    """Public names the module itself defines at top level (functions, classes, constants)."""
    tree = ast.parse(inspect.getsource(module))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_") and name != "__all__"}


@pytest.mark.parametrize(
    "module", [harness.strategies, harness.factories, harness.invariants], ids=lambda m: m.__name__
)
def test_all_is_exactly_the_public_names(module: ModuleType) -> None:
    exported = module.__all__
    assert len(exported) == len(set(exported))
    assert set(exported) == defined_names(module)


# -- factories ----------------------------------------------------------------------------------


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_every_factory_builds_valid_instances_that_round_trip(factory: Any) -> None:
    for _ in range(25):
        built: BaseModel = factory.build()
        model = type(built)
        # A full dump of a Scenario re-validates its defaulted `expect` keys as given; see report.
        options: dict[str, Any] = {"exclude_unset": True} if model is Scenario else {}
        assert model.model_validate(built.model_dump(**options)) == built
        assert model.model_validate_json(built.model_dump_json(**options)) == built


def test_factories_cover_every_public_record_model() -> None:
    import harness.cassettes
    import harness.cassettes.cassette
    import harness.protocol
    import harness.sse
    import harness.stores

    built = {factory.__model__ for factory in FACTORIES}
    public = {
        value
        for module in (
            harness.protocol,
            harness.cassettes,
            harness.cassettes.cassette,
            harness.sse,
            harness.stores,
        )
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, BaseModel)
        and value is not BaseModel
        and not value.__name__.startswith("_")
    }
    abstract = {harness.protocol.StopKind}
    assert public - abstract <= built, sorted(m.__name__ for m in public - abstract - built)


def test_a_built_cassette_document_loads_and_verifies(tmp_path: Any) -> None:
    from harness.cassettes import Cassette
    from harness.factories import CassetteDocumentFactory

    for index in range(10):
        document = CassetteDocumentFactory.build()
        path = tmp_path / f"built-{index}.json"
        path.write_bytes(Cassette.from_document(path, document).dumps(signing_key=None))
        assert len(Cassette.load(path).interactions) == len(document.interactions)


def test_factory_cross_field_rules_hold() -> None:
    decision = AgentDecisionFactory.build()
    assert decision.outcome is DecisionOutcome.TOOL_CALLS
    assert decision.tool_calls
    interaction = InteractionFactory.build(occurrence=2)
    assert interaction == interaction.with_occurrence(2)


def test_cassette_metadata_takes_its_fields_validated() -> None:
    from harness.factories import CassetteMetadataFactory

    assert CassetteMetadataFactory.build().provider == "openai"
    built = CassetteMetadataFactory.build(provider="anthropic", recorded_at="2026-01-01T00:00:00")
    assert (built.provider, built.recorded_at) == ("anthropic", "2026-01-01T00:00:00")
    assert CassetteMetadataFactory.build(provider=None).provider is None


@pytest.mark.parametrize(
    ("factory", "keywords", "message"),
    [
        (
            "CassetteMetadataFactory",
            {"provder": "anthropic"},
            "expected fields of CassetteMetadata (harness_version, provider, recorded_at, "
            "identical_requests) but "
            "got provder='anthropic' (type=str)",
        ),
        (
            "CassetteMetadataFactory",
            {"provider": 5, "recorded_at": None},
            "expected CassetteMetadata fields it accepts but got provider=5 (type=int): Input "
            "should be a valid string; recorded_at=None (type=NoneType): Input should be a valid "
            "string",
        ),
        (
            "InteractionFactory",
            {"ocurrence": 2},
            "expected fields of Interaction (key, occurrence, request, response) but got "
            "ocurrence=2 (type=int)",
        ),
        (
            "CassetteDocumentFactory",
            {"signatur": "x"},
            "expected fields of CassetteDocument (metadata, interactions, signature) but got "
            "signatur='x' (type=str)",
        ),
    ],
)
def test_a_misspelt_or_invalid_keyword_is_refused_naming_the_field(
    factory: str, keywords: dict[str, Any], message: str
) -> None:
    build = getattr(harness.factories, factory).build
    with pytest.raises(IllegalArgumentException) as caught:
        build(**keywords)
    assert str(caught.value) == message


# -- strategies ---------------------------------------------------------------------------------


@given(output_schemas().flatmap(lambda s: st.tuples(st.just(s), valid_outputs(s))))
def test_valid_outputs_satisfy_their_schema(case: tuple[dict[str, JsonValue], JsonValue]) -> None:
    schema, value = case
    jsonschema.Draft202012Validator.check_schema(schema)
    assert jsonschema.Draft202012Validator(schema).is_valid(value)
    assert not jsonschema.Draft202012Validator(schema).is_valid({})


@given(output_schemas().flatmap(lambda s: st.tuples(st.just(s), invalid_outputs(s))))
def test_invalid_outputs_violate_their_schema(
    case: tuple[dict[str, JsonValue], JsonValue],
) -> None:
    schema, value = case
    assert not jsonschema.Draft202012Validator(schema).is_valid(value)
    assert not isinstance(value, str)


@given(output_schemas().flatmap(lambda s: replies(s, tools=["search"])))
def test_replies_render_through_both_adapters(reply: ScriptedReply) -> None:
    for provider in ("openai", "anthropic"):
        response = ScriptTransport(provider, [reply])
        assert response.replies == [reply]
    assert ScriptedReply.model_validate(reply.model_dump()) == reply


@given(
    scripts(
        schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        tools=["search"],
        output_tool="final_answer",
        length=4,
    )
)
def test_scripts_without_an_agent_answer_with_their_own_output_tool(
    script: list[ScriptedReply],
) -> None:
    assert len(script) == 4
    names = {call.name for reply in script for call in reply.tool_calls}
    assert names <= {"search", "final_answer"}


def test_the_output_tool_is_in_the_generated_replies() -> None:
    reply = find(
        replies(output_tool="final_answer"),
        lambda reply: len(reply.tool_calls) == 1 and not reply.truncated,
    )
    assert reply.tool_calls[0].name == "final_answer"
    default = find(replies(), lambda reply: len(reply.tool_calls) == 1 and not reply.truncated)
    assert default.tool_calls[0].name == "__finish__"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"agent": AgentDefinitionFactory.build(), "length": 3}, "an agent and length"),
        (
            {"agent": AgentDefinitionFactory.build(), "tools": [], "output_tool": "final_answer"},
            "an agent and tools, output_tool",
        ),
        ({}, r"expected a positive script length .* but got length=None \(type=NoneType\)"),
        ({"length": 0}, "but got length=0"),
        ({"length": True}, "but got length=True"),
        (
            {"length": 2, "output_tool": ""},
            r"expected a non-empty tool name but got output_tool=''",
        ),
    ],
)
def test_scripts_refuse_arguments_that_contradict_each_other(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(IllegalArgumentException, match=message):
        scripts(**arguments)


@given(scenarios())
def test_scenarios_are_valid_scenarios_with_scripts(scenario: Scenario) -> None:
    assert scenario.kind == "agent"
    assert scenario.script
    assert scenario.agent is not None
    assert scenario.agent.output_schema is not None
    again = Scenario.model_validate(scenario.model_dump(exclude_unset=True))
    assert again == scenario
    # the schema's published form accepts it too
    assert Scenario.model_validate_json(scenario.model_dump_json(exclude_unset=True)) == scenario


# -- (g) the Agent Decision module ---------------------------------------------------------------

VALOR = LlmDetails(
    id=uuid.UUID("7f1f0a52-2d6e-4d3c-9a4e-3d1f0e0c1a11"),
    name="valor",
    provider="openai",
    model="gpt-4o-mini",
)


def decision_module(reply: ScriptedReply) -> tuple[AgentDecisionModule, list[LlmGateway]]:
    gateways: list[LlmGateway] = []

    def completer_for(record: LlmDetails) -> LlmGateway:
        gateway = LlmGateway(
            GatewayConfig(provider=record.provider, base_url="https://scripted.invalid"),
            transport=ScriptTransport(record.provider, [reply]),
        )
        gateways.append(gateway)
        return gateway

    module = AgentDecisionModule(
        {},
        models=LlmDetailsService.of([VALOR]),
        session=AuthenticatedSession(principal="alice", default_llm_details_id=VALOR.id),
        completer_for=completer_for,
    )
    return module, gateways


@given(decision_states(), decision_replies())
def test_decision_outputs_are_safe(state: dict[str, Any], reply: ScriptedReply) -> None:
    module, gateways = decision_module(reply)
    try:
        outcome = decision_outputs_safe(module, state, canary=CANARY)
    finally:
        for gateway in gateways:
            gateway.close()
    assert len(gateways) <= 1  # one gateway call at most, no retry
    if isinstance(outcome, dict):
        assert outcome["agentApprovalGranted"] is False


# -- (h) the Agent Completion module -------------------------------------------------------------


@given(completion_inputs())
def test_completion_module_contract(state: dict[str, object]) -> None:
    completion_module_contract(state)


def test_completion_boundary_examples() -> None:
    assert completion_module_contract({"agentFinalAnswer": "😀" * 32_768}) is not None
    assert completion_module_contract({"agentFinalAnswer": "😀" * 32_768 + "a"}) is None
    assert completion_module_contract({"agentFinalAnswer": "\u00a0"}) is not None
    assert completion_module_contract({"agentFinalAnswer": "\u2003\n"}) is None
    assert completion_module_contract({}) is None


# -- (j) canonical request keys ------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)
bodies = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["gpt-4o-mini", "gpt-4.1"]),
        "messages": st.lists(json_values, max_size=3),
    },
    optional={
        "temperature": st.sampled_from([0, 0.5, 1]),
        "tools": st.lists(json_values, max_size=2),
    },
)


@given(bodies, st.sampled_from(["/v1/chat/completions", "/v1/messages"]))
def test_request_keys_ignore_key_order_and_whitespace(
    body: dict[str, JsonValue], path: str
) -> None:
    key = request_key_canonical("POST", path, body)
    assert key.startswith("sha256:")


@given(bodies, bodies)
def test_request_keys_differ_when_a_non_volatile_field_differs(
    body: dict[str, JsonValue], other: dict[str, JsonValue]
) -> None:
    request_key_distinguishes("POST", "/v1/chat/completions", body, other)


def test_request_key_examples() -> None:
    body: dict[str, JsonValue] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    reordered = json.loads('{"messages": [{"content": "hi", "role": "user"}], "model": "m"}')
    assert request_key_canonical("POST", "/v1/messages", body) == request_key_canonical(
        "POST", "/v1/messages", reordered
    )
    with pytest.raises(AssertionError, match="same request key"):
        # `user` is volatile for OpenAI: the caller asked about a field left out of the key
        request_key_distinguishes(
            "POST", "/v1/chat/completions", {**body, "user": "a"}, {**body, "user": "b"}
        )


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"next": value}
    return value


def test_the_envelope_bound_measures_each_projected_value_from_its_own_root() -> None:
    from harness.invariants import _envelope_bounded

    assert _envelope_bounded({"task": "t", "projectContext": nested(8)}) is None
    assert _envelope_bounded({"projectContext": nested(9)}) == "projectContext: depth 9"
    approval = {"request": nested(8), "granted": True}
    assert _envelope_bounded({"approval": approval}) is None
    approval = {"request": nested(9), "granted": True}
    assert _envelope_bounded({"approval": approval}) == "approval: depth 9"
    omitted: Any = {"projectContext": {"a": {"$omitted": "depth"}}}
    assert _envelope_bounded(omitted) is None
