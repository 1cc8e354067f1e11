"""Comparing a run with its `expect:` block: every given key, expected against actual."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import JsonValue

from harness.agent.output import output_validator
from harness.agent.prompt import FORCED_METADATA_KEY, MEMORY_METADATA_KEY
from harness.agent.result import RunResult
from harness.llm.adapters import adapter_for
from harness.llm.capabilities import capabilities_for
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    NamedToolChoice,
    ReasoningDisabled,
    ReasoningEffort,
)
from harness.protocol.chunks import ForcedCompletionChunk, StreamChunk
from harness.protocol.forced import ForcedCompletionState
from harness.providers import Provider, find_provider
from harness.scenarios.format import (
    ChunkExpect,
    DownstreamExpect,
    Expect,
    FragmentsExpect,
    HistoryMessageExpect,
    RequestExpect,
    StreamChunkExpect,
)
from harness.scenarios.history import ABSENT_FIELD, first_difference, forced_part, outline
from harness.workflow import WorkflowResult


class _Absent:
    """What a mismatch shows for a member or item that is not there."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Final = _Absent()


@dataclass(frozen=True)
class Mismatch:
    """One `expect:` key whose expected value differs from what the run produced."""

    key: str
    expected: Any
    actual: Any


@dataclass(frozen=True, kw_only=True)
class ObservedRequest:
    """One model request as the expectations read it: the request, and what it carried that a
    wire request shows only in its text (the fragments, the memory recall, the `[completion]`
    message's attempt)."""

    request: LlmRequest
    fragments: tuple[str, ...]
    memory_injected: bool
    completion_metadata: dict[str, Any] | None
    reasoning_unsent: bool = False
    """Read from the wire, where reasoning left unset and reasoning disabled look alike."""
    reasons_unless_told: bool = False
    """The request's model reasons when the request says nothing of reasoning
    (`Capabilities.reasons_by_default`): on the wire, sending nothing leaves reasoning on."""
    provider: Provider | None = None
    """The provider whose wire `request` is still to be rendered in (the reference's requests);
    None when `request` was read from the wire (a target's)."""

    def sent(self) -> LlmRequest:
        """The request as its wire carries it: the reference's rendered by its provider's
        adapter and read back (Anthropic's `max_tokens` with the thinking budget in it, no
        thinking blocks while thinking is off), a target's as it was read."""
        if self.provider is None:
            return self.request
        adapter = adapter_for(self.provider)
        spec = find_provider(self.provider)
        target = (
            None
            if spec is None
            else spec.request_target(self.request.model, stream=self.request.stream)
        )
        path = None if target is None else target.split("?", 1)[0]
        return adapter.parse_request(adapter.render_request(self.request), path=path)


@dataclass(frozen=True, kw_only=True)
class AgentObservation:
    """What an agent run produced, whoever ran it: the reference in process, or an
    implementation under test answering the target protocol. A counter left `None` was not
    reported, and an expectation on it is skipped (never passed)."""

    status: str
    error_code: str | None
    error_message: str | None
    output: JsonValue
    output_schema: dict[str, Any] | None
    chunks: Sequence[StreamChunk]
    outcome_record: dict[str, Any]
    envelope: dict[str, Any]
    requests: Mapping[str, Sequence[ObservedRequest]]
    """`work` and `forced` requests, in the order they were sent."""
    memory_extractions: int | None = None
    override_calls: Sequence[str] | None = None
    crashes: int | None = None
    forced_state: ForcedCompletionState | None = None
    forced_state_reported: bool = True

    @classmethod
    def of_run(
        cls,
        result: RunResult,
        stored: ForcedCompletionState | None,
        provider: Provider | None = None,
    ) -> AgentObservation:
        """What the reference's run produced; `provider` is the wire its requests went out in
        (the expectations that read a request as sent need it)."""
        return cls(
            status=result.status,
            error_code=result.error_code,
            error_message=result.state.error_message,
            output=result.output,
            output_schema=result.agent.output_schema,
            chunks=result.chunks,
            outcome_record=result.outcome_record().model_dump(),
            envelope=result.envelope().model_dump(mode="json", by_alias=True),
            requests={
                kind: [_observed(request, provider) for request in result.requests(kind)]
                for kind in ("work", "forced")
            },
            memory_extractions=result.state.memory_extractions,
            override_calls=[call.execution_phase for call in result.state.override_calls],
            crashes=result.crashes,
            forced_state=stored,
        )

    def forced_chunks(self) -> list[ForcedCompletionChunk]:
        return [chunk for chunk in self.chunks if isinstance(chunk, ForcedCompletionChunk)]


