"""The scenario file format: what an agent (or module) is, what the model answers, and what
must be true at the end. One pydantic model per part; `Scenario.model_json_schema()` is the
published JSON Schema (`harness schema`).

A file holds one scenario or a list. Unknown keys are errors everywhere, so a misspelt key fails
before anything runs.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from pathlib import PurePath
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    NonNegativeInt,
    PositiveInt,
    field_validator,
    model_validator,
)

from harness.agent.spec import AgentSpec, CancelSpec, FaultSpec, TemporalSpec
from harness.cassettes.key import VolatileFieldError, split_pointer
from harness.llm.script import ScriptedReply
from harness.protocol.chunks import (
    ApprovalChunk,
    ForcedCompletionChunk,
    RunFinishChunk,
    StepFinishChunk,
    StepStartChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallChunk,
    ToolResultChunk,
)
from harness.providers import Provider, find_provider
from harness.runtimes.base import Cancel, CancelPlanInvalidError, Fault, RuntimeName, check_cancel
from harness.stores.base import StoreKind
from harness.stores.migrations import EXPECTED_COLUMNS, LATEST_VERSION
from harness.workflow import Workflow


class ScenarioModel(BaseModel):
    """Every part refuses unknown keys and is immutable once loaded."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


# The agent block (`AgentSpec`), the crash points (`FaultSpec`), the cancellation (`CancelSpec`)
# and the Temporal options (`TemporalSpec`) are `harness.agent.spec`'s: an agent cell of the
# target protocol carries them as they are.


def fault_plan(fault: FaultSpec) -> Fault:
    """Where the runtime crashes the run, as the runtimes take it."""
    return Fault(fault.crash_after, fault.occurrence)


def cancel_plan(cancel: CancelSpec) -> Cancel:
    """When the run is cancelled from outside, as the runtimes take it."""
    return Cancel(cancel.after, cancel.occurrence)


# -- modules ----------------------------------------------------------------------------------------


def _everyone() -> list[str]:
    return ["*"]


class ModelSpec(ScenarioModel):
    """An `LlmDetails` record and who may see it."""

    id: uuid.UUID
    name: str
    provider: Provider = "openai"
    model: str = "gpt-4o-mini"
    visible_to: list[str] = Field(default_factory=_everyone)


class SessionSpec(ScenarioModel):
    principal: str = "alice"
    groups: list[str] = Field(default_factory=list)
    default_llm_details_id: uuid.UUID | None = None


class ToolPolicySpec(ScenarioModel):
    """The server-side tool-visibility policy: unavailable, or the tool names it keeps."""

    available: bool = True
    allow: list[str] | None = None


# -- expectations -----------------------------------------------------------------------------------


class FragmentsExpect(ScenarioModel):
    present: list[str] = Field(default_factory=list)
    absent: list[str] = Field(default_factory=list)


class RequestExpect(ScenarioModel):
    """Assertions that hold for every request of one kind (work or forced)."""

    tools: list[str] | None = None
    tool_choice: str | None = Field(
        default=None, description="auto, none, required, or the name of the forced tool"
    )
    reasoning: str | None = Field(default=None, description="unset, disabled, or an effort")
    system_fragments: FragmentsExpect | list[str] | None = None
    memory_injected: bool | None = None
    completion_metadata: bool | dict[str, JsonValue] | None = None
    model: str | None = None
    temperature: float | None = None
    contains_text: list[str] | None = None
    absent_text: list[str] | None = None
    max_tokens: PositiveInt | Literal["unset"] | None = Field(
        default=None,
        description=(
            "the token cap as the provider's wire carries it (Anthropic's max_tokens, the "
            "thinking budget included; OpenAI's max_completion_tokens or max_tokens; Gemini's "
            "maxOutputTokens), or unset when none is sent"
        ),
    )
    reasoning_turns: NonNegativeInt | None = Field(
        default=None,
        description=(
            "how many assistant turns of the conversation carry the model's reasoning as sent "
            "(Anthropic thinking blocks, Gemini thought signatures)"
        ),
    )


