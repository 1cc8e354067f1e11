"""Module contracts as data: what each reference module declares, in one typed object.

Each reference module (`AgentCompletionModule`, `AgentDecisionModule`) and the forced-completion
phase of an outputSchema agent declares its contract here, as its contract document states
it: inputs, outputs, configuration fields and their defaults, the outbound network boundary, and
every failure with its cause, retryability and recovery. Wording taken from a document's table
is copied verbatim (a test parses the documents and compares), so this file is the one place the
contract lives: `harness.modules.decision` derives its input, output and configuration names
from it, and `harness modules show NAME` prints it.

This module is a leaf (it imports nothing of ours beyond `harness.errors` and `harness.lazy`), so
the modules can import it without a cycle. Each contract is validated the first time it is read,
so importing a module costs nothing for its contract.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from harness.errors import UnknownModuleError
from harness.lazy import on_first_use

Classification = Literal["confidential"]


class MetadataModel(BaseModel):
    """Frozen and closed, like every wire record."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class InputField(MetadataModel):
    """One workflow-state value a module may read."""

    name: str
    type: str = Field(description="the contract's Type column, verbatim")
    required: bool
    description: str
    constraints: str | None = None
    default: JsonValue = Field(default=None, description="the value used when absent, if any")
    classification: Classification | None = None


class OutputField(MetadataModel):
    """One value a module may write to its output map."""

    name: str
    type: str
    condition: str = Field(description="when it is written, e.g. Success")
    description: str
    classification: Classification | None = None


class ConfigurationField(MetadataModel):
    """One configuration field and its default (None: no default)."""

    name: str
    type: str
    default: JsonValue = None
    description: str


class NetworkBoundary(MetadataModel):
    """What the module reaches over the network, and who decides where."""

    outbound: bool
    target: str | None = Field(default=None, description="what is called, if anything")
    hosts: str | None = Field(default=None, description="who configures the destination hosts")
    description: str


class Failure(MetadataModel):
    """One failure mode; `name`, `cause`, `retryable` and `recovery` are the contract's words."""

    name: str = Field(description="the contract's Failure column, verbatim")
    exception: str = Field(description="the exception class, or the failure code it carries")
    code: str = Field(description="the stable harness code (`HarnessError.code`)")
    cause: str
    retryable: str = Field(description="the contract's Retryable column, verbatim")
    recovery: str

    @property
    def message(self) -> str | None:
        """The exact message, when the contract names one (`Exception: message`)."""
        prefix = f"{self.exception}: "
        return self.name.removeprefix(prefix) if self.name.startswith(prefix) else None

    @property
    def is_retryable(self) -> bool:
        """Whether repeating without a change can succeed (the contract's 'No...' means no)."""
        return not self.retryable.startswith("No")


class ModuleMetadata(MetadataModel):
    """The whole contract of one module."""

    name: str
    key: str = Field(description="the short name `harness modules show` takes")
    version: str | None
    summary: str
    source: str = Field(description="the title of the document this contract is taken from")
    inputs: tuple[InputField, ...] = ()
    outputs: tuple[OutputField, ...] = ()
    configuration: tuple[ConfigurationField, ...] = ()
    network: NetworkBoundary
    failures: tuple[Failure, ...] = ()

    def input_names(self) -> tuple[str, ...]:
        return tuple(field.name for field in self.inputs)

    def output_names(self) -> tuple[str, ...]:
        return tuple(field.name for field in self.outputs)

    def configuration_defaults(self) -> dict[str, JsonValue]:
        return {field.name: field.default for field in self.configuration}

    def failure(self, name: str) -> Failure:
        """The failure whose `name` or `exception` is `name`."""
        for failure in self.failures:
            if name in (failure.name, failure.exception):
                return failure
        raise KeyError(name)


_COMPLETION_ANSWER_DESCRIPTION: Final = "Validated answer prepared by the preceding agent flow."

