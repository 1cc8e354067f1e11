"""polyfactory factories for every public pydantic model of `harness`.

`SomethingFactory.build()` returns a *valid* instance in one line, with random but
validation-proof field values: cross-field rules (a `TOOL_CALLS` decision has calls, an artifact
hash matches `sha256:<64 hex>`, a cassette interaction's digest is computed with
`Interaction.build`, an agent's tool names are unique, a scenario has its agent and script) are
satisfied by construction. Override any field by keyword: `AgentDecisionFactory.build(text="x")`.

Factories are registered as the default factory of their model (`__set_as_default_factory__`), so
nested models (the `ArtifactRef` inside an envelope, the `ToolCall`s inside a decision) come from
these factories too. The random generator is seeded once (`__random_seed__`), so a test session
builds the same sequence of instances every time.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any, Generic, TypeVar

from polyfactory import Use
from polyfactory.factories.pydantic_factory import ModelFactory
from pydantic import BaseModel, JsonValue, ValidationError

from harness.agent.definition import AgentDefinition, AgentTool, Memory, Skill, Skills, Workspace
from harness.agent.spec import AgentSpec
from harness.cassettes.cassette import (
    CassetteDocument,
    CassetteMetadata,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    new_metadata,
    renumber,
)
from harness.cassettes.key import canonical_request_key
from harness.errors import IllegalArgumentException
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmResponse,
    LlmToolCall,
    NamedToolChoice,
    ReasoningDisabled,
    ReasoningEffort,
    ResponseFormat,
    SystemFragment,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harness.llm.script import ScriptedError, ScriptedReply, ScriptedToolCall
from harness.protocol.canonical import canonical_hash
from harness.protocol.chunks import (
    ApprovalChunk,
    ForcedCompletionChunk,
    RunFinishChunk,
    StepFinishChunk,
    StepStartChunk,
    TextDeltaChunk,
    ToolCallChunk,
    ToolResultChunk,
)
from harness.protocol.decision import AgentDecision, DecisionOutcome, ToolCall
from harness.protocol.envelope import AgentOutputEnvelope, ArtifactRef
from harness.protocol.forced import ForcedCompletionState
from harness.protocol.outcome import (
    AgentOutcome,
    Cancelled,
    ContentType,
    EndTurn,
    ErrorStop,
    LimitReached,
    OtherStop,
    Payload,
    ToolUse,
)
from harness.providers import ANTHROPIC, OPENAI
from harness.scenarios.format import Scenario
from harness.sse import SseEvent
from harness.stores.base import StoredRun

__all__ = [
    "FACTORIES",
    "AgentDecisionFactory",
    "AgentDefinitionFactory",
    "AgentOutcomeFactory",
    "AgentOutputEnvelopeFactory",
    "AgentToolFactory",
    "ApprovalChunkFactory",
    "ArtifactRefFactory",
    "AssistantMessageFactory",
    "CancelledFactory",
    "CassetteDocumentFactory",
    "CassetteMetadataFactory",
    "EndTurnFactory",
    "ErrorStopFactory",
    "ForcedCompletionChunkFactory",
    "ForcedCompletionStateFactory",
    "InteractionFactory",
    "LimitReachedFactory",
    "LlmRequestFactory",
    "LlmResponseFactory",
    "LlmToolCallFactory",
    "MemoryFactory",
    "NamedToolChoiceFactory",
    "OtherStopFactory",
    "PayloadFactory",
    "ReasoningDisabledFactory",
    "ReasoningEffortFactory",
    "RecordedRequestFactory",
    "RecordedResponseFactory",
    "ResponseFormatFactory",
    "RunFinishChunkFactory",
    "ScenarioFactory",
    "ScriptedErrorFactory",
    "ScriptedReplyFactory",
    "ScriptedToolCallFactory",
    "SkillFactory",
    "SkillsFactory",
    "SseEventFactory",
    "StepFinishChunkFactory",
    "StepStartChunkFactory",
    "StoredRunFactory",
    "SystemFragmentFactory",
    "TextDeltaChunkFactory",
    "ToolCallChunkFactory",
    "ToolCallFactory",
    "ToolDefinitionFactory",
    "ToolResultChunkFactory",
    "ToolResultMessageFactory",
    "ToolUseFactory",
    "UsageFactory",
    "UserMessageFactory",
    "WorkspaceFactory",
]

_ModelT = TypeVar("_ModelT", bound=BaseModel)

_OBJECT_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


class _Factory(Generic[_ModelT], ModelFactory[_ModelT]):
    """Seeded, default for its model, and checked against the model once at definition."""

    __is_base_factory__ = True
    __set_as_default_factory__ = True
    __random_seed__ = 20_260_101


def _refuse_unknown(model: str, given: Mapping[str, Any], allowed: Collection[str]) -> None:
    """An `IllegalArgumentException` naming every keyword a factory that assembles its model
    itself does not take, instead of ignoring a misspelt one."""
    unknown = [_shown(name, value) for name, value in given.items() if name not in allowed]
    if unknown:
        raise IllegalArgumentException(
            f"expected fields of {model} ({', '.join(allowed)}) but got {'; '.join(unknown)}"
        )


def _validated(model: type[_ModelT], values: Mapping[str, Any]) -> _ModelT:
    """`model` validated from `values`; an unknown field or a value its field refuses is an
    `IllegalArgumentException` naming each field and what it allows."""
    _refuse_unknown(model.__name__, values, model.model_fields)
    try:
        return model.model_validate(values)
    except ValidationError as error:
        refused = [
            f"{_shown(detail['loc'][0], values[str(detail['loc'][0])])}: {detail['msg']}"
            for detail in error.errors()
        ]
        raise IllegalArgumentException(
            f"expected {model.__name__} fields it accepts but got {'; '.join(refused)}"
        ) from None


def _shown(name: object, value: object) -> str:
    """`name=value (type=T)`, the value cut short."""
    text = repr(value)
    text = text if len(text) <= 60 else f"{text[:57]}..."
    return f"{name}={text} (type={type(value).__name__})"


def _json_object() -> dict[str, JsonValue]:
    number = _Factory.__random__.randint(0, 999)
    return {"id": f"item-{number}", "count": number, "tags": ["a", "b"]}


def _empty_metadata() -> dict[str, JsonValue]:
    return {}


def _word() -> str:
    return _Factory.__faker__.word()


def _sha256() -> str:
    return canonical_hash(_json_object())


# -- the LLM boundary ---------------------------------------------------------------------------


class SystemFragmentFactory(_Factory[SystemFragment]):
    name = Use(lambda: _Factory.__random__.choice(["base", "skills_catalog", "workspace"]))


class LlmToolCallFactory(_Factory[LlmToolCall]):
    arguments = Use(lambda: json.dumps(_json_object()))


class UserMessageFactory(_Factory[UserMessage]):
    metadata = Use(_empty_metadata)


class AssistantMessageFactory(_Factory[AssistantMessage]):
    reasoning_blocks = ()  # provider-signed blocks cannot be made up
    metadata = Use(_empty_metadata)


class ToolResultMessageFactory(_Factory[ToolResultMessage]):
    content = Use(lambda: json.dumps(_json_object()))
    metadata = Use(_empty_metadata)


class ToolDefinitionFactory(_Factory[ToolDefinition]):
    name = Use(_word)
    parameters = Use(lambda: dict(_OBJECT_SCHEMA))


class NamedToolChoiceFactory(_Factory[NamedToolChoice]):
    name = Use(_word)


class ReasoningDisabledFactory(_Factory[ReasoningDisabled]):
    pass


class ReasoningEffortFactory(_Factory[ReasoningEffort]):
    pass


class ResponseFormatFactory(_Factory[ResponseFormat]):
    schema_ = Use(lambda: dict(_OBJECT_SCHEMA))


class LlmRequestFactory(_Factory[LlmRequest]):
    model = Use(lambda: _Factory.__random__.choice([OPENAI.default_model, ANTHROPIC.default_model]))


class UsageFactory(_Factory[Usage]):
    pass


class LlmResponseFactory(_Factory[LlmResponse]):
    reasoning_blocks = ()  # provider-signed blocks cannot be made up
    metadata = Use(_empty_metadata)
    raw = Use(_json_object)


class ScriptedToolCallFactory(_Factory[ScriptedToolCall]):
    arguments = Use(_json_object)


class ScriptedErrorFactory(_Factory[ScriptedError]):
    status = Use(lambda: _Factory.__random__.choice([400, 429, 500, 529]))
    body = None


class ScriptedReplyFactory(_Factory[ScriptedReply]):
    """A text reply unless you give `tool_calls` or `error` (then pass `text=None`)."""

    text = Use(_word)
    tool_calls = ()
    stop = None
    error = None


# -- decisions, stop kinds, records --------------------------------------------------------------


class ToolCallFactory(_Factory[ToolCall]):
    name = Use(lambda: "workflow.execution.inspect")
    arguments = Use(_json_object)


class AgentDecisionFactory(_Factory[AgentDecision]):
    """A `TOOL_CALLS` decision with one or two calls (pass `outcome=` and `tool_calls=()` for
    the other outcomes)."""

    outcome = DecisionOutcome.TOOL_CALLS
    tool_calls = Use(
        lambda: tuple(ToolCallFactory.build() for _ in range(_Factory.__random__.randint(1, 2)))
    )


class EndTurnFactory(_Factory[EndTurn]):
    pass


class ToolUseFactory(_Factory[ToolUse]):
    pass


class LimitReachedFactory(_Factory[LimitReached]):
    pass


class CancelledFactory(_Factory[Cancelled]):
    pass


class ErrorStopFactory(_Factory[ErrorStop]):
    pass


class OtherStopFactory(_Factory[OtherStop]):
    pass


class AgentOutcomeFactory(_Factory[AgentOutcome]):
    stop_reason = Use(
        lambda: _Factory.__random__.choice(["end_turn", "limit_reached", "error", "cancelled"])
    )
    session_id = Use(lambda: f"session-{_Factory.__random__.randint(1, 9999)}")


class PayloadFactory(_Factory[Payload]):
    """The JSON payload of an agent-outcome record."""

    content_type = ContentType.JSON
    bytes = Use(lambda: AgentOutcomeFactory.build().into_payload().bytes)


# -- chunks -------------------------------------------------------------------------------------


class StepStartChunkFactory(_Factory[StepStartChunk]):
    pass


class TextDeltaChunkFactory(_Factory[TextDeltaChunk]):
    pass


class ToolCallChunkFactory(_Factory[ToolCallChunk]):
    arguments = Use(lambda: json.dumps(_json_object()))


class ToolResultChunkFactory(_Factory[ToolResultChunk]):
    result = Use(_json_object)


class ApprovalChunkFactory(_Factory[ApprovalChunk]):
    pass


class StepFinishChunkFactory(_Factory[StepFinishChunk]):
    stop_reason = Use(lambda: _Factory.__random__.choice(["end_turn", "tool_use"]))


class ForcedCompletionChunkFactory(_Factory[ForcedCompletionChunk]):
    pass


class RunFinishChunkFactory(_Factory[RunFinishChunk]):
    pass


# -- envelopes and the forced state ---------------------------------------------------------------


class ArtifactRefFactory(_Factory[ArtifactRef]):
    """A reference whose hash has the `sha256:<64 hex>` shape (the hash of a random payload)."""

    hash = Use(_sha256)
    type = "json_payload"


class AgentOutputEnvelopeFactory(_Factory[AgentOutputEnvelope]):
    """A `succeeded` envelope: output, its artifact reference (hashing exactly that output)."""

    outcome = "succeeded"
    response = None
    structured_output = None
    agent_result = None

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> AgentOutputEnvelope:
        if "agent_result" not in kwargs and "structured_output" not in kwargs:
            output = _json_object()
            kwargs["agent_result"] = output
            kwargs["structured_output"] = ArtifactRef.for_payload(
                output, artifact_id="artifact-1", version_id="artifact-1-v1"
            )
        return super().build(*args, **kwargs)


class ForcedCompletionStateFactory(_Factory[ForcedCompletionState]):
    """A state whose attempts used never exceed its budget."""

    max_attempts = Use(lambda: _Factory.__random__.randint(0, 3))

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> ForcedCompletionState:
        state = super().build(*args, **kwargs)
        if "attempts_used" in kwargs:
            return state
        used = min(state.attempts_used, state.max_attempts)
        return state.model_copy(update={"attempts_used": used})


# -- cassettes ----------------------------------------------------------------------------------


class RecordedRequestFactory(_Factory[RecordedRequest]):
    method = "POST"
    path = OPENAI.request_path
    query = ""
    headers = Use(lambda: {"content-type": "application/json"})
    body = Use(
        lambda: {
            "model": OPENAI.default_model,
            "messages": [{"role": "user", "content": _word()}],
        }
    )
    body_text = None
    body_base64 = None


class RecordedResponseFactory(_Factory[RecordedResponse]):
    status = 200
    headers = Use(lambda: {"content-type": "application/json"})
    body = Use(_json_object)
    body_text = None
    body_base64 = None
    events = None


class InteractionFactory(_Factory[Interaction]):
    """An interaction keyed by its request's canonical key, with the digest `Interaction.build`
    computes, so a cassette holding it loads without a tamper error."""

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> Interaction:
        _refuse_unknown("Interaction", kwargs, ("key", "occurrence", "request", "response"))
        request: RecordedRequest = kwargs.get("request") or RecordedRequestFactory.build()
        response: RecordedResponse = kwargs.get("response") or RecordedResponseFactory.build()
        key = kwargs.get("key") or canonical_request_key(
            request.method, request.url, request.headers, request.body_bytes()
        )
        return Interaction.build(key, kwargs.get("occurrence", 1), request, response)


class SseEventFactory(_Factory[SseEvent]):
    """A data event as providers send them (JSON data, no id or retry, no comments)."""

    event = None
    data = Use(lambda: json.dumps(_json_object()))
    id = None
    retry = None
    comments = ()


class CassetteMetadataFactory(_Factory[CassetteMetadata]):
    """Metadata as a recording writes it (this harness's version, the time now, OpenAI), with
    any field given by keyword validated as the model validates it."""

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> CassetteMetadata:
        recorded = new_metadata(OPENAI.name).model_dump()
        return _validated(CassetteMetadata, recorded | kwargs)


class CassetteDocumentFactory(_Factory[CassetteDocument]):
    """A cassette file of 1-3 interactions, occurrences counted per key, unsigned: it loads and
    verifies when written (`Cassette.from_document(path, document).dumps()`)."""

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> CassetteDocument:
        _refuse_unknown("CassetteDocument", kwargs, ("metadata", "interactions", "signature"))
        interactions = kwargs.get("interactions")
        if interactions is None:
            count = _Factory.__random__.randint(1, 3)
            interactions = [InteractionFactory.build() for _ in range(count)]
        return CassetteDocument(
            metadata=kwargs.get("metadata") or CassetteMetadataFactory.build(),
            interactions=renumber(interactions),
            signature=kwargs.get("signature"),
        )


# -- stores -------------------------------------------------------------------------------------


class StoredRunFactory(_Factory[StoredRun]):
    """A stored run whose state is JSON and whose forced-completion state keeps its budget."""

    status = Use(lambda: _Factory.__random__.choice(["running", "completed", "failed"]))
    state_json = Use(lambda: json.dumps(_json_object()))
    forced_completion = Use(
        lambda: ForcedCompletionStateFactory.build() if _Factory.__random__.random() < 0.5 else None
    )


# -- agents and scenarios -----------------------------------------------------------------------


class AgentToolFactory(_Factory[AgentTool]):
    name = Use(lambda: f"tool_{_Factory.__random__.randint(0, 10**9)}")
    parameters = Use(lambda: {"type": "object", "properties": {"q": {"type": "string"}}})
    result = Use(_json_object)
    error = None


class SkillFactory(_Factory[Skill]):
    pass


class SkillsFactory(_Factory[Skills]):
    pass


class WorkspaceFactory(_Factory[Workspace]):
    tools = ()


class MemoryFactory(_Factory[Memory]):
    pass


class AgentDefinitionFactory(_Factory[AgentDefinition]):
    """An outputSchema agent with unique tool names and small budgets."""

    model = OPENAI.default_model
    output_schema = Use(lambda: dict(_OBJECT_SCHEMA))
    max_steps = Use(lambda: _Factory.__random__.randint(1, 5))
    max_completion_retries = Use(lambda: _Factory.__random__.randint(0, 3))
    temperature = None
    reasoning = None
    tools = Use(
        lambda: tuple(AgentToolFactory.build() for _ in range(_Factory.__random__.randint(0, 2)))
    )
    skills = Use(lambda: Skills(catalog=(Skill(name="cite", description="Cite sources."),)))
    workspace = Use(lambda: Workspace(fragment="Workspace at /work."))
    memory = Use(lambda: Memory(memories=("The user prefers metric units.",)))


class ScenarioFactory(_Factory[Scenario]):
    """An agent scenario on the memory store with a one-reply script and no expectations."""

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> Scenario:
        values: dict[str, Any] = {
            "name": f"scenario-{_Factory.__random__.randint(1, 9999)}",
            "stores": ["memory"],
            "script": [ScriptedReply(text=_word())],
            "agent": AgentSpec(output_schema=dict(_OBJECT_SCHEMA)),
            **kwargs,
        }
        return Scenario.model_validate(values)


FACTORIES: tuple[type[ModelFactory[Any]], ...] = tuple(
    factory
    for name, factory in sorted(globals().items())
    if name.endswith("Factory")
    and isinstance(factory, type)
    and issubclass(factory, _Factory)
    and factory is not _Factory
)
"""Every factory of this module, for tests that build each one."""
