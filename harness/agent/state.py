"""The durable run state: everything a runtime persists between steps, and nothing else.

A run resumed from its last persisted `RunState` continues exactly where it stopped: the message
history, the step count, the forced-completion state (with an attempt that was announced but not
yet made), the answers so far, the chunk stream and every request sent.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, Final, Literal, cast, get_args

from pydantic import (
    BaseModel,
    Field,
    JsonValue,
    NonNegativeInt,
    PositiveInt,
    TypeAdapter,
    model_validator,
)
from pydantic_core import SchemaSerializer

from harness.llm.models import LlmRequest, Message
from harness.protocol._base import WireModel
from harness.protocol.chunks import RunFinishChunk, StreamChunk
from harness.protocol.forced import ForcedCompletionState, ForcedTrigger
from harness.scrub import Scrubber, environment_scrubber

RunStatus = Literal["running", "completed", "failed", "cancelled"]
RunPhase = Literal["work", "forced", "finishing", "finished"]
CancelPoint = Literal[
    "run_started",
    "work_step_persisted",
    "forced_entered",
    "forced_attempt_persisted",
    "forced_attempt_finished",
]
"""Every persistence point a run can be cancelled after: all but `run_finished`, after which the
run is over and nothing is left to cancel."""
PersistencePoint = Literal[CancelPoint, "run_finished"]
"""Where a runtime saves the run state, in the order a run first reaches them."""
PERSISTENCE_POINTS: Final[tuple[PersistencePoint, ...]] = get_args(PersistencePoint)


class SentRequest(WireModel):
    """One request the run sent, tagged with its kind (and attempt, for forced calls)."""

    kind: Literal["work", "forced"]
    step: NonNegativeInt
    attempt: PositiveInt | None = None
    request: LlmRequest


class OverrideCall(WireModel):
    """One invocation of the agent's `llm_config_override` callback, as the runtime made it."""

    execution_phase: Literal["work", "forced_completion"]
    step: NonNegativeInt
    forced_completion: ForcedCompletionState | None = None


