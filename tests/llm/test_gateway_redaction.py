"""The gateway's errors never carry the key it sent nor an environment `*_API_KEY` value.

Providers quote the key they refused ("Incorrect API key provided: ..."); the keys here have
shapes no known pattern matches, so only the exact-value rule can remove them.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
import respx

from harness.cassettes import PLACEHOLDER
from harness.errors import AgentDecisionCallException
from harness.llm.gateway import GatewayConfig, LlmGateway, parse_provider
from harness.llm.models import LlmRequest, UserMessage


def mocked() -> httpx.MockTransport:
    """respx's routes as the gateway's transport: an httpx 0.28 one, so the gateway runs on an
    httpx client (respx does not patch httpx2, the gateway's default)."""
    return httpx.MockTransport(respx.mock.handler)


KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # Azure-style: 32 hex digits, no known shape
GROQ_KEY = "gsk_" + "7c" * 20
OPENAI_URL = "https://api.openai.test/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.test/v1/messages"
REQUEST = LlmRequest(model="gpt-4o-mini", messages=(UserMessage(content="hi"),), max_tokens=16)


def openai_error(message: str, error_type: str = "invalid_request_error") -> httpx.Response:
    return httpx.Response(
        401, json={"error": {"message": message, "type": error_type, "code": "invalid_api_key"}}
    )


def anthropic_error(message: str) -> httpx.Response:
    return httpx.Response(
        401,
        json={"type": "error", "error": {"type": "authentication_error", "message": message}},
    )


def anthropic_stream_error(message: str) -> httpx.Response:
    data = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
    stream = f"event: error\ndata: {json.dumps(data)}\n\n"
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=stream.encode()
    )


Case = tuple[str, str, Callable[[str], httpx.Response], bool]
CASES: list[Case] = [
    (
        "openai",
        OPENAI_URL,
        lambda leak: openai_error(f"Incorrect API key provided: {leak}."),
        False,
    ),
    ("openai", OPENAI_URL, lambda leak: openai_error("refused", error_type=leak), False),
    ("anthropic", ANTHROPIC_URL, lambda leak: anthropic_error(f"invalid x-api-key {leak}"), False),
    ("anthropic", ANTHROPIC_URL, lambda leak: anthropic_stream_error(f"key {leak}"), True),
]


@pytest.mark.parametrize("leak", [KEY, GROQ_KEY], ids=["the key sent", "GROQ_API_KEY"])
@pytest.mark.parametrize(
    ("provider", "url", "answer", "stream"),
    CASES,
    ids=["openai message", "openai error type", "anthropic message", "anthropic stream"],
)
@respx.mock
def test_errors_never_quote_a_key(
    monkeypatch: pytest.MonkeyPatch,
    leak: str,
    provider: str,
    url: str,
    answer: Callable[[str], httpx.Response],
    stream: bool,
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", GROQ_KEY)
    respx.post(url).mock(return_value=answer(leak))
    base_url = url.removesuffix("/v1/chat/completions").removesuffix("/v1/messages")
    config = GatewayConfig(provider=parse_provider(provider), base_url=base_url, api_key=KEY)
    request = REQUEST.model_copy(update={"stream": stream})
    with (
        LlmGateway(config, transport=mocked()) as gateway,
        pytest.raises(AgentDecisionCallException) as caught,
    ):
        gateway.complete(request)
    error = caught.value
    assert leak not in str(error)
    assert leak not in (error.error_type or "")
    assert PLACEHOLDER in str(error) + (error.error_type or "")
    assert error.provider == provider


@respx.mock
def test_redaction_keeps_the_rest_of_the_message_and_the_error_fields() -> None:
    respx.post(OPENAI_URL).mock(return_value=openai_error(f"Incorrect API key provided: {KEY}."))
    config = GatewayConfig(provider="openai", base_url="https://api.openai.test", api_key=KEY)
    with (
        LlmGateway(config, transport=mocked()) as gateway,
        pytest.raises(AgentDecisionCallException) as caught,
    ):
        gateway.complete(REQUEST)
    assert caught.value.status == 401
    assert caught.value.error_type == "invalid_request_error"
    assert f"Incorrect API key provided: {PLACEHOLDER}." in str(caught.value)
