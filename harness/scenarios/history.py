"""The conversation a request carries, as `expect.forced_history` reads it.

Each message is read into a view of the fields a `forced_history` item can give (its role, a
`[completion]` message's attempt, a reply's text and calls, a tool result's name, result and
error flag), from the neutral request alone: the reference's own, or one read back from a
target's wire request, so both are checked the same way. A `[completion]` message is known by its
text (it opens with `[completion]`; its `(attempt N of M)` gives the attempt), never by metadata,
which no provider request carries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from harness.agent.prompt import COMPLETION_PREFIX
from harness.json_body import canonical_numbers, parse_json_body
from harness.llm.models import AssistantMessage, Message, ToolResultMessage, UserMessage

ATTEMPT: Final = re.compile(r"\(attempt (\d+) of (\d+)\)")
"""The attempt and the budget a `[completion]` message names."""


def message_view(message: Message) -> dict[str, Any]:
    """One message as the items of `forced_history` read it."""
    if isinstance(message, UserMessage):
        if not message.content.startswith(COMPLETION_PREFIX):
            return {"role": "user", "text": message.content}
        view: dict[str, Any] = {"role": "completion"}
        attempt = ATTEMPT.search(message.content)
        if attempt is not None:
            view |= {"attempt": int(attempt[1]), "max_attempts": int(attempt[2])}
        return view
    if isinstance(message, AssistantMessage):
        return {
            "role": "assistant",
            "text": message.text or None,
            "tool_calls": [
                {"name": call.name, "arguments": json_or_text(call.arguments)}
                for call in message.tool_calls
            ],
        }
    assert isinstance(message, ToolResultMessage)
    return {
        "role": "tool",
        "name": message.name,
        "result": json_or_text(message.content),
        "is_error": message.is_error,
    }


def json_or_text(text: str) -> Any:
    """`text` read as a JSON value, numbers by value (`0.0` is `0`); text that is not JSON (cut-off
    arguments, prose) as it is."""
    parsed, value = parse_json_body(text, numbers=canonical_numbers)
    return value if parsed else text


def forced_part(messages: Sequence[Message], length: int) -> list[dict[str, Any]]:
    """The views of a request's last `length` messages, or, when a `[completion]` message comes
    before them, of every message from the first `[completion]` one: the part of the
    conversation a `forced_history` entry of `length` items is compared with."""
    views = [message_view(message) for message in messages]
    start = max(0, len(views) - length)
    first = next((index for index, view in enumerate(views) if view["role"] == "completion"), start)
    return views[min(start, first) :]


def first_difference(wanted: dict[str, Any], view: dict[str, Any]) -> tuple[str, Any] | None:
    """The first field `wanted` (an item's fields) gives that `view` does not match, with what
    the view has there (`ABSENT_FIELD` when it has no such field); None when all match."""
    for field, expected in wanted.items():
        actual = view.get(field, ABSENT_FIELD)
        if field == "tool_calls":
            if not _calls_match(expected, actual):
                return field, actual
        elif field == "result":
            if not json_subset(expected, actual):
                return field, actual
        elif not json_equal(expected, actual):
            return field, actual
    return None


class _AbsentField:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT_FIELD: Final = _AbsentField()


def _calls_match(expected: list[dict[str, Any]], actual: Any) -> bool:
    if not isinstance(actual, list) or len(actual) != len(expected):
        return False
    return all(
        call["name"] == made["name"]
        and ("arguments" not in call or json_equal(call["arguments"], made["arguments"]))
        for call, made in zip(expected, actual, strict=True)
    )


def json_equal(expected: Any, actual: Any) -> bool:
    """Equal JSON values: numbers by value, but `true` is not `1`."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(json_equal(value, actual[key]) for key, value in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(json_equal(a, b) for a, b in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def json_subset(expected: Any, actual: Any) -> bool:
    """`expected` matches `actual` when every member it gives matches (recursively); lists and
    everything else exactly, as `json_equal`."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return all(
            key in actual and json_subset(value, actual[key]) for key, value in expected.items()
        )
    return json_equal(expected, actual)


def outline(fields: dict[str, Any]) -> str:
    """A message (a view, or the fields of an item) in a few words, as a mismatch lists a
    conversation: its role, a `[completion]` message's attempt, the calls a reply makes, the tool
    a result answers; never a text or a result (the model's words, the tool's data)."""
    role = fields["role"]
    if role == "completion" and "attempt" in fields:
        return f"completion (attempt {fields['attempt']} of {fields.get('max_attempts', '?')})"
    if role == "assistant" and fields.get("tool_calls"):
        return "assistant calling " + ", ".join(call["name"] for call in fields["tool_calls"])
    if role == "tool" and fields.get("name"):
        return f"tool result of {fields['name']}"
    return str(role)
