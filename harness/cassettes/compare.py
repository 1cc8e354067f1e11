"""Comparing two cassette files for a reviewer: what a re-recording added, removed and changed.

`compare_cassettes(old, new)` pairs the interactions of two cassettes and `RENDERERS` writes the
result as text (a terminal), Markdown (a pull-request comment) or JSON (a script); the
`harness cassettes diff OLD NEW` command is both. The miss diagnosis, which compares one live
request with a cassette, is `harness.cassettes.diff`; its `structural_diff` says every field
change here too.

Pairing, in two passes:

1. By request key and occurrence: the n-th interaction of a key in OLD with the n-th of the same
   key in NEW. When the two files are in different formats (`harness-cassette/1` keys numbers
   as spelt, `/2` by value), every request is keyed again with the current key version, so a
   format upgrade alone pairs every interaction.
2. What is left, by method and path and the nearest request: a re-recording that changed one
   request field (`temperature`) shows as one changed interaction, not one removed and one
   added. Two requests pair when they carry the same conversation (`messages`, or `input`;
   tool call ids left out, since a provider makes them up anew on every recording), whatever
   else changed (tools, response format, model), or else when at most half of their
   fields (body leaves, query parameters, keyed headers) differ; the same conversation pairs
   first, then the fewest differing fields. Others stay removed and added.

A pair is changed when its requests differ (second pass) or its answers do: status and body,
or an event stream's event names and data. Response headers, timing and the metadata that
changes on every recording (`recorded_at`, `harness_version`) are not compared; the format,
`provider` and `identical_requests` are, since they change what a replay does.

Answers are summarised, never dumped: status, the assistant text (Chat Completions, Messages,
Responses; an event stream's text put together from its deltas) cut to `TEXT_LIMIT`
characters, tool calls as `name(arguments)`, an error's type and message, and the body size.
Every value shown is scrubbed (`harness.scrub.environment_scrubber`) before it is shortened, so
a cut can never leave part of a secret behind, and the rendered output is scrubbed again.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import parse_qsl, urlencode

from pydantic import BaseModel, ConfigDict

from harness.cassettes.cassette import (
    Cassette,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    rekey,
)
from harness.cassettes.diff import CONVERSATIONS, MAX_DIFF_LINES, structural_diff
from harness.cassettes.key import KEY_VERSION, keyed_headers
from harness.json_body import parse_json_body
from harness.scrub import Scrubber, environment_scrubber, redact

TEXT_LIMIT: Final = 80
"""The most characters of an answer's text (or a request's last turn) shown."""
ARGUMENTS_LIMIT: Final = 40
"""The most characters of a tool call's arguments shown."""
TOOL_CALLS_SHOWN: Final = 5
PAIRING_CANDIDATES: Final = 4096
"""Above this many (old, new) candidate pairs in one method and path, a request is compared only
with those at most `PAIRING_WINDOW` places from it, so a cassette re-recorded whole stays fast."""
PAIRING_WINDOW: Final = 32

AnswerKind = Literal["json", "stream", "text", "binary", "empty"]


class _ReportModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AnswerSummary(_ReportModel):
    """One recorded answer in a few words. `text` and `tool_calls` are read from the body's shape
    (Chat Completions, Messages or Responses, plain or streamed) and are empty for any other."""

    status: int
    kind: AnswerKind
    events: int | None = None
    """How many events an event stream holds; None for any other body."""
    text: str | None = None
    """The assistant text (a stream's final text), or a text body; cut to `TEXT_LIMIT`."""
    tool_calls: tuple[str, ...] = ()
    """`name(arguments)`, arguments cut to `ARGUMENTS_LIMIT`."""
    more_tool_calls: int = 0
    error: str | None = None
    """`type: message` of an error body or event."""
    size_bytes: int


class Recorded(_ReportModel):
    """Where an interaction is in its file, and its answer."""

    index: int
    """Its position in the file, from 0."""
    key: str
    occurrence: int
    answer: AnswerSummary


class OneSided(_ReportModel):
    """An interaction only one of the two cassettes holds."""

    method: str
    url: str
    request: str
    """The request in a few words: model, conversation length, last turn."""
    recorded: Recorded


