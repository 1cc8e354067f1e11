"""A script session of `harness serve` answers every route in that route's own wire.

`/v1/responses` in the OpenAI Responses wire (a `response` object, or the `response.*` event
stream), `/v1/chat/completions` in Chat Completions and `/v1/messages` in Anthropic Messages,
plain and streamed; scripted errors in each provider's error format; and a route a script cannot
answer (`/v1/embeddings`, `/v1/completions`, `/v1/messages/count_tokens`, an unknown path) is a
4xx in the calling provider's error format naming the route and what the session answers, never
a 200 in another wire. Checked with the official Python SDKs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import anthropic
import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from openai.types.responses import ResponseFunctionToolCall

from harness.cassettes import Cassette, CassetteTransport, Interaction
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.llm.script import ScriptedReply, ScriptTransport
from harness.runtimes.run import run_agent
from harness.serve import ReplayServer
from harness.serve.server import ServerSession
from tests.support.fake_provider import Answer, ToolCall, openai_responses_reply
from tests.support.node import NodeCall, NodeSdks
from tests.support.recordings import (
    CHAT_STREAM_TRIGGERS,
    REPOSITORY,
    RESPONSES_CASSETTE,
    TRIGGER_OUTPUT,
    chat_stream_agent,
    chat_stream_cassette,
    record_wire_cassettes,
)
from tests.support.serve_sdk import recorded_answer, sdk_call, send_sync, sync_client

WEATHER: Final[Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
RESPONSES_TOOLS: Final[Any] = [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
TEXT: Final[dict[str, Any]] = {"text": "It is Paris."}
TOOL: Final[dict[str, Any]] = {
    "text": "Let me look.",
    "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_w1"}],
}
ONLY_TOOL: Final[dict[str, Any]] = {
    "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]
}
CUT_OFF: Final[dict[str, Any]] = {"text": "The capital of France is", "truncated": True}
RATE_LIMITED: Final[dict[str, Any]] = {
    "error": {"status": 429, "type": "rate_limit_error", "message": "Slow down, scripted."}
}
USAGE: Final[dict[str, Any]] = {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17}
WIRE_CASSETTES: Final = [
    RESPONSES_CASSETTE,
    *(chat_stream_cassette(trigger) for trigger in CHAT_STREAM_TRIGGERS),
]


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as running:
        yield running


def openai_client(session: ServerSession) -> openai.OpenAI:
    return openai.OpenAI(base_url=session.base_url("openai"), api_key="unused", max_retries=0)


def anthropic_client(session: ServerSession) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=session.base_url("anthropic"), api_key="unused", max_retries=0
    )


def responses(client: openai.OpenAI, **extra: Any) -> Any:
    return client.responses.create(
        model="gpt-4o-mini", input="Capital of France?", tools=RESPONSES_TOOLS, **extra
    )


# -- /v1/responses ---------------------------------------------------------------------------------


def test_a_script_answers_responses_with_a_response_object(server: ReplayServer) -> None:
    script = [{**TEXT, "usage": USAGE}, TOOL, ONLY_TOOL, CUT_OFF]
    with server.session(script=script, provider="openai") as session:
        with openai_client(session) as client:
            text, tool, only_tool, cut_off = (responses(client) for _ in script)

    assert (text.object, text.status, text.output_text) == ("response", "completed", "It is Paris.")
    assert text.incomplete_details is None
    assert text.usage is not None
    assert (text.usage.input_tokens, text.usage.output_tokens, text.usage.total_tokens) == (
        12,
        5,
        17,
    )
    (message,) = text.output
    assert (message.type, message.role, message.status) == ("message", "assistant", "completed")
    assert [(part.type, part.text) for part in message.content] == [("output_text", "It is Paris.")]

    assert tool.output_text == "Let me look."
    assert [item.type for item in tool.output] == ["message", "function_call"]
    call = tool.output[1]
    assert (call.call_id, call.name, call.arguments) == (
        "call_w1",
        "get_weather",
        '{"city":"Paris"}',
    )
    assert (tool.status, call.status) == ("completed", "completed")

    assert [item.type for item in only_tool.output] == ["function_call"]
    assert only_tool.output_text == ""

    assert (cut_off.status, cut_off.output_text) == ("incomplete", "The capital of France is")
    assert cut_off.incomplete_details is not None
    assert cut_off.incomplete_details.reason == "max_output_tokens"
    assert cut_off.output[0].status == "incomplete"


def event_types(events: list[Any]) -> list[str]:
    return [event.type for event in events]


def test_a_script_streams_responses_as_response_events(server: ReplayServer) -> None:
    with server.session(script=[{**TEXT, "usage": USAGE}], provider="openai") as session:
        with openai_client(session) as client:
            events = list(responses(client, stream=True))

    assert event_types(events) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * sum(e.type.endswith("text.delta") for e in events),
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == "It is Paris."
    created, final = events[0].response, events[-1].response
    assert (created.status, created.output, created.usage) == ("in_progress", [], None)
    assert (final.status, final.output_text) == ("completed", "It is Paris.")
    assert final.usage is not None
    assert final.usage.total_tokens == 17


def test_a_streamed_function_call_and_a_cut_off_reply(server: ReplayServer) -> None:
    with server.session(script=[TOOL, CUT_OFF], provider="openai") as session:
        with openai_client(session) as client:
            tool = list(responses(client, stream=True))
            cut_off = list(responses(client, stream=True))

    added = [event.item for event in tool if event.type == "response.output_item.added"]
    assert [(item.type, item.status) for item in added] == [
        ("message", "in_progress"),
        ("function_call", "in_progress"),
    ]
    assert (added[1].call_id, added[1].name, added[1].arguments) == ("call_w1", "get_weather", "")
    fragments = [e.delta for e in tool if e.type == "response.function_call_arguments.delta"]
    assert len(fragments) > 1
    assert "".join(fragments) == '{"city":"Paris"}'
    (done,) = [e for e in tool if e.type == "response.function_call_arguments.done"]
    assert (done.arguments, done.output_index) == ('{"city":"Paris"}', 1)
    final = tool[-1]
    assert final.type == "response.completed"
    assert [item.type for item in final.response.output] == ["message", "function_call"]

    assert cut_off[-1].type == "response.incomplete"
    incomplete = cut_off[-1].response
    assert (incomplete.status, incomplete.output_text) == ("incomplete", "The capital of France is")
    assert incomplete.incomplete_details.reason == "max_output_tokens"


def test_the_sdk_stream_helper_accumulates_the_scripted_response(server: ReplayServer) -> None:
    """`responses.stream()` rebuilds the response from the events, and checks their order."""
    with server.session(script=[TOOL], provider="openai") as session:
        with openai_client(session) as client:
            with client.responses.stream(
                model="gpt-4o-mini", input="Capital of France?", tools=RESPONSES_TOOLS
            ) as stream:
                for _ in stream:
                    pass
                final = stream.get_final_response()

    assert final.output_text == "Let me look."
    assert [item.type for item in final.output] == ["message", "function_call"]
    call = final.output[1]
    assert isinstance(call, ResponseFunctionToolCall)
    assert call.arguments == '{"city":"Paris"}'


def test_the_other_providers_route_after_the_script_has_answered_is_a_400(
    server: ReplayServer,
) -> None:
    with server.session(script=[TEXT, TEXT], provider="openai") as session:
        with openai_client(session) as client:
            responses(client)
        with anthropic_client(session) as other:
            with pytest.raises(anthropic.BadRequestError) as refused:
                other.messages.create(
                    model="claude-sonnet-4-5",
                    max_tokens=64,
                    messages=[{"role": "user", "content": "Capital of France?"}],
                )

    body = refused.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "invalid_request_error"
    assert "the script renders openai replies" in body["error"]["message"]
    assert "the code under test called the anthropic API" in body["error"]["message"]


def test_a_script_transport_in_process_refuses_what_a_script_cannot_answer() -> None:
    transport = ScriptTransport("openai", [ScriptedReply(text="It is Paris.")])
    with openai.OpenAI(
        base_url="https://api.openai.com/v1",
        api_key="unused",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(transport=transport),
    ) as client:
        with pytest.raises(openai.NotFoundError) as refused:
            client.embeddings.create(model="text-embedding-3-small", input="Paris")
        answered = client.responses.create(model="gpt-4o-mini", input="Capital of France?")

    assert refused.value.body == {
        "message": "the scripted openai API answers POST /v1/chat/completions and /v1/responses; "
        "it cannot answer POST /v1/embeddings, which the code under test called",
        "type": "not_found_error",
        "param": None,
        "code": None,
    }
    assert answered.output_text == "It is Paris."


# -- the same shapes as the fake provider's, transcribed from recorded traffic --------------------

FAKE_ANSWERS: Final = {
    "text": Answer(text="The capital of France is Paris."),
    "tool": Answer(
        text="Let me look.",
        tool_calls=(ToolCall(id="call_w1", name="get_weather", arguments={"city": "Paris"}),),
    ),
    "two_tools": Answer(
        tool_calls=(
            ToolCall(id="call_w1", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(id="call_w2", name="get_weather", arguments={"city": "Lyon"}),
        )
    ),
    "cut_off": Answer(text="The capital of France is", cut_off=True),
}


def scripted(answer: Answer) -> ScriptedReply:
    """`answer` as a script reply, its arguments spelled as the fake provider spells them."""
    return ScriptedReply.model_validate(
        {
            "text": answer.text or None,
            "truncated": answer.cut_off,
            "tool_calls": [
                {"id": call.id, "name": call.name, "arguments": json.dumps(call.arguments)}
                for call in answer.tool_calls
            ],
            "usage": {
                "input_tokens": answer.input_tokens,
                "output_tokens": answer.output_tokens,
                "total_tokens": answer.input_tokens + answer.output_tokens,
            },
        }
    )


def as_fake_ids(text: str) -> str:
    """Rendered JSON with the scripted reply's ids and creation time as the fake's."""
    text = re.sub(r"fc_scripted-1_(\d+)", lambda m: f"fc_fake{int(m[1]) + 1}", text)
    text = text.replace("msg_scripted-1", "msg_fake1").replace('"scripted-1"', '"resp_fake1"')
    return re.sub(r'"created_at": ?0,', '"created_at":1700000000,', text)


def same_spacing(data: str) -> str:
    return json.dumps(json.loads(data))  # keys keep their order


def sse_events(blocks: str) -> list[tuple[str, str]]:
    events = []
    for block in blocks.split("\n\n"):
        if block:
            name, data = block.split("\n")
            events.append((name.removeprefix("event: "), same_spacing(data.removeprefix("data: "))))
    return events


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name", sorted(FAKE_ANSWERS))
def test_a_scripted_response_is_what_the_fake_provider_sends(name: str, stream: bool) -> None:
    """The harness's rendering and the fake provider's (transcribed from recorded Responses
    traffic, independently) are the same bytes, but for spacing: keys, their order, the
    events, their numbers and the pieces text and arguments come in."""
    answer = FAKE_ANSWERS[name]
    fake = openai_responses_reply(answer, model="gpt-4o-mini", stream=stream)
    transport = ScriptTransport("openai", [scripted(answer)])
    with httpx2.Client(transport=transport) as client:
        sent = client.post(
            "https://api.openai.com/v1/responses",
            json={"model": "gpt-4o-mini", "input": "Capital of France?", "stream": stream},
        )

    assert sent.status_code == 200
    rendered = as_fake_ids(sent.text)
    if stream:
        assert fake.events is not None
        assert sent.headers["content-type"] == "text/event-stream"
        assert sse_events(rendered) == sse_events("".join(fake.events))
    else:
        assert sent.headers["content-type"] == "application/json"
        assert same_spacing(rendered) == json.dumps(fake.body)


# -- /v1/chat/completions and /v1/messages ---------------------------------------------------------


def test_chat_completions_stays_chat_completions(server: ReplayServer) -> None:
    with server.session(script=[TOOL, TEXT], provider="openai") as session:
        with openai_client(session) as client:
            messages: Any = [{"role": "user", "content": "Capital of France?"}]
            plain = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            chunks = list(
                client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
            )

    assert plain.object == "chat.completion"
    assert plain.choices[0].message.content == "Let me look."
    (call,) = plain.choices[0].message.tool_calls or []
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert (call.id, call.function.name) == ("call_w1", "get_weather")
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "It is Paris."


def test_messages_are_answered_in_the_messages_wire(server: ReplayServer) -> None:
    with server.session(script=[TOOL, TEXT, CUT_OFF], provider="anthropic") as session:
        with anthropic_client(session) as client:
            asked: Any = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": "Capital of France?"}],
            }
            plain = client.messages.create(**asked)
            events = list(client.messages.create(**asked, stream=True))
            with client.messages.stream(**asked) as stream:
                cut_off = stream.get_final_message()

    assert (plain.type, plain.stop_reason) == ("message", "tool_use")
    assert [block.type for block in plain.content] == ["text", "tool_use"]
    tool_use = plain.content[1]
    assert isinstance(tool_use, anthropic.types.ToolUseBlock)
    assert tool_use.input == {"city": "Paris"}
    assert events[0].type == "message_start"
    assert events[-1].type == "message_stop"
    text = "".join(
        e.delta.text
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )
    assert text == "It is Paris."
    assert (cut_off.stop_reason, cut_off.content[0].text) == (  # type: ignore[union-attr]
        "max_tokens",
        "The capital of France is",
    )


# -- scripted errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_scripted_error_is_each_providers_error(server: ReplayServer, stream: bool) -> None:
    with server.session(script=[RATE_LIMITED] * 2, provider="openai") as session:
        with openai_client(session) as client:
            with pytest.raises(openai.RateLimitError) as from_responses:
                responses(client, stream=stream)
            with pytest.raises(openai.RateLimitError) as from_chat:
                client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[{"role": "user", "content": "Capital of France?"}],
                    stream=stream,
                )
    with server.session(script=[RATE_LIMITED], provider="anthropic") as session:
        with anthropic_client(session) as client:
            with pytest.raises(anthropic.RateLimitError) as from_messages:
                client.messages.create(
                    model="claude-sonnet-4-5",
                    max_tokens=64,
                    messages=[{"role": "user", "content": "Capital of France?"}],
                    stream=stream,
                )

    openai_error = {
        "message": "Slow down, scripted.",
        "type": "rate_limit_error",
        "param": None,
        "code": None,
    }
    assert from_responses.value.body == openai_error
    assert from_chat.value.body == openai_error
    assert from_messages.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Slow down, scripted."},
    }


# -- routes a script cannot answer -----------------------------------------------------------------


def test_embeddings_and_completions_are_an_openai_404_naming_the_route(
    server: ReplayServer,
) -> None:
    with server.session(script=[TEXT], provider="openai") as session:
        with openai_client(session) as client:
            with pytest.raises(openai.NotFoundError) as embeddings:
                client.embeddings.create(model="text-embedding-3-small", input="Paris")
            with pytest.raises(openai.NotFoundError) as completions:
                client.completions.create(model="gpt-3.5-turbo-instruct", prompt="Paris")
            after = responses(client)  # the script was not used up by the refused calls

    assert after.output_text == "It is Paris."
    for refused, route in ((embeddings, "/v1/embeddings"), (completions, "/v1/completions")):
        body = refused.value.body
        assert isinstance(body, dict)
        assert body["type"] == "not_found_error"
        assert route in body["message"]
        assert f"session {session.id!r}" in body["message"]
        assert "/v1/chat/completions" in body["message"]
        assert "/v1/responses" in body["message"]


def test_count_tokens_is_an_anthropic_404_naming_what_the_session_answers(
    server: ReplayServer,
) -> None:
    with server.session(script=[TEXT], provider="anthropic") as session:
        with anthropic_client(session) as client:
            client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=64,
                messages=[{"role": "user", "content": "Capital of France?"}],
            )
            with pytest.raises(anthropic.NotFoundError) as refused:
                client.messages.count_tokens(
                    model="claude-sonnet-4-5",
                    messages=[{"role": "user", "content": "Capital of France?"}],
                )

    body = refused.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"]["type"] == "not_found_error"
    message = body["error"]["message"]
    assert "/v1/messages/count_tokens" in message
    assert message.endswith("answers POST /v1/messages")  # the script speaks Messages now


def test_an_unknown_path_is_a_404_in_the_sessions_own_error_format(
    server: ReplayServer,
) -> None:
    with server.session(script=[TEXT], provider="anthropic") as session:
        answer = httpx2.post(f"{session.base_url('anthropic')}/v2/whatever", json={"model": "m"})

    assert answer.status_code == 404
    body = answer.json()
    assert body["type"] == "error"  # Anthropic's error format: the session's script is Anthropic's
    assert "'/s/" in body["error"]["message"]
    assert "/v2/whatever" in body["error"]["message"]


# -- the committed wire cassettes ------------------------------------------------------------------


@pytest.fixture(scope="module")
def rerecorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wire cassettes recorded again, as `python -m tests.support.recordings` does."""
    folder = tmp_path_factory.mktemp("rerecorded")
    record_wire_cassettes(folder)
    return folder


