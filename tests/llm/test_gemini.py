"""The Gemini adapter (`harness.llm.gemini`): the exact `generateContent` body, the forced function
call and thinking per model, the model and streaming in the path, reading replies (plain,
streamed, blocked, cut off), thought signatures sent back as Gemini gave them, errors in Google's
format, and scripted replies in Gemini's wire."""

from __future__ import annotations

import json
from typing import Any, Final

import httpx2
import pytest
from pydantic import JsonValue

from harness.errors import (
    AgentDecisionCallException,
    IllegalArgumentException,
    ToolChoiceUnsupportedError,
)
from harness.llm import adapter_for, capabilities_for, check_request, gemini
from harness.llm._wire import RequestFormatError
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmResponse,
    LlmToolCall,
    NamedToolChoice,
    Reasoning,
    ReasoningDisabled,
    ReasoningEffort,
    ResponseFormat,
    SystemFragment,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harness.llm.script import ScriptedReply, ScriptedToolCall, ScriptTransport
from harness.protocol.outcome import EndTurn, LimitReached, OtherStop, ToolUse
from harness.sse import SseEvent, parse_sse

MODEL: Final = "gemini-2.5-flash"
PLAIN: Final = f"/v1beta/models/{MODEL}:generateContent"
STREAMED: Final = f"/v1beta/models/{MODEL}:streamGenerateContent"
SCHEMA: Final[dict[str, JsonValue]] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
FINISH: Final = ToolDefinition(name="__finish__", description="Finish", parameters=SCHEMA)
SEARCH: Final = ToolDefinition(name="search", description="Search the web")
KEY_CANARY: Final = "AIzaSyCANARYcanaryCANARYcanary012345678"
"""A key in Google's shape: it must never reach an error message."""


def conversation(**changes: Any) -> LlmRequest:
    """A work request after one search call and its result."""
    request = LlmRequest(
        model=MODEL,
        system=(
            SystemFragment(name="base", text="You find capitals."),
            SystemFragment(name="workspace", text="Workspace at /work."),
        ),
        messages=(
            UserMessage(content="Capital of France?"),
            AssistantMessage(
                text="Let me look.",
                tool_calls=(LlmToolCall(id="c1", name="search", arguments='{"q":"France"}'),),
            ),
            ToolResultMessage(tool_call_id="c1", name="search", content='{"hits":["Paris"]}'),
            UserMessage(content="Go on."),
        ),
        tools=(SEARCH, FINISH),
        max_tokens=256,
        temperature=0.2,
        top_p=0.9,
        stop_sequences=("END",),
    )
    return request.model_copy(update=changes)


def events(blocks: list[str]) -> list[SseEvent]:
    return parse_sse("".join(blocks))


def at(value: JsonValue, *path: str | int) -> JsonValue:
    """The member of `value` at `path` (object keys and array indexes)."""
    for step in path:
        if isinstance(step, int):
            assert isinstance(value, list)
            value = value[step]
        else:
            assert isinstance(value, dict)
            value = value[step]
    return value


BUDGET: Final = ("generationConfig", "thinkingConfig", "thinkingBudget")


# -- rendering a request ------------------------------------------------------------------------