class RunState(WireModel):
    """The persisted state of one run."""

    run_id: str = Field(min_length=1)
    session_id: str = Field(min_length=1)
    status: RunStatus = "running"
    phase: RunPhase = "work"
    step: NonNegativeInt = 0
    messages: tuple[Message, ...] = ()
    answers: tuple[str, ...] = ()
    pending_trigger: ForcedTrigger | None = None
    forced_completion: ForcedCompletionState | None = None
    pending_forced_attempt: PositiveInt | None = None
    output: JsonValue = None
    error_code: str | None = None
    error_message: str | None = None
    limit_reached: bool = False
    chunks: tuple[StreamChunk, ...] = ()
    requests: tuple[SentRequest, ...] = ()
    forced_calls_returned: NonNegativeInt = 0
    memory_recalls: NonNegativeInt = 0
    memory_extractions: NonNegativeInt = 0
    override_calls: tuple[OverrideCall, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _stored_requests(cls, data: Any) -> Any:
        """Read a stored state's shared request records (see `StateWriter`) back in full."""
        if isinstance(data, dict) and type(data.get("requests")) is list:
            return {**data, "requests": _resolve_shared(data["requests"], data.get("messages"))}
        return data

    @property
    def finished(self) -> bool:
        return self.phase == "finished"

    def with_chunks(self, *chunks: StreamChunk) -> RunState:
        return self.evolve(chunks=(*self.chunks, *chunks))

    def failed_outside(self, code: str, message: str) -> RunState:
        """The run ended by a failure outside the loop (its workflow failed: an activity a worker
        never registered): status `failed` with `code` and `message`, and its `run_finish`
        chunk."""
        return self.evolve(
            status="failed", phase="finished", error_code=code, error_message=message
        ).with_chunks(RunFinishChunk(status="failed", error_code=code))

    def cancelled(self) -> RunState:
        """The run ended from outside before `run_finished`: status `cancelled`, no output and
        no error (even when the loop had already decided an outcome it had not yet finished),
        and a `run_finish` chunk saying so. The transcript, answers and forced-completion state
        stay as they were, and no memory is extracted: the run reached no terminal outcome."""
        return self.evolve(
            status="cancelled",
            phase="finished",
            output=None,
            error_code=None,
            error_message=None,
        ).with_chunks(RunFinishChunk(status="cancelled"))


class StateWriter:
    """A run's successive states as the JSON its store keeps, scrubbed, each record serialised
    once.

    Every string is scrubbed as the reports are (`scrubber`, by default `environment_scrubber()`
    read when the writer is made): a key a model echoes, or one a scenario holds, never reaches
    the store's file, as it never reaches a cassette. A run resumed from its store goes on from
    that form, with `[SCRUBBED]` in place of the secret, as a replayed cassette's run does; a
    state holding no secret is stored exactly.

    A run's states grow by appending: each state shares the messages, chunks, requests and
    override calls of the one before, and each request repeats the system prompt, the tools and
    the transcript of the one before it. `dump(state)` writes what `state.model_dump_json()`
    writes, with two savings:

    - a record written before is copied from its JSON, not serialised again, so a save costs
      what the new records cost, not the whole history again;
    - in `requests`, a message of the run's transcript is written as its place there,
      `{"$same": ["messages", 3]}`, and a system fragment, message or tool an earlier request
      holds as its place in that request, `{"$same": [0, "tools", 2]}` (request 0's third
      tool), so each is stored once.

    `RunState.model_validate_json` reads both forms; what it reads back equals the state (but for
    its secrets). One writer serves one run: it keeps the records it wrote, and their JSON,
    while the run lasts.
    """

    def __init__(self, scrubber: Scrubber | None = None) -> None:
        self._clean = (environment_scrubber() if scrubber is None else scrubber).json_text
        self._texts: dict[int, tuple[object, str]] = {}
        self._written: dict[str, tuple[tuple[Any, ...], list[str]]] = {}
        self._transcript: dict[int, int] = {}  # id(message) -> its place in `messages`
        self._first_written: dict[str, str] = {}  # record JSON -> the pointer to it

    def dump(self, state: RunState) -> str:
        return _json_of(state, self._history, self._clean)

    def _history(self, name: str, records: tuple[Any, ...]) -> str:
        """`records` as a JSON array, only the records not written before serialised."""
        before, texts = self._written.get(name, ((), []))
        if not (len(records) >= len(before) and all(map(operator.is_, records, before))):
            # not a continuation of what was written: start again, and so do the requests,
            # whose pointers into the transcript are no longer known to hold
            before, texts = (), []
            if name == "messages":
                self._transcript = {}
                self._written.pop("requests", None)
                self._first_written = {}
            if name == "requests":
                self._first_written = {}
        if name == "requests":
            texts.extend(
                self._request_text(index, sent)
                for index, sent in enumerate(records[len(before) :], start=len(before))
            )
        else:
            serializer = _record_serializer(RunState, name)
            for place, record in enumerate(records[len(before) :], start=len(before)):
                texts.append(self._text(record, serializer))
                if name == "messages":
                    self._transcript[id(record)] = place
        self._written[name] = (records, texts)
        return "[" + ",".join(texts) + "]"

    def _text(self, record: object, serializer: SchemaSerializer) -> str:
        written = self._texts.get(id(record))
        if written is not None and written[0] is record:
            return written[1]
        text = self._clean(serializer.to_json(record).decode("utf-8"))
        self._texts[id(record)] = (record, text)  # the record is kept, so its id stays its own
        return text

    def _request_text(self, index: int, sent: SentRequest) -> str:
        def shared(name: str, records: tuple[Any, ...]) -> str:
            serializer = _record_serializer(LlmRequest, name)
            texts = []
            for position, record in enumerate(records):
                text = self._text(record, serializer)
                place = self._transcript.get(id(record)) if name == "messages" else None
                if place is not None:
                    pointer: str | None = f'{{"{SAME}":["messages",{place}]}}'
                else:
                    pointer = self._first_written.get(text)
                    if pointer is None:
                        self._first_written[text] = f'{{"{SAME}":[{index},"{name}",{position}]}}'
                texts.append(pointer if pointer is not None and len(pointer) < len(text) else text)
            return "[" + ",".join(texts) + "]"

        return _json_of(
            sent, lambda _, request: _json_of(request, shared, self._clean), self._clean
        )


SAME: Final = "$same"
"""The key of a record a stored request shares with the transcript or an earlier request."""
_SHARED_FIELDS: Final = ("system", "messages", "tools")
"""The fields of a request whose records later requests repeat."""
_HISTORIES: Final[dict[type[WireModel], frozenset[str]]] = {
    RunState: frozenset({"messages", "chunks", "requests", "override_calls"}),
    SentRequest: frozenset({"request"}),
    LlmRequest: frozenset(_SHARED_FIELDS),
}
"""The fields `StateWriter` writes itself, per record type: the rest are pydantic's."""
_STORE_KEYS: Final = frozenset({"run_id"})
"""Written as they are, never scrubbed: the key a store files the run under must read back as
the key it was saved under. The first field of `RunState`, so the field order is kept."""


def _json_of(
    model: WireModel, history: Callable[[str, Any], str], clean: Callable[[str], str]
) -> str:
    """`model`'s JSON, its plain fields by pydantic (passed through `clean`, but for
    `_STORE_KEYS`) and its histories by `history`."""
    serializer = type(model).__pydantic_serializer__
    parts = []
    for plain, name in _layout(type(model)):
        for fields, scrub in ((plain & _STORE_KEYS, False), (plain - _STORE_KEYS, True)):
            if fields:
                text = serializer.to_json(model, include=fields).decode("utf-8")
                parts.append((clean(text) if scrub else text)[1:-1])  # without the braces
        if name is not None:
            parts.append(f'"{name}":{history(name, getattr(model, name))}')
    return "{" + ",".join(part for part in parts if part) + "}"


@functools.cache
def _layout(model: type[WireModel]) -> tuple[tuple[set[str], str | None], ...]:
    """`model`'s fields in order, as runs of plain fields each followed by one history."""
    layout: list[tuple[set[str], str | None]] = []
    plain: list[str] = []
    for name in model.model_fields:
        if name in _HISTORIES[model]:
            layout.append((set(plain), name))
            plain = []
        else:
            plain.append(name)
    layout.append((set(plain), None))
    return tuple(layout)


@functools.cache
def _record_serializer(model: type[WireModel], history: str) -> SchemaSerializer:
    """How `model` serialises one record of `history` (`tuple[X, ...]`: X)."""
    (record, _) = get_args(model.model_fields[history].annotation)
    if isinstance(record, type) and issubclass(record, BaseModel):
        record.model_rebuild()  # a model builds on first use: its serializer, not a stand-in
        return record.__pydantic_serializer__
    return TypeAdapter(record).serializer


def _resolve_shared(requests: list[Any], transcript: object) -> list[Any]:
    """Stored requests with each `{"$same": ...}` replaced by the record it points to; a pointer
    to nothing is a `ValueError` that names it."""
    resolved: list[Any] = []
    for index, sent in enumerate(requests):
        request = sent.get("request") if isinstance(sent, dict) else None
        if isinstance(request, dict):
            changed = {}
            for name in _SHARED_FIELDS:
                records = request.get(name)
                if isinstance(records, list) and any(map(_is_pointer, records)):
                    changed[name] = [
                        _pointed(record[SAME], index, resolved, transcript)
                        if _is_pointer(record)
                        else record
                        for record in records
                    ]
            if changed:
                sent = {**sent, "request": {**request, **changed}}
        resolved.append(sent)
    return resolved


def _is_pointer(record: object) -> bool:
    return type(record) is dict and len(record) == 1 and SAME in record


def _pointed(where: object, index: int, resolved: list[Any], transcript: object) -> Any:
    try:
        if isinstance(where, list) and len(where) == 2 and where[0] == "messages":
            place = where[1]
            if not (isinstance(place, int) and place >= 0 and isinstance(transcript, list)):
                raise IndexError
            return transcript[place]
        request, name, position = cast("tuple[int, str, int]", where)
        if not (0 <= request < index and name in _SHARED_FIELDS and position >= 0):
            raise IndexError
        return resolved[request]["request"][name][position]
    except (TypeError, ValueError, IndexError, KeyError):
        raise ValueError(
            f"request {index} holds {{{SAME!r}: {where!r}}}, which points to no message of the "
            "run and no record of an earlier request; the stored run state is damaged"
        ) from None