@pytest.mark.parametrize("name", WIRE_CASSETTES)
def test_the_wire_cassettes_are_current(name: str, rerecorded: Path) -> None:
    """Recording the same traffic through `harness serve` again gives the same requests: what
    the SDK or the harness's gateway sends has not changed since the cassette was recorded."""
    committed = Cassette.load(REPOSITORY / "cassettes" / f"{name}.json").interactions
    fresh = Cassette.load(rerecorded / f"{name}.json").interactions
    assert [i.digest for i in fresh] == [i.digest for i in committed], (
        f"the requests of cassettes/{name}.json changed: re-record with "
        "`python -m tests.support.recordings`"
    )


def test_the_responses_cassette_holds_every_kind_of_answer() -> None:
    interactions = Cassette.load(REPOSITORY / "cassettes" / "wire" / "responses.json").interactions
    streamed = [i.response.events for i in interactions if i.response.events is not None]
    plain = [json.loads(i.response.body_bytes()) for i in interactions if i.response.events is None]
    assert {i.request.path for i in interactions} == {"/v1/responses"}
    assert [body["status"] for body in plain] == ["completed", "completed", "incomplete"]
    assert [events[-1].event for events in streamed] == [
        "response.completed",
        "response.completed",
        "response.incomplete",
    ]
    assert any(
        event.event == "response.function_call_arguments.delta"
        for events in streamed
        for event in events
    )


