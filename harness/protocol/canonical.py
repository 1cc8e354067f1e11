"""Canonical JSON: the one byte form used wherever `harness` hashes a JSON value (an artifact's
`hash`, a knowledge-base page's), so that a runtime in another language computes the same hash.

It is the JSON Canonicalization Scheme (RFC 8785), which is what sorting an object's keys and
calling JavaScript's `JSON.stringify` gives: no white space, object keys sorted by their UTF-16
code units, numbers written as JavaScript writes them (`1.0` -> `1`, `1e-7`, `0.000015`), strings
as they are but for the characters JSON must escape. An integer beyond 2^53 is written as the
double JavaScript reads it as, and a lone surrogate as its JSON escape (`\\ud800`), as
`JSON.stringify` writes it.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Final

import rfc8785

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer a double (JavaScript's `Number`) holds exactly."""


def canonical_json(value: Any) -> bytes:
    """Return `value` as RFC 8785 canonical JSON, UTF-8 encoded.

    Equal values give equal bytes whatever their key order, original white space or number
    spelling (`1`, `1.0`), in Python as in JavaScript; this is a compatibility contract, since
    hashes of these bytes are stored in artifacts. NaN and infinities are refused with a
    `ValueError` (they have no JSON spelling), keys that are not strings and values that are not
    JSON with a `TypeError`.
    """
    return _text(value).encode("utf-8", "backslashreplace")  # a lone surrogate as its escape


def _text(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        if abs(value) <= MAX_SAFE_INTEGER:
            return str(int(value))
        try:
            return _number(float(value))
        except OverflowError:
            raise ValueError("an integer beyond the largest double has no JSON spelling") from None
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_text(item) for item in value) + "]"
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
        ordered = sorted(value, key=lambda key: key.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(f"{_text(key)}:{_text(value[key])}" for key in ordered) + "}"
    raise TypeError(f"a value of type {type(value).__name__} is not JSON")


def _number(value: float) -> str:
    """A double as JavaScript's `Number.prototype.toString` writes it (RFC 8785 section 3.2.2.3)."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} has no JSON spelling")
    return rfc8785.dumps(float(value)).decode("ascii")


def sha256_digest(data: bytes) -> str:
    """Return `"sha256:" + hex digest` of `data`."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_hash(value: Any) -> str:
    """Return the `sha256:` digest of the canonical JSON of `value`."""
    return sha256_digest(canonical_json(value))