class ChunkExpect(ScenarioModel):
    phase: Literal["started", "attempt_started", "attempt_failed", "succeeded", "exhausted"]
    trigger: Literal["terminal_text", "max_tokens", "max_steps"] | None = None
    attempt: PositiveInt | None = None
    max_attempts: int | None = Field(default=None, ge=0)
    code: str | None = None


_STREAM_CHUNK_FIELDS: Final[dict[str, frozenset[str]]] = {
    model.model_fields["kind"].default: frozenset(model.model_fields) - {"kind"}
    for model in (
        StepStartChunk,
        TextDeltaChunk,
        ToolCallChunk,
        ToolResultChunk,
        ApprovalChunk,
        StepFinishChunk,
        ForcedCompletionChunk,
        RunFinishChunk,
    )
}


class StreamChunkExpect(ScenarioModel):
    """One chunk of the whole stream, of any kind: its `kind` and the fields it must have.
    Only the fields a chunk of that kind has may be given (a `step_start` has no `granted`)."""

    kind: Literal[
        "step_start",
        "text_delta",
        "tool_call",
        "tool_result",
        "approval",
        "step_finish",
        "forced_completion",
        "run_finish",
    ]
    step: int | None = Field(default=None, ge=0)
    phase: str | None = Field(
        default=None, description="step_start: work or forced; forced_completion: its phase"
    )
    trigger: Literal["terminal_text", "max_tokens", "max_steps"] | None = None
    attempt: PositiveInt | None = None
    max_attempts: int | None = Field(default=None, ge=0)
    code: str | None = None
    name: str | None = Field(default=None, description="the tool, for tool and approval chunks")
    granted: bool | None = None
    is_error: bool | None = None
    result: JsonValue = Field(default=None, description="tool_result: the result (exact)")
    stop_reason: str | None = None
    status: str | None = None
    error_code: str | None = None

    @model_validator(mode="after")
    def _fields_of_its_kind(self) -> StreamChunkExpect:
        # the fields of a chunk of this kind that an item can give (no ids, arguments or text)
        fields = _STREAM_CHUNK_FIELDS[self.kind] & set(type(self).model_fields)
        foreign = sorted(self.model_fields_set - fields - {"kind"})
        if foreign:
            raise ValueError(
                f"a {self.kind} chunk has no field {', '.join(foreign)}; "
                f"its fields: {', '.join(sorted(fields))}"
            )
        return self

    @classmethod
    def matching(cls, chunk: StreamChunk) -> StreamChunkExpect:
        """The item that matches `chunk` in every field an item can give (all but ids,
        arguments and text); a field the chunk leaves null is not given."""
        allowed = _STREAM_CHUNK_FIELDS[chunk.kind] & set(cls.model_fields)
        dumped = chunk.model_dump(mode="json", exclude_none=True)
        return cls.model_validate(
            {"kind": chunk.kind}
            | {name: value for name, value in dumped.items() if name in allowed}
        )

    def fields(self) -> dict[str, Any]:
        """The fields this item compares: `kind` and every field it gives (null included)."""
        given = self.model_fields_set
        return {"kind": self.kind} | {
            name: getattr(self, name)
            for name in type(self).model_fields
            if name in given and name != "kind"
        }


class HistoryCallExpect(ScenarioModel):
    """One tool call of a reply in a forced request's conversation: its name, and its arguments
    when given (compared as a JSON value, numbers by value; arguments that are not JSON as text)."""

    name: str
    arguments: JsonValue = Field(
        default=None, description="the call's arguments (exact, as a JSON value)"
    )


HISTORY_ROLE_FIELDS: Final[dict[str, frozenset[str]]] = {
    "user": frozenset({"text"}),
    "completion": frozenset({"attempt", "max_attempts"}),
    "assistant": frozenset({"text", "tool_calls"}),
    "tool": frozenset({"name", "result", "is_error"}),
}
"""The fields a message of each role has, that a `forced_history` item may give."""


