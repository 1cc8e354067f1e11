"""The LLM gateway: one request per call, typed failures that never leak, config from env."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from harness.errors import AgentDecisionCallException, ToolChoiceUnsupportedError
from harness.llm.gateway import GatewayConfig, GatewayConfigError, LlmGateway, parse_provider
from harness.llm.models import (
    LlmRequest,
    NamedToolChoice,
    ReasoningEffort,
    ToolDefinition,
    UserMessage,
)
from harness.protocol.outcome import EndTurn, LimitReached, ToolUse


def mocked() -> httpx.MockTransport:
    """respx's routes as the gateway's transport: an httpx 0.28 one, so the gateway runs on an
    httpx client (respx does not patch httpx2, the gateway's default)."""
    return httpx.MockTransport(respx.mock.handler)


KEY = "sk-proj-GATEWAYCANARY000000000000"
BODY_CANARY = "confidential-envelope-7731"
OPENAI = GatewayConfig(provider="openai", base_url="https://api.openai.test", api_key=KEY)
ANTHROPIC = GatewayConfig(provider="anthropic", base_url="https://api.anthropic.test", api_key=KEY)
REQUEST = LlmRequest(
    model="gpt-4o-mini", messages=(UserMessage(content=f"state: {BODY_CANARY}"),), max_tokens=64
)


def completion(**message: object) -> dict[str, object]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, **message},
                "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 28, "total_tokens": 128},
    }


@respx.mock
def test_openai_call_sends_exactly_the_rendered_request_once() -> None:
    route = respx.post("https://api.openai.test/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=completion(content="hello"))
    )
    with LlmGateway(OPENAI, transport=mocked()) as gateway:
        response = gateway.complete(REQUEST)
    assert route.call_count == 1
    sent = route.calls.last.request
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(sent.content) == gateway.adapter.render_request(REQUEST)
    assert (
        sent.content
        == json.dumps(
            gateway.adapter.render_request(REQUEST), ensure_ascii=False, separators=(",", ":")
        ).encode()
    )
    assert response.text == "hello"
    assert isinstance(response.stop, EndTurn)
    assert response.usage.total_tokens == 128


@respx.mock
def test_anthropic_call_uses_its_key_header_and_version() -> None:
    route = respx.post("https://api.anthropic.test/v1/messages").mock(
        return_value=httpx.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "partial"}],
                "stop_reason": "max_tokens",
                "usage": {"input_tokens": 10, "output_tokens": 64},
            },
        )
    )
    with LlmGateway(ANTHROPIC, transport=mocked()) as gateway:
        response = gateway.complete(REQUEST.model_copy(update={"model": "claude-sonnet-4-5"}))
    sent = route.calls.last.request
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert isinstance(response.stop, LimitReached)


@respx.mock
@pytest.mark.parametrize(
    ("status", "payload", "error_type"),
    [
        (429, {"error": {"type": "rate_limit_error", "message": "slow down"}}, "rate_limit_error"),
        (500, {"error": {"type": "server_error", "message": f"echo {KEY}"}}, "server_error"),
        (401, {"error": {"type": "invalid_request_error", "code": "invalid_api_key"}}, None),
    ],
)
def test_non_2xx_answers_raise_typed_without_credentials_or_body(
    status: int, payload: dict[str, object], error_type: str | None
) -> None:
    respx.post("https://api.openai.test/v1/chat/completions").mock(
        return_value=httpx.Response(status, json=payload)
    )
    with (
        LlmGateway(OPENAI, transport=mocked()) as gateway,
        pytest.raises(AgentDecisionCallException) as caught,
    ):
        gateway.complete(REQUEST)
    error = caught.value
    assert error.status == status
    if error_type is not None:
        assert error.error_type == error_type
    assert error.provider == "openai"
    assert KEY not in str(error)
    assert BODY_CANARY not in str(error)


@respx.mock
def test_a_non_json_success_body_is_a_call_failure() -> None:
    respx.post("https://api.openai.test/v1/chat/completions").mock(
        return_value=httpx.Response(200, text="<html>proxy</html>")
    )
    with (
        LlmGateway(OPENAI, transport=mocked()) as gateway,
        pytest.raises(AgentDecisionCallException) as caught,
    ):
        gateway.complete(REQUEST)
    assert caught.value.error_type == "invalid_response"


