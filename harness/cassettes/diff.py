"""Miss diagnosis: say which recorded request is nearest and exactly how it differs.

Runs only when a miss happens; replay never pays for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit

from harness.cassettes.key import equivalent_body, keyed_headers
from harness.errors import CassetteMissError
from harness.json_body import parse_json_body
from harness.scrub import DEFAULT_SCRUBBER, Scrubber

if TYPE_CHECKING:
    from harness.cassettes.cassette import Cassette

MAX_CANDIDATES: Final = 3
MAX_DIFF_LINES: Final = 12
STRING_WINDOW: Final = 24


def structural_diff(old: Any, new: Any, path: str = "$") -> Iterator[str]:
    """Yield `path: old -> new` for every place two JSON values differ, recorded -> requested.

    Lists of different lengths are said as such (`5 items -> 1 item`) before their items are
    compared; long strings are shortened around their first difference.
    """
    if isinstance(old, dict) and isinstance(new, dict):
        for name in sorted(old.keys() | new.keys()):
            child = f"{path}.{name}" if name.isidentifier() else f"{path}[{name!r}]"
            if name not in new:
                yield f"{child}: {_short(old[name])} -> (absent)"
            elif name not in old:
                yield f"{child}: (absent) -> {_short(new[name])}"
            else:
                yield from structural_diff(old[name], new[name], child)
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            yield f"{path}: {_items(len(old))} -> {_items(len(new))}"
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            yield from structural_diff(a, b, f"{path}[{index}]")
    elif isinstance(old, str) and isinstance(new, str):
        if old != new:
            first = next(
                (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
                min(len(old), len(new)),
            )
            yield f"{path}: {_window(old, first)} -> {_window(new, first)}"
    elif _is_number(old) and _is_number(new):
        if old != new:  # numbers are keyed by value: `1` and `1.0` are the same number
            yield f"{path}: {_short(old)} -> {_short(new)}"
    elif old != new or type(old) is not type(new):
        yield f"{path}: {_short(old)} -> {_short(new)}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def explain_miss(
    *,
    cassette: Cassette,
    method: str,
    url: str,
    body: bytes,
    key: str,
    mode: str,
    recorded_for_key: int,
    scrubber: Scrubber = DEFAULT_SCRUBBER,
    headers: Iterable[tuple[str, str]] = (),
    advice: str | None = None,
) -> CassetteMissError:
    """Build the `CassetteMissError` for a request with no unplayed interaction.

    Differences are those of the requests read by value (`equivalent_body`): a tool call's
    arguments spelt another way, or a text sent as one text block, would have matched, so they
    are listed apart as what did *not* cause the miss. `advice` replaces the closing advice (to
    re-record) where re-recording is not the fix: a target run against the bundled library.

    The live request goes through `scrubber`, extended with the exact credential values the
    request sent (its `headers`, query and body) and the environment's secrets, as a recording
    would be, before it is printed or compared: a miss message ends up in CI logs and JUnit
    files, so it never shows a credential, and a credential that differs from the recorded
    placeholder is not reported as a difference.
    """
    parts = urlsplit(url)
    headers = list(headers)
    scrubber = scrubber.for_request(headers, parts.query, body)
    path = scrubber.path(parts.path or "/")
    query = scrubber.query(parts.query)
    head = f"{method} {path}" + (f"?{query}" if query else "")
    if recorded_for_key:
        return CassetteMissError(
            f"cassette {cassette.path}: {head} (key {key}) was recorded {recorded_for_key} "
            f"time(s) and every recorded occurrence has been played; the code under test sent "
            f"it once more. Set allow_repeats=True to replay the last answer again, or re-record "
            f"(record mode 'all')."
        )
    lines = [
        f"cassette {cassette.path} has no interaction for {head} (key {key}) "
        f"in record mode {mode!r}."
    ]
    requested = _view(query, body, scrubber)
    sent_headers = keyed_headers(headers)
    groups: dict[str, list[int]] = {}
    for index, interaction in enumerate(cassette.interactions):
        if interaction.request.method == method.upper() and interaction.request.path == path:
            groups.setdefault(interaction.key, []).append(index)
    candidates = []
    equivalent = (requested[0], equivalent_body(requested[1], path))
    forced = forced_choice(equivalent[1])
    respelt: dict[int, list[str]] = {}
    for indexes in groups.values():
        recorded = cassette.interactions[indexes[0]].request
        view = _view(recorded.query, recorded.body_bytes(), scrubber)
        differences = _request_diff(
            (view[0], equivalent_body(view[1], path)), equivalent
        ) + _header_diff(keyed_headers(recorded.headers), sent_headers, scrubber)
        respelt[indexes[0]] = _respelt(_request_diff(view, requested), differences)
        forced_alike = forced_choice(equivalent_body(view[1], path)) == forced
        candidates.append((indexes, differences, forced_alike))
    # a forced request is compared with the recorded forced requests (of the same tool) first,
    # a work request with the work requests: the nearest by distance alone is often the other
    candidates.sort(key=lambda item: (not item[2], _distance(item[1]), item[0][0]))
    if not candidates:
        recorded_requests = sorted(
            {f"{i.request.method} {i.request.path}" for i in cassette.interactions}
        )
        lines.append(
            "No recorded request has the same method and path; recorded: "
            + (", ".join(recorded_requests) if recorded_requests else "(the cassette is empty)")
        )
    else:
        kind = (
            f"forced requests of {forced}, then the rest"
            if forced is not None
            else "requests that force no tool, then the rest"
        )
        lines.append(
            "Nearest recorded requests (same method and path, each distinct request once; "
            f"{kind}), most similar first:"
        )
        for indexes, differences, _ in candidates[:MAX_CANDIDATES]:
            first = cassette.interactions[indexes[0]]
            times = f"recorded {len(indexes)} times" if len(indexes) > 1 else "recorded once"
            lines.append(
                f"  #{indexes[0]} key {first.key} ({times}): {len(differences)} difference(s)"
            )
        best_indexes, best, _ = candidates[0]
        lines.append(f"Differences from #{best_indexes[0]}, recorded -> requested:")
        lines.extend(f"  {line}" for line in best[:MAX_DIFF_LINES])
        if len(best) > MAX_DIFF_LINES:
            lines.append(f"  ... and {len(best) - MAX_DIFF_LINES} more")
        if not best:
            lines.append(
                "  (none in the query, body or keyed headers: the volatile-field setting differs)"
            )
        spelt = respelt[best_indexes[0]]
        if spelt:
            lines.append(
                "Spelt differently but the same to the provider, so not why it missed "
                "(tool-call arguments are compared by value, a text and one text block alike):"
            )
            lines.extend(f"  {line}" for line in spelt[:MAX_DIFF_LINES])
        for _, differences, _ in candidates[:MAX_CANDIDATES]:
            earlier = _earlier_turn(cassette, equivalent[1], differences, groups, scrubber, path)
            if earlier:
                lines.extend(earlier)
                break
    lines.append(
        advice
        or "If the request changed on purpose, re-record: record mode 'new_episodes' appends "
        "the new interaction, 'all' rewrites the cassette from this run."
    )
    return CassetteMissError("\n".join(lines))


def _respelt(raw: list[str], differences: list[str]) -> list[str]:
    """The lines of `raw` (the requests' differences as sent) at a place where the requests read
    by value (`differences`) do not differ: what a client spelt its own way."""
    places = [line.split(": ", 1)[0] for line in differences]
    kept = []
    for line in raw:
        place = line.split(": ", 1)[0]
        if not any(
            other == place or other.startswith((place + ".", place + "[")) for other in places
        ):
            kept.append(line)
    return kept


def forced_choice(body: Any) -> str | None:
    """The tool a request body forces the model to call, read from its tool choice as each wire
    writes it (Chat Completions, Responses, Messages, Gemini's `functionCallingConfig`, read by
    value): its name, `*` for any tool, None when the request forces none."""
    if not isinstance(body, dict):
        return None
    choice = body.get("tool_choice")
    if choice in ("required", "any"):
        return "*"
    if isinstance(choice, dict):
        if choice.get("type") == "any":
            return "*"
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else choice.get("name")
        return name if isinstance(name, str) and choice.get("type") != "auto" else None
    config = body.get("toolConfig")
    calling = config.get("functionCallingConfig") if isinstance(config, dict) else None
    if isinstance(calling, dict) and calling.get("mode") == "ANY":
        names = calling.get("allowedFunctionNames")
        return names[0] if isinstance(names, list) and len(names) == 1 else "*"
    return None


CONVERSATIONS: Final = ("messages", "input")
"""The body members holding a conversation's turns: Chat Completions and Messages `messages`,
Responses `input`."""


def _earlier_turn(
    cassette: Cassette,
    requested: Any,
    differences: list[str],
    groups: dict[str, list[int]],
    scrubber: Scrubber,
    path: str,
) -> list[str]:
    """When the nearest request differs in an earlier *answer* the conversation carries (an
    assistant turn), say so: this client was answered differently at that turn than when the
    cassette was recorded, or sent the answer back changed (a tool call's arguments whose values
    differ, not only their spelling), and name the earlier request if it holds several answers.
    `requested` and `differences` are read by value (`equivalent_body`)."""
    if not isinstance(requested, dict):
        return []
    for line in differences:
        for member in CONVERSATIONS:
            turns = requested.get(member)
            prefix = f"$.{member}["
            if not isinstance(turns, list) or not line.startswith(prefix):
                continue
            digits = line[len(prefix) :].split("]", 1)[0]
            if not digits.isdigit() or int(digits) >= len(turns):
                continue
            turn = int(digits)
            item = turns[turn]
            if not isinstance(item, dict) or not (
                item.get("role") == "assistant" or item.get("type") == "function_call"
            ):
                continue
            found = [
                "This request continues a conversation whose earlier turn was answered "
                "differently than when the cassette was recorded, or was sent back changed:",
                f"  {line}",
            ]
            if ".arguments" in line.split(": ", 1)[0]:
                found.append(
                    "  (the tool call's arguments hold other values than those recorded, not "
                    "only another spelling of them)"
                )
            earlier = {**requested, member: turns[:turn]}
            for indexes in groups.values():
                recorded = cassette.interactions[indexes[0]].request
                view = _view(recorded.query, recorded.body_bytes(), scrubber)[1]
                if equivalent_body(view, path) != earlier:
                    continue
                answers = {cassette.interactions[i].response.body_bytes() for i in indexes}
                if len(answers) > 1:
                    found.append(
                        f"The earlier turn's request (#{indexes[0]}, key "
                        f"{cassette.interactions[indexes[0]].key}) was recorded {len(indexes)} "
                        f"times with {len(answers)} different answers, dealt out in the order "
                        "identical requests arrive: re-record with identical requests shared "
                        "(the default) so every client gets one answer to it."
                    )
            return found
    return []


def _view(query: str, body: bytes, scrubber: Scrubber) -> tuple[list[tuple[str, str]], Any]:
    """The query pairs and body of a request as a recording would store them (scrubbed)."""
    is_json, value = parse_json_body(body)
    if is_json:
        value = scrubber.json(value)
    else:
        value = scrubber.body_text(body.decode("utf-8", "replace")) if body else None
    return sorted(parse_qsl(scrubber.query(query), keep_blank_values=True)), value


def _request_diff(
    recorded: tuple[list[tuple[str, str]], Any], requested: tuple[list[tuple[str, str]], Any]
) -> list[str]:
    """Body differences rooted at `$`, then a query difference if any."""
    lines = list(structural_diff(recorded[1], requested[1]))
    if recorded[0] != requested[0]:
        before, after = urlencode(recorded[0], safe="[]"), urlencode(requested[0], safe="[]")
        lines.append(f"query: {before!r} -> {after!r}")
    return lines


def _header_diff(
    recorded: dict[str, str], requested: dict[str, str], scrubber: Scrubber
) -> list[str]:
    """A line per keyed header (`anthropic-version`, ...) whose value differs."""

    def shown(value: str | None) -> str:
        return "(absent)" if value is None else repr(scrubber.text(value))

    return [
        f"header {name}: {shown(recorded.get(name))} -> {shown(requested.get(name))}"
        for name in sorted(recorded.keys() | requested.keys())
        if recorded.get(name) != requested.get(name)
    ]


_TURN_COUNTS: Final = re.compile(r"^\$\.(?:messages|input): (\d+) items? -> (\d+) items?$")


def _distance(differences: list[str]) -> int:
    """How far apart two requests are: one per difference, and a conversation that is longer or
    shorter counts each turn it gained or lost (a first turn is far from a third)."""
    distance = len(differences)
    for line in differences:
        lengths = _TURN_COUNTS.match(line)
        if lengths:
            distance += abs(int(lengths[1]) - int(lengths[2])) - 1
    return distance


def _items(count: int) -> str:
    return f"{count} item" if count == 1 else f"{count} items"


def _short(value: Any) -> str:
    import json

    if isinstance(value, str):
        return _window(value, 0)
    if isinstance(value, list):
        return f"[{_items(len(value))}]" if value else "[]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        name, first = next(iter(value.items()))
        return "{" + f'"{name}": {_scalar(first)}' + (", ...}" if len(value) > 1 else "}")
    return json.dumps(value)


def _scalar(value: Any) -> str:
    import json

    if isinstance(value, dict | list):
        return "{...}" if isinstance(value, dict) else "[...]"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= STRING_WINDOW + 2 else text[: STRING_WINDOW - 1] + '..."'


def _window(text: str, first_difference: int) -> str:
    import json

    if len(text) <= 2 * STRING_WINDOW:
        return json.dumps(text, ensure_ascii=False)
    start = max(0, first_difference - STRING_WINDOW // 2)
    end = min(len(text), start + STRING_WINDOW)
    snippet = json.dumps(text[start:end], ensure_ascii=False)[1:-1]
    return '"' + ("..." if start else "") + snippet + ("..." if end < len(text) else "") + '"'