@pytest.mark.parametrize("name", WIRE_CASSETTES)
def test_the_python_sdks_parse_the_wire_cassettes_through_the_server_as_recorded(
    name: str,
) -> None:
    cassette = Cassette.load(REPOSITORY / "cassettes" / f"{name}.json")
    with ReplayServer(REPOSITORY / "cassettes") as replaying:
        with sync_client("openai", replaying.cassette_url(name, "openai")) as client:
            parsed = [send_sync(client, sdk_call(i)) for i in cassette.interactions]

    assert parsed == [recorded_answer(i) for i in cassette.interactions]
    assert all(answer.error is None for answer in parsed)


def test_a_chat_stream_cassette_replays_the_agent_run_it_recorded() -> None:
    transport = CassetteTransport(
        REPOSITORY / "cassettes" / f"{chat_stream_cassette('max_tokens')}.json", strict=True
    )
    config = GatewayConfig(provider="openai", base_url="https://api.example.test")
    try:
        result = run_agent(
            chat_stream_agent(),
            LlmGateway(config, transport=transport),
            user_message="What is the capital of France?",
        )
    finally:
        transport.close()
    assert (result.status, result.output) == ("completed", TRIGGER_OUTPUT)
    assert {chunk.trigger for chunk in result.forced_chunks()} == {"max_tokens"}
    assert all(request.stream for request in result.requests("work"))


