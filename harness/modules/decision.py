"""`AgentDecisionModule`: the model boundary of the durable decide-act-observe loop (v2.0).

One execution clears its outputs, resolves an ACL-visible model, projects the bounded control
state and the server-authorized tool catalog, calls the LLM gateway exactly once, and turns the
reply into a typed `AgentDecision`. It never runs a tool, never grants approval, and never treats
free-form text as authority: anything that is not a valid decision raises
`AgentDecisionProtocolException` carrying a bounded correction for the next attempt.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import JsonValue

from harness.errors import (
    AgentDecisionCallException,
    AgentDecisionProtocolException,
    HarnessError,
    IllegalArgumentException,
    SecurityException,
)
from harness.llm.gateway import Completer
from harness.llm.models import (
    FRAGMENT_BASE,
    LlmRequest,
    LlmResponse,
    SystemFragment,
    UserMessage,
)
from harness.metadata import DECISION, Contract
from harness.modules.catalog import (
    ASK_USER_TOOL,
    BUILT_IN_CATALOG,
    CONTROL_TOOLS,
    WAIT_APPROVAL_TOOL,
    ToolCatalog,
    ToolVisibilityPolicy,
)
from harness.modules.models_acl import AuthenticatedSession, LlmDetails, LlmDetailsService
from harness.modules.projection import check_state_size, project, truncate_utf16
from harness.protocol.decision import AgentDecision, DecisionOutcome, ToolCall
from harness.protocol.outcome import EndTurn

_log = logging.getLogger(__name__)

# The names and defaults are the module's declared contract (`harness.metadata.DECISION`).
INPUTS: Final = DECISION.input_names()
OUTPUTS: Final = DECISION.output_names()
CONFIGURATION_DEFAULTS: Final[Mapping[str, str | None]] = {
    field.name: None if field.default is None else str(field.default)
    for field in DECISION.configuration
}
SELECTION_POLICIES: Final = ("session-default-valor", "first-visible", "name:<visible model name>")
MAX_RETRIEVAL_EVIDENCE: Final = 4
MAX_CORRECTION_UNITS: Final = 1_000
DECISION_MAX_TOKENS: Final = 4_096
PROTOCOL_VERSION: Final = "agent-decision/2.0"
_IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
_DECISION_WORD = re.compile(r"^[a-z][a-z_-]{0,31}$")

DECISION_PROTOCOL_PROMPT: Final = (
    "You decide the next step of a durable agent workflow. The user message is the control "
    "state as JSON. Reply with exactly one of: calls to tools from the catalog (arguments are "
    f"JSON objects); a final answer as plain text when the task is complete; a call to "
    f"{ASK_USER_TOOL} with a question when you need the user; or a call to "
    f"{WAIT_APPROVAL_TOOL} with a reason before a consequential action that needs approval. "
    "Never claim an action happened unless an observation shows it."
)

CompleterFactory = Callable[[LlmDetails], Completer]


@dataclass(frozen=True, kw_only=True)
class DecisionConfiguration:
    """The module's four configuration fields, validated."""

    llm_details_id: uuid.UUID | None
    model_selection: str
    task_field: str
    session_field: str

    @classmethod
    def parse(cls, config: Mapping[str, object] | None) -> DecisionConfiguration:
        values: dict[str, object] = dict(CONFIGURATION_DEFAULTS)
        for name, value in (config or {}).items():
            if name not in CONFIGURATION_DEFAULTS:
                raise IllegalArgumentException(
                    f"unknown configuration field {name!r}; allowed: "
                    f"{', '.join(CONFIGURATION_DEFAULTS)}"
                )
            values[name] = value
        for name in ("modelSelection", "taskField", "sessionField"):
            if not isinstance(values[name], str) or not values[name]:
                raise IllegalArgumentException(
                    f"configuration field {name} must be a non-empty string but got a value of "
                    f"type {type(values[name]).__name__}"
                )
        return cls(
            llm_details_id=_model_uuid(values["llmDetailsId"], "configuration llmDetailsId"),
            model_selection=str(values["modelSelection"]),
            task_field=str(values["taskField"]),
            session_field=str(values["sessionField"]),
        )


