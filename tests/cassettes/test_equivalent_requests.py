"""Requests a client spells its own way: tool-call arguments re-encoded (the AI SDK's
`JSON.stringify` of the parsed input against the text the model wrote), an Anthropic text sent
as a string or as one text block. The request key keeps the bytes; a cassette replays the
interaction whose request holds the same values, and a miss tells a respelling from a change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.cassettes import Cassette, CassetteMissError, CassetteTransport
from harness.cassettes.key import canonical_request_key, equivalent_request_key
from harness.scenarios.on_target import TARGET_MISS_ADVICE
from tests.support.cassette_traffic import NoNetwork

LIBRARY = Path(__file__).resolve().parents[2] / "cassettes"
CHAT_URL = "https://api.openai.com/v1/chat/completions"
MESSAGES_URL = "https://api.anthropic.com/v1/messages"


def compact(text: str) -> str:
    """A JSON text as JavaScript's `JSON.stringify` spells it: no spaces, non-ASCII as is."""
    return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)


def respelt_like_the_ai_sdk(body: Any, *, anthropic: bool = False) -> Any:
    """`body` as the AI SDK sends the same request: each tool call's arguments as its own
    `JSON.stringify` of the parsed input, an Anthropic system prompt, turn or tool result text
    as one text block."""
    body = json.loads(json.dumps(body))
    for message in body.get("messages", []):
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = compact(call["function"]["arguments"])
        content = message.get("content")
        if anthropic and isinstance(content, str):
            message["content"] = [{"type": "text", "text": content}]
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                    block["content"] = [{"type": "text", "text": block["content"]}]
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        if item.get("type") == "function_call":
            item["arguments"] = compact(item["arguments"])
    if anthropic and isinstance(body.get("system"), str):
        body["system"] = [{"type": "text", "text": body["system"]}]
    return body


def library_interactions() -> list[tuple[Path, int]]:
    return [
        (path, index)
        for path in sorted(LIBRARY.rglob("*.json"))
        for index in range(len(Cassette.load(path).interactions))
    ]


def send(
    transport: CassetteTransport, path: str, body: Any, headers: dict[str, str] | None = None
) -> httpx2.Response:
    with httpx2.Client(transport=transport, base_url="http://127.0.0.1:9") as client:
        response = client.post(path, content=json.dumps(body).encode(), headers=headers)
        response.read()
        return response


def test_arguments_spelt_two_ways_are_two_request_keys_and_one_equivalent_key() -> None:
    def body(arguments: str) -> bytes:
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        return json.dumps(
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": [call]}]}
        ).encode()

    model_wrote, client_wrote = body('{"q": "Paris", "n": 1.0}'), body('{"n":1,"q":"Paris"}')
    assert canonical_request_key("POST", CHAT_URL, {}, model_wrote) != canonical_request_key(
        "POST", CHAT_URL, {}, client_wrote
    )
    assert equivalent_request_key("POST", CHAT_URL, {}, model_wrote) == equivalent_request_key(
        "POST", CHAT_URL, {}, client_wrote
    )
    # other values are another request, and a cut-off call (not JSON) is compared as text
    assert equivalent_request_key("POST", CHAT_URL, {}, body('{"q": "Lyon"}')) != (
        equivalent_request_key("POST", CHAT_URL, {}, body('{"q":"Paris"}'))
    )
    assert equivalent_request_key("POST", CHAT_URL, {}, body('{"q": "Par')) != (
        equivalent_request_key("POST", CHAT_URL, {}, body('{"q":"Par'))
    )