class ChangedInteraction(_ReportModel):
    """An interaction both cassettes hold, with a different request or answer."""

    method: str
    url: str
    """NEW's URL (path and query)."""
    paired_by: Literal["key", "request"]
    """`key`: the same request key and occurrence; `request`: the same method and path, and the
    same conversation or the nearest request, under another key."""
    old: Recorded
    new: Recorded
    request_changes: tuple[str, ...]
    """`$.path: old -> new` per request field that differs (body, then query, then keyed
    headers); at most `MAX_DIFF_LINES`."""
    more_request_changes: int = 0
    answer_changes: tuple[str, ...]
    """`$.status: ...`, `$.body.path: ...` or `$.events[i].data.path: ...`; at most
    `MAX_DIFF_LINES`."""
    more_answer_changes: int = 0

    @property
    def answer_changed(self) -> bool:
        return bool(self.answer_changes)


class SettingChange(_ReportModel):
    """A file-level setting that differs: `format`, `provider` or `identical_requests`."""

    name: str
    old: str | None
    new: str | None


class CassetteComparison(_ReportModel):
    """Everything `compare_cassettes` found, in file order: changed and added interactions in
    NEW's order, removed ones in OLD's."""

    old: str
    new: str
    key_version: int
    """The request key version the pairing compared: the files' own when they share a format,
    else the current one, computed again for every request."""
    settings: tuple[SettingChange, ...]
    changed: tuple[ChangedInteraction, ...]
    added: tuple[OneSided, ...]
    removed: tuple[OneSided, ...]
    unchanged: int

    @property
    def identical(self) -> bool:
        return not (self.settings or self.changed or self.added or self.removed)


# -- comparing ---------------------------------------------------------------------------------


def compare_files(old: Path, new: Path) -> CassetteComparison:
    """Load both cassettes as a replay would (`Cassette.load`: a file that is missing, is not a
    cassette or fails verification raises its `CassetteError`) and compare them."""
    return compare_cassettes(Cassette.load(old), Cassette.load(new))


def compare_cassettes(old: Cassette, new: Cassette) -> CassetteComparison:
    """Pair the interactions of `old` and `new` (see the module docstring) and say what
    differs. Refuses nothing: any two loaded cassettes compare."""
    scrubber = environment_scrubber()
    olds = [
        _Side(index=index, interaction=item, key=item.key, scrubber=scrubber)
        for index, item in enumerate(old.interactions)
    ]
    news = [
        _Side(index=index, interaction=item, key=item.key, scrubber=scrubber)
        for index, item in enumerate(new.interactions)
    ]
    key_version = old.key_version
    if old.format != new.format:
        key_version = KEY_VERSION
        for side in (*olds, *news):
            side.key = rekey(side.interaction.request, version=KEY_VERSION)
    pairs = _pair_by_key(olds, news)
    paired_old = {pair[0].index for pair in pairs}
    paired_new = {pair[1].index for pair in pairs}
    by_request = _pair_by_request(
        [side for side in olds if side.index not in paired_old],
        [side for side in news if side.index not in paired_new],
    )
    found = [_changed(before, after, "key") for before, after in pairs] + [
        _changed(before, after, "request") for before, after in by_request
    ]
    changed = [change for change in found if change is not None]
    paired_old |= {pair[0].index for pair in by_request}
    paired_new |= {pair[1].index for pair in by_request}
    return CassetteComparison(
        old=str(old.path),
        new=str(new.path),
        key_version=key_version,
        settings=tuple(_setting_changes(old, new)),
        changed=tuple(sorted(changed, key=lambda item: item.new.index)),
        added=tuple(side.one_sided() for side in news if side.index not in paired_new),
        removed=tuple(side.one_sided() for side in olds if side.index not in paired_old),
        unchanged=len(found) - len(changed),
    )


@dataclass(kw_only=True)
class _Side:
    """One interaction of one file and the views the comparison reads, each built when first
    read: pairing and comparing read the stored values, and only what is shown (a changed,
    added or removed interaction) is scrubbed and summarised."""

    index: int
    interaction: Interaction
    key: str
    """The key it is paired by: as stored, or computed again when the formats differ."""
    scrubber: Scrubber

    @cached_property
    def request(self) -> dict[str, Any]:
        return _request_view(self.interaction.request)

    @cached_property
    def answer(self) -> dict[str, Any]:
        return _answer_view(self.interaction.response)

    @cached_property
    def shown_request(self) -> dict[str, Any]:
        return _request_view(self.interaction.request, self.scrubber)

    @cached_property
    def shown_answer(self) -> dict[str, Any]:
        return _answer_view(self.interaction.response, self.scrubber)

    @property
    def endpoint(self) -> tuple[str, str]:
        return self.interaction.request.method, self.interaction.request.path

    def recorded(self) -> Recorded:
        return Recorded(
            index=self.index,
            key=self.interaction.key,
            occurrence=self.interaction.occurrence,
            answer=summarise_answer(self.interaction.response, self.scrubber),
        )

    def one_sided(self) -> OneSided:
        request = self.interaction.request
        return OneSided(
            method=request.method,
            url=_shown_url(request, self.scrubber),
            request=_describe_request(self.shown_request),
            recorded=self.recorded(),
        )