def test_a_work_request_renders_exactly() -> None:
    assert gemini.render_request(conversation()) == {
        "contents": [
            {"role": "user", "parts": [{"text": "Capital of France?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Let me look."},
                    {"functionCall": {"name": "search", "args": {"q": "France"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "search",
                            "response": {"output": {"hits": ["Paris"]}},
                        }
                    },
                    {"text": "Go on."},
                ],
            },
        ],
        "systemInstruction": {"parts": [{"text": "You find capitals.\n\nWorkspace at /work."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "search",
                        "description": "Search the web",
                        "parametersJsonSchema": {"type": "object", "properties": {}},
                    },
                    {"name": "__finish__", "description": "Finish", "parametersJsonSchema": SCHEMA},
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {
            "maxOutputTokens": 256,
            "temperature": 0.2,
            "topP": 0.9,
            "stopSequences": ["END"],
        },
    }


def test_the_forced_call_is_any_with_the_output_function_alone_and_thinking_off() -> None:
    forced = LlmRequest(
        model=MODEL,
        messages=(UserMessage(content="[completion] Finish now."),),
        tools=(FINISH,),
        tool_choice=NamedToolChoice(name="__finish__"),
        reasoning=ReasoningDisabled(),
    )
    body = gemini.render_request(forced)
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["__finish__"]}
    }
    assert body["generationConfig"] == {
        "thinkingConfig": {"thinkingBudget": 0, "includeThoughts": False}
    }
    assert gemini.forced_tool(body) == "__finish__"
    assert LlmRequest.forces_tool(gemini.parse_request(body, path=PLAIN), "__finish__")
    # Gemini forces a call while thinking, so the capability check lets it through
    check_request("gemini", forced.model_copy(update={"reasoning": ReasoningEffort(effort="high")}))


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        (NamedToolChoice(name="search"), {"mode": "ANY", "allowedFunctionNames": ["search"]}),
    ],
    ids=["auto", "none", "required", "named"],
)
def test_each_tool_choice(choice: Any, wire: dict[str, JsonValue]) -> None:
    body = gemini.render_request(conversation(tool_choice=choice))
    assert body["toolConfig"] == {"functionCallingConfig": wire}
    assert gemini.parse_request(body, path=PLAIN).tool_choice == choice
    assert "toolConfig" not in gemini.render_request(LlmRequest(model=MODEL, tool_choice=choice))


@pytest.mark.parametrize(
    ("model", "reasoning", "config"),
    [
        # Gemini 2.5 Flash and Flash Lite can turn thinking off
        ("gemini-2.5-flash", ReasoningDisabled(), {"thinkingBudget": 0}),
        ("gemini-2.5-flash-lite", ReasoningDisabled(), {"thinkingBudget": 0}),
        # 2.5 Pro cannot: the least budget it takes
        ("gemini-2.5-pro", ReasoningDisabled(), {"thinkingBudget": 128}),
        # Gemini 3 thinks by level and cannot stop: its lowest level
        ("gemini-3-pro-preview", ReasoningDisabled(), {"thinkingLevel": "low"}),
        ("gemini-3-flash-preview", ReasoningDisabled(), {"thinkingLevel": "minimal"}),
        ("gemini-2.5-flash", ReasoningEffort(effort="low"), {"thinkingBudget": 4096}),
        ("gemini-2.5-pro", ReasoningEffort(effort="high"), {"thinkingBudget": 16384}),
        (
            "gemini-2.5-pro",
            ReasoningEffort(effort="low", budget_tokens=777),
            {"thinkingBudget": 777},
        ),
        ("gemini-3-pro-preview", ReasoningEffort(effort="medium"), {"thinkingLevel": "high"}),
        ("gemini-3-flash-preview", ReasoningEffort(effort="medium"), {"thinkingLevel": "medium"}),
        (
            "gemini-3-flash-preview",
            ReasoningEffort(effort="low", budget_tokens=2048),
            {"thinkingBudget": 2048},
        ),
    ],
)
def test_thinking_follows_the_models_table(
    model: str, reasoning: Reasoning, config: dict[str, JsonValue]
) -> None:
    body = gemini.render_request(LlmRequest(model=model, reasoning=reasoning))
    assert body["generationConfig"] == {"thinkingConfig": {**config, "includeThoughts": False}}


def test_no_thinking_config_for_unset_reasoning_or_a_model_that_does_not_think() -> None:
    assert "generationConfig" not in gemini.render_request(LlmRequest(model=MODEL))
    for reasoning in (ReasoningDisabled(), ReasoningEffort(effort="high")):
        body = gemini.render_request(LlmRequest(model="gemini-2.0-flash", reasoning=reasoning))
        assert "generationConfig" not in body
    assert not capabilities_for("gemini", "gemini-2.0-flash").reasoning
    assert capabilities_for("gemini", "gemini-2.5-pro").forced_tool_choice_with_reasoning


def test_a_default_budget_is_lowered_below_max_tokens_an_explicit_one_is_not() -> None:
    effort = ReasoningEffort(effort="high")
    body = gemini.render_request(LlmRequest(model=MODEL, reasoning=effort, max_tokens=300))
    assert at(body, *BUDGET) == 299
    pro = gemini.render_request(
        LlmRequest(model="gemini-2.5-pro", reasoning=effort, max_tokens=100)
    )
    assert at(pro, *BUDGET) == 128
    explicit = ReasoningEffort(effort="low", budget_tokens=5000)
    body = gemini.render_request(LlmRequest(model=MODEL, reasoning=explicit, max_tokens=300))
    assert at(body, *BUDGET) == 5000