def test_a_text_and_one_text_block_are_one_anthropic_request_but_two_blocks_are_not() -> None:
    def key(system: Any) -> str:
        body = {"model": "claude", "max_tokens": 5, "system": system, "messages": []}
        return equivalent_request_key("POST", MESSAGES_URL, {}, json.dumps(body).encode())

    assert key("Be brief.") == key([{"type": "text", "text": "Be brief."}])
    assert key("Be brief.") != key(
        [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    )
    assert key("Be brief.") != key(
        [{"type": "text", "text": "Be"}, {"type": "text", "text": " brief."}]
    )


def test_a_developer_message_is_the_system_message_of_an_openai_request() -> None:
    """The Vercel AI SDK sends a reasoning model its system prompt as a `developer` message;
    OpenAI reads either as the system prompt."""

    def key(role: str, path: str = "messages") -> str:
        message = {"role": role, "content": "Be brief."}
        url = CHAT_URL if path == "messages" else "https://api.openai.com/v1/responses"
        body = {"model": "gpt-5-mini", path: [message, {"role": "user", "content": "Hi"}]}
        return equivalent_request_key("POST", url, {}, json.dumps(body).encode())

    assert key("developer") == key("system")
    assert key("developer", "input") == key("system", "input")
    assert key("user") != key("system")
    # the request key keeps the role as sent
    assert canonical_request_key(
        "POST", CHAT_URL, {}, json.dumps({"messages": [{"role": "developer"}]}).encode()
    ) != canonical_request_key(
        "POST", CHAT_URL, {}, json.dumps({"messages": [{"role": "system"}]}).encode()
    )


@pytest.mark.parametrize(
    ("cassette", "index"),
    library_interactions(),
    ids=lambda value: value.stem if isinstance(value, Path) else str(value),
)
def test_every_library_request_respelt_as_the_ai_sdk_sends_it_replays_its_answer(
    cassette: Path, index: int
) -> None:
    loaded = Cassette.load(cassette)
    interaction = loaded.interactions[index]
    transport = CassetteTransport(cassette, inner=NoNetwork(), allow_repeats=True)
    body = respelt_like_the_ai_sdk(
        interaction.request.body, anthropic=interaction.request.path.endswith("/messages")
    )
    response = send(transport, interaction.request.url, body, interaction.request.headers)
    assert response.status_code == interaction.response.status
    assert response.content == interaction.response.body_bytes()


def test_a_miss_lists_a_respelling_apart_and_names_arguments_that_hold_other_values(
    tmp_path: Path,
) -> None:
    source = LIBRARY / "wire" / "chat-stream-terminal-text.json"
    cassette = tmp_path / "copy.json"
    cassette.write_bytes(source.read_bytes())
    bodies: list[Any] = [i.request.body for i in Cassette.load(cassette).interactions]
    recorded = next(b for b in bodies if any(m.get("tool_calls") for m in b["messages"]))
    body = respelt_like_the_ai_sdk(recorded)
    turn = next(n for n, m in enumerate(body["messages"]) if m.get("tool_calls"))
    body["messages"][turn]["tool_calls"][0]["function"]["arguments"] = '{"q":"capital of Peru"}'
    body["temperature"] = 0.5

    with pytest.raises(CassetteMissError) as caught:
        send(CassetteTransport(cassette, inner=NoNetwork()), "/v1/chat/completions", body)
    message = str(caught.value)
    differences = message.split("Differences from", 1)[1].split("Spelt differently", 1)[0]
    assert "arguments.parsed.q" in differences
    assert "capital of Peru" in differences
    assert "$.temperature" in differences
    assert "hold other values than those recorded, not only another spelling" in message
    assert "If the request changed on purpose, re-record" in message

    same_values = respelt_like_the_ai_sdk(recorded)
    same_values["temperature"] = 0.5
    with pytest.raises(CassetteMissError) as caught:
        send(CassetteTransport(cassette, inner=NoNetwork()), "/v1/chat/completions", same_values)
    message = str(caught.value)
    spelt = message.split("Spelt differently but the same to the provider", 1)[1]
    assert ".function.arguments" in spelt
    differences = message.split("Differences from", 1)[1].split("Spelt differently", 1)[0]
    assert ".arguments" not in differences
    assert "$.temperature" in differences
    assert "answered differently" not in message


def test_a_target_run_miss_ends_with_what_fixes_a_target_not_a_re_recording(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "copy.json"
    cassette.write_bytes((LIBRARY / "agent" / "trigger-terminal-text-openai.json").read_bytes())
    transport = CassetteTransport(cassette, inner=NoNetwork())
    transport.miss_advice = TARGET_MISS_ADVICE
    with pytest.raises(CassetteMissError) as caught:
        send(transport, "/v1/chat/completions", {"model": "gpt-4o-mini", "messages": []})
    assert str(caught.value).endswith(TARGET_MISS_ADVICE)
    assert "re-record:" not in str(caught.value)


GEMINI_URL = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
)


def test_gemini_member_names_in_snake_case_are_the_request_but_data_in_them_is_not() -> None:
    def key(body: Any) -> str:
        return equivalent_request_key("POST", GEMINI_URL, {}, json.dumps(body).encode())

    def declaration(member: str, properties: dict[str, Any]) -> dict[str, Any]:
        return {"tools": [{"function_declarations": [{"name": "f", member: properties}]}]}

    camel = {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 5, "thinkingConfig": {"thinkingBudget": 0}},
        "contents": [{"role": "model", "parts": [{"functionCall": {"args": {"city_name": "X"}}}]}],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "f",
                        "parametersJsonSchema": {"properties": {"city_name": {"type": "string"}}},
                    }
                ]
            }
        ],
    }
    snake = {
        "system_instruction": {"role": "user", "parts": [{"text": "Be brief."}]},
        "generation_config": {"max_output_tokens": 5, "thinking_config": {"thinking_budget": 0}},
        "contents": [{"role": "model", "parts": [{"function_call": {"args": {"city_name": "X"}}}]}],
        **declaration("parameters_json_schema", {"properties": {"city_name": {"type": "string"}}}),
    }
    assert key(camel) == key(snake)
    # argument and property names are data: another spelling is another request
    renamed = json.loads(json.dumps(snake).replace('"city_name"', '"cityName"'))
    assert key(renamed) != key(snake)
    schema = declaration("parameters", {"properties": {"first_name": {"max_length": 3}}})
    assert key(schema) == key(
        declaration("parameters", {"properties": {"first_name": {"maxLength": 3}}})
    )
    assert key(schema) != key(
        declaration("parameters", {"properties": {"firstName": {"maxLength": 3}}})
    )