class HistoryMessageExpect(ScenarioModel):
    """One message of the conversation a forced request carries: its `role` and the fields it
    must have. Only the fields a message of that role has may be given."""

    role: Literal["user", "completion", "assistant", "tool"] = Field(
        description="user: a user message; completion: a [completion] message; assistant: a "
        "model reply; tool: a tool result"
    )
    text: str | None = Field(
        default=None, description="user: the message; assistant: the reply's text (exact)"
    )
    attempt: PositiveInt | None = Field(
        default=None, description="completion: the N of its (attempt N of M)"
    )
    max_attempts: int | None = Field(
        default=None, ge=0, description="completion: the M of its (attempt N of M)"
    )
    tool_calls: list[HistoryCallExpect] | None = Field(
        default=None, description="assistant: every call of the reply, in order"
    )
    name: str | None = Field(default=None, description="tool: the tool whose call it answers")
    result: JsonValue = Field(
        default=None,
        description="tool: the result, read as JSON (objects match the keys given, lists exactly)",
    )
    is_error: bool | None = Field(
        default=None,
        description="tool: the result's error flag (not on openai, whose tool messages have none)",
    )

    @model_validator(mode="after")
    def _fields_of_its_role(self) -> HistoryMessageExpect:
        fields = HISTORY_ROLE_FIELDS[self.role]
        foreign = sorted(self.model_fields_set - fields - {"role"})
        if foreign:
            raise ValueError(
                f"a {self.role} message has no field {', '.join(foreign)}; "
                f"its fields: {', '.join(sorted(fields))}"
            )
        return self

    def fields(self) -> dict[str, Any]:
        """The fields this item compares, in the model's order: `role` and every field it gives
        (null included), the calls as `{name, arguments}` with the arguments only when given."""
        given: dict[str, Any] = {"role": self.role}
        for name in type(self).model_fields:
            if name == "role" or name not in self.model_fields_set:
                continue
            if name == "tool_calls" and self.tool_calls is not None:
                given[name] = [
                    call.model_dump(include={"name"} | call.model_fields_set)
                    for call in self.tool_calls
                ]
            else:
                given[name] = getattr(self, name)
        return given


def _a_forced_history(
    entries: list[list[HistoryMessageExpect]],
) -> list[list[HistoryMessageExpect]]:
    for index, messages in enumerate(entries):
        if not messages or messages[-1].role != "completion":
            raise ValueError(
                f"entry {index} must end with a completion item: a forced request ends with "
                "its attempt's [completion] message"
            )
    return entries


ForcedHistory = Annotated[list[list[HistoryMessageExpect]], AfterValidator(_a_forced_history)]


class DownstreamExpect(ScenarioModel):
    """What one workflow job received, projected, or failed with. Each given key is checked."""

    status: Literal["succeeded", "failed", "skipped"] | None = None
    received: JsonValue = Field(
        default=None, description="the job's resolved `with:` (objects match as subsets)"
    )
    outputs: JsonValue = Field(
        default=None, description="the job's projected outputs (objects match as subsets)"
    )
    error_code: str | None = None
    error_message: str | None = Field(default=None, description="a substring of the message")

    def given(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields_set}


def _a_column_name(name: str) -> str:
    if not _COLUMN_NAME.fullmatch(name):
        raise ValueError(
            "expected a column name: a letter or '_', then up to 62 letters, digits or '_'"
        )
    if name.lower() in EXPECTED_COLUMNS:
        raise ValueError(
            f"{name!r} is a column the store already has; an extra column needs a new name"
        )
    return name


_COLUMN_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
ColumnName = Annotated[str, AfterValidator(_a_column_name)]


