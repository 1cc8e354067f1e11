"""The target protocol, version 1: what the harness sends the implementation under test, and what
it must answer. One JSON object per message; a command target reads them from stdin and writes
its answers to stdout, one per line; a Python target is called with each message as a `dict` and
returns its answer as one.

1. `hello` -> the target's `hello`: its name and what it supports (scenario kinds, runtime
   profiles, features). A cell that needs something not declared is skipped, and counted.
2. One `cell` per scenario cell -> its `result` (or an `error`, when the target cannot run it).
3. `shutdown` when the run is over (no answer expected).

Results are checked strictly: chunks, the agent-outcome record and the output envelope are
validated by the same wire records the reference produces, so an extra key, a missing one or a
misspelt value fails the cell. `harness schema target` prints this protocol as a JSON Schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, NonNegativeInt, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, models_json_schema
from pydantic_core import core_schema

from harness.agent.spec import AgentSpec, CancelSpec, FaultSpec, TemporalSpec
from harness.protocol.chunks import StreamChunk
from harness.protocol.envelope import AgentOutputEnvelope
from harness.protocol.forced import ForcedCompletionState
from harness.protocol.outcome import AgentOutcome
from harness.providers import Provider

PROTOCOL_VERSION: Final = 1

ScenarioKind = Literal["agent", "decision", "completion"]
Feature = Literal["faults", "llm_config_override", "memory", "streaming", "approval", "cancel"]
FEATURES: Final[tuple[Feature, ...]] = get_args(Feature)
"""What a cell may need beyond a plain run: simulated crashes and resumes (`faults`), the
`llm_config_override` callback, memory recall and extraction, streamed model calls, approval-gated
tools, and cancelling a run (`cancel`)."""


class Message(BaseModel):
    """Every message refuses unknown keys: a misspelt field fails where it is sent."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


# -- harness -> target ------------------------------------------------------------------------------


class Hello(Message):
    type: Literal["hello"] = "hello"
    protocol: Literal[1] = PROTOCOL_VERSION


class AgentCell(Message):
    """Run one outputSchema agent to its end.

    `agent` is the scenario's agent block, every field given (the tools carry their scripted
    `result` or `error`); `max_completion_retries: null` means the runtime's own default.
    `faults`, `cancel` and `temporal` are the scenario's, as it gives them.
    The model is reached at `base_urls[provider]` (a `harness serve` session replaying the
    cell's script or cassette): give it to the official SDK as its base URL, with any API key.
    """

    type: Literal["cell"] = "cell"
    id: str
    kind: Literal["agent"] = "agent"
    scenario: str
    runtime: str
    store: str
    provider: Provider
    model: str
    base_urls: dict[str, str]
    agent: AgentSpec
    user_message: str
    run_id: str
    session_id: str
    faults: list[FaultSpec] = Field(
        default_factory=list, description="crash points: the runtime dies there and resumes"
    )
    cancel: CancelSpec | None = None
    temporal: TemporalSpec | None = None


class ModuleCell(Message):
    """Run a module (`decision` or `completion`): each of `executions` in order, through one
    module instance built with `config`. A decision cell also carries the model catalog, the
    session and the tool policy, and reaches models at `base_urls` (one per provider)."""

    type: Literal["cell"] = "cell"
    id: str
    kind: Literal["decision", "completion"]
    scenario: str
    config: dict[str, JsonValue] = Field(default_factory=dict)
    executions: list[dict[str, JsonValue]] = Field(min_length=1)
    base_urls: dict[str, str] = Field(default_factory=dict)
    models: list[dict[str, JsonValue]] = Field(default_factory=list)
    session: dict[str, JsonValue] | None = None
    tool_policy: dict[str, JsonValue] | None = None


CellRequest = Annotated[AgentCell | ModuleCell, Field(discriminator="kind")]


class Shutdown(Message):
    type: Literal["shutdown"] = "shutdown"


# -- target -> harness ------------------------------------------------------------------------------