def test_a_response_format_is_a_json_schema_response() -> None:
    request = LlmRequest(model=MODEL, response_format=ResponseFormat(schema_=SCHEMA))
    body = gemini.render_request(request)
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": SCHEMA,
    }
    assert gemini.parse_request(body, path=PLAIN).response_format == ResponseFormat(schema_=SCHEMA)


def test_an_assistant_call_whose_arguments_are_no_object_is_refused_naming_the_call() -> None:
    cut = AssistantMessage(tool_calls=(LlmToolCall(id="c9", name="search", arguments='{"q": "Fr'),))
    with pytest.raises(IllegalArgumentException, match=r"messages\[0\]\.tool_calls\[0\].*'c9'"):
        gemini.render_request(LlmRequest(model=MODEL, messages=(cut,)))


def test_the_model_and_streaming_are_in_the_path() -> None:
    request = LlmRequest(model=MODEL)
    assert gemini.request_path(request) == PLAIN
    assert gemini.request_path(request.model_copy(update={"stream": True})) == (
        f"{STREAMED}?alt=sse"
    )
    assert "stream" not in gemini.render_request(request.model_copy(update={"stream": True}))
    assert "model" not in gemini.render_request(request)


# -- reading a request body back ---------------------------------------------------------------


def test_a_rendered_request_reads_back() -> None:
    request = conversation(
        stream=True, reasoning=ReasoningEffort(effort="medium"), max_tokens=20_000
    )
    parsed = gemini.parse_request(gemini.render_request(request), path=f"/c/x{STREAMED}")
    assert parsed.model == MODEL
    assert parsed.stream
    assert parsed.system == (
        SystemFragment(name="wire", text="You find capitals.\n\nWorkspace at /work."),
    )
    assert parsed.messages == (
        UserMessage(content="Capital of France?"),
        AssistantMessage(
            text="Let me look.",
            tool_calls=(LlmToolCall(id="call_1_0", name="search", arguments='{"q":"France"}'),),
        ),
        ToolResultMessage(tool_call_id="call_1_0", name="search", content='{"hits":["Paris"]}'),
        UserMessage(content="Go on."),
    )
    assert (parsed.tools, parsed.tool_choice, parsed.max_tokens) == (
        (SEARCH, FINISH),
        "auto",
        20_000,
    )
    assert (parsed.temperature, parsed.top_p, parsed.stop_sequences) == (0.2, 0.9, ("END",))
    assert parsed.reasoning == ReasoningEffort(effort="medium")


@pytest.mark.parametrize(
    ("config", "reasoning"),
    [
        ({"thinkingBudget": 0}, ReasoningDisabled()),
        ({"thinkingBudget": -1}, None),
        ({"thinkingBudget": 8192}, ReasoningEffort(effort="medium")),
        ({"thinkingBudget": 5000}, ReasoningEffort(effort="low", budget_tokens=5000)),
        ({"thinkingLevel": "HIGH"}, ReasoningEffort(effort="high")),
        ({"thinkingLevel": "minimal"}, ReasoningEffort(effort="minimal")),
        ({"includeThoughts": True}, None),
    ],
)
def test_thinking_reads_back(config: dict[str, JsonValue], reasoning: Reasoning | None) -> None:
    body: JsonValue = {"contents": [], "generationConfig": {"thinkingConfig": config}}
    assert gemini.parse_request(body, path=PLAIN).reasoning == reasoning


@pytest.mark.parametrize(
    ("model", "config", "reasoning"),
    [
        # what a forced call sends a model that cannot stop thinking reads back as disabled
        ("gemini-2.5-pro", {"thinkingBudget": 128, "includeThoughts": False}, ReasoningDisabled()),
        (
            "gemini-2.5-pro",
            {"thinking_budget": 128, "include_thoughts": False},
            ReasoningDisabled(),
        ),
        (
            "gemini-3-pro-preview",
            {"thinkingLevel": "LOW", "includeThoughts": False},
            ReasoningDisabled(),
        ),
        # the same budget asked for thoughts, or on a model that can stop, is an effort
        (
            "gemini-2.5-pro",
            {"thinkingBudget": 128},
            ReasoningEffort(effort="minimal", budget_tokens=128),
        ),
        (
            "gemini-2.5-flash",
            {"thinkingBudget": 128, "includeThoughts": False},
            ReasoningEffort(effort="minimal", budget_tokens=128),
        ),
    ],
)
def test_the_least_thinking_of_a_model_that_cannot_stop_reads_as_disabled(
    model: str, config: dict[str, JsonValue], reasoning: Reasoning
) -> None:
    body: JsonValue = {"contents": [], "generationConfig": {"thinkingConfig": config}}
    path = f"/v1beta/models/{model}:generateContent"
    assert gemini.parse_request(body, path=path).reasoning == reasoning
    forced = LlmRequest(model=model, reasoning=ReasoningDisabled())
    assert gemini.parse_request(gemini.render_request(forced), path=path) == forced