class StoreCheckSpec(ScenarioModel):
    """A store for `harness stores check`: created at `schema_version` as that release wrote it,
    with optional drift (`extra_columns`) added by hand."""

    store: Literal["sqlite"] = "sqlite"
    schema_version: int = Field(default=LATEST_VERSION, ge=1, le=LATEST_VERSION)
    extra_columns: list[ColumnName] = Field(default_factory=list)

    @field_validator("extra_columns")
    @classmethod
    def _distinct(cls, names: list[str]) -> list[str]:
        # SQL column names ignore case, so `Flag` and `flag` are the same column
        counts = Counter(name.lower() for name in names)
        repeated = sorted({name for name in names if counts[name.lower()] > 1})
        if repeated:
            raise ValueError(f"each extra column is added once; repeated: {', '.join(repeated)}")
        return names


class Expect(ScenarioModel):
    """What must be true at the end. Every key is optional; each given key is checked."""

    status: Literal["completed", "failed", "cancelled"] | None = Field(
        default=None, description="cancelled: agent scenarios with a `cancel` block only"
    )
    differences: list[str] | None = Field(
        default=None,
        description="store_check: each is a substring of one reported schema difference",
    )
    error_code: str | None = None
    error_type: str | None = None
    error_message: str | None = Field(default=None, description="a substring of the message")
    output: JsonValue = None
    output_valid: bool | None = None
    llm_calls: int | None = None
    forced_calls: int | None = None
    chunks: list[ChunkExpect] | None = Field(
        default=None, description="an ordered subsequence of the forced_completion chunks"
    )
    chunk_phases: list[str] | None = Field(
        default=None, description="the exact sequence of forced_completion chunk phases"
    )
    chunk_sequence: list[ChunkExpect] | None = Field(
        default=None,
        description="the exact forced_completion chunks: as many as listed, in this order, "
        "nothing between; each item's given fields match its chunk",
    )
    chunks_in_order: list[StreamChunkExpect] | None = Field(
        default=None,
        description="an ordered subsequence of the whole chunk stream, every kind of chunk "
        "(gaps allowed): each item's kind and given fields match its chunk",
    )
    crashes: int | None = Field(default=None, ge=0, description="simulated crashes survived")
    forced_request: RequestExpect | None = None
    forced_requests: list[RequestExpect] | None = Field(
        default=None,
        description="one entry per forced request, in the order they were sent: what that "
        "request holds (as forced_request says of every one)",
    )
    forced_history: ForcedHistory | None = Field(
        default=None,
        description="per forced request, in the order they were sent (one entry each): the "
        "messages its conversation ends with, in order, every [completion] message among them",
    )
    work_request: RequestExpect | None = None
    memory_extractions: int | None = None
    llm_config_override_calls: int | list[str] | None = None
    store: dict[str, JsonValue] | None = Field(
        default=None, description="keys of the persisted forcedCompletion state, or null"
    )
    store_absent: bool | None = Field(default=None, description="no forced state was persisted")
    outputs: dict[str, JsonValue] | None = None
    outcome_record: dict[str, str] | None = None
    envelope: dict[str, JsonValue] | None = None
    downstream: dict[str, DownstreamExpect] | None = Field(
        default=None, description="per workflow job: what it received, projected, or failed with"
    )

    def given(self) -> dict[str, Any]:
        """The keys the scenario set, with their values."""
        return {name: getattr(self, name) for name in self.model_fields_set}


# -- the scenario -----------------------------------------------------------------------------------


_MODULE_ONLY = frozenset({"outputs", "error_type"})
_AGENT_ONLY = frozenset(
    {
        "output",
        "output_valid",
        "forced_calls",
        "chunks",
        "chunk_phases",
        "chunk_sequence",
        "chunks_in_order",
        "crashes",
        "forced_request",
        "forced_requests",
        "forced_history",
        "work_request",
        "memory_extractions",
        "llm_config_override_calls",
        "store",
        "store_absent",
        "outcome_record",
        "envelope",
        "downstream",
    }
)


