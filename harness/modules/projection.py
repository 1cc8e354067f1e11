"""Bounded projection of tenant control state, as the Agent Decision module's contract requires.

At most 8 nested levels, 64 items per collection and 16,000 characters (UTF-16 code units, as in
Java) per text value. Cycles and excess depth become content-free omission markers; so do the
items past the 64th. The complete serialised state is capped at 600,000 characters: above that,
or when a value is not JSON-safe, `IllegalArgumentException` names the cause and the field, never
the content.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final

from pydantic import JsonValue

from harness.errors import IllegalArgumentException

MAX_DEPTH: Final = 8
MAX_ITEMS: Final = 64
MAX_TEXT_UNITS: Final = 16_000
MAX_STATE_CHARACTERS: Final = 600_000
OMITTED_KEY: Final = "$omitted"
_PLAIN_INT_BITS: Final = 2_000
"""Integers up to this many bits (about 600 digits) are written as text whatever the
interpreter's digit limit (4,300 by default, never below 640); longer ones are checked."""


def omission(reason: str, count: int | None = None) -> dict[str, JsonValue]:
    """A content-free marker: why something was left out, and how many items if relevant."""
    marker: dict[str, JsonValue] = {OMITTED_KEY: reason}
    if count is not None:
        marker["count"] = count
    return marker


def utf16_length(text: str) -> int:
    """The length of `text` in UTF-16 code units, i.e. Java's `String.length()`: what the
    contracts' character limits count."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def truncate_utf16(text: str, limit: int = MAX_TEXT_UNITS) -> str:
    """`text` cut to at most `limit` UTF-16 code units, never splitting a surrogate pair."""
    if len(text) <= limit // 2:
        return text
    units = 0
    for index, character in enumerate(text):
        units += 2 if ord(character) > 0xFFFF else 1
        if units > limit:
            return text[:index]
    return text


def project(value: object, field: str) -> JsonValue:
    """The bounded projection of `value`, the workflow-state field `field`.

    Raises `IllegalArgumentException` naming `field` and the offending type when a value is not
    JSON-safe (bytes, sets, NaN, non-string keys, arbitrary objects).
    """
    return _Projector(field).project(value, depth=1, ancestors=())


class _Projector:
    def __init__(self, field: str) -> None:
        self.field = field

    def project(self, value: object, *, depth: int, ancestors: tuple[int, ...]) -> JsonValue:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if value.bit_length() > _PLAIN_INT_BITS:
                self._check_writable(value)
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self._unserialisable("a non-finite number")
            return value
        if isinstance(value, str):
            return truncate_utf16(value)
        if isinstance(value, Mapping | list | tuple):
            if id(value) in ancestors:
                return omission("cycle")
            if depth > MAX_DEPTH:
                return omission("depth")
            inner = (*ancestors, id(value))
            if isinstance(value, Mapping):
                return self._mapping(value, depth, inner)
            return self._sequence(value, depth, inner)
        raise self._unserialisable(f"a value of type {type(value).__name__}")

    def _mapping(
        self, value: Mapping[Any, Any], depth: int, ancestors: tuple[int, ...]
    ) -> JsonValue:
        result: dict[str, JsonValue] = {}
        for position, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise self._unserialisable(f"a key of type {type(key).__name__}")
            if position == MAX_ITEMS:
                result[OMITTED_KEY] = "items"
                result["$omittedCount"] = len(value) - MAX_ITEMS
                break
            result[truncate_utf16(key)] = self.project(item, depth=depth + 1, ancestors=ancestors)
        return result

    def _sequence(
        self, value: list[Any] | tuple[Any, ...], depth: int, ancestors: tuple[int, ...]
    ) -> JsonValue:
        result: list[JsonValue] = [
            self.project(item, depth=depth + 1, ancestors=ancestors) for item in value[:MAX_ITEMS]
        ]
        if len(value) > MAX_ITEMS:
            result.append(omission("items", len(value) - MAX_ITEMS))
        return result

    def _check_writable(self, value: int) -> None:
        try:
            str(value)
        except ValueError:  # over the interpreter's digit limit (sys.set_int_max_str_digits)
            raise self._unserialisable(
                f"an integer of about {int(value.bit_length() * math.log10(2)):,} digits, too "
                "long to write as JSON text"
            ) from None

    def _unserialisable(self, what: str) -> IllegalArgumentException:
        return IllegalArgumentException(
            f"workflow state field {self.field} is not serialisable: it contains {what}; "
            "supply JSON-safe values (objects with string keys, arrays, strings, finite numbers, "
            "booleans, null)"
        )


def check_state_size(state: JsonValue) -> str:
    """The compact JSON of `state`, or `IllegalArgumentException` when above the 600,000 cap.

    Characters are UTF-16 code units, as for the 16,000 per text value: an astral character
    (an emoji) counts two.
    """
    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    length = utf16_length(text)
    if length > MAX_STATE_CHARACTERS:
        raise IllegalArgumentException(
            f"the serialised decision state has {length:,} characters, above the "
            f"{MAX_STATE_CHARACTERS:,}-character cap; reduce agentProjectContext, "
            "agentObservation or agentTask"
        )
    return text