def _observed(request: LlmRequest, provider: Provider | None) -> ObservedRequest:
    metadata = request.messages[-1].metadata.get(FORCED_METADATA_KEY) if request.messages else None
    return ObservedRequest(
        request=request,
        fragments=tuple(request.fragment_names()),
        memory_injected=any(m.metadata.get(MEMORY_METADATA_KEY) for m in request.messages),
        completion_metadata=metadata if isinstance(metadata, dict) else None,
        provider=provider,
    )


def check_agent(
    expect: Expect,
    result: RunResult,
    stored: ForcedCompletionState | None,
    provider: Provider | None = None,
) -> list[Mismatch]:
    """Every mismatch between `expect` and an agent run of the reference, whose requests went
    out in `provider`'s wire."""
    mismatches, _ = check_observation(expect, AgentObservation.of_run(result, stored, provider))
    return mismatches


def check_observation(expect: Expect, run: AgentObservation) -> tuple[list[Mismatch], list[str]]:
    """Every mismatch between `expect` and an observed run, and the expectations skipped because
    the run did not report what they check (each with its reason). Each given key is checked by
    its entry in `AGENT_CHECKS`, in the table's order."""
    given = expect.given()
    mismatches: list[Mismatch] = []
    skipped: list[str] = []
    for key, check in AGENT_CHECKS.items():
        if key not in given:
            continue
        outcome = check(key, given[key], run)
        if isinstance(outcome, Skip):
            skipped.append(f"expect.{key}: {outcome.reason}")
        else:
            mismatches.extend(outcome)
    return mismatches, skipped


@dataclass(frozen=True)
class Skip:
    """An expectation not checked, because the run did not report what it checks."""

    reason: str


AgentCheck = Callable[[str, Any, AgentObservation], list[Mismatch] | Skip]
"""Checks one `expect:` key (its name, its value) against an observed run."""


def _equal(read: Callable[[AgentObservation], Any]) -> AgentCheck:
    """The key holds when its value equals what `read` finds in the run."""

    def check(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch]:
        actual = read(run)
        return [] if wanted == actual else [Mismatch(key, wanted, actual)]

    return check


def _unless_null(check: AgentCheck) -> AgentCheck:
    """`check`, for a key given a value: a key set to null checks nothing."""

    def checked(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch] | Skip:
        return [] if wanted is None else check(key, wanted, run)

    return checked


def _reported(
    reported: Callable[[AgentObservation], bool], what: str, check: AgentCheck
) -> AgentCheck:
    """`check`, skipped (never passed) when the run did not report what it reads."""

    def checked(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch] | Skip:
        if not reported(run):
            return Skip(f"the target does not report {what} (counters)")
        return check(key, wanted, run)

    return checked


def _error_message(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch]:
    if _contains(run.error_message, wanted):
        return []
    return [Mismatch(key, wanted, run.error_message)]


def _output_valid_check(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch]:
    valid = _output_valid(run)
    return [] if valid == wanted else [Mismatch(key, wanted, valid)]


def _chunk_phases(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch]:
    phases = [chunk.phase for chunk in run.forced_chunks()]
    return [] if phases == wanted else [Mismatch(key, wanted, phases)]


def _requests(kind: str) -> AgentCheck:
    def check(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch]:
        return _check_requests(key, wanted, run.requests[kind])

    return check


