"""Hostile clients of `harness serve`: any method, path, headers and body, on the provider routes
and the control API, get an answer below 500, and the server logs no traceback.

One server per module (replay only, a recorded cassette in its folder); hypothesis drives raw
HTTP requests at it, written byte for byte.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.serve import ReplayServer
from tests.support.cassette_files import record_every_shape
from tests.support.serve_http import raw_request

ENDPOINTS = [
    "recorded/v1/chat/completions",
    "recorded/v1/messages",
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/messages",
    "/v1/embeddings",
    "",
]
PREFIXES = ["/c/", "/s/", "/_harness/", "/_harness/sessions/", "/"]
SESSION_KEYS = ["script", "provider", "cassette", "record_mode", "output_tool", "extra"]
PATH_TEXT = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="#?"),
    max_size=40,
)
HEADER_NAME = st.text(
    alphabet=st.characters(
        categories=["Ll", "Lu", "Nd"], max_codepoint=0x7F, include_characters="-_"
    ),
    min_size=1,
    max_size=20,
)
HEADER_VALUE = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=60)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(SESSION_KEYS) | st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
BODY = st.one_of(
    st.binary(max_size=200),
    JSON_VALUE.map(lambda value: json.dumps(value).encode()),
    st.dictionaries(st.sampled_from(SESSION_KEYS), JSON_VALUE, max_size=5).map(
        lambda value: json.dumps(value).encode()
    ),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplayServer]:
    folder: Path = tmp_path_factory.mktemp("serve-fuzz")
    record_every_shape(folder / "recorded.json")
    with ReplayServer(folder) as running:
        yield running


def assert_served(server: ReplayServer, caplog: pytest.LogCaptureFixture) -> None:
    assert not [record for record in caplog.records if record.exc_info], caplog.text
    assert "Traceback" not in caplog.text
    assert raw_request(server.url, "GET", "/_harness/health").status == 200


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]),
    prefix=st.sampled_from(PREFIXES),
    name=PATH_TEXT,
    endpoint=st.sampled_from(ENDPOINTS),
    headers=st.dictionaries(HEADER_NAME, HEADER_VALUE, max_size=5),
    body=BODY,
)
def test_any_request_gets_an_answer_below_500_and_no_traceback(
    server: ReplayServer,
    caplog: pytest.LogCaptureFixture,
    method: str,
    prefix: str,
    name: str,
    endpoint: str,
    headers: dict[str, str],
    body: bytes,
) -> None:
    headers = {
        key: value
        for key, value in headers.items()
        if key.lower() not in ("content-length", "transfer-encoding", "host", "expect")
    }
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        answer = raw_request(server.url, method, prefix + name + endpoint, body, headers)
        assert 200 <= answer.status < 500, (method, prefix + name + endpoint, answer.status)
        assert_served(server, caplog)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODY)
def test_any_session_body_opens_a_session_or_is_refused_with_a_message(
    server: ReplayServer, caplog: pytest.LogCaptureFixture, body: bytes
) -> None:
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        answer = raw_request(server.url, "POST", "/_harness/sessions", body)
        assert answer.status in (201, 400, 403, 404), answer.status
        if answer.status != 201:
            assert answer.json()["error"]["message"]
        assert_served(server, caplog)
