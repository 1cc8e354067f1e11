"""The canonical request key: a compatibility contract, pinned by golden values."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cassettes import canonical_request_key
from harness.cassettes.key import VolatileFieldError, canonical_request_bytes, remove_pointers

OPENAI_BODY = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Hello"}],
    "tool_choice": "auto",
}
ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "Hello"}],
}
OPENAI_URL = "https://api.openai.com/v1/chat/completions"


def key(body: Any, url: str = OPENAI_URL, headers: dict[str, str] | None = None) -> str:
    return canonical_request_key("POST", url, headers or {}, json.dumps(body))


def test_golden_openai_key() -> None:
    headers = {"authorization": "Bearer x", "content-type": "application/json"}
    assert (
        canonical_request_key("POST", OPENAI_URL, headers, json.dumps(OPENAI_BODY))
        == "sha256:48457ba230db32a61a09a6c0d07de402f2cfce92402f92a5b9905ac11496bebb"
    )


def test_golden_anthropic_key() -> None:
    assert (
        canonical_request_key(
            "POST",
            "https://api.anthropic.com/v1/messages?beta=true",
            {"x-api-key": "k", "anthropic-version": "2023-06-01"},
            json.dumps(ANTHROPIC_BODY),
        )
        == "sha256:fe0d57ddae7c03f8d94e7cbdea09bfa55d2e97fca7ee07681eea137dfeef20c9"
    )


def test_golden_bodyless_key() -> None:
    assert (
        canonical_request_key("GET", "https://example.com/v1/models?b=2&a=1", {}, None)
        == "sha256:772aa8889da367faee6c3717dc4c7782d52cde10f1223cb8b848dd7dfcf8fd7d"
    )


def test_the_key_hashes_the_documented_canonical_bytes() -> None:
    raw = canonical_request_bytes(
        "post",
        "https://api.anthropic.com/v1/messages?beta=true&a=1",
        {"Anthropic-Version": "2023-06-01", "X-Api-Key": "secret"},
        b'{"model": "m", "max_tokens": 5}',
    )
    assert raw == (
        b'{"body":{"max_tokens":5,"model":"m"},"headers":{"anthropic-version":"2023-06-01"},'
        b'"method":"POST","path":"/v1/messages","query":[["a","1"],["beta","true"]]}'
    )
    key_of_raw = canonical_request_key(
        "post",
        "https://api.anthropic.com/v1/messages?beta=true&a=1",
        {"Anthropic-Version": "2023-06-01", "X-Api-Key": "secret"},
        b'{"model": "m", "max_tokens": 5}',
    )
    assert key_of_raw == "sha256:" + hashlib.sha256(raw).hexdigest()


def test_scheme_host_and_port_are_not_part_of_the_key() -> None:
    assert key(OPENAI_BODY) == key(OPENAI_BODY, "http://127.0.0.1:8080/v1/chat/completions")


def test_query_order_does_not_matter_but_values_do() -> None:
    assert key({}, OPENAI_URL + "?a=1&b=2") == key({}, OPENAI_URL + "?b=2&a=1")
    assert key({}, OPENAI_URL + "?a=1") != key({}, OPENAI_URL + "?a=2")


def test_credential_query_parameters_and_headers_are_not_keyed() -> None:
    plain = key(OPENAI_BODY)
    assert key(OPENAI_BODY, OPENAI_URL + "?key=secret&api_key=x") == plain
    assert key(OPENAI_BODY, headers={"authorization": "Bearer a", "x-api-key": "b"}) == plain
    assert key(OPENAI_BODY, headers={"user-agent": "sdk/1.2"}) == plain


@pytest.mark.parametrize("header", ["anthropic-version", "anthropic-beta", "openai-beta"])
def test_behaviour_changing_headers_are_keyed(header: str) -> None:
    assert key(OPENAI_BODY, headers={header: "a"}) != key(OPENAI_BODY, headers={header: "b"})
    assert key(OPENAI_BODY, headers={header.upper(): "a"}) == key(
        OPENAI_BODY, headers={header: "a"}
    )


def test_default_volatile_fields_per_provider() -> None:
    assert key({**OPENAI_BODY, "user": "u-1"}) == key({**OPENAI_BODY, "user": "u-2"})
    anthropic = "https://api.anthropic.com/v1/messages"
    with_user = {**ANTHROPIC_BODY, "metadata": {"user_id": "a"}}
    assert key(with_user, anthropic) == key({**ANTHROPIC_BODY, "metadata": {}}, anthropic)
    # `user` is volatile for OpenAI only
    assert key({**ANTHROPIC_BODY, "user": "a"}, anthropic) != key(ANTHROPIC_BODY, anthropic)


def test_user_volatile_fields_are_json_pointers() -> None:
    a = {**OPENAI_BODY, "messages": [{"role": "user", "content": "Hi", "ts": 1}]}
    b = {**OPENAI_BODY, "messages": [{"role": "user", "content": "Hi", "ts": 2}]}
    assert key(a) != key(b)
    volatile = ["/messages/*/ts"]
    first = canonical_request_key("POST", OPENAI_URL, {}, json.dumps(a), volatile=volatile)
    second = canonical_request_key("POST", OPENAI_URL, {}, json.dumps(b), volatile=volatile)
    assert first == second


def test_remove_pointers_shares_untouched_parts_and_escapes() -> None:
    value = {"a/b": 1, "t~": 2, "keep": {"deep": [1, 2]}, "list": [{"x": 1}, {"x": 2}]}
    result = remove_pointers(value, ["/a~1b", "/t~0", "/list/0", "/missing/x"])
    assert result == {"keep": {"deep": [1, 2]}, "list": [{"x": 2}]}
    assert result["keep"] is value["keep"]
    assert value["a/b"] == 1, "the input is not modified"


@pytest.mark.parametrize("pointer", ["", "messages"])
def test_invalid_pointers_are_refused(pointer: str) -> None:
    with pytest.raises(VolatileFieldError, match="JSON pointer"):
        canonical_request_key("POST", OPENAI_URL, {}, b"{}", volatile=[pointer])


def test_non_json_bodies_use_their_bytes() -> None:
    assert canonical_request_key("POST", OPENAI_URL, {}, b"a=1") != canonical_request_key(
        "POST", OPENAI_URL, {}, b"a=2"
    )
    binary = canonical_request_bytes("POST", OPENAI_URL, {}, b"\xff\x00")
    assert b'"body_base64":"/wA="' in binary
    assert b'"body_text":"a=1"' in canonical_request_bytes("POST", OPENAI_URL, {}, "a=1")


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
json_objects = st.recursive(
    st.dictionaries(st.text(max_size=6), json_scalars, max_size=4),
    lambda children: st.dictionaries(
        st.text(max_size=6), children | st.lists(children, max_size=3), max_size=4
    ),
    max_leaves=15,
)


@given(json_objects, st.integers(min_value=0, max_value=4), st.randoms())
def test_keys_ignore_key_order_and_whitespace(
    body: dict[str, Any], indent: int, random: Any
) -> None:
    items = list(body.items())
    random.shuffle(items)
    reordered = json.dumps(dict(items), indent=indent)
    assert key(body) == canonical_request_key("POST", OPENAI_URL, {}, reordered)


@given(json_objects, st.text(min_size=1, max_size=6), json_scalars)
def test_keys_differ_when_a_non_volatile_field_differs(
    body: dict[str, Any], name: str, value: Any
) -> None:
    changed = {**body, "_changed_" + name: value}
    assert key(body) != key(changed)