def _override_calls(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch]:
    phases = list(run.override_calls or [])
    got: Any = len(phases) if isinstance(wanted, int) else phases
    return [] if wanted == got else [Mismatch(key, wanted, got)]


def _store(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch]:
    stored = run.forced_state
    stored_dict = None if stored is None else stored.model_dump(mode="json", by_alias=True)
    return [] if _subset(wanted, stored_dict) else [Mismatch(key, wanted, stored_dict)]


def _store_absent(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch]:
    absent = run.forced_state is None
    return [] if wanted == absent else [Mismatch(key, wanted, absent)]


def _subset_of(read: Callable[[AgentObservation], Any]) -> AgentCheck:
    """The key holds when its value matches what `read` finds as a subset (see `_subset`)."""

    def check(key: str, wanted: Any, run: AgentObservation) -> list[Mismatch]:
        actual = read(run)
        return [] if _subset(wanted, actual) else [Mismatch(key, wanted, actual)]

    return check


def _counted(counter: str) -> Callable[[AgentObservation], bool]:
    return lambda run: getattr(run, counter) is not None


_FORCED_STATE = "forced_state"

AGENT_CHECKS: Final[Mapping[str, AgentCheck]] = {
    "status": _equal(lambda run: run.status),
    "error_code": _equal(lambda run: run.error_code),
    "output": _equal(lambda run: run.output),
    "llm_calls": _equal(lambda run: sum(len(requests) for requests in run.requests.values())),
    "forced_calls": _equal(lambda run: len(run.requests.get("forced", []))),
    "memory_extractions": _reported(
        _counted("memory_extractions"), "it", _equal(lambda run: run.memory_extractions)
    ),
    "error_message": _error_message,
    "output_valid": _output_valid_check,
    "chunks": _unless_null(lambda key, wanted, run: _check_chunks(wanted, run.forced_chunks())),
    "chunk_sequence": _unless_null(
        lambda key, wanted, run: check_chunk_sequence(wanted, run.forced_chunks())
    ),
    "chunk_phases": _unless_null(_chunk_phases),
    "chunks_in_order": _unless_null(
        lambda key, wanted, run: check_chunks_in_order(wanted, run.chunks)
    ),
    "crashes": _reported(_counted("crashes"), "it", _unless_null(_equal(lambda run: run.crashes))),
    "forced_request": _unless_null(_requests("forced")),
    "forced_requests": _unless_null(
        lambda key, wanted, run: check_each_request(key, wanted, run.requests["forced"])
    ),
    "forced_history": _unless_null(
        lambda key, wanted, run: check_forced_history(wanted, run.requests["forced"])
    ),
    "work_request": _unless_null(_requests("work")),
    "llm_config_override_calls": _reported(_counted("override_calls"), "it", _override_calls),
    "store": _reported(lambda run: run.forced_state_reported, _FORCED_STATE, _store),
    "store_absent": _reported(
        lambda run: run.forced_state_reported, _FORCED_STATE, _unless_null(_store_absent)
    ),
    "outcome_record": _subset_of(lambda run: run.outcome_record),
    "envelope": _subset_of(lambda run: run.envelope),
}
"""One checker per `expect:` key of an agent run, in the order their mismatches are reported.
(`downstream` is checked on the workflow's result, by `check_downstream`.)"""


def check_downstream(wanted: dict[str, DownstreamExpect], result: WorkflowResult) -> list[Mismatch]:
    """Every mismatch between `expect.downstream` and the workflow's jobs."""
    mismatches: list[Mismatch] = []
    for job, expected in wanted.items():
        actual = result.jobs[job].as_dict()
        for key, value in expected.given().items():
            if key == "error_message":
                message = actual[key]
                ok = isinstance(message, str) and value in message
            elif key in ("received", "outputs"):
                ok = _subset(value, actual[key])
            else:
                ok = value == actual[key]
            if not ok:
                mismatches.append(Mismatch(f"downstream.{job}.{key}", value, actual[key]))
    return mismatches


