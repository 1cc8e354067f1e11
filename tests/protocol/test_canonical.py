"""Canonical JSON (RFC 8785): the bytes a hash is taken of are the ones JavaScript writes."""

from __future__ import annotations

import base64
import json
import math
import random
import shutil
import struct
import subprocess
from typing import Any

import pytest

from harness.protocol import canonical_json

# What a JavaScript runtime hashes: JSON.parse, then JSON.stringify with every object's keys
# sorted (JavaScript compares strings by UTF-16 code units, as RFC 8785 sorts them).
NODE_CANONICAL = r"""
const sorted = (value) =>
  value && typeof value === "object" && !Array.isArray(value)
    ? Object.fromEntries(Object.keys(value).sort().map((key) => [key, sorted(value[key])]))
    : Array.isArray(value) ? value.map(sorted) : value;
let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  for (const line of input.split("\n").filter(Boolean)) {
    process.stdout.write(Buffer.from(JSON.stringify(sorted(JSON.parse(line)))).toString("base64") + "\n");
  }
});
"""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 0.0, "a": 1.0}, b'{"a":1,"b":0}'),
        (
            [1e-7, 1.5e-5, 0.000001, 123.456, 1e21, -0.0],
            b"[1e-7,0.000015,0.000001,123.456,1e+21,0]",
        ),
        (
            [2**53 + 2, 12345678901234567890, 2**53 - 1],
            b"[9007199254740994,12345678901234567000,9007199254740991]",
        ),
        ({"\U0001f600": 1, "\uffff": 2, "a": 3}, '{"a":3,"\U0001f600":1,"\uffff":2}'.encode()),
        (
            ["x\ud800", "\u2028", "\x1f", 'q"\\'],
            b'["x\\ud800","\xe2\x80\xa8","\\u001f","q\\"\\\\"]',
        ),
        ({"t": True, "f": False, "n": None}, b'{"f":false,"n":null,"t":true}'),
    ],
    ids=[
        "integral-floats",
        "small-and-large-floats",
        "integers-beyond-2^53",
        "utf16-key-order",
        "strings",
        "literals",
    ],
)
def test_numbers_keys_and_strings_are_written_as_rfc_8785_says(value: Any, expected: bytes) -> None:
    assert canonical_json(value) == expected


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400])
def test_a_number_without_a_json_spelling_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="no JSON spelling"):
        canonical_json({"a": [value]})


@pytest.mark.parametrize("value", [{1: "a"}, {"a": {1, 2}}, b"bytes"])
def test_a_value_that_is_not_json_is_refused(value: object) -> None:
    with pytest.raises(TypeError):
        canonical_json(value)


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice(
            [0, -1, 2**53 - 1, 2**53 + 1, -(2**63), 10**20, 10**22, rng.randrange(-1000, 1000)]
        )
    if kind in (2, 3):  # any finite double, from its bits, and the simple ones
        double = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if not math.isfinite(double):
            double = 0.5
        return rng.choice(
            [double, float(rng.randrange(-100, 100)), rng.random() * 10 ** rng.randrange(-9, 25)]
        )
    if kind in (4, 5):
        alphabet = 'aZ é\n"\\\u2028\u00a0😀\U0001f9e0\uffff\x01'
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if kind in (6, 7):
        keys = ["a", "B", "é", "😀", "\uffff", "aa", ""]
        return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]


@pytest.mark.subprocess
def test_python_and_javascript_write_the_same_bytes_for_the_same_json() -> None:
    """500 JSON documents (doubles of any bit pattern, integers beyond 2^53, astral and
    surrogate-ordered keys, escapes) read by JavaScript and written back with sorted keys give
    the bytes `canonical_json` gives for the same document read by Python."""
    node = shutil.which("node")
    assert node is not None, "Node.js is installed by the repository's setup"
    rng = random.Random(8785)
    documents = [json.dumps(_value(rng)) for _ in range(500)]
    written = subprocess.run(
        [node, "-e", NODE_CANONICAL],
        input="\n".join(documents) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    for document, javascript in zip(documents, written, strict=True):
        assert canonical_json(json.loads(document)) == base64.b64decode(javascript), document