ANSWER_REQUIRED: Final = "agentFinalAnswer is required at agent completion"
"""`AgentCompletionModule`'s message for an absent, blank or non-string answer."""
ANSWER_TOO_LONG: Final = "agentFinalAnswer exceeds the supported length"
"""`AgentCompletionModule`'s message for an answer over 65,536 UTF-16 code units."""


def _completion() -> ModuleMetadata:
    return ModuleMetadata(
        name="AgentCompletionModule",
        key="completion",
        version="2.0",
        summary=(
            "The terminal, local boundary for a durable agent workflow: copies the validated answer "
            "into the terminal output. No model call, no network, no persistence, no configuration."
        ),
        source="Agent Completion ExecModule",
        inputs=(
            InputField(
                name="agentFinalAnswer",
                type="string",
                required=True,
                description=_COMPLETION_ANSWER_DESCRIPTION,
                constraints="Non-blank; maximum 65,536 Java characters.",
                classification="confidential",
            ),
        ),
        outputs=(
            OutputField(
                name="finalAnswer",
                type="string",
                condition="Success",
                description="The validated answer copied without trimming or rewriting.",
                classification="confidential",
            ),
            OutputField(
                name="agentOutcome",
                type="string",
                condition="Success",
                description="Always final_answer.",
                classification="confidential",
            ),
        ),
        configuration=(),
        network=NetworkBoundary(
            outbound=False,
            description=(
                "Agent Completion performs no authentication, credential lookup, model inference, "
                "API request, network access, persistence, or external delivery."
            ),
        ),
        failures=(
            Failure(
                name=f"IllegalArgumentException: {ANSWER_REQUIRED}",
                exception="IllegalArgumentException",
                code="illegal_argument",
                cause="The field is absent, blank, or not a string.",
                retryable="No",
                recovery="Supply the validated answer as a non-blank string.",
            ),
            Failure(
                name=f"IllegalArgumentException: {ANSWER_TOO_LONG}",
                exception="IllegalArgumentException",
                code="illegal_argument",
                cause="The answer exceeds 65,536 characters.",
                retryable="No",
                recovery=(
                    "Summarize or store the large artifact separately and provide a bounded final "
                    "answer."
                ),
            ),
        ),
    )


def _decision_input(
    name: str, type_: str, description: str, default: JsonValue = None
) -> InputField:
    # Every decision input except the model UUID travels in the control envelope, which the
    # module's contract classifies confidential.
    return InputField(
        name=name,
        type=type_,
        required=False,
        description=description,
        default=default,
        classification=None if name == "llmDetailsId" else "confidential",
    )