def module_observation(
    *, outputs: dict[str, Any], error: BaseException | None, llm_calls: int | None = None
) -> dict[str, Any]:
    """What one module execution did, under the `expect` keys that check it: `status`,
    `error_code`, `error_type` (a target's reported `error.type`, else the exception's class),
    `outputs` and `llm_calls`."""
    return {
        "status": "failed" if error is not None else "completed",
        "error_code": getattr(error, "code", None),
        "error_type": None if error is None else getattr(error, "type_name", type(error).__name__),
        "outputs": outputs,
        "llm_calls": llm_calls,
    }


def check_module(
    expect: Expect,
    *,
    outputs: dict[str, Any],
    error: BaseException | None,
    llm_calls: int | None = None,
) -> list[Mismatch]:
    """Every mismatch between `expect` and one module execution."""
    given = expect.given()
    actual = module_observation(outputs=outputs, error=error, llm_calls=llm_calls)
    mismatches = [
        Mismatch(key, given[key], actual[key])
        for key in ("status", "error_code", "error_type", "outputs", "llm_calls")
        if key in given and given[key] != actual[key]
    ]
    message = str(error) if error is not None else None
    if "error_message" in given and not _contains(message, given["error_message"]):
        mismatches.append(Mismatch("error_message", given["error_message"], message))
    return mismatches


def _contains(actual: str | None, wanted: str) -> bool:
    return actual is not None and wanted in actual


def _output_valid(run: AgentObservation) -> bool:
    schema = run.output_schema
    if run.status != "completed" or schema is None or run.output is None:
        return False
    return output_validator(schema).is_valid(run.output)  # offline: no remote $ref


def _subset(wanted: Any, actual: Any) -> bool:
    """`wanted` matches `actual` when every key it gives matches (recursively); lists exactly."""
    if isinstance(wanted, dict) and isinstance(actual, dict):
        return all(key in actual and _subset(value, actual[key]) for key, value in wanted.items())
    return bool(wanted == actual)


def _check_chunks(
    wanted: Sequence[ChunkExpect], forced_chunks: Sequence[ForcedCompletionChunk]
) -> list[Mismatch]:
    """`wanted` must appear in order among the forced_completion chunks (gaps allowed)."""
    chunks = [c.model_dump(exclude={"kind"}) for c in forced_chunks]
    position = 0
    for expected in wanted:
        fields = expected.model_dump(exclude_none=True)
        while position < len(chunks) and not _subset(fields, chunks[position]):
            position += 1
        if position == len(chunks):
            return [Mismatch("chunks", [w.model_dump(exclude_none=True) for w in wanted], chunks)]
        position += 1
    return []


def check_chunk_sequence(
    wanted: Sequence[ChunkExpect], chunks: Sequence[ForcedCompletionChunk]
) -> list[Mismatch]:
    """`chunks` must be exactly `wanted`: as many, in order, nothing between, each item's given
    fields matching its chunk. The mismatch names the first item that differs and its first
    field (`chunk_sequence[3].code: expected '...', got (absent)`), or the first chunk missing or
    left over, so the difference is in plain view however long the lists."""
    expected = [item.model_dump(exclude_none=True) for item in wanted]
    actual = [chunk.model_dump(exclude={"kind"}, exclude_none=True) for chunk in chunks]
    for index in range(max(len(expected), len(actual))):
        key = f"chunk_sequence[{index}]"
        if index >= len(actual):
            return [Mismatch(key, expected[index], ABSENT)]
        if index >= len(expected):
            return [Mismatch(key, ABSENT, actual[index])]
        for field, value in expected[index].items():
            found = actual[index].get(field, ABSENT)
            if found is ABSENT or not _subset(value, found):
                return [Mismatch(f"{key}.{field}", value, found)]
    return []