class AgentDecisionModule:
    """Ask one ACL-visible model for the next provider-neutral decision.

    `execute(state)` takes the workflow state and returns the output map. `completer_for` builds
    the gateway for a selected model (provider hosts and keys are server configuration, never
    workflow input); `tool_policy` is the server-owned visibility policy used when
    `securityContextualToolVisibility` is true.
    """

    name: Final = "AgentDecisionModule"
    version: Final = "2.0"
    metadata: Final = Contract("decision")

    def __init__(
        self,
        config: Mapping[str, object] | None = None,
        *,
        models: LlmDetailsService,
        session: AuthenticatedSession,
        completer_for: CompleterFactory,
        tool_policy: ToolVisibilityPolicy | None = None,
        catalog: ToolCatalog = BUILT_IN_CATALOG,
    ) -> None:
        self._config = dict(config or {})
        self._models = models
        self._session = session
        self._completer_for = completer_for
        self._tool_policy = tool_policy
        self._built_in_catalog = catalog
        self._outputs: dict[str, object] = {}
        self.last_request: LlmRequest | None = None
        self.protocol_correction: str | None = None

    @property
    def outputs(self) -> dict[str, object]:
        """A copy of the output map of the last execution (empty after a failure)."""
        return dict(self._outputs)

    def execute(self, state: Mapping[str, object]) -> dict[str, object]:
        """Run one decision; see the module docstring. Exactly one gateway call, no retry."""
        self._outputs.clear()
        self.last_request = None
        self.protocol_correction = None
        config = DecisionConfiguration.parse(self._config)
        record = self._select_model(state, config)
        envelope = self._control_envelope(state, config)
        catalog = self._catalog(state, envelope.get("task"))
        request = LlmRequest(
            model=record.model,
            system=(SystemFragment(name=FRAGMENT_BASE, text=DECISION_PROTOCOL_PROMPT),),
            messages=(
                UserMessage(
                    content=check_state_size(envelope),
                    metadata=_session_metadata(state, config),
                ),
            ),
            tools=catalog.to_definitions(),
            tool_choice="auto",
            max_tokens=DECISION_MAX_TOKENS,
        )
        self.last_request = request
        response = self._call(record, request)
        decision = self._decision(response, catalog)
        outputs: dict[str, object] = {
            "agentDecision": decision.to_wire(),
            "agentDecisionOutcome": decision.normalized_outcome,
            "costTokens": max(0, response.usage.total_tokens),
            "costCredits": max(0.0, response.credits) if response.credits else 0,
            "agentToolCatalog": catalog.to_output(),
            "agentApprovalGranted": False,
        }
        evidence = retrieval_evidence(response.metadata.get("retrieval"))
        if evidence:
            outputs["agentRetrievalEvidence"] = evidence
            outputs["retrievalReceiptRef"] = evidence[0]["receiptId"]
        self._outputs.update(outputs)
        return dict(outputs)

    def _call(self, record: LlmDetails, request: LlmRequest) -> LlmResponse:
        """The one gateway call. A failure of a completer that is not harness's own gateway is
        still the gateway failing (`AgentDecisionCallException`), named by type only: its message
        may carry a credential or the request."""
        try:
            return self._completer_for(record).complete(request)
        except HarnessError:
            raise  # already typed (a cassette miss included)
        except Exception as error:
            raise AgentDecisionCallException(
                f"the LLM gateway failed: {type(error).__name__}",
                error_type="completer_error",
                provider=record.provider,
            ) from None

    # -- model selection --------------------------------------------------------------------------

    def _select_model(
        self, state: Mapping[str, object], config: DecisionConfiguration
    ) -> LlmDetails:
        policy = config.model_selection
        if policy not in SELECTION_POLICIES[:2] and not (
            policy.startswith("name:") and len(policy) > len("name:")
        ):
            # fail closed even when a pinned model makes the fallback policy moot
            raise IllegalArgumentException(
                f"unsupported modelSelection policy; allowed: {', '.join(SELECTION_POLICIES)}"
            )
        requested = _model_uuid(state.get("llmDetailsId"), "llmDetailsId")
        pinned = requested or config.llm_details_id
        if pinned is not None:
            record = self._models.find_visible(self._session, pinned)
            if record is None:
                # unknown and invisible are the same answer, so discovery leaks nothing
                raise IllegalArgumentException(
                    "llmDetailsId does not name an ACL-visible model; choose a model visible "
                    "to this session"
                )
            return record
        visible = self._models.visible(self._session)
        if policy == "session-default-valor":
            default = self._session.default_llm_details_id
            record = (
                self._models.find_visible(self._session, default) if default is not None else None
            )
            if record is None:
                raise IllegalArgumentException(
                    "modelSelection session-default-valor: the session has no ACL-visible "
                    "default model; set llmDetailsId or another modelSelection policy"
                )
            return record
        if policy == "first-visible":
            if not visible:
                raise IllegalArgumentException(
                    "modelSelection first-visible: no model is ACL-visible to this session"
                )
            return visible[0]
        wanted = policy.removeprefix("name:")  # the only policy left, checked above
        record = next((r for r in visible if r.name == wanted), None)
        if record is None:
            raise IllegalArgumentException(
                "modelSelection name:<model>: no ACL-visible model has that name"
            )
        return record

    # -- control state ----------------------------------------------------------------------------

    def _control_envelope(
        self, state: Mapping[str, object], config: DecisionConfiguration
    ) -> dict[str, JsonValue]:
        envelope: dict[str, JsonValue] = {"protocol": PROTOCOL_VERSION}
        step = _non_negative_int(state, "agentStep")
        envelope["step"] = step
        task = state.get(config.task_field)
        if task is not None:
            envelope["task"] = project(task, config.task_field)
        user_message = _optional(state, "agentUserMessage", str, "a string")
        if user_message is not None:
            envelope["userMessage"] = truncate_utf16(user_message)
        context = _optional(state, "agentProjectContext", Mapping, "an object")
        if context is not None:
            envelope["projectContext"] = project(context, "agentProjectContext")
        observation = state.get("agentObservation")
        if observation is not None:
            envelope["observation"] = project(observation, "agentObservation")
        artifacts = _optional(state, "agentArtifactRefs", list | tuple, "an array")
        if artifacts is not None:
            envelope["artifactRefs"] = project(artifacts, "agentArtifactRefs")
        granted = _optional(state, "agentApprovalGranted", bool, "a boolean") or False
        approval_request = _optional(state, "agentApprovalRequest", Mapping, "an object")
        if granted and approval_request is None:
            raise IllegalArgumentException(
                "agentApprovalGranted is true but no agentApprovalRequest is supplied; an "
                "approval authorizes only the exact request it was given for"
            )
        if approval_request is not None:
            envelope["approval"] = {
                "request": project(approval_request, "agentApprovalRequest"),
                "granted": granted,
            }
        failure = _optional(state, "agentPreviousFailure", str, "a string")
        if failure is not None:
            envelope["previousFailure"] = truncate_utf16(failure, MAX_CORRECTION_UNITS * 2)
        envelope["failureAttempts"] = _non_negative_int(state, "agentFailureAttempts")
        return envelope

    # -- tool catalog -----------------------------------------------------------------------------

    def _catalog(self, state: Mapping[str, object], task: JsonValue) -> ToolCatalog:
        supplied = state.get("agentToolCatalog")
        catalog = self._built_in_catalog if supplied is None else ToolCatalog.from_input(supplied)
        contextual = _optional(state, "securityContextualToolVisibility", bool, "a boolean")
        if contextual:
            if self._tool_policy is None:
                raise SecurityException(
                    "contextual tool visibility was requested but no server tool-visibility "
                    "policy is configured; restore the shared policy (no unfiltered fallback)"
                )
            try:
                filtered: object = self._tool_policy.filter(
                    catalog, task=task, session=self._session
                )
            except Exception:  # PolicyUnavailableError, or the policy itself failing: fail closed
                raise SecurityException(
                    "contextual tool visibility was requested but the server tool-visibility "
                    "policy is unavailable; restore it (no unfiltered fallback)"
                ) from None
            if not isinstance(filtered, ToolCatalog):
                raise SecurityException(
                    "contextual tool visibility was requested but the server tool-visibility "
                    f"policy returned {type(filtered).__name__}, not a ToolCatalog; restore it "
                    "(no unfiltered fallback)"
                )
            catalog = filtered
        return catalog.with_tools(*CONTROL_TOOLS)

    # -- the reply --------------------------------------------------------------------------------

    def _decision(self, response: LlmResponse, catalog: ToolCatalog) -> AgentDecision:
        if response.truncated:
            # a cut-off reply is incomplete even when its tool calls parse: a later call may
            # be missing
            raise self._protocol("the reply was cut off by the token limit")
        if response.tool_calls:
            return self._tool_decision(response, catalog)
        if isinstance(response.stop, EndTurn) and response.text.strip():
            return AgentDecision(outcome=DecisionOutcome.FINAL_ANSWER, text=response.text)
        if not response.text.strip():
            raise self._protocol("the reply had neither tool calls nor text")
        raise self._protocol(
            f"the reply ended with stop reason {response.stop.canonical_stop_reason()!r}"
        )

    def _tool_decision(self, response: LlmResponse, catalog: ToolCatalog) -> AgentDecision:
        by_wire_name = catalog.by_wire_name()
        calls: list[ToolCall] = []
        for call in response.tool_calls:
            tool = by_wire_name.get(call.name)
            if tool is None:
                raise self._protocol("it called a tool that is not in the catalog it was given")
            try:
                arguments = call.parsed_arguments()
            except ValueError:
                raise self._protocol(f"the arguments of {tool.name} are not valid JSON") from None
            if not isinstance(arguments, dict):
                raise self._protocol(f"the arguments of {tool.name} are not a JSON object")
            calls.append(ToolCall(id=call.id or None, name=tool.name, arguments=arguments))
        control = [c for c in calls if c.name in (ASK_USER_TOOL, WAIT_APPROVAL_TOOL)]
        if not control:
            return AgentDecision(outcome=DecisionOutcome.TOOL_CALLS, tool_calls=tuple(calls))
        if len(calls) > 1:
            raise self._protocol(f"{control[0].name} must be the only call of its reply")
        control_call = control[0]
        field = "question" if control_call.name == ASK_USER_TOOL else "reason"
        text = control_call.arguments.get(field)
        if not isinstance(text, str) or not text.strip():
            raise self._protocol(f"{control_call.name} needs a non-empty string {field!r}")
        outcome = (
            DecisionOutcome.ASK_USER
            if control_call.name == ASK_USER_TOOL
            else DecisionOutcome.WAIT_APPROVAL
        )
        return AgentDecision(outcome=outcome, text=text)

    def _protocol(self, reason: str) -> AgentDecisionProtocolException:
        correction = truncate_utf16(
            f"Your previous reply was not a valid decision: {reason}. Reply with calls to "
            f"tools from the catalog, a final answer as text, or a call to {ASK_USER_TOOL} or "
            f"{WAIT_APPROVAL_TOOL}.",
            MAX_CORRECTION_UNITS,
        )
        self.protocol_correction = correction
        _log.info("agent decision rejected: %s", reason)
        return AgentDecisionProtocolException(
            f"provider output failed typed AgentDecision parsing: {reason}; the reply was not "
            "executed",
            correction=correction,
        )