def _decision() -> ModuleMetadata:
    return ModuleMetadata(
        name="AgentDecisionModule",
        key="decision",
        version="2.0",
        summary=(
            "The model boundary of the durable decide-act-observe loop: asks one ACL-visible model "
            "for the next provider-neutral decision, once, and returns it typed. Never executes a "
            "tool, grants approval, or treats free-form text as authority."
        ),
        source="Agent Decision ExecModule",
        inputs=(
            _decision_input(
                "llmDetailsId",
                "UUID",
                "ACL-visible model UUID. Overrides configured model selection.",
            ),
            _decision_input(
                "sessionId",
                "string",
                "SageChat session identifier used by the shared gateway. sessionField can select "
                "another state field.",
            ),
            _decision_input(
                "agentTask",
                "any JSON-safe value",
                "Canonical task or structured task context. taskField can select another state field.",
            ),
            _decision_input(
                "agentUserMessage",
                "string",
                "Latest user instruction used as ephemeral request context.",
            ),
            _decision_input(
                "agentProjectContext",
                "object",
                "Tenant-authorized project, attachment, and recent-history context.",
            ),
            _decision_input(
                "agentObservation", "any JSON-safe value", "Latest safe tool observation."
            ),
            _decision_input(
                "agentArtifactRefs",
                "array",
                "Durable content-free artifact references from prior steps.",
            ),
            _decision_input(
                "agentToolCatalog",
                "object",
                "Server-authorized tool names and bounded descriptions. The built-in governed "
                "catalog is used when absent.",
            ),
            _decision_input(
                "securityContextualToolVisibility",
                "boolean",
                "When true, require server policy to filter the tool catalog for this task. "
                "Defaults to false.",
                default=False,
            ),
            _decision_input(
                "agentApprovalGranted",
                "boolean",
                "One-decision approval flag bound only to agentApprovalRequest. Defaults to false.",
                default=False,
            ),
            _decision_input(
                "agentApprovalRequest",
                "object",
                "Exact pending approval request authorized for the current decision.",
            ),
            _decision_input(
                "agentStep", "integer", "Current bounded loop step. Defaults to 0.", default=0
            ),
            _decision_input(
                "agentPreviousFailure",
                "string",
                "Bounded prior failure supplied for recovery planning.",
            ),
            _decision_input(
                "agentFailureAttempts",
                "integer",
                "Consecutive recoverable decision failures. Defaults to 0.",
                default=0,
            ),
        ),
        outputs=(
            OutputField(
                name="agentDecision",
                type="object",
                condition="Success",
                description="Validated provider-neutral decision.",
            ),
            OutputField(
                name="agentDecisionOutcome",
                type="string",
                condition="Success",
                description=(
                    "Normalized outcome such as tool_calls, final_answer, ask_user, wait_approval, "
                    "continue, or failed."
                ),
            ),
            OutputField(
                name="agentRetrievalEvidence",
                type="array",
                condition="Valid retrieval metadata",
                description=(
                    "Up to four content-free GrayMatter receipt/policy projections. Raw retrieved "
                    "content and tenant identifiers are not copied."
                ),
            ),
            OutputField(
                name="retrievalReceiptRef",
                type="string",
                condition="Valid retrieval metadata",
                description="Primary authenticated retrieval receipt ID.",
            ),
            OutputField(
                name="costTokens",
                type="integer",
                condition="Success",
                description="Non-negative provider-reported token count, or zero when unavailable.",
            ),
            OutputField(
                name="costCredits",
                type="number",
                condition="Success",
                description="Non-negative provider-reported credit use, or zero when unavailable.",
            ),
            OutputField(
                name="agentToolCatalog",
                type="object",
                condition="Success",
                description="Exact server-computed tool catalog supplied to the model.",
            ),
            OutputField(
                name="agentApprovalGranted",
                type="boolean",
                condition="Success",
                description="Always reset to false so approval cannot leak into a later decision.",
            ),
        ),
        configuration=(
            ConfigurationField(
                name="llmDetailsId",
                type="UUID",
                default=None,
                description="Optional pinned ACL-visible model. Workflow input can override it.",
            ),
            ConfigurationField(
                name="modelSelection",
                type="string",
                default="session-default-valor",
                description=(
                    "Fallback policy: session-default-valor, first-visible, or "
                    "name:<visible model name>."
                ),
            ),
            ConfigurationField(
                name="taskField",
                type="string",
                default="agentTask",
                description="Workflow-state field containing the project task.",
            ),
            ConfigurationField(
                name="sessionField",
                type="string",
                default="sessionId",
                description="Workflow-state field containing the SageChat session identifier.",
            ),
        ),
        network=NetworkBoundary(
            outbound=True,
            target="the shared LLM gateway (one request per execution, no internal retry)",
            hosts=(
                "provider hosts are deployment-owned server configuration, never workflow input"
            ),
            description=(
                "The bounded control envelope is sent to the selected model provider and is "
                "classified confidential. No workflow-supplied IntegrationAccount, API key, token, "
                "endpoint or provider credential is accepted as input or configuration."
            ),
        ),
        failures=(
            Failure(
                name="IllegalArgumentException",
                exception="IllegalArgumentException",
                code="illegal_argument",
                cause=(
                    "Invalid model UUID/policy, no ACL-visible model, unserializable state, or state "
                    "above the 600,000-character cap."
                ),
                retryable="No until corrected",
                recovery="Correct the named state or model selection.",
            ),
            Failure(
                name="SecurityException",
                exception="SecurityException",
                code="security_policy_unavailable",
                cause=(
                    "Contextual tool filtering was requested but the server-owned visibility policy "
                    "is unavailable."
                ),
                retryable="No until service recovery",
                recovery="Restore the shared policy; never fall back to an unfiltered catalog.",
            ),
            Failure(
                name="AgentDecisionCallException",
                exception="AgentDecisionCallException",
                code="agent_decision_call_failed",
                cause="The shared gateway failed or returned a non-success response.",
                retryable="Bounded loop policy only",
                recovery="Verify model/provider readiness and retry through the durable loop.",
            ),
            Failure(
                name="AgentDecisionProtocolException",
                exception="AgentDecisionProtocolException",
                code="agent_decision_protocol_invalid",
                cause="Provider output failed typed AgentDecision parsing.",
                retryable="Bounded loop policy only",
                recovery=(
                    "Let the next bounded attempt use the recorded protocol correction. Never "
                    "execute the rejected text."
                ),
            ),
        ),
    )


