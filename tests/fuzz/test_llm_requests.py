"""Hostile request bodies: `parse_request` of either adapter gives a neutral request or a
`HarnessError`, for any JSON value and for a real body with any one field replaced."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from harness.errors import HarnessError
from harness.llm.adapters import adapter_for
from harness.llm.models import LlmRequest
from tests.support.llm_requests import Provider, llm_requests

PROVIDERS: st.SearchStrategy[Provider] = st.sampled_from(["openai", "anthropic"])
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
FIELD_NAMES = st.sampled_from(
    [
        "model",
        "messages",
        "role",
        "content",
        "type",
        "text",
        "tool_calls",
        "function",
        "name",
        "arguments",
        "tool_call_id",
        "tool_use_id",
        "input",
        "tools",
        "parameters",
        "input_schema",
        "tool_choice",
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "thinking",
        "budget_tokens",
        "reasoning_effort",
        "response_format",
        "json_schema",
        "schema",
        "stream",
        "system",
        "instructions",
        "call_id",
        "output",
    ]
)


def parses_or_fails_typed(provider: Provider, body: JsonValue) -> None:
    with contextlib.suppress(HarnessError):
        assert isinstance(adapter_for(provider).parse_request(body), LlmRequest)


def replaced(value: Any, path: list[int], new: JsonValue) -> Any:
    """`value` with the node that `path` picks (each step an index into the keys or items of the
    node reached so far) replaced by `new`."""
    if not path or not isinstance(value, dict | list) or not value:
        return new
    step, rest = path[0], path[1:]
    if isinstance(value, dict):
        key = list(value)[step % len(value)]
        return {**value, key: replaced(value[key], rest, new)}
    index = step % len(value)
    return [*value[:index], replaced(value[index], rest, new), *value[index + 1 :]]


@given(PROVIDERS, JSON_VALUES)
def test_any_json_value_parses_or_fails_typed(provider: Provider, body: JsonValue) -> None:
    parses_or_fails_typed(provider, body)


@given(
    PROVIDERS,
    JSON_VALUES,
    st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=6),
)
def test_any_known_field_with_any_value_parses_or_fails_typed(
    provider: Provider, nested: JsonValue, fields: dict[str, JsonValue]
) -> None:
    parses_or_fails_typed(provider, {**fields, "messages": [fields, nested]})
    parses_or_fails_typed(provider, {"model": "m", "input": [fields], **fields})


@given(
    PROVIDERS.flatmap(lambda provider: st.tuples(st.just(provider), llm_requests(provider))),
    st.lists(st.integers(0, 20), max_size=6),
    JSON_VALUES,
)
def test_a_real_body_with_one_node_replaced_parses_or_fails_typed(
    case: tuple[Provider, LlmRequest], path: list[int], new: JsonValue
) -> None:
    provider, request = case
    try:
        body = adapter_for(provider).render_request(request)
    except HarnessError:
        return  # a request the provider cannot take; tests/llm covers the refusal
    parses_or_fails_typed(provider, replaced(body, path, new))