def retrieval_evidence(metadata: object) -> list[dict[str, str]]:
    """Up to four content-free receipt projections, or none when the metadata is invalid.

    Valid metadata is `{"receipts": [{"receiptId", "policyId", "decision", ...}, ...]}` with
    identifier-shaped ids and a one-word decision; anything else (any invalid receipt included)
    yields nothing. Only the three identifiers are copied: never retrieved content, never tenant
    identifiers.
    """
    if not isinstance(metadata, Mapping):
        return []
    receipts = metadata.get("receipts")
    if not isinstance(receipts, list) or not receipts:
        return []
    projections: list[dict[str, str]] = []
    for receipt in receipts:
        if not isinstance(receipt, Mapping):
            return []
        receipt_id, policy_id, decision = (
            receipt.get("receiptId"),
            receipt.get("policyId"),
            receipt.get("decision"),
        )
        if not (
            isinstance(receipt_id, str)
            and _IDENTIFIER.match(receipt_id)
            and isinstance(policy_id, str)
            and _IDENTIFIER.match(policy_id)
            and isinstance(decision, str)
            and _DECISION_WORD.match(decision)
        ):
            return []
        projections.append({"receiptId": receipt_id, "policyId": policy_id, "decision": decision})
    return projections[:MAX_RETRIEVAL_EVIDENCE]