def check_chunks_in_order(
    wanted: Sequence[StreamChunkExpect], chunks: Sequence[StreamChunk]
) -> list[Mismatch]:
    """`wanted` must appear in order in the whole chunk stream, every kind of chunk, with gaps
    allowed: so a forced-completion chunk is placed against the step chunks around it, which
    `chunk_sequence` (forced chunks only) cannot see. The mismatch names the first item not
    found after the one before it. When it matches a chunk before that one, the mismatch says
    which (the order differs). When a chunk of its kind follows, the mismatch names the
    field of the nearest one that differs (`chunks_in_order[2].is_error: expected True, got
    False (chunk #5, tool_result)`); else it shows the stream as its items see it: each chunk's
    kind and the fields the items compare (never a text delta's text, which is the model's
    answer)."""
    expected = [item.fields() for item in wanted]
    compared = {field for fields in expected for field in fields} - {"text"}
    actual = [chunk.model_dump(mode="json") for chunk in chunks]
    position = 0
    for index, fields in enumerate(expected):
        start = position
        while position < len(actual) and not _subset(fields, actual[position]):
            position += 1
        if position == len(actual):
            earlier = next(
                (
                    number
                    for number, chunk in enumerate(actual[:start], 1)
                    if _subset(fields, chunk)
                ),
                None,
            )
            if earlier is not None:
                return [
                    Mismatch(
                        f"chunks_in_order[{index}]",
                        fields,
                        f"only chunk #{earlier}, before chunk #{start}, which the item before "
                        "matched",
                    )
                ]
            nearest = _nearest_chunk(fields, actual, start)
            if nearest is not None:
                return [nearest.mismatch(f"chunks_in_order[{index}]")]
            shown = [
                {field: value for field, value in chunk.items() if field in compared}
                for chunk in actual
            ]
            return [Mismatch(f"chunks_in_order[{index}]", fields, shown)]
        position += 1
    return []


@dataclass(frozen=True)
class _NearestChunk:
    """The chunk of an item's kind that matches most of its fields, and the first that differs."""

    number: int
    kind: str
    field: str
    expected: Any
    found: Any

    def mismatch(self, key: str) -> Mismatch:
        found = "(absent)" if self.found is ABSENT else repr(self.found)
        return Mismatch(
            f"{key}.{self.field}",
            self.expected,
            f"{found} (chunk #{self.number}, the nearest {self.kind} chunk after the item before)",
        )


def _nearest_chunk(
    fields: dict[str, Any], actual: Sequence[dict[str, Any]], start: int
) -> _NearestChunk | None:
    """Among the chunks from `start` of the kind `fields` names, the one matching most of its
    fields (the first of equals), with the first field it differs in; None when no chunk of
    that kind follows."""
    kind = fields.get("kind")
    candidates = [
        (number, chunk)
        for number, chunk in enumerate(actual[start:], start=start + 1)
        if chunk.get("kind") == kind
    ]
    if not candidates:
        return None

    def matching(chunk: dict[str, Any]) -> int:
        return sum(1 for field, value in fields.items() if _subset(value, chunk.get(field, ABSENT)))

    number, chunk = max(candidates, key=lambda candidate: matching(candidate[1]))
    field, value = next(
        (field, value)
        for field, value in fields.items()
        if not _subset(value, chunk.get(field, ABSENT))
    )
    shown = "(text not shown)" if field == "text" else chunk.get(field, ABSENT)
    return _NearestChunk(number, str(kind), field, value, shown)


def _check_requests(
    key: str, wanted: RequestExpect, requests: Sequence[ObservedRequest]
) -> list[Mismatch]:
    """One mismatch per expected field that some request breaks (the first such request)."""
    if not requests:
        return [Mismatch(key, "at least one request", "none was sent")]
    failed: dict[str, Mismatch] = {}
    for index, request in enumerate(requests):
        for field, expected, actual in _request_fields(wanted, request):
            if field not in failed and not _field_matches(field, expected, actual):
                shown = (
                    where_texts_part(expected, actual) if field == "contains_text" else repr(actual)
                )
                failed[field] = Mismatch(
                    f"{key}.{field}", expected, f"{shown} (request #{index + 1})"
                )
    return list(failed.values())


