"""`AgentDecisionModule`, exactly as its contract states: selection, projection, catalog, protocol."""

from __future__ import annotations

import json
import uuid

import pytest
from pydantic import JsonValue

from harness.errors import (
    AgentDecisionCallException,
    AgentDecisionProtocolException,
    HarnessError,
    IllegalArgumentException,
    SecurityException,
)
from harness.llm.models import LlmResponse, Usage
from harness.modules.catalog import (
    BUILT_IN_CATALOG,
    PolicyUnavailableError,
    ToolCatalog,
)
from harness.modules.decision import INPUTS, OUTPUTS
from harness.modules.models_acl import AuthenticatedSession, LlmDetails, LlmDetailsService
from harness.modules.projection import MAX_STATE_CHARACTERS
from harness.protocol.outcome import LimitReached, OtherStop
from tests.support.decision import (
    CLAUDE,
    EXAMPLE_CONFIG,
    EXAMPLE_STATE,
    INSPECT,
    SECRET_MODEL,
    SESSION,
    VALOR,
    module,
)
from tests.support.scripted import text_reply, tool_reply


def test_the_seed_example() -> None:
    decision, completer, selected = module([tool_reply(INSPECT)])
    outputs = decision.execute(EXAMPLE_STATE)
    assert selected == [VALOR]
    assert outputs["agentDecisionOutcome"] == "tool_calls"
    assert outputs["agentDecision"] == {
        "outcome": "TOOL_CALLS",
        "toolCalls": [
            {
                "id": "call_0",
                "name": "workflow.execution.inspect",
                "arguments": {"executionId": "release-42"},
            }
        ],
    }
    assert outputs["costTokens"] == 128
    assert outputs["costCredits"] == 0
    assert outputs["agentApprovalGranted"] is False
    assert set(outputs) <= set(OUTPUTS)
    assert len(completer.requests) == 1
    envelope = json.loads(completer.last_request.messages[0].content)  # type: ignore[union-attr]
    assert envelope["task"] == EXAMPLE_STATE["agentTask"]
    assert envelope["step"] == 3
    assert envelope["artifactRefs"] == ["deployment:release-42"]
    assert completer.last_request.messages[0].metadata == {"sessionId": "session-42"}


def test_the_tool_catalog_sent_is_emitted_exactly() -> None:
    decision, completer, _ = module([tool_reply(INSPECT)])
    outputs = decision.execute(EXAMPLE_STATE)
    sent = completer.last_request.tool_names()
    catalog = outputs["agentToolCatalog"]
    assert isinstance(catalog, dict)
    names = [tool["name"] for tool in catalog["tools"]]
    assert names == [*BUILT_IN_CATALOG.names(), "agent.ask_user", "agent.wait_approval"]
    assert sent == tuple(name.replace(".", "_") for name in names)


def test_a_supplied_catalog_replaces_the_built_in_one() -> None:
    catalog = {"tools": [{"name": "tickets.search", "description": "Search tickets"}]}
    decision, completer, _ = module([tool_reply(("tickets_search", '{"q": "x"}'))])
    outputs = decision.execute({**EXAMPLE_STATE, "agentToolCatalog": catalog})
    assert completer.last_request.tool_names() == (
        "tickets_search",
        "agent_ask_user",
        "agent_wait_approval",
    )
    assert outputs["agentDecision"] == {
        "outcome": "TOOL_CALLS",
        "toolCalls": [{"id": "call_0", "name": "tickets.search", "arguments": {"q": "x"}}],
    }
    with pytest.raises(IllegalArgumentException, match="agentToolCatalog"):
        module([])[0].execute({**EXAMPLE_STATE, "agentToolCatalog": ["not", "an", "object"]})
    with pytest.raises(IllegalArgumentException, match=r"agentToolCatalog is invalid at tools\.0"):
        module([])[0].execute(
            {**EXAMPLE_STATE, "agentToolCatalog": {"tools": [{"name": "bad name"}]}}
        )


class Policy:
    def __init__(self, available: bool) -> None:
        self.available = available

    def filter(
        self, catalog: ToolCatalog, *, task: JsonValue, session: AuthenticatedSession
    ) -> ToolCatalog:
        if not self.available:
            raise PolicyUnavailableError
        return ToolCatalog(tools=catalog.tools[:1])