_WITHIN_BUDGET: Final = "Within the forced-completion budget only"


def _forced_completion() -> ModuleMetadata:
    return ModuleMetadata(
        name="ForcedCompletion",
        key="forced-completion",
        version=None,
        summary=(
            "The deterministic, durable forced-completion phase of an outputSchema agent: entered "
            "on terminal text, max_tokens truncation or maxSteps exhaustion without valid output; "
            "each attempt is one forced call of the completion tool; it ends with schema-valid "
            "output or a classified failure."
        ),
        source="Migrating to Deterministic Forced Completion",
        inputs=(
            InputField(
                name="trigger",
                type="terminal_text | max_tokens | max_steps",
                required=True,
                description=(
                    "Why the phase starts: terminal text, max_tokens truncation, or maxSteps "
                    "exhaustion without having produced valid output."
                ),
            ),
        ),
        outputs=(
            OutputField(
                name="output",
                type="object",
                condition="Success",
                description="The __finish__ input, valid against outputSchema.",
            ),
            OutputField(
                name="forcedCompletion",
                type="ForcedCompletionState",
                condition="Phase entered",
                description=(
                    "Durable typed state (trigger, attemptsUsed, maxAttempts, status, "
                    "lastFailureCode, enteredAtStep), persisted before every forced call."
                ),
            ),
            OutputField(
                name="forced_completion",
                type="stream chunk",
                condition="Phase entered",
                description=(
                    "Diagnostic chunk, phase started | attempt_started | attempt_failed | "
                    "succeeded | exhausted; not chat content."
                ),
            ),
        ),
        configuration=(
            ConfigurationField(
                name="maxCompletionRetries",
                type="integer",
                default=2,
                description=(
                    "The forced-completion budget (maxAttempts). 0 fails immediately with "
                    "framework_forced_completion_exhausted; no forced call is made."
                ),
            ),
            ConfigurationField(
                name="maxSteps",
                type="integer",
                default=10,
                description="Work steps before maxSteps exhaustion triggers the phase.",
            ),
            ConfigurationField(
                name="outputSchema",
                type="JSON Schema object",
                default=None,
                description=(
                    "The lifecycle contract: the __finish__ tool's parameters. Without it the "
                    "phase never starts."
                ),
            ),
            ConfigurationField(
                name="llmConfigOverride",
                type="callback",
                default=None,
                description=(
                    "Invoked with executionPhase and forcedCompletion on runtime-js and Cloudflare "
                    "Durable Objects only; never on Cloudflare Workflows, Temporal or DBOS."
                ),
            ),
        ),
        network=NetworkBoundary(
            outbound=True,
            target="the agent's LLM gateway: one forced call per attempt",
            hosts="provider hosts are harness configuration (environment), never workflow input",
            description=(
                "A forced call names the completion tool (tool_choice __finish__), offers only "
                "that tool, disables reasoning, and sends the trimmed prompt (no skills, "
                "workspace or memory)."
            ),
        ),
        failures=(
            Failure(
                name="framework_forced_completion_exhausted",
                exception="framework_forced_completion_exhausted",
                code="framework_forced_completion_exhausted",
                cause=(
                    "The budget is spent (with maxCompletionRetries: 0, at once and with no forced "
                    "call); the message carries the last attempt's cause."
                ),
                retryable="No",
                recovery="The run failed: fix the prompt, schema or model, or raise the budget.",
            ),
            Failure(
                name="framework_completion_protocol_violation",
                exception="framework_completion_protocol_violation",
                code="framework_completion_protocol_violation",
                cause="__finish__ with any sibling call, or any other tool (a failed attempt).",
                retryable=_WITHIN_BUDGET,
                recovery="The next forced attempt, while budget remains.",
            ),
            Failure(
                name="framework_completion_tool_missing",
                exception="framework_completion_tool_missing",
                code="framework_completion_tool_missing",
                cause="A forced reply with no tool call (a failed attempt).",
                retryable=_WITHIN_BUDGET,
                recovery="The next forced attempt, while budget remains.",
            ),
            Failure(
                name="framework_completion_tool_choice_unsupported",
                exception="framework_completion_tool_choice_unsupported",
                code="framework_completion_tool_choice_unsupported",
                cause=(
                    "The provider or model cannot force a named tool: the run fails at once, no "
                    "attempt is spent."
                ),
                retryable="No",
                recovery=(
                    "Use a model that can force a named tool (for Anthropic, turn extended "
                    "thinking off)."
                ),
            ),
            Failure(
                name="framework_completion_invalid_output",
                exception="framework_completion_invalid_output",
                code="framework_completion_invalid_output",
                cause=(
                    "__finish__ input that is not valid JSON, fails the schema or the completion "
                    "module, or was cut off by the token limit (a failed attempt)."
                ),
                retryable=_WITHIN_BUDGET,
                recovery="The next forced attempt, while budget remains.",
            ),
        ),
    )


