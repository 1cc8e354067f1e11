"""Rendering details: message shapes, optional parameters, key order, and the dispatch."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from harness.errors import IllegalArgumentException
from harness.llm import anthropic, openai
from harness.llm.adapters import adapter_for
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmToolCall,
    NamedToolChoice,
    ReasoningEffort,
    ResponseFormat,
    SystemFragment,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

Provider = Literal["openai", "anthropic"]

WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CONVERSATION = LlmRequest(
    model="gpt-4o",
    system=(
        SystemFragment(name="base", text="You are terse."),
        SystemFragment(name="skills_catalog", text=""),
        SystemFragment(name="workspace", text="Workspace: /tmp"),
    ),
    messages=(
        UserMessage(content="Weather in Paris and Rome?", metadata={"turn": 1}),
        AssistantMessage(
            text="Checking both.",
            tool_calls=(
                LlmToolCall(id="call_1", name="get_weather", arguments='{"city":"Paris"}'),
                LlmToolCall(id="call_2", name="get_weather", arguments='{"city": "Rome"}'),
            ),
        ),
        ToolResultMessage(tool_call_id="call_1", name="get_weather", content="sunny"),
        ToolResultMessage(
            tool_call_id="call_2", name="get_weather", content="unavailable", is_error=True
        ),
        UserMessage(content="And tomorrow?"),
        AssistantMessage(
            tool_calls=(LlmToolCall(id="call_3", name="get_weather", arguments=""),),
            metadata={"note": "never sent"},
        ),
        ToolResultMessage(tool_call_id="call_3", name="get_weather", content="rain"),
        AssistantMessage(text="Rain tomorrow."),
    ),
    tools=(WEATHER,),
)


def test_openai_renders_a_conversation_message_by_message() -> None:
    assert openai.render_request(CONVERSATION)["messages"] == [
        {"role": "system", "content": "You are terse.\n\nWorkspace: /tmp"},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "unavailable"},
        {"role": "user", "content": "And tomorrow?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "rain"},
        {"role": "assistant", "content": "Rain tomorrow."},
    ]


def test_anthropic_merges_consecutive_user_content_into_one_user_message() -> None:
    rendered = anthropic.render_request(CONVERSATION)

    assert rendered["system"] == "You are terse.\n\nWorkspace: /tmp"
    assert rendered["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "call_2",
                    "name": "get_weather",
                    "input": {"city": "Rome"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "unavailable",
                    "is_error": True,
                },
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_3", "name": "get_weather", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_3", "content": "rain"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Rain tomorrow."}]},
    ]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_metadata_never_reaches_the_wire(provider: Provider) -> None:
    text = json.dumps(adapter_for(provider).render_request(CONVERSATION))

    assert "never sent" not in text
    assert "turn" not in text
    assert "metadata" not in text
    assert "skills_catalog" not in text


@pytest.mark.parametrize("arguments", ['{"city": "Par', "[1, 2]", '"Paris"'])
def test_anthropic_refuses_tool_call_arguments_that_are_not_an_object(arguments: str) -> None:
    request = LlmRequest(
        model="claude-sonnet-4-5",
        messages=(
            AssistantMessage(
                tool_calls=(LlmToolCall(id="call_9", name="get_weather", arguments=arguments),)
            ),
        ),
    )

    with pytest.raises(IllegalArgumentException) as raised:
        anthropic.render_request(request)

    assert "messages[0].tool_calls[0]" in str(raised.value)
    assert "call_9" in str(raised.value)
    assert arguments not in str(raised.value)


def test_an_empty_system_prompt_is_left_out() -> None:
    request = LlmRequest(
        model="gpt-4o",
        system=(SystemFragment(name="base", text=""),),
        messages=(UserMessage(content="hi"),),
    )

    assert openai.render_request(request)["messages"] == [{"role": "user", "content": "hi"}]
    assert "system" not in anthropic.render_request(request)


def test_the_minimal_request_sends_only_what_each_provider_requires() -> None:
    request = LlmRequest(model="m", messages=(UserMessage(content="hi"),))

    assert openai.render_request(request) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert anthropic.render_request(request) == {
        "model": "m",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }


FULL = LlmRequest(
    model="gpt-4o",
    system=(SystemFragment(name="base", text="Be brief."),),
    messages=(UserMessage(content="hi"),),
    tools=(WEATHER,),
    tool_choice=NamedToolChoice(name="get_weather"),
    max_tokens=12_000,
    temperature=0.2,
    top_p=0.9,
    stop_sequences=("END", "STOP"),
    reasoning=ReasoningEffort(effort="medium"),
    response_format=ResponseFormat(name="WeatherReport", schema_={"type": "object"}),
    stream=True,
)


def test_openai_renders_every_parameter_in_a_fixed_order() -> None:
    rendered = openai.render_request(FULL)

    assert list(rendered) == [
        "model",
        "messages",
        "tools",
        "tool_choice",
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "reasoning_effort",
        "response_format",
        "stream",
        "stream_options",
    ]
    assert rendered["stop"] == ["END", "STOP"]
    assert rendered["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "WeatherReport", "schema": {"type": "object"}, "strict": True},
    }
    assert rendered["stream_options"] == {"include_usage": True}


def test_anthropic_renders_every_parameter_in_a_fixed_order_without_response_format() -> None:
    rendered = anthropic.render_request(FULL)

    assert list(rendered) == [
        "model",
        "max_tokens",
        "system",
        "messages",
        "tools",
        "tool_choice",
        "thinking",
        "temperature",
        "top_p",
        "stop_sequences",
        "stream",
    ]
    assert rendered["stop_sequences"] == ["END", "STOP"]
    assert rendered["stream"] is True
    assert "WeatherReport" not in json.dumps(rendered)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_equal_requests_render_to_identical_bytes(provider: Provider) -> None:
    rebuilt = LlmRequest.model_validate_json(FULL.model_dump_json(by_alias=True))
    adapter = adapter_for(provider)

    assert rebuilt == FULL
    assert json.dumps(adapter.render_request(rebuilt)) == json.dumps(adapter.render_request(FULL))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_changing_the_rendered_body_leaves_the_request_alone(provider: Provider) -> None:
    rendered = adapter_for(provider).render_request(FULL)
    tools = rendered["tools"]
    assert isinstance(tools, list)
    tool = tools[0]
    assert isinstance(tool, dict)
    wrapper = tool["function"] if provider == "openai" else tool
    assert isinstance(wrapper, dict)
    schema = wrapper["parameters" if provider == "openai" else "input_schema"]
    assert isinstance(schema, dict)
    schema["type"] = "changed"

    assert FULL.tools[0].parameters["type"] == "object"


@pytest.mark.parametrize(
    ("model", "parameter"),
    [
        ("gpt-4o", "max_tokens"),
        ("gpt-4.1-mini", "max_tokens"),
        ("o1", "max_completion_tokens"),
        ("o3-mini", "max_completion_tokens"),
        ("o4-mini-2025-04-16", "max_completion_tokens"),
        ("gpt-5", "max_completion_tokens"),
        ("gpt-5-mini", "max_completion_tokens"),
    ],
)
def test_openai_reasoning_models_get_max_completion_tokens(model: str, parameter: str) -> None:
    rendered = openai.render_request(LlmRequest(model=model, max_tokens=500))

    assert rendered[parameter] == 500
    assert {"max_tokens", "max_completion_tokens"} & set(rendered) == {parameter}


def test_paths_and_headers() -> None:
    request = LlmRequest(model="m")

    assert openai.request_path(request) == "/v1/chat/completions"
    assert anthropic.request_path(request) == "/v1/messages"
    assert openai.request_headers() == {}
    assert anthropic.request_headers() == {"anthropic-version": "2023-06-01"}


def test_adapter_for_dispatches_and_refuses_other_names() -> None:
    assert adapter_for("openai") is openai
    assert adapter_for("anthropic") is anthropic

    with pytest.raises(
        IllegalArgumentException, match=r"openai, anthropic, gemini.*provider='mistral'"
    ):
        adapter_for("mistral")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("effort", "max_tokens", "budget"),
    [
        ("medium", 12_000, 8_192),
        ("high", 5_000, 4_999),
        ("high", None, 16_384),
        ("low", 1_025, 1_024),
    ],
)
def test_anthropic_fits_the_default_thinking_budget_below_max_tokens(
    effort: Literal["low", "medium", "high"], max_tokens: int | None, budget: int
) -> None:
    request = FULL.model_copy(
        update={"reasoning": ReasoningEffort(effort=effort), "max_tokens": max_tokens}
    )
    rendered = anthropic.render_request(request)
    assert rendered["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert rendered["max_tokens"] == (max_tokens or 4_096 + budget)


@pytest.mark.parametrize(
    "reasoning",
    [ReasoningEffort(effort="minimal"), ReasoningEffort(effort="high", budget_tokens=6_000)],
)
def test_anthropic_refuses_a_thinking_budget_that_cannot_fit(reasoning: ReasoningEffort) -> None:
    request = FULL.model_copy(
        update={
            "reasoning": reasoning,
            "max_tokens": 1_024 if reasoning.effort == "minimal" else 6_000,
        }
    )
    with pytest.raises(IllegalArgumentException, match="must be below max_tokens"):
        anthropic.render_request(request)