def test_contextual_visibility_filters_through_the_server_policy() -> None:
    decision, completer, _ = module([tool_reply(INSPECT)], tool_policy=Policy(True))
    decision.execute({**EXAMPLE_STATE, "securityContextualToolVisibility": True})
    assert completer.last_request.tool_names() == (
        "workflow_execution_inspect",
        "agent_ask_user",
        "agent_wait_approval",
    )


class BrokenPolicy:
    """A policy that fails, or breaks its contract by returning something else."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def filter(
        self, catalog: ToolCatalog, *, task: JsonValue, session: AuthenticatedSession
    ) -> ToolCatalog:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[return-value]  # a policy breaking its contract


@pytest.mark.parametrize(
    "policy",
    [
        None,
        Policy(False),
        BrokenPolicy(TimeoutError("policy service")),
        BrokenPolicy(None),
        BrokenPolicy(["a", "list"]),
    ],
)
def test_an_unavailable_or_broken_policy_fails_closed(policy: object) -> None:
    decision, completer, _ = module([tool_reply(INSPECT)], tool_policy=policy)
    with pytest.raises(SecurityException, match="no unfiltered fallback"):
        decision.execute({**EXAMPLE_STATE, "securityContextualToolVisibility": True})
    assert completer.requests == []
    assert decision.outputs == {}


def test_a_completer_failing_outside_harness_is_a_gateway_failure_named_by_type() -> None:
    secret = "sk-proj-COMPLETERCANARY0000"
    decision, _, _ = module([ConnectionError(f"refused for key {secret}")])
    with pytest.raises(AgentDecisionCallException, match="ConnectionError") as caught:
        decision.execute(EXAMPLE_STATE)
    assert secret not in str(caught.value)
    assert caught.value.provider == VALOR.provider
    assert decision.outputs == {}


# -- model selection ------------------------------------------------------------------------------


def test_workflow_llm_details_id_overrides_the_configured_one() -> None:
    decision, _, selected = module(
        [text_reply("done")], config={**EXAMPLE_CONFIG, "llmDetailsId": str(VALOR.id)}
    )
    decision.execute({**EXAMPLE_STATE, "llmDetailsId": str(CLAUDE.id)})
    assert selected == [CLAUDE]
    decision, _, selected = module(
        [text_reply("done")], config={**EXAMPLE_CONFIG, "llmDetailsId": str(CLAUDE.id)}
    )
    decision.execute(EXAMPLE_STATE)
    assert selected == [CLAUDE]


@pytest.mark.parametrize(
    ("policy", "expected"), [("first-visible", VALOR), ("name:claude", CLAUDE)]
)
def test_selection_policies(policy: str, expected: LlmDetails) -> None:
    decision, _, selected = module([text_reply("done")], config={"modelSelection": policy})
    decision.execute(EXAMPLE_STATE)
    assert selected == [expected]


def test_an_invisible_model_is_indistinguishable_from_a_missing_one() -> None:
    messages = []
    for model_id in (SECRET_MODEL.id, uuid.uuid4()):
        decision, completer, _ = module([text_reply("x")])
        with pytest.raises(IllegalArgumentException) as caught:
            decision.execute({**EXAMPLE_STATE, "llmDetailsId": str(model_id)})
        messages.append(str(caught.value))
        assert completer.requests == []
    assert messages[0] == messages[1]
    assert str(SECRET_MODEL.id) not in messages[0]


@pytest.mark.parametrize(
    ("config", "state", "message"),
    [
        ({"modelSelection": "cheapest"}, {}, "unsupported modelSelection"),
        ({"modelSelection": "name:secret"}, {}, "no ACL-visible model has that name"),
        ({"modelSelection": "name:"}, {}, "unsupported modelSelection"),
        (  # fails closed even when a pinned model would make the policy moot
            {"modelSelection": "round-robin", "llmDetailsId": str(VALOR.id)},
            {},
            "unsupported modelSelection",
        ),
        ({"modelSelection": "cheapest"}, {"llmDetailsId": str(VALOR.id)}, "unsupported"),
        ({"modelSelection": "first-visible"}, {"_nobody": True}, "no model is ACL-visible"),
        ({}, {"_no_default": True}, "no ACL-visible default model"),
        ({"llmDetailsId": "not-a-uuid"}, {}, "must be a model UUID"),
        ({}, {"llmDetailsId": 42}, "must be a model UUID"),
        ({"temperature": 0}, {}, "unknown configuration field 'temperature'"),
        ({"taskField": ""}, {}, "taskField must be a non-empty string"),
    ],
)
def test_selection_failures_are_illegal_arguments(
    config: dict[str, object], state: dict[str, object], message: str
) -> None:
    session = SESSION
    if state.pop("_nobody", False):
        session = AuthenticatedSession(principal="nobody")
        decision, _, _ = module([], config=config, session=session)
        decision._models = LlmDetailsService.of([SECRET_MODEL])  # only an invisible model
    elif state.pop("_no_default", False):
        decision, _, _ = module([], config=config, session=AuthenticatedSession(principal="bob"))
    else:
        decision, _, _ = module([], config=config)
    with pytest.raises(IllegalArgumentException, match=message):
        decision.execute({**EXAMPLE_STATE, **state})
    assert decision.outputs == {}


def test_discovery_never_returns_models_outside_visibility() -> None:
    service = LlmDetailsService.of([VALOR, CLAUDE, SECRET_MODEL])
    assert service.visible(SESSION) == [VALOR, CLAUDE]
    assert service.visible(AuthenticatedSession(principal="eve")) == [VALOR]


# -- the reply -------------------------------------------------------------------------------------


def test_text_ending_the_turn_is_a_final_answer() -> None:
    decision, _, _ = module([text_reply("Deployment verified.")])
    outputs = decision.execute(EXAMPLE_STATE)
    assert outputs["agentDecision"] == {"outcome": "FINAL_ANSWER", "text": "Deployment verified."}
    assert outputs["agentDecisionOutcome"] == "final_answer"


@pytest.mark.parametrize(
    ("call", "outcome", "text"),
    [
        (("agent_ask_user", '{"question": "Which region?"}'), "ASK_USER", "Which region?"),
        (
            ("agent_wait_approval", '{"reason": "Deploy to prod"}'),
            "WAIT_APPROVAL",
            "Deploy to prod",
        ),
    ],
)
def test_control_tools_become_ask_user_and_wait_approval(
    call: tuple[str, str], outcome: str, text: str
) -> None:
    decision, _, _ = module([tool_reply(call)])
    outputs = decision.execute(EXAMPLE_STATE)
    assert outputs["agentDecision"] == {"outcome": outcome, "text": text}
    assert outputs["agentDecisionOutcome"] == outcome.lower()


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (tool_reply(("shell_exec", '{"cmd": "rm -rf /"}')), "not in the catalog"),
        (tool_reply(("workflow_execution_inspect", '{"executionId": ')), "not valid JSON"),
        (tool_reply(("workflow_execution_inspect", '{"executionId": NaN}')), "not valid JSON"),
        (tool_reply(("workflow_execution_inspect", '{"limit": 1e999}')), "not valid JSON"),
        (tool_reply(("workflow_execution_inspect", '["release-42"]')), "not a JSON object"),
        (tool_reply(("agent_ask_user", '{"question": "?"}'), INSPECT), "must be the only call"),
        (tool_reply(("agent_ask_user", '{"question": 7}')), "non-empty string 'question'"),
        (text_reply("partial answ", LimitReached()), "cut off by the token limit"),
        (tool_reply(INSPECT, stop=LimitReached()), "cut off by the token limit"),
        (text_reply(""), "neither tool calls nor text"),
        (text_reply("I can't help", OtherStop(reason="refusal")), "stop reason 'other'"),
    ],
)
def test_anything_else_is_a_protocol_failure_with_a_bounded_correction(
    reply: LlmResponse, reason: str
) -> None:
    decision, completer, _ = module([tool_reply(INSPECT), reply])
    decision.execute(EXAMPLE_STATE)
    with pytest.raises(AgentDecisionProtocolException, match=reason) as caught:
        decision.execute(EXAMPLE_STATE)
    assert decision.outputs == {}, "a failed attempt leaves neither a decision nor an approval"
    error = caught.value
    assert error.retryable is True
    assert error.correction == decision.protocol_correction
    assert error.correction is not None
    assert len(error.correction) <= 1_000
    assert "rm -rf" not in str(error)
    assert "rm -rf" not in error.correction
    assert len(completer.requests) == 2, "exactly one gateway call per execution, no retry"


def test_the_previous_failure_reaches_the_next_attempt() -> None:
    decision, completer, _ = module(
        [tool_reply(("nope", "{}")), text_reply("Deployment verified.")]
    )
    with pytest.raises(AgentDecisionProtocolException) as caught:
        decision.execute(EXAMPLE_STATE)
    decision.execute({**EXAMPLE_STATE, "agentPreviousFailure": caught.value.correction})
    envelope = json.loads(completer.last_request.messages[0].content)  # type: ignore[union-attr]
    assert envelope["previousFailure"] == caught.value.correction


@pytest.mark.parametrize("name", ["agent_ask_user", "agent_wait_approval"])
def test_a_catalog_tool_clashing_with_a_control_tool_is_refused_by_name(name: str) -> None:
    catalog = {"tools": [{"name": name, "description": "Secret internal tool"}]}
    with pytest.raises(IllegalArgumentException, match=f"'{name}' and 'agent.") as caught:
        module([tool_reply(INSPECT)])[0].execute({**EXAMPLE_STATE, "agentToolCatalog": catalog})
    assert "Secret internal tool" not in str(caught.value)


def test_gateway_failures_propagate_typed_and_leave_no_output() -> None:
    failure = AgentDecisionCallException("boom", status=503, error_type="overloaded_error")
    decision, _, _ = module([tool_reply(INSPECT), failure])
    decision.execute(EXAMPLE_STATE)
    with pytest.raises(AgentDecisionCallException) as caught:
        decision.execute(EXAMPLE_STATE)
    assert caught.value.status == 503
    assert decision.outputs == {}


# -- approval --------------------------------------------------------------------------------------


def test_approval_is_bound_to_the_exact_request_and_never_leaks() -> None:
    approval = {"tool": "deployment.promote", "arguments": {"release": "42"}}
    decision, completer, _ = module([tool_reply(INSPECT)])
    outputs = decision.execute(
        {**EXAMPLE_STATE, "agentApprovalGranted": True, "agentApprovalRequest": approval}
    )
    assert outputs["agentApprovalGranted"] is False
    envelope = json.loads(completer.last_request.messages[0].content)  # type: ignore[union-attr]
    assert envelope["approval"] == {"request": approval, "granted": True}
    with pytest.raises(IllegalArgumentException, match="no agentApprovalRequest"):
        module([])[0].execute({**EXAMPLE_STATE, "agentApprovalGranted": True})


# -- retrieval lineage and cost --------------------------------------------------------------------


def receipts(*items: dict[str, object]) -> dict[str, object]:
    return {"retrieval": {"receipts": list(items)}}


def receipt(number: int, **extra: object) -> dict[str, object]:
    return {"receiptId": f"rcpt-{number}", "policyId": "pol-1", "decision": "allow", **extra}


def test_valid_retrieval_receipts_give_content_free_lineage() -> None:
    metadata = receipts(
        *(receipt(n, content="the secret document", tenantId="tenant-9") for n in range(6))
    )
    decision, _, _ = module([tool_reply(INSPECT, metadata=metadata)])
    outputs = decision.execute(EXAMPLE_STATE)
    evidence = outputs["agentRetrievalEvidence"]
    assert evidence == [
        {"receiptId": f"rcpt-{n}", "policyId": "pol-1", "decision": "allow"} for n in range(4)
    ]
    assert outputs["retrievalReceiptRef"] == "rcpt-0"
    assert "secret document" not in json.dumps(outputs)
    assert "tenant-9" not in json.dumps(outputs)


@pytest.mark.parametrize(
    "metadata",
    [
        {"retrieval": "yes"},
        {"retrieval": {"receipts": []}},
        receipts({"receiptId": "rcpt 1", "policyId": "p", "decision": "allow"}),
        receipts(receipt(1), {"policyId": "p", "decision": "allow"}),
        receipts({"receiptId": "r", "policyId": "p", "decision": "ALLOW EVERYTHING"}),
        receipts("not-an-object"),  # type: ignore[arg-type]
    ],
)
def test_invalid_retrieval_metadata_yields_neither_output(metadata: dict[str, object]) -> None:
    decision, _, _ = module([tool_reply(INSPECT, metadata=metadata)])
    outputs = decision.execute(EXAMPLE_STATE)
    assert "agentRetrievalEvidence" not in outputs
    assert "retrievalReceiptRef" not in outputs


def test_cost_is_non_negative_and_zero_when_unreported() -> None:
    reply = LlmResponse.model_validate(
        {"text": "done", "stop": {"kind": "end_turn"}, "usage": Usage(), "credits": 0.25}
    )
    decision, _, _ = module([reply])
    outputs = decision.execute(EXAMPLE_STATE)
    assert outputs["costTokens"] == 0
    assert outputs["costCredits"] == 0.25


# -- inputs ----------------------------------------------------------------------------------------


def test_the_module_declares_fourteen_inputs_and_eight_outputs() -> None:
    assert len(INPUTS) == 14
    assert len(OUTPUTS) == 8


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("agentUserMessage", 7),
        ("agentProjectContext", ["x"]),
        ("agentArtifactRefs", "deployment:1"),
        ("securityContextualToolVisibility", "yes"),
        ("agentApprovalGranted", 1),
        ("agentApprovalRequest", "approve"),
        ("agentStep", -1),
        ("agentStep", True),
        ("agentFailureAttempts", "2"),
        ("agentPreviousFailure", {"x": 1}),
        ("sessionId", 42),
    ],
)
def test_wrongly_typed_inputs_are_named_without_their_value(field: str, value: object) -> None:
    decision, completer, _ = module([tool_reply(INSPECT)])
    with pytest.raises(IllegalArgumentException, match=field) as caught:
        decision.execute({**EXAMPLE_STATE, field: value})
    assert repr(value) not in str(caught.value) or isinstance(value, bool | int)
    assert completer.requests == []


def test_the_task_field_is_configurable() -> None:
    decision, completer, _ = module(
        [text_reply("ok")], config={**EXAMPLE_CONFIG, "taskField": "ticket"}
    )
    decision.execute({"ticket": {"id": "T-1"}, "agentTask": "ignored"})
    envelope = json.loads(completer.last_request.messages[0].content)  # type: ignore[union-attr]
    assert envelope["task"] == {"id": "T-1"}


CANARY = "sk-proj-CANARY0000000000000000001"


def test_no_error_contains_a_credential_or_the_control_envelope() -> None:
    state = {
        **EXAMPLE_STATE,
        "agentProjectContext": {"notes": CANARY, "big": "x" * (MAX_STATE_CHARACTERS // 10)},
        "agentObservation": [{"k": "y" * 16_000} for _ in range(40)],
    }
    decision, completer, _ = module([tool_reply(INSPECT)])
    with pytest.raises(HarnessError) as caught:
        decision.execute(state)
    assert isinstance(caught.value, IllegalArgumentException)
    assert "600,000" in str(caught.value)
    assert CANARY not in str(caught.value)
    assert "yyyy" not in str(caught.value)
    assert completer.requests == []
    unserialisable = {**EXAMPLE_STATE, "agentObservation": {"blob": {CANARY.encode()}}}
    with pytest.raises(IllegalArgumentException, match="agentObservation is not serialisable"):
        decision.execute(unserialisable)
    protocol = module([tool_reply((CANARY, "{}"))])[0]
    with pytest.raises(AgentDecisionProtocolException) as protocol_error:
        protocol.execute({**EXAMPLE_STATE, "agentProjectContext": {"notes": CANARY}})
    assert CANARY not in str(protocol_error.value)
    assert CANARY not in protocol_error.value.correction