def test_a_body_as_google_genai_writes_it_reads() -> None:
    """The shapes the SDKs send that the harness does not: a role on the system instruction,
    function responses of any shape, `parameters` (Gemini's schema), the earlier `function`
    role, thought parts, and fields the neutral request has no place for."""
    signed: dict[str, JsonValue] = {
        "role": "model",
        "parts": [
            {"text": "hmm", "thought": True},
            {
                "functionCall": {"id": "fc-1", "name": "weather", "args": {"c": "Paris"}},
                "thoughtSignature": "c2ln",
            },
        ],
    }
    body: JsonValue = {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather?"}, {"inlineData": {"data": "x"}}]},
            signed,
            {
                "role": "function",
                "parts": [
                    {"functionResponse": {"id": "fc-1", "name": "weather", "response": {"t": 21}}}
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "weather", "response": {"error": "down"}}}],
            },
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}, {"text": "Cite."}]},
        "tools": [
            {"googleSearch": {}},
            {
                "functionDeclarations": [
                    {"name": "weather", "parameters": {"type": "OBJECT", "properties": {}}}
                ]
            },
        ],
        "toolConfig": {
            "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a", "b"]}
        },
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "generationConfig": {"topK": 40, "candidateCount": 1},
    }
    parsed = gemini.parse_request(body, path=f"/v1/models/{MODEL}:generateContent")
    assert parsed.system_text() == "Be brief.\n\nCite."
    assert parsed.tools == (
        ToolDefinition(name="weather", parameters={"type": "OBJECT", "properties": {}}),
    )
    assert parsed.tool_choice == "required"  # several allowed names
    user, model, result, failure = parsed.messages
    assert user == UserMessage(content="Weather?")
    assert isinstance(model, AssistantMessage)
    assert model.text is None
    assert model.tool_calls == (LlmToolCall(id="fc-1", name="weather", arguments='{"c":"Paris"}'),)
    assert model.reasoning_blocks == (signed,)  # kept whole: it carries thinking
    assert result == ToolResultMessage(tool_call_id="fc-1", name="weather", content='{"t":21}')
    assert failure == ToolResultMessage(
        tool_call_id="weather_result", name="weather", content="down", is_error=True
    )


@pytest.mark.parametrize(
    ("body", "path", "field"),
    [
        ({"contents": []}, None, "in its path"),
        ({"contents": []}, "/v1/chat/completions", "in its path"),
        ([1], PLAIN, "`body` should be an object"),
        ({}, PLAIN, "`contents` should be an array"),
        ({"contents": [{"role": "robot", "parts": []}]}, PLAIN, "`contents[0].role` is not one of"),
        ({"contents": [{"parts": [{"text": 7}]}]}, PLAIN, "`contents[0].parts[0].text` should be"),
        (
            {"contents": [], "generationConfig": {"temperature": "hot"}},
            PLAIN,
            "`generationConfig.temperature` should be a number",
        ),
        (
            {"contents": [], "generationConfig": {"thinkingConfig": {"thinkingBudget": -5}}},
            PLAIN,
            "`generationConfig.thinkingConfig.thinkingBudget` should be an integer of -1 or more",
        ),
        (
            {"contents": [], "tools": [{"functionDeclarations": [{"name": ""}]}]},
            PLAIN,
            "`tools[0].functionDeclarations[0].name` should be a name",
        ),
        (
            {
                "contents": [],
                "tools": [{"functionDeclarations": [{"name": "f"}]}],
                "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}},
            },
            PLAIN,
            "`toolConfig.functionCallingConfig.mode` is not one of",
        ),
    ],
)
def test_a_malformed_request_names_the_field_never_the_value(
    body: JsonValue, path: str | None, field: str
) -> None:
    with pytest.raises(RequestFormatError) as refused:
        gemini.parse_request(body, path=path)
    assert field in str(refused.value)
    assert "robot" not in str(refused.value)
    assert "hot" not in str(refused.value)
    assert "SOMETIMES" not in str(refused.value)


