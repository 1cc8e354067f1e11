"""Reading request bodies back into neutral requests: `parse_request` of both adapters.

The round trip is checked two ways for generated requests: what comes back is the request minus
the documented losses (`tests/support/llm_requests.py`), and rendering what comes back gives the
same body again. Real bodies come from the pydantic-ai corpus and from the official SDKs.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import httpx2
import pytest
from hypothesis import assume, given
from pydantic import JsonValue

from harness.errors import IllegalArgumentException
from harness.llm import anthropic, openai
from harness.llm._wire import RequestReader
from harness.llm.adapters import FRAGMENT_WIRE, RequestFormatError, adapter_for
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmToolCall,
    NamedToolChoice,
    ReasoningDisabled,
    ReasoningEffort,
    ResponseFormat,
    SystemFragment,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from harness.llm.script import ScriptedReply, ScriptTransport
from tests.support.corpus import ALL, EXPRESSIBLE, RECORDINGS, Recorded, normalized
from tests.support.llm_requests import Provider, after_round_trip, llm_requests

CANARY = "canary-2f9c-confidential"


def rendered(request: LlmRequest, provider: Provider) -> dict[str, Any]:
    """The request's body; Anthropic refuses a thinking budget that does not fit below
    `max_tokens`, and such requests are not part of the round trip."""
    try:
        return adapter_for(provider).render_request(request)
    except IllegalArgumentException:
        assume(False)
        raise


# -- the round trip ------------------------------------------------------------------------------


@given(llm_requests("openai"))
def test_openai_reads_back_what_it_rendered(request: LlmRequest) -> None:
    body = rendered(request, "openai")
    assert openai.parse_request(body) == after_round_trip(request, "openai")
    assert openai.render_request(openai.parse_request(body)) == body


@given(llm_requests("anthropic"))
def test_anthropic_reads_back_what_it_rendered(request: LlmRequest) -> None:
    body = rendered(request, "anthropic")
    assert anthropic.parse_request(body) == after_round_trip(request, "anthropic")
    assert anthropic.render_request(anthropic.parse_request(body)) == body


def test_the_system_prompt_comes_back_as_one_wire_fragment() -> None:
    request = LlmRequest(
        model="gpt-4o-mini",
        system=(
            SystemFragment(name="base", text="You find capitals."),
            SystemFragment(name="workspace", text="Workspace at /work."),
        ),
    )
    for provider in ("openai", "anthropic"):
        parsed = adapter_for(provider).parse_request(adapter_for(provider).render_request(request))
        assert parsed.system == (
            SystemFragment(name=FRAGMENT_WIRE, text="You find capitals.\n\nWorkspace at /work."),
        )
        assert parsed.fragment_names() == ("wire",)


# -- what each adapter reads -------------------------------------------------------------------


@pytest.mark.parametrize("legacy", ["functions", "function_call"])
def test_openai_refuses_the_legacy_function_calling_api_by_name(legacy: str) -> None:
    body: dict[str, JsonValue] = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Weather?"}],
        "functions": [{"name": "get_weather", "parameters": {"type": "object"}}],
        "function_call": "auto",
    }
    if legacy == "function_call":
        del body["functions"]
    with pytest.raises(RequestFormatError, match=f"`{legacy}` is the deprecated"):
        openai.parse_request(body)


def test_openai_reads_every_field_of_a_chat_body() -> None:
    body: dict[str, Any] = {
        "model": "gpt-4.1",
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Capital "},
                    {"type": "text", "text": "of France?"},
                    {"type": "image_url", "image_url": {"url": "https://x"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q":'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "Paris"}]},
            {"role": "system", "content": "Answer now."},
        ],
        "tools": [
            {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},
            {"type": "custom", "custom": {"name": "grammar"}},
            {"type": "function", "function": {"name": "lookup"}},
        ],
        "tool_choice": "required",
        "max_completion_tokens": 300,
        "max_tokens": 5,
        "temperature": 1,
        "top_p": 0.5,
        "stop": "END",
        "reasoning_effort": "none",
        "response_format": {"type": "json_object"},
        "stream": True,
        "stream_options": {"include_usage": True},
        "n": 1,
        "seed": 7,
        "parallel_tool_calls": False,
        "some_future_parameter": {"x": 1},
    }
    assert openai.parse_request(body) == LlmRequest(
        model="gpt-4.1",
        system=(SystemFragment(name=FRAGMENT_WIRE, text="Be brief.\n\nAnswer now."),),
        messages=(
            UserMessage(content="Capital of France?"),
            AssistantMessage(tool_calls=(LlmToolCall(id="c1", name="search", arguments='{"q":'),)),
            ToolResultMessage(tool_call_id="c1", name="search", content="Paris"),
        ),
        tools=(
            ToolDefinition(name="search", parameters={"type": "object"}),
            ToolDefinition(name="lookup", parameters={"type": "object", "properties": {}}),
        ),
        tool_choice="required",
        max_tokens=300,
        temperature=1.0,
        top_p=0.5,
        stop_sequences=("END",),
        reasoning=ReasoningDisabled(),
        stream=True,
    )


def test_openai_reads_a_responses_body() -> None:
    body: dict[str, Any] = {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": [
            {"role": "developer", "content": "Answer in English."},
            {"role": "user", "content": [{"type": "input_text", "text": "Capital of France?"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Let me look."}],
            },
            {"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "Paris"},
            {"type": "function_call", "call_id": "c3", "name": "final_answer", "arguments": "{"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "final_answer",
                "description": "Answer.",
                "parameters": {"type": "object"},
            },
            {"type": "web_search"},
        ],
        "tool_choice": {"type": "function", "name": "final_answer"},
        "max_output_tokens": 200,
        "reasoning": {"effort": "low", "summary": "auto"},
        "text": {
            "format": {
                "type": "json_schema",
                "name": "answer",
                "schema": {"type": "object"},
                "strict": True,
            }
        },
        "store": False,
    }
    parsed = openai.parse_request(body)
    assert parsed.system_text() == "Be brief.\n\nAnswer in English."
    assert parsed.messages == (
        UserMessage(content="Capital of France?"),
        AssistantMessage(
            text="Let me look.",
            tool_calls=(
                LlmToolCall(id="c1", name="search", arguments="{}"),
                LlmToolCall(id="c2", name="lookup", arguments="{}"),
            ),
        ),
        ToolResultMessage(tool_call_id="c2", name="lookup", content="Paris"),
        AssistantMessage(tool_calls=(LlmToolCall(id="c3", name="final_answer", arguments="{"),)),
    )
    assert parsed.tool_names() == ("final_answer",)
    assert parsed.tool_choice == NamedToolChoice(name="final_answer")
    assert parsed.max_tokens == 200
    assert parsed.reasoning == ReasoningEffort(effort="low")
    assert parsed.response_format == ResponseFormat(name="answer", schema_={"type": "object"})
    assert openai.parse_request({"model": "gpt-5", "input": "Hi"}).messages == (
        UserMessage(content="Hi"),
    )


def test_anthropic_reads_every_field_of_a_messages_body() -> None:
    thinking: dict[str, JsonValue] = {"type": "thinking", "thinking": "Hm.", "signature": "sig"}
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 9000,
        "system": [
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Answer in English."},
        ],
        "messages": [
            {"role": "user", "content": "Capital of France?"},
            {
                "role": "assistant",
                "content": [
                    thinking,
                    {"type": "text", "text": "Let me "},
                    {"type": "text", "text": "look."},
                    {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "France"}},
                    {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "Paris"}],
                        "is_error": True,
                    },
                    {"type": "image", "source": {"type": "url", "url": "https://x"}},
                    {"type": "text", "text": "Go on."},
                ],
            },
        ],
        "tools": [
            {"name": "search", "description": "Search.", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 5000},
        "temperature": 1,
        "stop_sequences": ["END"],
        "stream": True,
        "metadata": {"user_id": "u1"},
        "top_k": 5,
    }
    assert anthropic.parse_request(body) == LlmRequest(
        model="claude-sonnet-4-5",
        system=(SystemFragment(name=FRAGMENT_WIRE, text="Be brief.\n\nAnswer in English."),),
        messages=(
            UserMessage(content="Capital of France?"),
            AssistantMessage(
                text="Let me look.",
                tool_calls=(LlmToolCall(id="t1", name="search", arguments='{"q":"France"}'),),
                reasoning_blocks=(thinking,),
            ),
            ToolResultMessage(tool_call_id="t1", name="search", content="Paris", is_error=True),
            UserMessage(content="Go on."),
        ),
        tools=(
            ToolDefinition(name="search", description="Search.", parameters={"type": "object"}),
        ),
        tool_choice="required",
        max_tokens=9000,
        temperature=1.0,
        stop_sequences=("END",),
        reasoning=ReasoningEffort(effort="low", budget_tokens=5000),
        stream=True,
    )


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (1_024, ReasoningEffort(effort="minimal")),
        (4_096, ReasoningEffort(effort="low")),
        (8_000, ReasoningEffort(effort="low", budget_tokens=8_000)),
        (16_384, ReasoningEffort(effort="high")),
        (30_000, ReasoningEffort(effort="high", budget_tokens=30_000)),
        (500, ReasoningEffort(effort="minimal", budget_tokens=500)),
    ],
)
def test_anthropic_reads_a_thinking_budget_as_an_effort(
    budget: int, expected: ReasoningEffort
) -> None:
    body: dict[str, JsonValue] = {
        "model": "claude-sonnet-4-5",
        "messages": [],
        "thinking": {"type": "enabled", "budget_tokens": budget},
    }
    assert anthropic.parse_request(body).reasoning == expected
    disabled: dict[str, JsonValue] = {**body, "thinking": {"type": "disabled"}}
    assert anthropic.parse_request(disabled).reasoning == ReasoningDisabled()


@pytest.mark.parametrize(
    ("output_config", "effort"),
    [(None, "high"), ({"effort": "low"}, "low"), ({"effort": "max"}, "high"), ({}, "high")],
)
def test_anthropic_reads_adaptive_thinking_as_its_effort(
    output_config: JsonValue, effort: Literal["low", "high"]
) -> None:
    body: dict[str, JsonValue] = {
        "model": "claude-opus-4-6",
        "messages": [],
        "thinking": {"type": "adaptive"},
        "output_config": output_config,
    }
    assert anthropic.parse_request(body).reasoning == ReasoningEffort(effort=effort)


def test_anthropic_system_messages_in_the_conversation_join_the_system_text() -> None:
    body: dict[str, JsonValue] = {
        "model": "claude-opus-4-8",
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "Hi"},
            {
                "role": "system",
                "content": [
                    {"type": "tool_addition", "tool": {"name": "lookup"}},
                    {"type": "text", "text": "lookup is loaded."},
                ],
            },
        ],
    }
    parsed = anthropic.parse_request(body)
    assert parsed.system_text() == "Be brief.\n\nlookup is loaded."
    assert parsed.messages == (UserMessage(content="Hi"),)


def test_anthropic_reads_the_tool_choices() -> None:
    def choice(value: JsonValue) -> object:
        body: dict[str, JsonValue] = {
            "model": "claude-sonnet-4-5",
            "messages": [],
            "tool_choice": value,
        }
        return anthropic.parse_request(body).tool_choice

    assert choice({"type": "auto"}) == "auto"
    assert choice({"type": "none"}) == "none"
    assert choice({"type": "any"}) == "required"
    assert choice({"type": "tool", "name": "f"}) == NamedToolChoice(name="f")
    assert choice(None) == "auto"


# -- malformed bodies --------------------------------------------------------------------------

CHAT: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
MESSAGES: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": []}


@pytest.mark.parametrize(
    ("provider", "body", "field"),
    [
        ("openai", [CANARY], "`body` should be an object but is an array"),
        ("openai", {"messages": []}, "`model` should be a string but is null"),
        ("openai", {"model": ""}, "`model` should be a name that is not empty but has 0"),
        ("openai", {"model": "m"}, "`messages` should be an array but is null"),
        ("openai", {**CHAT, "messages": [{"role": CANARY}]}, "`messages[0].role` is not one of"),
        ("openai", {**CHAT, "messages": [{"role": "user"}]}, "`messages[0].content` should be"),
        (
            "openai",
            {**CHAT, "messages": [{"role": 3}]},
            "`messages[0].role` should be one of system, developer, user, assistant, tool but is "
            "a number",
        ),
        (
            "openai",
            {**CHAT, "messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]},
            "`messages[0].content[0].text` should be a string but is a number",
        ),
        (
            "openai",
            {**CHAT, "messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]},
            "`messages[0].tool_calls[0].function` should be an object but is null",
        ),
        (
            "openai",
            {**CHAT, "messages": [{"role": "tool", "content": CANARY}]},
            "`messages[0].tool_call_id` should be a string but is null",
        ),
        (
            "openai",
            {**CHAT, "tools": [{"type": "function", "function": {"name": "x" * 129}}]},
            "`tools[0].function.name` should be a name of 1 to 128 characters but has 129",
        ),
        (
            "openai",
            {**CHAT, "tools": [{"function": {"name": "f", "parameters": CANARY}}]},
            "`tools[0].function.parameters` should be an object but is a string",
        ),
        ("openai", {**CHAT, "tool_choice": CANARY}, "`tool_choice` is not one of auto, none"),
        (
            "openai",
            {**CHAT, "tool_choice": {"type": "allowed_tools"}},
            "`tool_choice.type` is not one of function",
        ),
        ("openai", {**CHAT, "max_tokens": 0}, "`max_tokens` should be a positive integer"),
        ("openai", {**CHAT, "max_completion_tokens": True}, "`max_completion_tokens` should be"),
        ("openai", {**CHAT, "temperature": 2.5}, "`temperature` should be a number from 0 to 2"),
        ("openai", {**CHAT, "temperature": "1"}, "`temperature` should be a number but is a str"),
        ("openai", {**CHAT, "top_p": 0}, "`top_p` should be a number above 0 to 1"),
        ("openai", {**CHAT, "stop": [1]}, "`stop[0]` should be a string but is a number"),
        ("openai", {**CHAT, "reasoning_effort": "max"}, "`reasoning_effort` is not one of none"),
        ("openai", {**CHAT, "stream": "yes"}, "`stream` should be a boolean but is a string"),
        (
            "openai",
            {**CHAT, "response_format": {"type": "json_schema", "json_schema": {}}},
            "`response_format.json_schema.schema` should be an object but is null",
        ),
        ("openai", {"model": "m", "input": 3}, "`input` should be an array but is a number"),
        (
            "openai",
            {"model": "m", "input": [{"role": "system"}]},
            "`input[0].content` should be a string or an array of parts but is null",
        ),
        (
            "openai",
            {"model": "m", "input": [{"type": "function_call", "name": "f"}]},
            "`input[0].call_id` should be a string but is null",
        ),
        (
            "openai",
            {"model": "m", "input": [{"role": "tool", "content": "x"}]},
            "`input[0].role` is not one of system, developer, user, assistant",
        ),
        ("anthropic", CANARY, "`body` should be an object but is a string"),
        ("anthropic", {**MESSAGES, "messages": None}, "`messages` should be an array but is null"),
        ("anthropic", {**MESSAGES, "max_tokens": -1}, "`max_tokens` should be a positive int"),
        ("anthropic", {**MESSAGES, "system": {"text": CANARY}}, "`system` should be an array"),
        (
            "anthropic",
            {**MESSAGES, "messages": [{"role": CANARY, "content": "Hi"}]},
            "`messages[0].role` is not one of user, assistant, system",
        ),
        (
            "anthropic",
            {**MESSAGES, "messages": [{"role": "user", "content": 7}]},
            "`messages[0].content` should be an array but is a number",
        ),
        (
            "anthropic",
            {
                **MESSAGES,
                "messages": [
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}
                ],
            },
            "`messages[0].content[0].input` should be an object but is null",
        ),
        (
            "anthropic",
            {
                **MESSAGES,
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": 3}]}
                ],
            },
            "`messages[0].content[0].tool_use_id` should be a string but is a number",
        ),
        (
            "anthropic",
            {**MESSAGES, "tools": [{"name": "f", "input_schema": [CANARY]}]},
            "`tools[0].input_schema` should be an object but is an array",
        ),
        ("anthropic", {**MESSAGES, "tool_choice": "auto"}, "`tool_choice` should be an object"),
        (
            "anthropic",
            {**MESSAGES, "tool_choice": {"type": "tool"}},
            "`tool_choice.name` should be a string but is null",
        ),
        (
            "anthropic",
            {**MESSAGES, "thinking": {"type": CANARY}},
            "`thinking.type` is not one of enabled, adaptive, disabled",
        ),
        (
            "anthropic",
            {**MESSAGES, "thinking": {"type": "adaptive"}, "output_config": {"effort": "auto"}},
            "`output_config.effort` is not one of low, medium, high, xhigh, max",
        ),
        (
            "anthropic",
            {**MESSAGES, "thinking": {"type": "enabled"}},
            "`thinking.budget_tokens` should be a positive integer but is null",
        ),
        ("anthropic", {**MESSAGES, "top_p": 1.5}, "`top_p` should be a number above 0 to 1"),
        ("anthropic", {**MESSAGES, "stop_sequences": "END"}, "`stop_sequences` should be an arr"),
    ],
)
def test_a_malformed_body_is_a_request_format_error_naming_the_field(
    provider: Provider, body: Any, field: str
) -> None:
    with pytest.raises(RequestFormatError) as raised:
        adapter_for(provider).parse_request(body)
    error = raised.value
    assert field in str(error)
    assert str(error).startswith(
        f"{'OpenAI' if provider == 'openai' else 'Anthropic'} request is not in the provider's "
        "format: "
    )
    assert CANARY not in str(error)
    assert error.code == "llm_request_invalid"
    assert isinstance(error, IllegalArgumentException)
    assert isinstance(error, ValueError)


# -- telling a forced call from a work call by its tool choice alone -----------------------------


def _forced_by_parsing(body: dict[str, Any], provider: Provider) -> str | None:
    request = adapter_for(provider).parse_request(body)
    return next((name for name in request.tool_names() if request.forces_tool(name)), None) or (
        request.tool_choice.name if isinstance(request.tool_choice, NamedToolChoice) else None
    )


@given(llm_requests("openai"))
def test_openai_forced_tool_agrees_with_the_parsed_request(request: LlmRequest) -> None:
    body = rendered(request, "openai")
    assert openai.forced_tool(body) == _forced_by_parsing(body, "openai")


@given(llm_requests("anthropic"))
def test_anthropic_forced_tool_agrees_with_the_parsed_request(request: LlmRequest) -> None:
    body = rendered(request, "anthropic")
    assert anthropic.forced_tool(body) == _forced_by_parsing(body, "anthropic")


@pytest.mark.parametrize(
    ("provider", "body", "forced"),
    [
        ("openai", {"tools": [{"type": "function", "function": {"name": "f"}}]}, None),
        (
            "openai",
            {
                "tools": [{"type": "function", "function": {"name": "f"}}],
                "tool_choice": {"type": "function", "function": {"name": "f"}},
            },
            "f",
        ),
        (
            "openai",
            {"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required"},
            "f",
        ),
        (
            "openai",
            {
                "tools": [
                    {"type": "function", "function": {"name": "f"}},
                    {"type": "function", "function": {"name": "g"}},
                ],
                "tool_choice": "required",
            },
            None,
        ),
        (  # the Responses API: functions are not nested
            "openai",
            {
                "input": "hi",
                "tools": [{"type": "function", "name": "f"}],
                "tool_choice": {"type": "function", "name": "f"},
            },
            "f",
        ),
        (
            "anthropic",
            {
                "tools": [{"name": "f", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "tool", "name": "f"},
            },
            "f",
        ),
        (  # a server tool is not a client tool: `any` with one client tool forces it
            "anthropic",
            {
                "tools": [{"name": "f"}, {"type": "web_search_20250305", "name": "web_search"}],
                "tool_choice": {"type": "any"},
            },
            "f",
        ),
        ("anthropic", {"tools": [{"name": "f"}], "tool_choice": {"type": "auto"}}, None),
    ],
)
def test_forced_tool_reads_the_tool_choice_of_each_wire(
    provider: Provider, body: dict[str, Any], forced: str | None
) -> None:
    body = {"model": "m", "messages": [], **body} if "input" not in body else {"model": "m", **body}
    assert adapter_for(provider).forced_tool(body) == forced
    assert _forced_by_parsing(body, provider) == forced


@pytest.mark.parametrize(
    ("provider", "body", "field"),
    [
        ("openai", {"tool_choice": "sometimes"}, "tool_choice"),
        ("openai", {"tools": [{"type": "function", "function": {}}]}, "tools[0].function.name"),
        ("anthropic", {"tool_choice": {"type": "maybe"}}, "tool_choice.type"),
        ("anthropic", {"tools": "f"}, "tools"),
    ],
)
def test_forced_tool_refuses_a_malformed_choice_naming_the_field(
    provider: Provider, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(RequestFormatError, match=re.escape(f"`{field}`")):
        adapter_for(provider).forced_tool({"model": "m", "messages": [], **body})


# -- real bodies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ALL, ids=[case.name for case in ALL])
def test_every_recorded_request_parses(case: Recorded) -> None:
    request = adapter_for(case.provider).parse_request(case.request_body)
    assert request.model == case.request_body["model"]
    assert request.stream is case.request_body.get("stream", False)
    forced = adapter_for(case.provider).forced_tool(case.request_body)
    assert forced == _forced_by_parsing(case.request_body, case.provider)


@pytest.mark.parametrize(("case", "_"), EXPRESSIBLE, ids=[case.name for case, _ in EXPRESSIBLE])
def test_a_recorded_request_renders_back_from_what_it_parses_to(
    case: Recorded, _: LlmRequest
) -> None:
    adapter = adapter_for(case.provider)
    assert adapter.render_request(adapter.parse_request(case.request_body)) == normalized(
        case.request_body, case.provider
    )


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="the recorded corpus is not available")
def test_the_recorded_responses_request_parses() -> None:
    import yaml

    path = RECORDINGS / "models/cassettes/test_openai/test_openai_model_thinking_part.yaml"
    cassette = yaml.safe_load(path.read_text(encoding="utf-8"))
    request = cassette["interactions"][0]["request"]
    assert request["uri"].endswith("/v1/responses")
    parsed = openai.parse_request(request["parsed_body"])
    assert parsed.model == "o3-mini"
    assert parsed.messages == (UserMessage(content="How do I cross the street?"),)
    assert parsed.reasoning == ReasoningEffort(effort="high")


def test_what_the_openai_sdk_sends_parses() -> None:
    import openai as sdk

    transport = ScriptTransport("openai", [ScriptedReply(text="Paris.")])
    with sdk.OpenAI(
        base_url="https://api.openai.com/v1",
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    ) as client:
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
            ],
            tools=[{"type": "function", "function": {"name": "final_answer", "parameters": {}}}],
            tool_choice={"type": "function", "function": {"name": "final_answer"}},
            max_completion_tokens=50,
        )
    request = openai.parse_request(json.loads(transport.requests[0].content))
    assert request.system_text() == "Be brief."
    assert request.tool_choice == NamedToolChoice(name="final_answer")
    assert request.max_tokens == 50


def test_a_value_the_neutral_model_refuses_is_named_without_the_value() -> None:
    reader = RequestReader("openai", "OpenAI")
    with pytest.raises(RequestFormatError) as raised:
        reader.build(ToolDefinition, "tools[0]", name="", description=CANARY)
    assert str(raised.value) == (
        "OpenAI request is not in the provider's format: `tools[0]` cannot be read "
        "(name: String should have at least 1 character)"
    )