def _model_uuid(value: object, field: str) -> uuid.UUID | None:
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    raise IllegalArgumentException(
        f"{field} must be a model UUID but got a value of type {type(value).__name__} that is "
        "not one"
    )


def _optional(state: Mapping[str, object], field: str, kind: Any, expected: str) -> Any:
    value = state.get(field)
    if value is None:
        return None
    if kind is bool and not isinstance(value, bool):
        raise IllegalArgumentException(
            f"{field} must be {expected} but got a value of type {type(value).__name__}"
        )
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise IllegalArgumentException(
            f"{field} must be {expected} but got a value of type {type(value).__name__}"
        )
    return value


def _non_negative_int(state: Mapping[str, object], field: str) -> int:
    value = state.get(field, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise IllegalArgumentException(
            f"{field} must be a non-negative integer but got a value of type {type(value).__name__}"
        )
    return value


def _session_metadata(
    state: Mapping[str, object], config: DecisionConfiguration
) -> dict[str, JsonValue]:
    session_id = state.get(config.session_field)
    if session_id is None:
        return {}
    if not isinstance(session_id, str):
        raise IllegalArgumentException(
            f"{config.session_field} must be a string session identifier but got a value of "
            f"type {type(session_id).__name__}"
        )
    return {"sessionId": session_id}


__all__ = [
    "CONFIGURATION_DEFAULTS",
    "INPUTS",
    "OUTPUTS",
    "AgentDecisionModule",
    "DecisionConfiguration",
    "retrieval_evidence",
]