def check_each_request(
    key: str, wanted: Sequence[RequestExpect], requests: Sequence[ObservedRequest]
) -> list[Mismatch]:
    """One mismatch per expected field of the i-th entry that the i-th request breaks; a
    different number of requests is one mismatch."""
    if len(wanted) != len(requests):
        return [Mismatch(f"{key} (count)", len(wanted), len(requests))]
    mismatches: list[Mismatch] = []
    for index, (expected, request) in enumerate(zip(wanted, requests, strict=True)):
        for field, value, actual in _request_fields(expected, request):
            if not _field_matches(field, value, actual):
                shown = where_texts_part(value, actual) if field == "contains_text" else actual
                mismatches.append(Mismatch(f"{key}[{index}].{field}", value, shown))
    return mismatches


def _request_fields(wanted: RequestExpect, observed: ObservedRequest) -> list[tuple[str, Any, Any]]:
    request = observed.request
    fields: list[tuple[str, Any, Any]] = []
    if wanted.tools is not None:
        fields.append(("tools", wanted.tools, list(request.tool_names())))
    if wanted.tool_choice is not None:
        fields.append(("tool_choice", wanted.tool_choice, shown_tool_choice(request)))
    if wanted.reasoning is not None:
        reasoning = shown_reasoning(observed)
        if observed.reasoning_unsent and request.reasoning is None:
            # on the wire, disabled reasoning and unset reasoning are the same (nothing is sent),
            # except to a model that reasons unless told not to
            if observed.reasons_unless_told:
                reasoning = "unset (the model reasons unless told not to)"
            else:
                reasoning = "disabled" if wanted.reasoning == "disabled" else "unset"
        elif reasoning == "disabled" and observed.provider is not None:
            reasoning = _disabled_as_sent(observed)
        fields.append(("reasoning", wanted.reasoning, reasoning))
    if wanted.system_fragments is not None:
        fields.append(("system_fragments", wanted.system_fragments, list(observed.fragments)))
    if wanted.memory_injected is not None:
        fields.append(("memory_injected", wanted.memory_injected, observed.memory_injected))
    if wanted.completion_metadata is not None:
        fields.append(
            ("completion_metadata", wanted.completion_metadata, observed.completion_metadata)
        )
    if wanted.model is not None:
        fields.append(("model", wanted.model, request.model))
    if wanted.temperature is not None:
        fields.append(("temperature", wanted.temperature, request.temperature))
    text = "\n".join(
        [
            request.system_text(),
            *(getattr(m, "content", "") or getattr(m, "text", "") or "" for m in request.messages),
        ]
    )
    if wanted.contains_text is not None:
        fields.append(("contains_text", wanted.contains_text, text))
    if wanted.absent_text is not None:
        fields.append(("absent_text", wanted.absent_text, text))
    if wanted.max_tokens is not None or wanted.reasoning_turns is not None:
        sent = observed.sent()
        if wanted.max_tokens is not None:
            cap = "unset" if sent.max_tokens is None else sent.max_tokens
            fields.append(("max_tokens", wanted.max_tokens, cap))
        if wanted.reasoning_turns is not None:
            fields.append(("reasoning_turns", wanted.reasoning_turns, reasoning_turns(sent)))
    return fields


def _disabled_as_sent(observed: ObservedRequest) -> str:
    """Disabled reasoning as the reference's wire says it: `disabled`, unless the body leaves a
    model that reasons unless told not to reasoning (nothing sent), or sends it an effort."""
    sent = observed.sent().reasoning
    if isinstance(sent, ReasoningEffort):
        return f"{sent.effort} (as sent)"
    assert observed.provider is not None
    if (
        sent is None
        and capabilities_for(observed.provider, observed.request.model).reasons_by_default
    ):
        return "unset as sent (the model reasons unless told not to)"
    return "disabled"


def reasoning_turns(request: LlmRequest) -> int:
    """How many assistant turns of `request` carry the model's reasoning (their
    `reasoning_blocks`)."""
    return sum(
        1
        for message in request.messages
        if isinstance(message, AssistantMessage) and message.reasoning_blocks
    )


