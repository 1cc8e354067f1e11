"""Hostile input to the scrubber: any input gives a result or a `HarnessError`, and a secret,
wherever it is put and however a stream splits it, is never in the result."""

from __future__ import annotations

import contextlib
import itertools
import json
import string
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from harness.cassettes.record import Recorder
from harness.errors import HarnessError
from harness.scrub import PLACEHOLDER, Scrubber, redact, secrets_sent
from harness.sse import parse_sse, render_sse

SECRETS = st.text(string.ascii_letters + string.digits, min_size=8, max_size=40).filter(
    lambda secret: secret not in PLACEHOLDER
)
"""Secrets of letters and digits: the placeholder's brackets can never be part of one."""

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=20,
)


@st.composite
def with_secret(draw: st.DrawFn, secret: str) -> Any:
    """A JSON value with `secret` inside one of its strings (a member name counts)."""
    holder = draw(st.text(max_size=10)) + secret + draw(st.text(max_size=10))
    value = draw(JSON_VALUES)
    return draw(
        st.sampled_from(
            [
                [value, holder],
                {"note": holder, "other": value},
                {holder: value},
                {"a": [{"b": holder}], "c": value},
            ]
        )
    )


def dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@given(JSON_VALUES, st.lists(SECRETS, max_size=2))
def test_any_json_value_scrubs_to_json(value: Any, secrets: list[str]) -> None:
    with contextlib.suppress(HarnessError):
        dumped(Scrubber().with_secrets(secrets).json(value))


@given(SECRETS.flatmap(lambda secret: st.tuples(st.just(secret), with_secret(secret))))
def test_a_secret_in_any_json_string_never_survives(case: tuple[str, Any]) -> None:
    secret, value = case
    assert secret not in dumped(Scrubber().with_secrets([secret]).json(value))


@st.composite
def split_streams(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A secret inside some text, cut into deltas at arbitrary points."""
    secret = draw(SECRETS)
    text = draw(st.text(max_size=20)) + secret + draw(st.text(max_size=20))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return secret, [text[start:end] for start, end in itertools.pairwise(bounds)]


@given(split_streams())
def test_a_secret_split_across_json_deltas_is_never_rebuilt(case: tuple[str, list[str]]) -> None:
    secret, pieces = case
    stream = "".join(
        f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': piece}}]})}\n\n"
        for piece in pieces
    )
    rendered = render_sse(Scrubber().with_secrets([secret]).events(parse_sse(stream)))
    deltas = "".join(
        json.loads(event.data or "")["choices"][0]["delta"]["content"]
        for event in parse_sse(rendered.decode())
    )
    assert secret not in deltas
    assert secret.encode() not in rendered


@given(split_streams())
def test_a_secret_split_across_raw_data_is_never_rebuilt(case: tuple[str, list[str]]) -> None:
    secret, pieces = case
    lines = ["".join(c for c in piece if c not in "\r\n") for piece in pieces]
    stream = "".join(f"data:{line}\n\n" for line in lines)
    rendered = render_sse(Scrubber().with_secrets([secret]).events(parse_sse(stream)))
    assert secret not in "".join(event.data or "" for event in parse_sse(rendered.decode()))


TEXT = st.text(max_size=200)


@given(TEXT, st.lists(st.text(max_size=20), max_size=3))
def test_any_text_in_any_position_scrubs_or_fails_typed(text: str, secrets: list[str]) -> None:
    scrubber = Scrubber().with_secrets(secrets)
    try:
        scrubber.text(text)
        scrubber.form(text)
        scrubber.body_text(text, "application/x-www-form-urlencoded")
        scrubber.path(text)
        scrubber.headers([(text, text)])
        scrubber.events(parse_sse(text))
        redact(text, secrets=secrets)
        secrets_sent([(text, text)], text, text.encode("utf-8", "surrogatepass"), text)
    except HarnessError:
        pass


@given(
    st.binary(max_size=200),
    st.sampled_from(["application/json", "text/event-stream", "text/plain", "", "image/png"]),
)
def test_any_response_body_records_or_fails_typed(content: bytes, content_type: str) -> None:
    request = httpx.Request(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        headers={"authorization": "Bearer live-key-123"},
        content=content,
    )
    try:
        Recorder().record_request(request)
        Recorder().record_response(request, 200, [("content-type", content_type)], content)
    except HarnessError:
        pass


FINITE_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=20,
)


def strings_scrubbed(value: Any, scrubber: Scrubber) -> Any:
    if isinstance(value, str):
        return scrubber.text(value)
    if isinstance(value, list):
        return [strings_scrubbed(item, scrubber) for item in value]
    if isinstance(value, dict):
        return {
            scrubber.text(name): strings_scrubbed(item, scrubber) for name, item in value.items()
        }
    return value


@given(
    SECRETS.flatmap(lambda secret: st.tuples(st.just(secret), with_secret(secret) | FINITE_JSON)),
    st.booleans(),
)
def test_json_text_scrubs_every_string_and_keeps_the_rest(
    case: tuple[str, Any], ascii_only: bool
) -> None:
    secret, value = case
    scrubber = Scrubber().with_secrets([secret])
    text = json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"))
    scrubbed = scrubber.json_text(text)
    assert json.loads(scrubbed) == strings_scrubbed(json.loads(text), scrubber)
    if not set(secret) <= set("0123456789+-.eE"):  # else it may be the digits of a number, kept
        assert secret not in scrubbed
    if secret not in text and scrubber.text(text) == text:
        assert scrubbed is text, "text holding no secret is kept as it is"