def _pair_by_key(olds: Sequence[_Side], news: Sequence[_Side]) -> list[tuple[_Side, _Side]]:
    """The n-th interaction of each key in `olds` with the n-th of that key in `news`."""
    slots: dict[tuple[str, int], _Side] = {}
    counts: dict[str, int] = defaultdict(int)
    for side in olds:
        counts[side.key] += 1
        slots[side.key, counts[side.key]] = side
    counts.clear()
    pairs: list[tuple[_Side, _Side]] = []
    for side in news:
        counts[side.key] += 1
        before = slots.get((side.key, counts[side.key]))
        if before is not None:
            pairs.append((before, side))
    return pairs


def _pair_by_request(olds: Sequence[_Side], news: Sequence[_Side]) -> list[tuple[_Side, _Side]]:
    """Unpaired interactions of one method and path: requests carrying the same conversation
    first, then the nearest (fewest differing fields), then the nearest in file order. Requests
    with different conversations that differ in more than half of their fields are no pair."""
    groups: dict[tuple[str, str], tuple[list[_Side], list[_Side]]] = defaultdict(lambda: ([], []))
    for side in olds:
        groups[side.endpoint][0].append(side)
    for side in news:
        groups[side.endpoint][1].append(side)
    pairs: list[tuple[_Side, _Side]] = []
    for group_old, group_new in groups.values():
        if not group_old or not group_new:
            continue
        numbered = _Numbered()
        old_fields = [numbered.fields(side.request) for side in group_old]
        new_fields = [numbered.fields(side.request) for side in group_new]
        old_turns = [_conversation(side.request) for side in group_old]
        new_turns = [_conversation(side.request) for side in group_new]
        windowed = len(group_old) * len(group_new) > PAIRING_CANDIDATES
        candidates: list[tuple[bool, int, int, int, int]] = []
        for i, (old_items, old_paths) in enumerate(old_fields):
            for j, (new_items, new_paths) in enumerate(new_fields):
                if windowed and abs(i - j) > PAIRING_WINDOW:
                    continue
                distance = len({numbered.path_of[item] for item in old_items ^ new_items})
                other = old_turns[i] is None or old_turns[i] != new_turns[j]
                if not other or 2 * distance <= len(old_paths | new_paths):
                    candidates.append((other, distance, abs(i - j), i, j))
        taken_old: set[int] = set()
        taken_new: set[int] = set()
        for *_, i, j in sorted(candidates):
            if i not in taken_old and j not in taken_new:
                taken_old.add(i)
                taken_new.add(j)
                pairs.append((group_old[i], group_new[j]))
    return pairs


CALL_IDS: Final = frozenset({"id", "tool_call_id", "call_id", "tool_use_id"})
"""Members naming a tool call, which a provider makes up anew on every recording: a
conversation is the same whatever they say."""


def _conversation(view: dict[str, Any]) -> str | None:
    """The conversation a request carries (`CONVERSATIONS`: Chat Completions and Messages
    `messages`, Responses `input`) without its tool call ids, as canonical JSON; None for a
    request without one."""
    body = view.get("body")
    if not isinstance(body, dict):
        return None
    turns = {member: _without_ids(body[member]) for member in CONVERSATIONS if member in body}
    return json.dumps(turns, sort_keys=True, ensure_ascii=False) if turns else None


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {name: _without_ids(item) for name, item in value.items() if name not in CALL_IDS}
    if isinstance(value, list):
        return [_without_ids(item) for item in value]
    return value


Leaf = tuple[str, Any]


class _Numbered:
    """Fields as numbers, so the sets compared pairwise hash integers, not tuples of text."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str, Any], int] = {}
        self.paths: dict[str, int] = {}
        self.path_of: list[int] = []
        """The path number of each item number."""

    def fields(self, view: dict[str, Any]) -> tuple[frozenset[int], frozenset[int]]:
        """The numbers of a request view's fields (`_fields`) and of their paths."""
        items: list[int] = []
        paths: list[int] = []
        for path, (tag, value) in _fields(view).items():
            path_number = self.paths.setdefault(path, len(self.paths))
            item_number = self.items.setdefault((path, tag, value), len(self.items))
            if item_number == len(self.path_of):
                self.path_of.append(path_number)
            items.append(item_number)
            paths.append(path_number)
        return frozenset(items), frozenset(paths)