def test_a_forced_request_that_misses_is_compared_with_the_recorded_forced_request_first(
    tmp_path: Path,
) -> None:
    """The nearest recorded request by distance is the work request (it differs only in the tool
    choice); the miss diagnosis compares a forced request with the recorded forced one."""
    from tests.support.cassette_traffic import CHAT, OPENAI, ScriptedProvider, chat

    finish = {"type": "function", "function": {"name": "__finish__", "parameters": {}}}
    search = {"type": "function", "function": {"name": "search", "parameters": {}}}
    forced = {"type": "function", "function": {"name": "__finish__"}}
    work = chat("Capital of France?", tools=[search, finish], tool_choice="auto")
    recorded_forced = chat(
        "[completion] Finish now: call __finish__ (attempt 1 of 2).",
        tools=[finish],
        tool_choice=forced,
    )
    cassette = tmp_path / "c.json"
    provider = ScriptedProvider()
    transport = CassetteTransport(cassette, mode="once", inner=provider.transport())
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        client.post(CHAT, json=work)
        client.post(CHAT, json=recorded_forced)

    requested = {**work, "tool_choice": forced}  # one difference from the work request
    with pytest.raises(CassetteMissError) as caught:
        send(CassetteTransport(cassette, inner=NoNetwork()), CHAT, requested)
    message = str(caught.value)
    assert "forced requests of __finish__, then the rest" in message
    assert "Differences from #1, recorded -> requested:" in message
