"""The adapters against every real OpenAI and Anthropic recording in the pydantic-ai corpus.

Expected values come from the recorded JSON and SSE text through the small walkers in this file,
written for reading, not from the adapters. Skipped: the `/v1/responses` and `count_tokens`
interactions (other endpoints). Requests are checked too: each recorded request that the neutral
`LlmRequest` can express is rebuilt as one and rendered back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx_sse
import pytest

from harness.errors import AgentDecisionCallException, ToolChoiceUnsupportedError
from harness.llm.adapters import ServerSentEventLike, adapter_for
from harness.llm.models import (
    LlmRequest,
    LlmResponse,
    NamedToolChoice,
    ToolDefinition,
    UserMessage,
)
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, ToolUse
from harness.sse import parse_sse
from tests.support.corpus import (
    ALL,
    ERRORS,
    EXPRESSIBLE,
    JSON_REPLIES,
    RECORDINGS,
    STREAMS,
    Provider,
    Recorded,
    normalized,
)

pytestmark = pytest.mark.skipif(
    not RECORDINGS.is_dir(),
    reason=f"the recorded corpus is not at {RECORDINGS} (set HARNESS_CORPUS_DIR)",
)

# The recorded words and what they mean; a new word in the corpus fails loudly here.
OPENAI_STOPS: dict[str, AnyStopKind] = {
    "stop": EndTurn(),
    "tool_calls": ToolUse(),
    "length": LimitReached(),
}
ANTHROPIC_STOPS: dict[str, AnyStopKind] = {"end_turn": EndTurn(), "tool_use": ToolUse()}


def _ids(cases: list[Recorded]) -> list[str]:
    return [case.name for case in cases]


@dataclass(frozen=True, kw_only=True)
class Expected:
    text: str
    tool_calls: list[tuple[str, str, str]]
    stop_reason: str
    usage: tuple[int, int, int]
    error_type: str | None = None


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _anthropic_input_tokens(usage: dict[str, Any]) -> int:
    return int(
        usage["input_tokens"]
        + (usage.get("cache_creation_input_tokens") or 0)
        + (usage.get("cache_read_input_tokens") or 0)
    )


def expected_openai_json(body: dict[str, Any]) -> Expected:
    choice = body["choices"][0]
    message = choice["message"]
    usage = body.get("usage") or {}
    return Expected(
        text=message.get("content") or "",
        tool_calls=[
            (call["id"], call["function"]["name"], call["function"]["arguments"])
            for call in message.get("tool_calls") or []
        ],
        stop_reason=choice["finish_reason"],
        usage=(usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]),
    )


def expected_anthropic_json(body: dict[str, Any]) -> Expected:
    blocks = body["content"]
    usage = body["usage"]
    input_tokens = _anthropic_input_tokens(usage)
    return Expected(
        text="".join(block["text"] for block in blocks if block["type"] == "text"),
        tool_calls=[
            (block["id"], block["name"], _compact(block["input"]))
            for block in blocks
            if block["type"] == "tool_use"
        ],
        stop_reason=body["stop_reason"],
        usage=(input_tokens, usage["output_tokens"], input_tokens + usage["output_tokens"]),
    )


def _data_lines(stream_text: str) -> Iterator[tuple[str | None, str]]:
    """(event name, data) per SSE block; comment-only blocks yield nothing."""
    for block in stream_text.split("\n\n"):
        name = None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                yield name, line.removeprefix("data: ")


def expected_openai_stream(stream_text: str) -> Expected:
    text = ""
    calls: dict[int, list[str]] = {}
    stop_reason = ""
    usage = (0, 0, 0)
    for _, data in _data_lines(stream_text):
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        if chunk.get("error"):
            error = chunk["error"]
            return Expected(
                text="",
                tool_calls=[],
                stop_reason="",
                usage=usage,
                error_type=str(error.get("type") or error["code"]),
            )
        for choice in chunk["choices"]:
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            for fragment in delta.get("tool_calls") or []:
                call = calls.setdefault(fragment["index"], ["", "", ""])
                call[0] = call[0] or fragment.get("id") or ""
                call[1] = call[1] or fragment.get("function", {}).get("name") or ""
                call[2] += fragment.get("function", {}).get("arguments") or ""
            stop_reason = choice.get("finish_reason") or stop_reason
        if chunk.get("usage"):
            recorded = chunk["usage"]
            usage = (
                recorded["prompt_tokens"],
                recorded["completion_tokens"],
                recorded["total_tokens"],
            )
    return Expected(
        text=text,
        tool_calls=[(call[0], call[1], call[2]) for _, call in sorted(calls.items())],
        stop_reason=stop_reason,
        usage=usage,
    )


def expected_anthropic_stream(stream_text: str) -> Expected:
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    stop_reason = ""
    for name, data in _data_lines(stream_text):
        event = json.loads(data)
        assert event["type"] == name
        if name == "message_start":
            usage.update(event["message"]["usage"])
        elif name == "content_block_start":
            blocks[event["index"]] = {**event["content_block"], "json": ""}
        elif name == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                block["json"] += delta["partial_json"]
        elif name == "message_delta":
            stop_reason = event["delta"]["stop_reason"]
            usage.update({k: v for k, v in event["usage"].items() if v is not None})
    ordered = [blocks[index] for index in sorted(blocks)]
    input_tokens = _anthropic_input_tokens(usage)
    return Expected(
        text="".join(block["text"] for block in ordered if block["type"] == "text"),
        tool_calls=[
            (block["id"], block["name"], _compact(json.loads(block["json"] or "{}")))
            for block in ordered
            if block["type"] == "tool_use"
        ],
        stop_reason=stop_reason,
        usage=(input_tokens, usage["output_tokens"], input_tokens + usage["output_tokens"]),
    )


def assert_matches(response: LlmResponse, expected: Expected, provider: Provider) -> None:
    stops = OPENAI_STOPS if provider == "openai" else ANTHROPIC_STOPS
    assert expected.stop_reason in stops, f"add {expected.stop_reason!r} to the stop table"
    assert response.text == expected.text
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == expected.tool_calls
    assert response.stop == stops[expected.stop_reason]
    assert response.provider_stop_reason == expected.stop_reason
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == expected.usage
    for call in response.tool_calls:
        assert isinstance(call.parsed_arguments(), dict)


def test_the_corpus_has_every_kind_of_interaction() -> None:
    kinds = {(case.provider, case.stream_text is not None) for case in JSON_REPLIES + STREAMS}
    assert kinds == {("openai", False), ("openai", True), ("anthropic", False), ("anthropic", True)}
    assert {case.provider for case in ERRORS} == {"openai", "anthropic"}
    assert len(JSON_REPLIES) >= 60
    assert len(STREAMS) >= 15


@pytest.mark.parametrize("case", JSON_REPLIES, ids=_ids(JSON_REPLIES))
def test_a_recorded_json_reply_parses_to_what_it_says(case: Recorded) -> None:
    if case.provider == "openai":
        expected = expected_openai_json(case.json_body)
    else:
        expected = expected_anthropic_json(case.json_body)

    response = adapter_for(case.provider).parse_response(case.json_body)

    assert_matches(response, expected, case.provider)
    assert response.model == case.json_body["model"]
    assert response.raw == case.json_body


def _events(stream_text: str, source: str) -> list[ServerSentEventLike]:
    events = parse_sse(stream_text)
    if source == "harness":
        return list(events)
    return [httpx_sse.ServerSentEvent(event=e.event, data=e.data) for e in events]


@pytest.mark.parametrize("source", ["harness", "httpx_sse"])
@pytest.mark.parametrize("case", STREAMS, ids=_ids(STREAMS))
def test_a_recorded_stream_parses_to_what_it_says(case: Recorded, source: str) -> None:
    assert case.stream_text is not None
    if case.provider == "openai":
        expected = expected_openai_stream(case.stream_text)
    else:
        expected = expected_anthropic_stream(case.stream_text)
    adapter = adapter_for(case.provider)

    if expected.error_type is not None:
        with pytest.raises(AgentDecisionCallException) as raised:
            adapter.parse_stream(_events(case.stream_text, source))
        assert raised.value.error_type == expected.error_type
        assert raised.value.provider == case.provider
        return
    response = adapter.parse_stream(_events(case.stream_text, source))

    assert_matches(response, expected, case.provider)
    assert isinstance(response.raw, list)
    assert response.raw


def test_the_openrouter_in_band_error_is_in_the_corpus() -> None:
    errors = [
        case
        for case in STREAMS
        if case.provider == "openai"
        and case.stream_text is not None
        and expected_openai_stream(case.stream_text).error_type
    ]
    assert [case.name for case in errors] == ["test_openrouter_stream_error#0"]


@pytest.mark.parametrize("as_text", [False, True], ids=["json", "text"])
@pytest.mark.parametrize("case", ERRORS, ids=_ids(ERRORS))
def test_a_recorded_error_answer_keeps_its_type_and_status(case: Recorded, as_text: bool) -> None:
    body = case.json_body
    payload = json.dumps(body) if as_text else body

    error = adapter_for(case.provider).parse_error(case.status, payload)

    assert type(error) is AgentDecisionCallException
    assert not isinstance(error, ToolChoiceUnsupportedError)
    assert error.status == case.status
    assert error.error_type == body["error"]["type"]
    assert error.provider == case.provider
    assert str(case.status) in str(error)
    # Groq echoes the model's rejected output in `failed_generation`: never in the message.
    if "failed_generation" in body["error"]:
        assert body["error"]["failed_generation"] not in str(error)
        assert "foo" not in str(error).split(":", 1)[0]


# --- requests -------------------------------------------------------------------------------


def test_most_recorded_requests_are_expressible() -> None:
    assert len(EXPRESSIBLE) >= 60
    assert {case.provider for case, _ in EXPRESSIBLE} == {"openai", "anthropic"}


@pytest.mark.parametrize(("case", "request_"), EXPRESSIBLE, ids=[c.name for c, _ in EXPRESSIBLE])
def test_a_recorded_request_renders_back_from_its_neutral_form(
    case: Recorded, request_: LlmRequest
) -> None:
    rendered = adapter_for(case.provider).render_request(request_)

    if case.provider == "openai" and request_.stream:
        # The recorded SDKs ask for the final usage chunk as the adapter does.
        assert case.request_body.get("stream_options") == {"include_usage": True}
    assert rendered == normalized(case.request_body, case.provider)


# --- the tool-choice matrix, built by hand ----------------------------------------------------

PARIS = UserMessage(content="What's the weather in Paris?")
CITY_SCHEMA: dict[str, Any] = {
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "type": "object",
}
TIMEZONE_SCHEMA: dict[str, Any] = {
    "properties": {"timezone": {"type": "string"}},
    "required": ["timezone"],
    "type": "object",
}


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    return {"additionalProperties": False, **schema}


def _recorded(name: str) -> Recorded:
    [case] = [case for case in ALL if case.name == name]
    return case


MATRIX: list[tuple[str, Provider, LlmRequest]] = [
    (
        "test_tool_choice_matrix[list_single-openai]#0",
        "openai",
        LlmRequest(
            model="gpt-5-mini",
            messages=(PARIS,),
            tools=(
                ToolDefinition(
                    name="get_weather",
                    description="Get weather for a city",
                    parameters=_strict(CITY_SCHEMA),
                ),
                ToolDefinition(
                    name="get_time",
                    description="Get time in a timezone",
                    parameters=_strict(TIMEZONE_SCHEMA),
                ),
            ),
            tool_choice=NamedToolChoice(name="get_weather"),
        ),
    ),
    (
        "test_tool_choice_matrix[none-openai]#0",
        "openai",
        LlmRequest(
            model="gpt-5-mini",
            messages=(PARIS,),
            tools=(
                ToolDefinition(
                    name="get_weather",
                    description="Get the current weather for a city.",
                    parameters=_strict(CITY_SCHEMA),
                ),
            ),
            tool_choice="none",
        ),
    ),
    (
        "test_tool_choice_matrix[list_single-anthropic]#0",
        "anthropic",
        LlmRequest(
            model="claude-sonnet-4-5",
            messages=(PARIS,),
            tools=(
                ToolDefinition(
                    name="get_weather", description="Get weather for a city", parameters=CITY_SCHEMA
                ),
                ToolDefinition(
                    name="get_time",
                    description="Get time in a timezone",
                    parameters=TIMEZONE_SCHEMA,
                ),
            ),
            tool_choice=NamedToolChoice(name="get_weather"),
        ),
    ),
    (
        "test_tool_choice_matrix[required-anthropic]#0",
        "anthropic",
        LlmRequest(
            model="claude-sonnet-4-5",
            messages=(PARIS,),
            tools=(
                ToolDefinition(
                    name="get_weather", description="Get weather for a city", parameters=CITY_SCHEMA
                ),
            ),
            tool_choice="required",
        ),
    ),
]


@pytest.mark.parametrize(("name", "provider", "request_"), MATRIX, ids=[m[0] for m in MATRIX])
def test_the_tool_choice_matrix_requests_render_as_recorded(
    name: str, provider: Provider, request_: LlmRequest
) -> None:
    recorded = _recorded(name).request_body

    rendered = adapter_for(provider).render_request(request_)

    assert rendered["tool_choice"] == recorded["tool_choice"]
    assert rendered["messages"] == recorded["messages"]
    assert rendered["model"] == recorded["model"]
    assert rendered["tools"] == normalized(recorded, provider)["tools"]
    if provider == "anthropic":
        assert rendered["max_tokens"] == recorded["max_tokens"] == 4096