# -- reading a reply ----------------------------------------------------------------------------


def reply(parts: list[JsonValue], finish: str | None = "STOP", **extra: JsonValue) -> JsonValue:
    candidate: dict[str, JsonValue] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": 12,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 30,
            "totalTokenCount": 47,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1",
        **extra,
    }


def test_a_text_reply() -> None:
    parsed = gemini.parse_response(reply([{"text": "It is "}, {"text": "Paris."}]))
    assert (parsed.text, parsed.tool_calls, parsed.stop) == ("It is Paris.", (), EndTurn())
    assert parsed.provider_stop_reason == "STOP"
    # thinking is billed as output, and said apart
    assert parsed.usage == Usage(
        input_tokens=12, output_tokens=35, total_tokens=47, reasoning_tokens=30
    )
    assert parsed.model == "gemini-2.5-flash"
    assert parsed.reasoning_blocks == ()


def test_a_function_call_reply_is_tool_use_with_ids_unique_in_the_reply() -> None:
    parsed = gemini.parse_response(
        reply(
            [
                {"functionCall": {"name": "search", "args": {"q": "France"}}},
                {"functionCall": {"name": "search"}},
            ]
        )
    )
    assert parsed.stop == ToolUse()
    assert parsed.tool_calls == (
        LlmToolCall(id="resp-1_0", name="search", arguments='{"q":"France"}'),
        LlmToolCall(id="resp-1_1", name="search", arguments="{}"),
    )


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("MAX_TOKENS", LimitReached()),
        ("SAFETY", OtherStop(reason="SAFETY")),
        ("MALFORMED_FUNCTION_CALL", OtherStop(reason="MALFORMED_FUNCTION_CALL")),
        ("SOMETHING_NEW", OtherStop(reason="SOMETHING_NEW")),
    ],
)
def test_each_finish_reason(finish: str, stop: Any) -> None:
    parsed = gemini.parse_response(reply([{"text": "The capital is Pa"}], finish))
    assert parsed.stop == stop
    assert parsed.truncated is (finish == "MAX_TOKENS")


def test_a_blocked_prompt_has_no_candidate_and_says_why() -> None:
    blocked: JsonValue = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}
    parsed = gemini.parse_response(blocked)
    assert (parsed.text, parsed.stop) == ("", OtherStop(reason="PROHIBITED_CONTENT"))


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (reply([{"text": "x"}], None), "candidates[0].finishReason"),
        ({"candidates": []}, "the reply has no candidate and no blockReason"),
        (reply([{"text": 3}]), "`candidates[0].content.parts[0].text` should be a string"),
        (
            {"candidates": [], "usageMetadata": {"promptTokenCount": -1}},
            "usageMetadata.promptTokenCount",
        ),
    ],
)
def test_a_reply_not_in_geminis_format_is_invalid_naming_the_field(
    payload: JsonValue, field: str
) -> None:
    with pytest.raises(AgentDecisionCallException) as refused:
        gemini.parse_response(payload)
    assert refused.value.error_type == "invalid_response"
    assert field in str(refused.value)


def test_an_error_body_in_a_reply_is_the_providers_error() -> None:
    body: JsonValue = {
        "error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}
    }
    with pytest.raises(AgentDecisionCallException) as refused:
        gemini.parse_response(body)
    assert (refused.value.error_type, refused.value.status) == ("RESOURCE_EXHAUSTED", 429)