class TargetHello(Message):
    """What the target is and supports; a cell outside it is skipped with the reason."""

    type: Literal["hello"]
    protocol: int
    name: str = Field(min_length=1)
    kinds: list[ScenarioKind] = Field(min_length=1)
    runtimes: list[str] = Field(
        default_factory=list, description="runtime profiles the agent cells may ask for"
    )
    features: list[Feature] = Field(default_factory=list)
    providers: list[str] | None = Field(
        default=None,
        description="the providers whose APIs the target's agent calls (`openai`, `anthropic`, "
        "`gemini`): an agent cell on another is skipped; unset, every provider",
    )


class Counters(Message):
    """What the run counted, each optional: an expectation on a counter the target does not
    report is skipped, not passed. `forced_state` is the forced-completion state the run
    persisted (`null`: none was persisted); leave the key out when the runtime cannot tell."""

    memory_extractions: NonNegativeInt | None = None
    llm_config_override_calls: list[Literal["work", "forced_completion"]] | None = None
    crashes: NonNegativeInt | None = None
    forced_state: ForcedCompletionState | None = None

    def reported(self) -> dict[str, JsonValue]:
        """The counters the target reported, as JSON: each it gave a value, and `forced_state`
        whenever it gave the key (its `null` says nothing was persisted). A counter left out,
        or another counter given as `null`, is unknown: no expectation and no comparison with
        the reference reads it."""
        given = self.model_dump(mode="json")
        return {
            name: value
            for name, value in given.items()
            if value is not None or (name == "forced_state" and name in self.model_fields_set)
        }


class AgentResult(Message):
    """An agent run's end, in the shapes the reference produces."""

    type: Literal["result"]
    id: str
    status: Literal["completed", "failed", "cancelled"]
    error_code: str | None = None
    error_message: str | None = None
    output: JsonValue = None
    chunks: list[StreamChunk]
    outcome_record: AgentOutcome
    envelope: AgentOutputEnvelope
    counters: Counters = Field(default_factory=Counters)


class ModuleError(Message):
    """A module's typed error: its exception type name, its code and its message."""

    type: str = Field(min_length=1)
    code: str | None = None
    message: str


class ModuleExecution(Message):
    outputs: dict[str, JsonValue] = Field(default_factory=dict)
    error: ModuleError | None = None


class ModuleResult(Message):
    """One entry per execution sent, in order."""

    type: Literal["result"]
    id: str
    executions: list[ModuleExecution]


class TargetError(Message):
    """The target could not run the cell at all (the cell fails with this message)."""

    type: Literal["error"]
    id: str | None = None
    message: str


HELLO_REPLY: TypeAdapter[TargetHello] = TypeAdapter(TargetHello)
AGENT_REPLY: TypeAdapter[AgentResult | TargetError] = TypeAdapter(
    Annotated[AgentResult | TargetError, Field(discriminator="type")]
)
MODULE_REPLY: TypeAdapter[ModuleResult | TargetError] = TypeAdapter(
    Annotated[ModuleResult | TargetError, Field(discriminator="type")]
)


class _SentWhole(GenerateJsonSchema):
    """The harness sends every field of its messages, defaults included, so in the schema of
    what it sends (serialization mode) each is required: a target reads `cell.agent.tools`
    without checking that it is there. What a target answers (validation mode) keeps its
    optional fields."""

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        if self.mode == "serialization":
            return not field.get("serialization_exclude")
        return super().field_is_required(field, total)


def json_schema() -> dict[str, Any]:
    """The protocol as one JSON Schema: any message of either direction, with its definitions.
    A message the harness sends gives every field; an answer may leave out what has a
    default."""
    to_target = (Hello, AgentCell, ModuleCell, Shutdown)
    from_target = (TargetHello, AgentResult, ModuleResult, TargetError)
    references, schema = models_json_schema(
        [
            *((model, "serialization") for model in to_target),
            *((model, "validation") for model in from_target),
        ],
        ref_template="#/$defs/{model}",
        schema_generator=_SentWhole,
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"harness target protocol, version {PROTOCOL_VERSION}",
        "description": (__doc__ or "").strip(),
        "anyOf": [
            *(references[(model, "serialization")] for model in to_target),
            *(references[(model, "validation")] for model in from_target),
        ],
        "$defs": schema["$defs"],
    }