def _fields(view: dict[str, Any]) -> dict[str, Leaf]:
    """Every field of a request view by its path: each leaf of the body, each query parameter,
    each keyed header. Values are tagged so `true` is not `1` (while `1` and `1.0` are one
    number, as the request key reads them)."""
    found: dict[str, Leaf] = {}
    stack: list[tuple[str, Any]] = [
        (f"${name}", view[name]) for name in _BODY_MEMBERS if name in view
    ]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict) and item:
            stack.extend((f"{path}.{name}", child) for name, child in item.items())
        elif isinstance(item, list) and item:
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
        else:  # a scalar, or an empty object or list (said by its tag alone)
            found[path] = (_tag(item), None if isinstance(item, dict | list) else item)
    for index, (name, value) in enumerate(view["query"]):
        found[f"query {index} {name}"] = ("str", value)
    for name, value in view["headers"].items():
        found[f"header {name}"] = ("str", value)
    return found


def _tag(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _changed(
    before: _Side, after: _Side, paired_by: Literal["key", "request"]
) -> ChangedInteraction | None:
    """The pair as a change, or None when neither its request nor its answer differs."""
    answer_changed = _differ(before.answer, after.answer)
    if paired_by == "key" and not answer_changed:
        return None
    request_lines: list[str] = []
    if paired_by == "request":
        request_lines = _request_changes(before.shown_request, after.shown_request) or [
            "(no body field, query parameter or keyed header differs: the request keys were "
            "computed with different volatile fields)"
        ]
    answer_lines: list[str] = []
    if answer_changed:
        answer_lines = list(structural_diff(before.shown_answer, after.shown_answer)) or [
            "(the answers differ only in values scrubbed as secrets)"
        ]
    request = after.interaction.request
    return ChangedInteraction(
        method=request.method,
        url=_shown_url(request, after.scrubber),
        paired_by=paired_by,
        old=before.recorded(),
        new=after.recorded(),
        request_changes=tuple(request_lines[:MAX_DIFF_LINES]),
        more_request_changes=max(0, len(request_lines) - MAX_DIFF_LINES),
        answer_changes=tuple(answer_lines[:MAX_DIFF_LINES]),
        more_answer_changes=max(0, len(answer_lines) - MAX_DIFF_LINES),
    )


def _shown_url(request: RecordedRequest, scrubber: Scrubber) -> str:
    query = scrubber.query(request.query)
    return scrubber.path(request.path) + (f"?{query}" if query else "")


def _differ(old: Any, new: Any) -> bool:
    """Whether `structural_diff` finds any difference (it stops at the first)."""
    return next(structural_diff(old, new), None) is not None


def _request_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Body changes (rooted at `$` when both bodies are JSON), then query, then keyed headers."""
    if "body" in before and "body" in after:
        lines = list(structural_diff(before["body"], after["body"]))
    else:
        lines = list(structural_diff(_body_part(before), _body_part(after)))
    if before["query"] != after["query"]:
        old_query = urlencode(before["query"], safe="[]")
        new_query = urlencode(after["query"], safe="[]")
        lines.append(f"query: {old_query!r} -> {new_query!r}")
    for name in sorted(before["headers"].keys() | after["headers"].keys()):
        old_value, new_value = before["headers"].get(name), after["headers"].get(name)
        if old_value != new_value:
            lines.append(f"header {name}: {_header(old_value)} -> {_header(new_value)}")
    return lines


_BODY_MEMBERS: Final = ("body", "body_text", "body_base64")


def _body_part(view: dict[str, Any]) -> dict[str, Any]:
    return {name: view[name] for name in _BODY_MEMBERS if name in view}


def _header(value: str | None) -> str:
    return "(absent)" if value is None else repr(value)


def _setting_changes(old: Cassette, new: Cassette) -> Iterator[SettingChange]:
    settings: tuple[tuple[str, str | None, str | None], ...] = (
        ("format", old.format, new.format),
        ("provider", old.metadata.provider, new.metadata.provider),
        ("identical_requests", old.identical_requests, new.identical_requests),
    )
    for name, before, after in settings:
        if before != after:
            yield SettingChange(name=name, old=before, new=after)


def _request_view(request: RecordedRequest, scrubber: Scrubber | None = None) -> dict[str, Any]:
    """A request as it is compared: its body as stored (`body` when it is JSON, `body_text`,
    `body_base64`, or none), its query parameters and its keyed headers; scrubbed with
    `scrubber` when one is given."""
    text = scrubber.text if scrubber else _unchanged
    query = scrubber.query(request.query) if scrubber else request.query
    view: dict[str, Any] = {
        "query": sorted(parse_qsl(query, keep_blank_values=True)),
        "headers": {name: text(value) for name, value in keyed_headers(request.headers).items()},
    }
    if request.body is not None:
        view["body"] = scrubber.json(request.body) if scrubber else request.body
    elif request.body_text is not None:
        view["body_text"] = scrubber.body_text(request.body_text) if scrubber else request.body_text
    elif request.body_base64 is not None:
        view["body_base64"] = request.body_base64
    return view


def _answer_view(response: RecordedResponse, scrubber: Scrubber | None = None) -> dict[str, Any]:
    """An answer as it is compared: status and body, or the name and data of each event (data
    as JSON when it is JSON); scrubbed with `scrubber` when one is given. Headers and timing are
    left out."""
    view: dict[str, Any] = {"status": response.status}
    if response.events is not None:
        view["events"] = [
            {"event": event.event, "data": _event_data(event.data, scrubber)}
            for event in response.events
        ]
    elif response.body is not None:
        view["body"] = scrubber.json(response.body) if scrubber else response.body
    elif response.body_text is not None:
        view["body_text"] = scrubber.text(response.body_text) if scrubber else response.body_text
    elif response.body_base64 is not None:
        view["body_base64"] = response.body_base64
    return view


def _event_data(data: str | None, scrubber: Scrubber | None) -> Any:
    if data is None:
        return None
    is_json, value = parse_json_body(data)
    if scrubber is None:
        return value if is_json else data
    return scrubber.json(value) if is_json else scrubber.text(data)


def _unchanged(text: str) -> str:
    return text


# -- summarising answers -----------------------------------------------------------------------


def summarise_answer(response: RecordedResponse, scrubber: Scrubber | None = None) -> AnswerSummary:
    """`response` in a few words (see `AnswerSummary`). Reads any shape without refusing it: a
    body that is no known reply gives its status, kind and size alone. Text is scrubbed with
    `scrubber` (the environment's, by default) before it is cut."""
    scrubber = scrubber or environment_scrubber()
    size = len(response.body_bytes())
    if response.events is not None:
        reply = _stream_reply(response.events)
        return _summary(response.status, "stream", reply, size, scrubber, len(response.events))
    if response.body is not None:
        return _summary(response.status, "json", _body_reply(response.body), size, scrubber)
    if response.body_text is not None:
        reply = _Reply(text=[response.body_text])
        return _summary(response.status, "text", reply, size, scrubber)
    kind: AnswerKind = "binary" if response.body_base64 is not None else "empty"
    return _summary(response.status, kind, _Reply(), size, scrubber)


@dataclass
class _Reply:
    """What an answer said, put together from a body or from the events of a stream."""

    text: list[str] | None = None
    calls: dict[str, list[str]] | None = None
    """Per tool call (keyed by where it is in the answer): its name and argument pieces."""
    error: str | None = None

    def add_text(self, piece: Any) -> None:
        if isinstance(piece, str):
            self.text = [*(self.text or []), piece]

    def add_call(self, where: str, name: Any = None, arguments: Any = None) -> None:
        self.calls = self.calls if self.calls is not None else {}
        call = self.calls.setdefault(where, ["?"])
        if isinstance(name, str) and name:
            call[0] = name
        if isinstance(arguments, str):
            call.append(arguments)
        elif isinstance(arguments, dict) and arguments:
            call.append(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")))


def _summary(
    status: int,
    kind: AnswerKind,
    reply: _Reply,
    size: int,
    scrubber: Scrubber,
    events: int | None = None,
) -> AnswerSummary:
    text = "".join(reply.text) if reply.text else None
    calls = [
        f"{scrubber.text(name)}({_cut(scrubber.text(_compact(''.join(pieces))), ARGUMENTS_LIMIT)})"
        for name, *pieces in (reply.calls or {}).values()
    ]
    return AnswerSummary(
        status=status,
        kind=kind,
        events=events,
        text=_cut(scrubber.text(text), TEXT_LIMIT) if text else None,
        tool_calls=tuple(calls[:TOOL_CALLS_SHOWN]),
        more_tool_calls=max(0, len(calls) - TOOL_CALLS_SHOWN),
        error=_cut(scrubber.text(reply.error), TEXT_LIMIT) if reply.error else None,
        size_bytes=size,
    )


def _body_reply(body: Any) -> _Reply:
    """The reply a plain JSON answer holds: Chat Completions `choices`, Messages `content`,
    Responses `output`, or an `error`."""
    reply = _Reply()
    if not isinstance(body, dict):
        return reply
    reply.error = _error(body.get("error"))
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            _chat_message(reply, message)
    content = body.get("content")
    if isinstance(content, list) and body.get("type", "message") == "message":
        for index, block in enumerate(content):
            if isinstance(block, dict):
                _message_block(reply, str(index), block)
    output = body.get("output")
    if isinstance(output, list):
        for index, item in enumerate(output):
            if isinstance(item, dict):
                _output_item(reply, str(index), item)
    return reply


def _chat_message(reply: _Reply, message: dict[str, Any]) -> None:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        for part in content:
            if isinstance(part, dict):
                reply.add_text(part.get("text"))
    elif content:
        reply.add_text(content)
    elif message.get("refusal"):
        reply.add_text(message.get("refusal"))
    calls = message.get("tool_calls")
    for index, call in enumerate(calls if isinstance(calls, list) else []):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            reply.add_call(f"chat {index}", function.get("name"), function.get("arguments"))


def _message_block(reply: _Reply, where: str, block: dict[str, Any]) -> None:
    kind = block.get("type")
    if kind == "text":
        reply.add_text(block.get("text"))
    elif kind in ("tool_use", "server_tool_use"):
        reply.add_call(f"block {where}", block.get("name"), block.get("input"))


def _output_item(reply: _Reply, where: str, item: dict[str, Any]) -> None:
    kind = item.get("type")
    if kind == "message":
        parts = item.get("content")
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                reply.add_text(part.get("text") or part.get("refusal"))
    elif kind == "function_call":
        reply.add_call(f"item {where}", item.get("name"), item.get("arguments"))


def _error(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return value
    if not isinstance(value, dict):
        return None
    kind = value.get("type") or value.get("code")
    message = value.get("message")
    words = [str(part) for part in (kind, message) if part]
    return ": ".join(words) or "error"


_FINAL_EVENTS: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _stream_reply(events: Sequence[Any]) -> _Reply:
    """The reply an event stream holds, put together from its deltas: Chat Completions chunks,
    Messages content blocks, Responses output items (or the final response a Responses stream
    ends with, when it has one)."""
    reply = _Reply()
    final: _Reply | None = None
    for event in events:
        is_json, data = parse_json_body(event.data) if event.data else (False, None)
        if not is_json or not isinstance(data, dict):
            continue
        kind = data.get("type")
        if data.get("error") is not None:
            reply.error = _error(data.get("error"))
        if isinstance(data.get("choices"), list):
            _chat_chunk(reply, data["choices"])
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            _message_block(reply, str(data.get("index")), data["content_block"])
        elif kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            delta = data["delta"]
            if delta.get("type") == "text_delta":
                reply.add_text(delta.get("text"))
            elif delta.get("type") == "input_json_delta":
                reply.add_call(f"block {data.get('index')}", arguments=delta.get("partial_json"))
        elif kind == "response.output_text.delta":
            reply.add_text(data.get("delta"))
        elif kind == "response.output_item.added" and isinstance(data.get("item"), dict):
            item = data["item"]
            if item.get("type") == "function_call":
                reply.add_call(f"item {data.get('output_index')}", item.get("name"))
        elif kind == "response.function_call_arguments.delta":
            reply.add_call(f"item {data.get('output_index')}", arguments=data.get("delta"))
        elif kind in _FINAL_EVENTS and isinstance(data.get("response"), dict):
            final = _body_reply(data["response"])
    if final is not None and (final.text or final.calls or final.error):
        return final
    return reply


def _chat_chunk(reply: _Reply, choices: list[Any]) -> None:
    for choice in choices:
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            continue
        reply.add_text(delta.get("content"))
        calls = delta.get("tool_calls")
        for position, call in enumerate(calls if isinstance(calls, list) else []):
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            function = function if isinstance(function, dict) else {}
            reply.add_call(
                f"chat {call.get('index', position)}",
                function.get("name"),
                function.get("arguments"),
            )


def _compact(arguments: str) -> str:
    """Tool call arguments as compact JSON when they are JSON (`{"q":"x"}`), else as sent."""
    is_json, value = parse_json_body(arguments)
    if not is_json:
        return arguments
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_request(view: dict[str, Any]) -> str:
    """A request in a few words: `model "m", 3 messages, last user: "..."`."""
    if "body_text" in view:
        return f"text body {_quoted(view['body_text'])}"
    if "body_base64" in view:
        return "binary body"
    if "body" not in view:
        return "no body"
    body = view["body"]
    if not isinstance(body, dict):
        return "JSON body"
    words: list[str] = []
    if isinstance(body.get("model"), str):
        words.append(f"model {_quoted(body['model'])}")
    for member, noun in (("messages", "message"), ("input", "input item")):
        turns = body.get(member)
        if isinstance(turns, str):
            words.append(f"{member} {_quoted(turns)}")
        elif isinstance(turns, list):
            words.append(f"{len(turns)} {noun}{'' if len(turns) == 1 else 's'}")
            last = turns[-1] if turns else None
            if isinstance(last, dict):
                words.append(_describe_turn(last))
    if body.get("stream") is True:
        words.append("streamed")
    return ", ".join(words) or "JSON body"


def _describe_turn(turn: dict[str, Any]) -> str:
    who = turn.get("role") or turn.get("type") or "turn"
    content = turn.get("content", turn.get("output"))
    pieces: list[str] = []
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                text = part.get("text", part.get("content"))
                if isinstance(text, str):
                    pieces.append(text)
                elif part.get("type") in ("tool_result", "tool_use"):
                    pieces.append(f"({part['type']})")
    if not pieces and turn.get("tool_calls"):
        pieces.append("(tool calls)")
    return f"last {who}: {_quoted(' '.join(pieces))}" if pieces else f"last {who}"


def _quoted(text: str) -> str:
    return json.dumps(_cut(text, TEXT_LIMIT), ensure_ascii=False)


def describe_answer(summary: AnswerSummary) -> str:
    """An answer summary on one line: `200, text "...", tool call f({...}), 312 bytes`."""
    words = [str(summary.status)]
    if summary.kind == "stream":
        words.append(f"stream of {summary.events} event{'' if summary.events == 1 else 's'}")
    elif summary.kind in ("binary", "empty"):
        words.append(f"{summary.kind} body")
    if summary.error is not None:
        words.append(f"error {json.dumps(summary.error, ensure_ascii=False)}")
    if summary.text is not None:
        noun = "text body" if summary.kind == "text" else "text"
        words.append(f"{noun} {json.dumps(summary.text, ensure_ascii=False)}")
    if summary.tool_calls:
        noun = "tool call" if len(summary.tool_calls) == 1 else "tool calls"
        more = f" and {summary.more_tool_calls} more" if summary.more_tool_calls else ""
        words.append(f"{noun} {', '.join(summary.tool_calls)}{more}")
    if summary.kind != "empty":
        words.append(f"{summary.size_bytes:,} bytes")
    return ", ".join(words)


# -- rendering ---------------------------------------------------------------------------------


def _counts(comparison: CassetteComparison) -> list[tuple[str, int]]:
    return [
        ("changed", len(comparison.changed)),
        ("added", len(comparison.added)),
        ("removed", len(comparison.removed)),
        ("unchanged", comparison.unchanged),
    ]


def _count_line(comparison: CassetteComparison) -> str:
    if comparison.identical:
        total = comparison.unchanged
        return f"no change: {total} interaction{'' if total == 1 else 's'}, all unchanged"
    return ", ".join(f"{count} {name}" for name, count in _counts(comparison))


def _keys_note(comparison: CassetteComparison) -> str | None:
    if any(setting.name == "format" for setting in comparison.settings):
        return (
            f"the formats differ, so requests were paired by their version-"
            f"{comparison.key_version} keys, computed again"
        )
    return None


def _setting_line(setting: SettingChange) -> str:
    return f"{setting.name}: {json.dumps(setting.old)} -> {json.dumps(setting.new)}"


def _where(recorded: Recorded) -> str:
    return f"occurrence {recorded.occurrence}, interaction {recorded.index}"


def _headline(change: ChangedInteraction) -> str:
    if change.paired_by == "key":
        return "same request, answer changed"
    fields = len(change.request_changes) + change.more_request_changes
    answer = "answer changed" if change.answer_changed else "same answer"
    return f"request changed ({fields} field{'' if fields == 1 else 's'}), {answer}"


def _change_lines(change: ChangedInteraction) -> list[str]:
    """The body of one changed interaction: request changes, then the answers."""
    lines: list[str] = []
    if change.request_changes:
        lines.append("request:")
        lines.extend(f"  {line}" for line in change.request_changes)
        if change.more_request_changes:
            lines.append(f"  ... and {change.more_request_changes} more")
    if change.answer_changed:
        lines.append(f"old answer: {describe_answer(change.old.answer)}")
        lines.append(f"new answer: {describe_answer(change.new.answer)}")
        lines.append("answer changes:")
        lines.extend(f"  {line}" for line in change.answer_changes)
        if change.more_answer_changes:
            lines.append(f"  ... and {change.more_answer_changes} more")
    else:
        lines.append(f"answer (the same): {describe_answer(change.new.answer)}")
    return lines


def render_text(comparison: CassetteComparison) -> str:
    """The comparison for a terminal: a line per change (`~` changed, `+` added, `-` removed)
    with its details indented, then the counts."""
    lines = [f"cassette diff: {comparison.old} -> {comparison.new}"]
    lines.extend(f"  {_setting_line(setting)}" for setting in comparison.settings)
    note = _keys_note(comparison)
    if note:
        lines.append(f"  ({note})")
    for change in comparison.changed:
        lines.append(f"~ {change.method} {change.url} ({_where(change.new)}): {_headline(change)}")
        lines.extend(f"    {line}" for line in _change_lines(change))
    for sign, items in (("+", comparison.added), ("-", comparison.removed)):
        for item in items:
            lines.append(f"{sign} {item.method} {item.url} ({_where(item.recorded)})")
            lines.append(f"    request: {item.request}")
            lines.append(f"    answer: {describe_answer(item.recorded.answer)}")
    lines.append(_count_line(comparison))
    return redact("\n".join(lines) + "\n")


def render_markdown(comparison: CassetteComparison) -> str:
    """The comparison as a pull-request comment: a heading, a table of counts, a collapsible
    `<details>` per changed interaction and a list item per added or removed one. Every value
    from a cassette is in a code span, a code block or escaped HTML, so nothing in an answer
    renders as Markdown, HTML or a mention."""
    lines = [
        f"### Cassette diff: {_code(comparison.old)} → {_code(comparison.new)}",
        "",
    ]
    if comparison.identical:
        lines.append(f"No change: {_count_line(comparison).removeprefix('no change: ')}.")
        return redact("\n".join(lines) + "\n")
    if comparison.settings:
        lines.extend(f"- {_code(_setting_line(setting))}" for setting in comparison.settings)
        note = _keys_note(comparison)
        if note:
            lines.append(f"- {note[0].upper()}{note[1:]}.")
        lines.append("")
    lines.extend(["| interactions | count |", "| --- | ---: |"])
    lines.extend(f"| {name} | {count} |" for name, count in _counts(comparison))
    if comparison.changed:
        lines.extend(["", "#### Changed", ""])
        for change in comparison.changed:
            summary = html.escape(f"{change.method} {change.url}")
            where = html.escape(_where(change.new))
            lines.extend(
                [
                    "<details>",
                    f"<summary><code>{summary}</code> ({where}): {_headline(change)}</summary>",
                    "",
                    *_code_block(_change_lines(change)),
                    "",
                    "</details>",
                    "",
                ]
            )
        lines.pop()
    for title, items in (("Added", comparison.added), ("Removed", comparison.removed)):
        if not items:
            continue
        lines.extend(["", f"#### {title}", ""])
        for item in items:
            lines.append(f"- {_code(f'{item.method} {item.url}')} ({_where(item.recorded)})")
            lines.append(f"  - request: {_code(item.request)}")
            lines.append(f"  - answer: {_code(describe_answer(item.recorded.answer))}")
    return redact("\n".join(lines) + "\n")


def render_json(comparison: CassetteComparison) -> str:
    """The comparison as one JSON object: the fields of `CassetteComparison`, plus `identical`
    and `counts`."""
    document = {
        "identical": comparison.identical,
        "counts": dict(_counts(comparison)),
        **comparison.model_dump(mode="json"),
    }
    return redact(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


RENDERERS: Final[Mapping[str, Callable[[CassetteComparison], str]]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
}
"""Each output format of `harness cassettes diff` and what writes it."""

_BACKTICKS: Final = re.compile(r"`+")


def _code(text: str) -> str:
    """`text` as a Markdown code span, whatever backticks it holds."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _code_block(lines: list[str]) -> list[str]:
    """`lines` as a fenced Markdown code block longer than any backtick run they hold."""
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}text", *lines, fence]


__all__ = [
    "RENDERERS",
    "TEXT_LIMIT",
    "AnswerSummary",
    "CassetteComparison",
    "ChangedInteraction",
    "OneSided",
    "Recorded",
    "SettingChange",
    "compare_cassettes",
    "compare_files",
    "describe_answer",
    "render_json",
    "render_markdown",
    "render_text",
    "summarise_answer",
]