def _keys_not_applicable(expect: Expect, kind: str) -> list[str]:
    """The keys `expect` sets to a value that a `kind` scenario cannot check."""
    # keys set to a value (a full dump writes every key, unset ones as null)
    given = {k for k in expect.model_fields_set if getattr(expect, k) is not None}
    not_applicable = {
        "agent": _MODULE_ONLY | {"differences"},
        "store_check": (_MODULE_ONLY | _AGENT_ONLY) - {"differences"},
    }.get(kind, _AGENT_ONLY | {"differences"})
    return sorted(given & not_applicable)


class CompletionExecution(ScenarioModel):
    """One execution of a completion scenario's module: the workflow state it is given and what
    must be true right after it. The executions of a scenario share one module instance."""

    input: dict[str, JsonValue] = Field(description="the workflow state of this execution")
    expect: Expect = Field(description="what must be true after this execution")

    @model_validator(mode="after")
    def _applicable(self) -> CompletionExecution:
        wrong = _keys_not_applicable(self.expect, "completion")
        if wrong:
            raise ValueError(
                f"expect key(s) {', '.join(wrong)} do not apply to a completion scenario"
            )
        if self.expect.status == "cancelled":
            raise ValueError("a module execution is never cancelled; expect completed or failed")
        return self


def _a_json_pointer(pointer: str) -> str:
    try:
        split_pointer(pointer)
    except VolatileFieldError as error:
        raise ValueError(str(error)) from None
    return pointer


def _a_cassette_path(path: str) -> str:
    """Recording creates the file, so only its shape is checked here, not that it exists."""
    if "\x00" in path or PurePath(path).suffix != ".json" or path.endswith(("/", "\\")):
        raise ValueError(
            "expected the path of a .json cassette file, relative to this scenario file "
            "(such as cassettes/my-scenario.json) or absolute"
        )
    return path


VolatilePointer = Annotated[str, AfterValidator(_a_json_pointer)]
CassettePath = Annotated[str, AfterValidator(_a_cassette_path)]


def _default_runtimes() -> list[RuntimeName]:
    return ["js"]


def _default_stores() -> list[StoreKind]:
    return ["sqlite"]