def test_a_stream_joins_text_keeps_signed_parts_whole_and_takes_the_last_usage() -> None:
    chunks = [
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "Thinking", "thought": True}]}}
            ]
        },
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "It is "}]}}]},
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Paris."}]}}],
            "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3},
        },
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"text": "", "thoughtSignature": "U0lH"}],
                    },
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 3,
                "candidatesTokenCount": 4,
                "totalTokenCount": 7,
            },
            "responseId": "r9",
        },
    ]
    stream = [SseEvent(data=json.dumps(chunk)) for chunk in chunks]
    parsed = gemini.parse_stream([SseEvent(comments=("keep-alive",)), *stream])
    assert parsed.text == "It is Paris."
    assert parsed.stop == EndTurn()
    assert parsed.usage == Usage(input_tokens=3, output_tokens=4, total_tokens=7)
    assert parsed.reasoning_blocks == (
        {
            "role": "model",
            "parts": [
                {"text": "Thinking", "thought": True},
                {"text": "It is Paris."},
                {"text": "", "thoughtSignature": "U0lH"},
            ],
        },
    )
    assert parsed.raw == chunks


def test_a_stream_that_ends_without_a_finish_reason_or_with_an_error_fails() -> None:
    cut = [SseEvent(data=json.dumps({"candidates": [{"content": {"parts": [{"text": "x"}]}}]}))]
    with pytest.raises(AgentDecisionCallException, match="ended before a finishReason") as ended:
        gemini.parse_stream(cut)
    assert ended.value.error_type == "invalid_response"
    failing = [*cut, SseEvent(data=json.dumps({"error": {"code": 503, "status": "UNAVAILABLE"}}))]
    with pytest.raises(AgentDecisionCallException) as failed:
        gemini.parse_stream(failing)
    assert (failed.value.error_type, failed.value.status) == ("UNAVAILABLE", 503)


# -- thought signatures -------------------------------------------------------------------------

SIGNED: Final[list[JsonValue]] = [
    {"text": "Considering the search.", "thought": True},
    {"functionCall": {"name": "search", "args": {"q": "France"}}, "thoughtSignature": "QUJD"},
    {"functionCall": {"name": "search", "args": {"q": "Paris"}}},
]


def test_a_signed_turn_goes_back_as_gemini_gave_it_even_with_thinking_off() -> None:
    answer = gemini.parse_response(reply(SIGNED))
    assert answer.reasoning_blocks == ({"role": "model", "parts": SIGNED},)
    turn = AssistantMessage(
        text=answer.text or None,
        tool_calls=answer.tool_calls,
        reasoning_blocks=answer.reasoning_blocks,
    )
    results = tuple(
        ToolResultMessage(tool_call_id=call.id, name=call.name, content='{"hits":[]}')
        for call in answer.tool_calls
    )
    forced = LlmRequest(
        model=MODEL,
        messages=(UserMessage(content="Capital?"), turn, *results),
        reasoning=ReasoningDisabled(),
    )
    contents = gemini.render_request(forced)["contents"]
    assert at(contents, 1) == {"role": "model", "parts": SIGNED}


def test_a_turn_that_no_longer_says_what_its_content_says_is_rendered_from_its_calls() -> None:
    answer = gemini.parse_response(reply(SIGNED))
    changed = AssistantMessage(
        tool_calls=(answer.tool_calls[0],), reasoning_blocks=answer.reasoning_blocks
    )
    contents = gemini.render_request(LlmRequest(model=MODEL, messages=(changed,)))["contents"]
    assert contents == [
        {"role": "model", "parts": [{"functionCall": {"name": "search", "args": {"q": "France"}}}]}
    ]


def test_a_call_id_gemini_gave_goes_back_on_its_result() -> None:
    parts: list[JsonValue] = [{"functionCall": {"id": "fc-7", "name": "search", "args": {}}}]
    answer = gemini.parse_response(reply(parts))
    (call,) = answer.tool_calls
    assert call.id == "fc-7"
    turn = AssistantMessage(tool_calls=(call,), reasoning_blocks=answer.reasoning_blocks)
    result = ToolResultMessage(tool_call_id="fc-7", name="search", content="no hits")
    contents = gemini.render_request(LlmRequest(model=MODEL, messages=(turn, result)))["contents"]
    assert at(contents, 1) == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "fc-7",
                    "name": "search",
                    "response": {"output": "no hits"},
                }
            }
        ],
    }


# -- errors -------------------------------------------------------------------------------------


def test_an_error_answer_keeps_the_status_and_a_scrubbed_message() -> None:
    body: JsonValue = {
        "error": {
            "code": 400,
            "message": f"API key not valid: {KEY_CANARY}. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [{"reason": "API_KEY_INVALID", "metadata": {"key": KEY_CANARY}}],
        }
    }
    error = gemini.parse_error(400, body)
    assert type(error) is AgentDecisionCallException
    assert (error.status, error.error_type, error.provider) == (400, "INVALID_ARGUMENT", "gemini")
    assert "Gemini answered HTTP 400 INVALID_ARGUMENT: API key not valid" in str(error)
    assert KEY_CANARY not in str(error)
    assert "API_KEY_INVALID" not in str(error)  # the details are never quoted


