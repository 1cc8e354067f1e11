"""The bounded projection of control state, fuzzed over nested values with cycles."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from harness.errors import IllegalArgumentException
from harness.modules.projection import (
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_STATE_CHARACTERS,
    MAX_TEXT_UNITS,
    OMITTED_KEY,
    check_state_size,
    project,
    truncate_utf16,
    utf16_length,
)

CANARY = "canary-4f2b"

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.just(CANARY * 5000),  # 55,000 units: above the text bound
)
json_like = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=70)
        | st.dictionaries(st.text(max_size=5), children, max_size=70)
    ),
    max_leaves=200,
)


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def walk(value: Any) -> list[Any]:
    found = [value]
    if isinstance(value, dict):
        for item in value.values():
            found.extend(walk(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(walk(item))
    return found


def check_bounds(projected: Any) -> None:
    json.dumps(projected)  # JSON-safe, no cycle left
    assert depth_of(projected) <= MAX_DEPTH + 1  # markers sit one level below the limit
    for node in walk(projected):
        if isinstance(node, str):
            assert utf16_length(node) <= MAX_TEXT_UNITS
        if isinstance(node, list):
            assert len(node) <= MAX_ITEMS + 1
        if isinstance(node, dict):
            assert len(node) <= MAX_ITEMS + 2
            if OMITTED_KEY in node and set(node) <= {OMITTED_KEY, "count"}:
                assert node[OMITTED_KEY] in {"cycle", "depth", "items"}
                assert all(isinstance(v, str | int) for v in node.values())


@given(json_like)
def test_bounds_always_hold(value: Any) -> None:
    check_bounds(project(value, "agentObservation"))


@given(json_like, st.integers(min_value=0, max_value=5), st.data())
def test_cycles_become_content_free_markers(value: Any, depth: int, data: st.DataObject) -> None:
    root: dict[str, Any] = {"payload": value}
    node = root
    for level in range(depth):
        child: dict[str, Any] = {"level": level}
        node["child"] = child
        node = child
    node["loop"] = data.draw(st.sampled_from([root, node]))
    projected = project(root, "agentProjectContext")
    check_bounds(projected)
    markers = [n for n in walk(projected) if isinstance(n, dict) and OMITTED_KEY in n]
    assert any(m[OMITTED_KEY] in {"cycle", "depth"} for m in markers)


@given(st.integers(min_value=MAX_DEPTH + 1, max_value=40))
def test_excess_depth_is_replaced_by_a_marker(levels: int) -> None:
    value: Any = CANARY
    for _ in range(levels):
        value = [value]
    projected = project(value, "agentTask")
    assert depth_of(projected) == MAX_DEPTH + 1
    assert CANARY not in json.dumps(projected)
    assert {OMITTED_KEY: "depth"} in walk(projected)


def test_collections_keep_64_items_and_count_the_rest() -> None:
    projected = project(list(range(100)), "agentArtifactRefs")
    assert isinstance(projected, list)
    assert projected[:MAX_ITEMS] == list(range(MAX_ITEMS))
    assert projected[-1] == {OMITTED_KEY: "items", "count": 36}
    mapping = project({f"k{i}": i for i in range(70)}, "agentProjectContext")
    assert isinstance(mapping, dict)
    assert mapping[OMITTED_KEY] == "items"
    assert mapping["$omittedCount"] == 6


def test_text_is_cut_in_utf16_units_without_splitting_a_pair() -> None:
    astral = "\U0001f600"
    assert truncate_utf16(astral * 8_001) == astral * 8_000
    assert truncate_utf16("a" + astral * 8_000) == "a" + astral * 7_999
    assert truncate_utf16("short") == "short"


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ({"a": b"bytes"}, "type bytes"),
        ({"a": {1, 2}}, "type set"),
        ({1: "int key"}, "key of type int"),
        ([float("nan")], "non-finite number"),
        ({"a": object()}, "type object"),
        ({"n": [10**5_000]}, "integer of about 5,000 digits"),
    ],
)
def test_values_that_are_not_json_safe_are_named_not_echoed(value: Any, what: str) -> None:
    with pytest.raises(IllegalArgumentException, match=what) as caught:
        project(value, "agentObservation")
    assert "agentObservation" in str(caught.value)


def test_long_integers_project_while_they_can_be_written() -> None:
    assert project([10**700], "agentObservation") == [10**700]
    limit = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(640)  # the lowest the interpreter allows
        with pytest.raises(IllegalArgumentException, match="integer of about 700 digits"):
            project([10**700], "agentObservation")
    finally:
        sys.set_int_max_str_digits(limit)


@given(st.text(min_size=1, max_size=3))
def test_the_state_cap_names_the_cause_without_the_state(fill: str) -> None:
    observation: list[JsonValue] = [fill * (MAX_TEXT_UNITS // 3)] * 60
    state: dict[str, JsonValue] = {"observation": observation, "canary": CANARY}
    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    if utf16_length(text) <= MAX_STATE_CHARACTERS:
        assert check_state_size(state)
        return
    with pytest.raises(IllegalArgumentException, match="600,000-character cap") as caught:
        check_state_size(state)
    assert CANARY not in str(caught.value)


def test_the_state_cap_counts_java_characters() -> None:
    emoji = "\U0001f600" * (MAX_TEXT_UNITS // 2)  # 16,000 UTF-16 units: not truncated
    state: dict[str, JsonValue] = {"observation": [emoji] * 38}
    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    assert len(text) < MAX_STATE_CHARACTERS < utf16_length(text)
    with pytest.raises(IllegalArgumentException, match="has 608,131 characters"):
        check_state_size(state)
