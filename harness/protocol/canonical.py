"""Canonical JSON: the one byte form used wherever `harness` hashes a JSON value."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """Return `value` as compact JSON with sorted keys, UTF-8 encoded.

    Equal values give equal bytes whatever their key order or original whitespace; this is a
    compatibility contract, since hashes of these bytes are stored in artifacts and cassettes.
    NaN and infinities are refused because they have no JSON spelling.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8", "backslashreplace")  # a lone surrogate as its JSON escape


def sha256_digest(data: bytes) -> str:
    """Return `"sha256:" + hex digest` of `data`."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_hash(value: Any) -> str:
    """Return the `sha256:` digest of the canonical JSON of `value`."""
    return sha256_digest(canonical_json(value))