class Scenario(ScenarioModel):
    """One scenario; `kind` says what runs: an agent, the decision module, or the completion one."""

    name: str = Field(min_length=1)
    description: str = ""
    kind: Literal["agent", "decision", "completion", "store_check"] = "agent"
    tags: list[str] = Field(default_factory=list)
    runtimes: list[RuntimeName] = Field(default_factory=_default_runtimes, min_length=1)
    stores: list[StoreKind] = Field(default_factory=_default_stores, min_length=1)
    temporal: TemporalSpec | None = None
    provider: Provider = "openai"
    model: str | None = None
    cassette: CassettePath | None = None
    volatile: list[VolatilePointer] = Field(
        default_factory=list,
        description="JSON pointers (RFC 6901) of request body fields left out of the request "
        "key; a * segment matches every item or member",
    )
    script: list[ScriptedReply] | None = None
    agent: AgentSpec | None = None
    input: dict[str, JsonValue] | None = None
    executions: list[CompletionExecution] | None = Field(
        default=None,
        min_length=1,
        description="completion scenarios, instead of input and expect: workflow states run in "
        "order through ONE module instance, each with its own input and expect",
    )
    config: dict[str, JsonValue] = Field(default_factory=dict)
    models: list[ModelSpec] = Field(default_factory=list)
    session: SessionSpec | None = None
    tool_policy: ToolPolicySpec | None = None
    store_check: StoreCheckSpec | None = None
    faults: list[FaultSpec] = Field(default_factory=list)
    cancel: CancelSpec | None = Field(
        default=None, description="agent scenarios: cancel the run from outside at a point"
    )
    workflow: Workflow | None = Field(
        default=None,
        description="agent scenarios: jobs chained downstream of the run's output envelope",
    )
    expect: Expect = Field(default_factory=Expect)

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if self.cassette is not None and self.script is not None:
            raise ValueError("give either cassette or script, not both")
        if self.kind == "agent":
            if self.agent is None:
                raise ValueError("an agent scenario needs an 'agent' block")
            if self.cassette is None and self.script is None:
                raise ValueError("an agent scenario needs the model's replies: cassette or script")
        if self.kind == "store_check" and self.store_check is None:
            raise ValueError("a store_check scenario needs a 'store_check' block")
        self._check_input()
        if self.kind == "decision" and self.cassette is None and self.script is None:
            raise ValueError("a decision scenario needs the model's replies: cassette or script")
        wrong = _keys_not_applicable(self.expect, self.kind)
        if wrong:
            raise ValueError(
                f"expect key(s) {', '.join(wrong)} do not apply to a {self.kind} scenario"
            )
        self._check_cancel()
        self._check_forced_history()
        if self.workflow is not None and self.kind != "agent":
            raise ValueError(f"a workflow block does not apply to a {self.kind} scenario")
        if self.expect.downstream is not None:
            if self.workflow is None:
                raise ValueError("expect.downstream needs a 'workflow' block")
            unknown = sorted(set(self.expect.downstream) - set(self.workflow.jobs))
            if unknown:
                raise ValueError(
                    f"expect.downstream names job(s) {', '.join(unknown)} that the workflow does "
                    f"not have; jobs: {', '.join(self.workflow.jobs)}"
                )
        return self

    def _check_input(self) -> None:
        """A module scenario's workflow state: `input` (with `expect`), or for the completion
        module a list of `executions`, each with its own input and expect."""
        if self.executions is not None:
            if self.kind != "completion":
                raise ValueError(
                    f"executions apply to a completion scenario only, not to a {self.kind} one"
                )
            if self.input is not None:
                raise ValueError(
                    "give either input (with expect) or executions, not both; put the input "
                    "in an execution"
                )
            if "expect" in self.model_fields_set:
                raise ValueError(
                    "with executions, each execution has its own expect; move the top-level "
                    "expect into the execution it belongs to"
                )
            return
        if self.kind in ("decision", "completion") and self.input is None:
            also = " or 'executions'" if self.kind == "completion" else ""
            raise ValueError(
                f"a {self.kind} scenario needs an 'input' block (the workflow state){also}"
            )

    def _check_forced_history(self) -> None:
        """A tool result's error flag is read from the request: an OpenAI tool message has no
        such flag (its content alone says what happened), so an `is_error` there could never be
        read back from a target's request."""
        spec = find_provider(self.provider)
        if self.expect.forced_history is None or spec is None or spec.tool_result_error_flag:
            return
        for index, messages in enumerate(self.expect.forced_history):
            for position, message in enumerate(messages):
                if "is_error" in message.model_fields_set:
                    raise ValueError(
                        f"expect.forced_history[{index}][{position}].is_error: a tool result on "
                        f"{self.provider} carries no error flag, so it cannot be checked on a "
                        "target; "
                        "pin the result instead (such as {acknowledged: false})"
                    )

    def _check_cancel(self) -> None:
        if self.cancel is None:
            if self.expect.status == "cancelled":
                raise ValueError(
                    "expect.status cancelled needs a 'cancel' block: only a run cancelled from "
                    "outside ends cancelled"
                )
            return
        if self.kind != "agent":
            raise ValueError(f"a cancel block does not apply to a {self.kind} scenario")
        try:
            check_cancel(cancel_plan(self.cancel), [fault_plan(fault) for fault in self.faults])
        except CancelPlanInvalidError as error:
            raise ValueError(str(error)) from None

    def cells(self) -> list[tuple[str, str]]:
        """The matrix: (runtime, store) pairs; modules run once."""
        if self.kind != "agent":
            return [("module", "none")]
        return [(runtime, store) for runtime in self.runtimes for store in self.stores]