PART_WINDOW: Final = 32
"""Characters shown on either side of where a request's text parts from a snippet."""


def where_texts_part(snippets: Sequence[str], text: str) -> str:
    """Where `text` parts from the first of `snippets` it does not hold: the longest beginning
    of the snippet the text holds, and what follows it in each (`'...the snippet's end'` then
    the text's `'...'` against the snippet's `'...'`). A snippet whose first character the text
    lacks is said so."""
    snippet = next(snippet for snippet in snippets if snippet not in text)
    low, high = 0, len(snippet)  # the longest held beginning is `snippet[:low]`
    while low < high:
        middle = (low + high + 1) // 2
        if snippet[:middle] in text:
            low = middle
        else:
            high = middle - 1
    if low == 0:
        return f"no text holding the snippet's start {snippet[:PART_WINDOW]!r}"
    at = text.find(snippet[:low]) + low
    return (
        f"the text holds the snippet's first {low} character(s), up to "
        f"{snippet[max(0, low - PART_WINDOW) : low]!r}, then goes on "
        f"{text[at : at + PART_WINDOW]!r} where the snippet has "
        f"{snippet[low : low + PART_WINDOW]!r}"
    )


def shown_tool_choice(request: LlmRequest) -> str:
    """A request's tool choice as a scenario names it: `auto`, `required`, `none` or the tool."""
    choice = request.tool_choice
    return choice.name if isinstance(choice, NamedToolChoice) else str(choice)


def shown_reasoning(observed: ObservedRequest) -> str:
    """A request's reasoning as a scenario names it: `unset`, `disabled` or the effort."""
    reasoning = observed.request.reasoning
    if reasoning is None:
        return "unset"
    if isinstance(reasoning, ReasoningDisabled):
        return "disabled"
    return str(reasoning.effort)


def _field_matches(field: str, expected: Any, actual: Any) -> bool:
    if field == "system_fragments":
        if isinstance(expected, FragmentsExpect):
            return all(n in actual for n in expected.present) and not any(
                n in actual for n in expected.absent
            )
        return bool(expected == actual)
    if field == "completion_metadata":
        if isinstance(expected, bool):
            return (actual is not None) == expected
        return _subset(expected, actual)
    if field == "contains_text":
        return all(snippet in actual for snippet in expected)
    if field == "absent_text":
        return not any(snippet in actual for snippet in expected)
    return bool(expected == actual)


def check_forced_history(
    wanted: Sequence[Sequence[HistoryMessageExpect]], requests: Sequence[ObservedRequest]
) -> list[Mismatch]:
    """Entry i is the conversation the i-th forced request carried: the messages it ends with,
    as many as the entry's items, in order, with no `[completion]` message before them (so every
    earlier attempt's message, reply and results are among them), each matching its item's
    fields. One entry per forced request sent. The mismatch names the first entry that differs:
    its messages in a few words when they are not the items' roles in order
    (`forced_history[1]: expected ["completion (attempt 1 of 2)", "assistant calling
    __finish__", ...], got [...]`), else its first item and field that differ
    (`forced_history[1][2].result`)."""
    if len(wanted) != len(requests):
        return [
            Mismatch(
                "forced_history",
                f"{len(wanted)} forced request(s)",
                f"{len(requests)} forced request(s)",
            )
        ]
    for index, (items, observed) in enumerate(zip(wanted, requests, strict=True)):
        expected = [item.fields() for item in items]
        part = forced_part(observed.request.messages, len(expected))
        key = f"forced_history[{index}]"
        if [view["role"] for view in part] != [fields["role"] for fields in expected]:
            return [Mismatch(key, [outline(f) for f in expected], [outline(view) for view in part])]
        for position, (fields, view) in enumerate(zip(expected, part, strict=True)):
            difference = first_difference(fields, view)
            if difference is not None:
                field, actual = difference
                shown = ABSENT if actual is ABSENT_FIELD else actual
                return [Mismatch(f"{key}[{position}].{field}", fields[field], shown)]
    return []