# -- the official Node SDKs ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def node() -> NodeSdks:
    return NodeSdks.installed()


def node_responses(base_url: str, *, stream: bool) -> NodeCall:
    return NodeCall(
        provider="openai",
        base_url=base_url,
        method="responses.create",
        params={
            "model": "gpt-4o-mini",
            "input": "Capital of France?",
            "tools": RESPONSES_TOOLS,
            "stream": stream,
        },
    )


@pytest.mark.subprocess
def test_node_responses_create_reads_a_script_session(node: NodeSdks, server: ReplayServer) -> None:
    """`responses.create` of the Node `openai` SDK gets the scripted `output_text`, streamed the
    text in `response.output_text.delta` events, and the function call as a `function_call`
    item, plain and streamed."""
    with server.session(script=[TEXT, TEXT, TOOL, TOOL], provider="openai") as session:
        base_url = session.base_url("openai")
        text, streamed_text, tool, streamed_tool = node.run(
            [
                node_responses(base_url, stream=False),
                node_responses(base_url, stream=True),
                node_responses(base_url, stream=False),
                node_responses(base_url, stream=True),
            ]
        )

    assert [result.error for result in (text, streamed_text, tool, streamed_tool)] == [None] * 4
    assert text.response["object"] == "response"
    assert text.response["output_text"] == "It is Paris."
    assert streamed_text.events is not None
    types = [event["type"] for event in streamed_text.events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    deltas = [e["delta"] for e in streamed_text.events if e["type"] == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == "It is Paris."
    assert [e["sequence_number"] for e in streamed_text.events] == list(range(len(types)))

    assert tool.response["output_text"] == "Let me look."
    calls = [item for item in tool.response["output"] if item["type"] == "function_call"]
    assert [(c["call_id"], c["name"], c["arguments"]) for c in calls] == [
        ("call_w1", "get_weather", '{"city":"Paris"}')
    ]
    assert streamed_tool.events is not None
    (done,) = [e for e in streamed_tool.events if e["type"] == "response.output_item.done"][1:]
    assert done["item"]["type"] == "function_call"
    assert done["item"]["call_id"] == "call_w1"
    assert streamed_tool.events[-1]["response"]["output"][1] == done["item"]


@pytest.mark.subprocess
def test_node_gets_a_404_naming_the_extra_v1_of_its_base_url(
    node: NodeSdks, server: ReplayServer
) -> None:
    """`@anthropic-ai/sdk` adds `/v1` itself: given the session's URL with `/v1` (the AI SDK's
    spelling) it sends `/s/<id>/v1/v1/messages`, session `<id>/v1`, which is none. The Node SDK
    raises its own `NotFoundError`, and the message names the URL to give instead. (The same
    URL without `/v1` is answered: `tests/serve/test_sdk_base_urls.py`.)"""
    with server.session(script=[TEXT], provider="anthropic") as session:
        (refused,) = node.run(
            [
                NodeCall(
                    provider="anthropic",
                    base_url=f"{session.base_url('anthropic')}/v1",
                    method="messages.create",
                    params={
                        "model": "claude-sonnet-4-5",
                        "max_tokens": 64,
                        "messages": [{"role": "user", "content": "Hi"}],
                    },
                )
            ]
        )

    assert refused.error is not None
    assert (refused.error.class_name, refused.error.status) == ("NotFoundError", 404)
    assert refused.error.body["error"]["type"] == "not_found_error"
    assert refused.error.body["error"]["message"] == (
        f"no session '{session.id}/v1': the SDK's base URL ends in /v1 and the SDK adds /v1 "
        f"itself (the official Anthropic SDKs do); give it the session's URL, /s/{session.id}, "
        "without /v1"
    )


def node_parsed(call: NodeCall, interaction: Interaction) -> Any:
    """What the Node SDK yields for `interaction`'s recorded answer: the JSON body (a Responses
    body with the `output_text` the SDK adds), or each event's data up to `[DONE]`."""
    response = interaction.response
    if response.events is None:
        body = json.loads(response.body_bytes())
        if call.method != "responses.create":
            return body
        texts = [
            part["text"]
            for item in body["output"]
            if item["type"] == "message"
            for part in item["content"]
            if part["type"] == "output_text"
        ]
        return {**body, "output_text": "".join(texts)}
    data = [event.data for event in response.events if event.data]
    return [json.loads(piece) for piece in data if piece != "[DONE]"]


@pytest.mark.subprocess
def test_the_node_sdks_parse_the_wire_cassettes_through_the_server_as_recorded(
    node: NodeSdks,
) -> None:
    planned: list[tuple[NodeCall, Interaction]] = []
    with ReplayServer(REPOSITORY / "cassettes") as replaying:
        for name in WIRE_CASSETTES:
            for interaction in Cassette.load(
                REPOSITORY / "cassettes" / f"{name}.json"
            ).interactions:
                path = interaction.request.path
                assert isinstance(interaction.request.body, dict)
                call = NodeCall(
                    provider="openai",
                    base_url=replaying.cassette_url(name, "openai"),
                    method="responses.create"
                    if path == "/v1/responses"
                    else "chat.completions.create",
                    params=interaction.request.body,
                )
                planned.append((call, interaction))
        results = node.run([call for call, _ in planned])

    assert {call.method for call, _ in planned} == {"responses.create", "chat.completions.create"}
    for (call, interaction), result in zip(planned, results, strict=True):
        assert result.error is None, result.error
        parsed = result.response if result.events is None else result.events
        assert parsed == node_parsed(call, interaction), call.params