_CONTRACTS: Final = {
    "completion": _completion,
    "decision": _decision,
    "forced-completion": _forced_completion,
}
"""Each contract's builder, by the short name `harness modules show` takes."""


@functools.cache
def _contract(key: str) -> ModuleMetadata:
    return _CONTRACTS[key]()


def _modules() -> dict[str, ModuleMetadata]:
    return {key: _contract(key) for key in _CONTRACTS}


def module_metadata(name: str) -> ModuleMetadata:
    """The metadata of `name` (completion, decision or forced-completion).

    Refuses any other name with `UnknownModuleError`, which lists the names there are.
    """
    if name not in _CONTRACTS:
        raise UnknownModuleError(name, list(_CONTRACTS))
    return _contract(name)


class Contract:
    """A reference module's `metadata` class attribute: its contract, validated the first time
    it is read (from the class or from an instance)."""

    def __init__(self, key: str) -> None:
        self._key = key

    def __get__(self, instance: object, owner: type | None = None) -> ModuleMetadata:
        return module_metadata(self._key)


if TYPE_CHECKING:
    COMPLETION: ModuleMetadata
    DECISION: ModuleMetadata
    FORCED_COMPLETION: ModuleMetadata
    MODULES: dict[str, ModuleMetadata]
else:  # each contract is validated the first time it is read: a scenario run reads none
    __getattr__, __dir__ = on_first_use(
        __name__,
        {
            "COMPLETION": functools.partial(_contract, "completion"),
            "DECISION": functools.partial(_contract, "decision"),
            "FORCED_COMPLETION": functools.partial(_contract, "forced-completion"),
            "MODULES": _modules,
        },
    )


__all__ = [
    "ANSWER_REQUIRED",
    "ANSWER_TOO_LONG",
    "COMPLETION",
    "DECISION",
    "FORCED_COMPLETION",
    "MODULES",
    "ConfigurationField",
    "Contract",
    "Failure",
    "InputField",
    "ModuleMetadata",
    "NetworkBoundary",
    "OutputField",
    "UnknownModuleError",
    "module_metadata",
]
