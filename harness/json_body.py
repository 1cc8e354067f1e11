"""Reading an HTTP body as JSON, bounded in depth, so that no reader of a hostile body (nor the
recursive JSON libraries behind it) comes near Python's recursion limit."""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any, Final

MAX_BODY_DEPTH: Final = 252
"""The deepest a JSON body may nest and still be read as JSON. Real LLM traffic nests a few dozen
levels; a deeper body is keyed, scrubbed and stored as text, so no reader (nor the recursive JSON
libraries behind it) comes near Python's recursion limit."""


def parse_json_body(body: bytes | str | None) -> tuple[bool, Any]:
    """`(True, value)` when `body` is a JSON document, else `(False, None)`.

    Not JSON here, so kept as text: a body nested deeper than `MAX_BODY_DEPTH`, and one holding
    `NaN` or `Infinity` (Python's parser accepts them; JSON and a cassette file cannot hold them).
    """
    if not body:
        return False, None
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if (
        raw.count(b"[") + raw.count(b"{") > MAX_BODY_DEPTH
        and json_nesting_depth(raw) > MAX_BODY_DEPTH
    ):
        return False, None
    try:
        return True, strict_json(body)
    except (ValueError, UnicodeDecodeError):
        return False, None


def strict_json(text: str | bytes) -> Any:
    """`text` decoded as JSON as RFC 8259 defines it.

    Raises `ValueError` (`json.JSONDecodeError` for a syntax error) for what Python's parser
    accepts beyond JSON: `NaN`, `Infinity` and `-Infinity`, and a number too large for a 64-bit
    float, which it reads as infinity. None of them can be written back as JSON.
    """
    return json.loads(text, parse_constant=_not_a_json_number, parse_float=_finite_float)


def _not_a_json_number(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} is too large for a 64-bit float")
    return value


_JSON_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET_STEPS: Final = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in _BRACKET_STEPS)


def json_nesting_depth(raw: bytes) -> int:
    """The deepest bracket nesting of JSON text outside its strings, found without recursion.

    The standard library parser recurses once per level, so this runs before it does. On text
    that is not JSON it still bounds how deep a JSON parser could recurse into it.
    """
    skeleton = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_BRACKET_STEPS.__getitem__, skeleton)), default=0)