def test_a_refusal_of_function_calling_is_tool_choice_unsupported() -> None:
    body: JsonValue = {
        "error": {
            "code": 400,
            "message": "Function calling is not enabled for models/gemini-1.0-pro-vision",
            "status": "INVALID_ARGUMENT",
        }
    }
    assert isinstance(gemini.parse_error(400, body), ToolChoiceUnsupportedError)
    assert not isinstance(
        gemini.parse_error(502, "<html>bad gateway</html>"), ToolChoiceUnsupportedError
    )
    assert "not a Google API error object" in str(gemini.parse_error(502, "<html>"))


@pytest.mark.parametrize(
    ("status", "error_type", "word"),
    [
        (404, "not_found_error", "NOT_FOUND"),
        (400, "invalid_request_error", "INVALID_ARGUMENT"),
        (429, "rate_limit_error", "RESOURCE_EXHAUSTED"),
        (502, "api_error", "INTERNAL"),
        (418, "teapot", "INVALID_ARGUMENT"),
        (400, "FAILED_PRECONDITION", "FAILED_PRECONDITION"),
    ],
)
def test_errors_render_in_googles_format(status: int, error_type: str, word: str) -> None:
    body = gemini.render_error(status, error_type, "why")
    assert body == {"error": {"code": status, "message": "why", "status": word}}
    assert gemini.parse_error(status, body).error_type == word


def test_an_error_body_gemini_could_not_send_is_refused() -> None:
    with pytest.raises(IllegalArgumentException, match="from 400 to 599"):
        gemini.render_error(200, "OK", "fine")


# -- rendering a reply --------------------------------------------------------------------------

ANSWER: Final = LlmResponse(
    text="Let me look up the capital.",
    tool_calls=(LlmToolCall(id="x", name="search", arguments='{"q":"France"}'),),
    stop=ToolUse(),
    usage=Usage(input_tokens=10, output_tokens=7, total_tokens=17),
)


def test_a_rendered_reply_reads_back_plain_and_streamed() -> None:
    plain = gemini.render_response(ANSWER, model=MODEL, response_id="r1")
    assert plain == {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"text": "Let me look up the capital."},
                        {"functionCall": {"name": "search", "args": {"q": "France"}}},
                    ],
                    "role": "model",
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 7, "totalTokenCount": 17},
        "modelVersion": MODEL,
        "responseId": "r1",
    }
    blocks = gemini.render_stream(ANSWER, model=MODEL, response_id="r1")
    assert all(block.startswith("data: ") and block.endswith("\r\n\r\n") for block in blocks)
    for parsed in (gemini.parse_response(plain), gemini.parse_stream(events(blocks))):
        assert (parsed.text, parsed.stop, parsed.usage) == (ANSWER.text, ToolUse(), ANSWER.usage)
        assert [(call.name, call.arguments) for call in parsed.tool_calls] == [
            ("search", '{"q":"France"}')
        ]
        assert parsed.provider_stop_reason == "STOP"


def test_a_cut_off_reply_renders_max_tokens_and_an_empty_one_no_parts() -> None:
    cut = LlmResponse(text="The capital is Pa", stop=LimitReached())
    parsed = gemini.parse_stream(events(gemini.render_stream(cut, model=MODEL, response_id="r")))
    assert (parsed.text, parsed.stop, parsed.provider_stop_reason) == (
        "The capital is Pa",
        LimitReached(),
        "MAX_TOKENS",
    )
    empty = gemini.render_response(
        LlmResponse(stop=OtherStop(reason="SAFETY")), model=MODEL, response_id="r"
    )
    assert at(empty, "candidates", 0) == {
        "content": {"role": "model"},
        "finishReason": "SAFETY",
        "index": 0,
    }


def test_arguments_cut_off_mid_json_have_no_spelling_on_geminis_wire() -> None:
    cut = LlmResponse(
        tool_calls=(LlmToolCall(id="x", name="__finish__", arguments='{"city": "Pa'),),
        stop=LimitReached(),
    )
    for render in (gemini.render_response, gemini.render_stream):
        with pytest.raises(IllegalArgumentException, match="whole, as an object"):
            render(cut, model=MODEL, response_id="r")