@respx.mock
def test_timeouts_and_transport_failures_are_call_failures() -> None:
    route = respx.post("https://api.openai.test/v1/chat/completions")
    route.side_effect = httpx.ReadTimeout("slow")
    with (
        LlmGateway(OPENAI, transport=mocked()) as gateway,
        pytest.raises(AgentDecisionCallException) as caught,
    ):
        gateway.complete(REQUEST)
    assert caught.value.error_type == "timeout"
    assert caught.value.status is None
    route.side_effect = httpx.ConnectError("refused")
    with (
        LlmGateway(OPENAI, transport=mocked()) as gateway,
        pytest.raises(AgentDecisionCallException) as caught,
    ):
        gateway.complete(REQUEST)
    assert caught.value.error_type == "transport"


def test_a_body_httpx_cannot_decode_is_a_call_failure() -> None:
    def corrupt_gzip(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-encoding": "gzip"}, content=b"not gzip")

    transport = httpx.MockTransport(corrupt_gzip)
    with (
        LlmGateway(OPENAI, transport=transport) as gateway,
        pytest.raises(AgentDecisionCallException) as caught,
    ):
        gateway.complete(REQUEST)
    assert caught.value.error_type == "transport"
    assert "DecodingError" in str(caught.value)
    assert BODY_CANARY not in str(caught.value)


@respx.mock
def test_streamed_replies_accumulate_text_and_tool_arguments() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "lookup", "arguments": '{"q":'},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"x"}'}}]},
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}},
    ]
    stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    respx.post("https://api.openai.test/v1/chat/completions").mock(
        return_value=httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=stream.encode()
        )
    )
    request = REQUEST.model_copy(update={"stream": True, "tools": (ToolDefinition(name="lookup"),)})
    with LlmGateway(OPENAI, transport=mocked()) as gateway:
        response = gateway.complete(request)
    assert isinstance(response.stop, ToolUse)
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_1", "lookup", '{"q":"x"}')
    ]
    assert response.usage.total_tokens == 8


@respx.mock
def test_streamed_errors_are_call_failures() -> None:
    respx.post("https://api.openai.test/v1/chat/completions").mock(
        return_value=httpx.Response(503, json={"error": {"type": "overloaded"}})
    )
    with (
        LlmGateway(OPENAI, transport=mocked()) as gateway,
        pytest.raises(AgentDecisionCallException) as caught,
    ):
        gateway.complete(REQUEST.model_copy(update={"stream": True}))
    assert caught.value.status == 503


@respx.mock
def test_anthropic_refuses_a_forced_tool_with_thinking_before_any_request() -> None:
    route = respx.post("https://api.anthropic.test/v1/messages")
    forced = LlmRequest(
        model="claude-sonnet-4-5",
        messages=(UserMessage(content="x"),),
        tools=(ToolDefinition(name="__finish__"),),
        tool_choice=NamedToolChoice(name="__finish__"),
        reasoning=ReasoningEffort(effort="low"),
    )
    with (
        LlmGateway(ANTHROPIC, transport=mocked()) as gateway,
        pytest.raises(ToolChoiceUnsupportedError),
    ):
        gateway.complete(forced)
    assert route.call_count == 0


@respx.mock
def test_retrieval_receipts_in_the_reply_reach_the_response_metadata() -> None:
    receipts = {"receipts": [{"receiptId": "r-1", "policyId": "p-1", "decision": "allow"}]}
    respx.post("https://api.openai.test/v1/chat/completions").mock(
        return_value=httpx.Response(200, json={**completion(content="ok"), "retrieval": receipts})
    )
    with LlmGateway(OPENAI, transport=mocked()) as gateway:
        assert gateway.complete(REQUEST).metadata["retrieval"] == receipts


def test_configuration_comes_from_the_environment_only() -> None:
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1/"}
    config = GatewayConfig.from_environment("openai", env)
    assert config.base_url == "http://127.0.0.1:9"
    assert config.require_api_key() == KEY
    assert KEY not in repr(config)
    anthropic = GatewayConfig.from_environment("anthropic", {})
    assert anthropic.base_url == "https://api.anthropic.com"
    with pytest.raises(GatewayConfigError, match="set ANTHROPIC_API_KEY"):
        anthropic.require_api_key()
    with pytest.raises(GatewayConfigError, match="expected one of openai, anthropic, gemini"):
        parse_provider("mistral")