# -- the gateway and a script on Gemini's wire ---------------------------------------------------


def test_the_gateway_sends_the_key_header_the_model_path_and_sse_for_a_stream() -> None:
    sent: list[httpx2.Request] = []
    blocks = gemini.render_stream(ANSWER, model=MODEL, response_id="r")

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        if request.url.path.endswith(":streamGenerateContent"):
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content="".join(blocks)
            )
        return httpx2.Response(
            200, json=gemini.render_response(ANSWER, model=MODEL, response_id="r")
        )

    config = GatewayConfig.from_environment("gemini", {"GEMINI_API_KEY": KEY_CANARY})
    request = LlmRequest(model=MODEL, messages=(UserMessage(content="Capital?"),), tools=(SEARCH,))
    with LlmGateway(config, transport=httpx2.MockTransport(answer)) as gateway:
        plain = gateway.complete(request)
        streamed = gateway.complete(request.model_copy(update={"stream": True}))
    assert plain.tool_calls[0].name == streamed.tool_calls[0].name == "search"
    assert [str(request.url) for request in sent] == [
        f"https://generativelanguage.googleapis.com{PLAIN}",
        f"https://generativelanguage.googleapis.com{STREAMED}?alt=sse",
    ]
    for wire in sent:
        assert wire.headers["x-goog-api-key"] == KEY_CANARY
        assert "authorization" not in wire.headers
        assert "key=" not in str(wire.url)
        assert json.loads(wire.content) == gemini.render_request(request_of(wire))


def request_of(sent: httpx2.Request) -> LlmRequest:
    return gemini.parse_request(json.loads(sent.content), path=sent.url.path)


def test_the_gateway_never_says_the_key_gemini_quotes_back() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            400,
            json={
                "error": {
                    "code": 400,
                    "message": f"API key {KEY_CANARY} not valid",
                    "status": "INVALID_ARGUMENT",
                }
            },
        )

    config = GatewayConfig.from_environment("gemini", {"GOOGLE_API_KEY": KEY_CANARY})
    with LlmGateway(config, transport=httpx2.MockTransport(refuse)) as gateway:
        with pytest.raises(AgentDecisionCallException) as refused:
            gateway.complete(LlmRequest(model=MODEL))
    assert KEY_CANARY not in str(refused.value)
    assert refused.value.error_type == "INVALID_ARGUMENT"


def test_a_script_streams_json_arrays_without_alt_sse_and_events_with_it() -> None:
    script = ScriptTransport("gemini", [ScriptedReply(text="Paris."), ScriptedReply(text="Paris.")])
    body = json.dumps({"contents": [{"parts": [{"text": "Capital?"}]}]})
    with httpx2.Client(transport=script, base_url="https://gemini.test") as client:
        array = client.post(STREAMED, content=body)
        sse = client.post(f"{STREAMED}?alt=sse", content=body)
    assert array.headers["content-type"] == "application/json"
    chunks = array.json()
    assert isinstance(chunks, list)
    assert "".join(chunk["candidates"][0]["content"]["parts"][0]["text"] for chunk in chunks) == (
        "Paris."
    )
    assert sse.headers["content-type"] == "text/event-stream"
    streamed = [json.loads(event.data or "") for event in parse_sse(sse.text)]
    assert [chunk["responseId"] for chunk in streamed] == ["scripted-2"] * len(chunks)
    assert [{**chunk, "responseId": "scripted-1"} for chunk in streamed] == chunks


def test_a_scripted_call_cut_off_streams_as_an_empty_call_stopped_by_max_tokens() -> None:
    cut = ScriptedReply(
        tool_calls=(ScriptedToolCall(name="__finish__", arguments='{"city": "Pa'),), truncated=True
    )
    with LlmGateway.scripted("gemini", [cut]) as gateway:
        answer = gateway.complete(LlmRequest(model=MODEL, stream=True))
    assert answer.stop == LimitReached()
    assert [(call.name, call.arguments) for call in answer.tool_calls] == [("__finish__", "{}")]


def test_the_adapter_is_found_by_the_registry() -> None:
    assert adapter_for("gemini") is gemini
