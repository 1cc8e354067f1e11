"""The `openai` SDK recorded and replayed through `CassetteTransport` on its own httpx2 client.

Chat Completions and Responses, plain and streamed, sync (`OpenAI`) and async (`AsyncOpenAI`):
each call is recorded against the loopback fake provider, then replayed with the provider stopped
and sockets blocked, and the replay must parse to exactly what the recording parsed. A text answer,
a tool call, an answer cut off by the token limit and a rate-limit error are each covered.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import httpx
import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent

from harness.cassettes import Cassette, CassetteMissError, CassetteTransport, HttpxCassetteTransport
from tests.support.fake_provider import (
    Answer,
    Outcome,
    ProviderError,
    Reply,
    ToolCall,
    answer_by_prompt,
    openai_chat_reply,
    serve,
)
from tests.support.sdk_replay import Failure, NetworkGuard, Said, SdkSuite

MODEL = "gpt-4o-mini"
OUTCOMES: dict[str, Outcome] = {
    "text": Answer(text="The capital of France is Paris."),
    "tool": Answer(
        tool_calls=(ToolCall(id="call_weather1", name="get_weather", arguments={"city": "Paris"}),)
    ),
    "cut_off": Answer(text="The capital of France is", cut_off=True),
    "error": ProviderError(),
}
SCRIPT = answer_by_prompt(OUTCOMES)
WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
CHAT_TOOLS: Any = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_PARAMETERS}}
]
RESPONSE_TOOLS: Any = [
    {"type": "function", "name": "get_weather", "parameters": WEATHER_PARAMETERS, "strict": True}
]


def user(prompt: str) -> Any:
    return [{"role": "user", "content": prompt}]


def sync_client(base_url: str, transport: CassetteTransport) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{base_url}/v1",
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


def async_client(base_url: str, transport: CassetteTransport) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{base_url}/v1",
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=transport),
    )


# -- the four surfaces, sync and async -------------------------------------------------------------


def chat(client: openai.OpenAI, prompt: str) -> object:
    return client.chat.completions.create(
        model=MODEL, messages=user(prompt), tools=CHAT_TOOLS, max_tokens=64
    )


def chat_streamed(client: openai.OpenAI, prompt: str) -> object:
    with client.chat.completions.create(
        model=MODEL, messages=user(prompt), tools=CHAT_TOOLS, max_tokens=64, stream=True
    ) as stream:
        return list(stream)


def responses(client: openai.OpenAI, prompt: str) -> object:
    return client.responses.create(
        model=MODEL, input=prompt, tools=RESPONSE_TOOLS, max_output_tokens=64
    )


def responses_streamed(client: openai.OpenAI, prompt: str) -> object:
    with client.responses.create(
        model=MODEL, input=prompt, tools=RESPONSE_TOOLS, max_output_tokens=64, stream=True
    ) as stream:
        return list(stream)


async def chat_async(client: openai.AsyncOpenAI, prompt: str) -> object:
    return await client.chat.completions.create(
        model=MODEL, messages=user(prompt), tools=CHAT_TOOLS, max_tokens=64
    )


async def chat_streamed_async(client: openai.AsyncOpenAI, prompt: str) -> object:
    async with await client.chat.completions.create(
        model=MODEL, messages=user(prompt), tools=CHAT_TOOLS, max_tokens=64, stream=True
    ) as stream:
        return [chunk async for chunk in stream]


async def responses_async(client: openai.AsyncOpenAI, prompt: str) -> object:
    return await client.responses.create(
        model=MODEL, input=prompt, tools=RESPONSE_TOOLS, max_output_tokens=64
    )


async def responses_streamed_async(client: openai.AsyncOpenAI, prompt: str) -> object:
    async with await client.responses.create(
        model=MODEL, input=prompt, tools=RESPONSE_TOOLS, max_output_tokens=64, stream=True
    ) as stream:
        return [event async for event in stream]


SyncSurface = Callable[[openai.OpenAI, str], object]
AsyncSurface = Callable[[openai.AsyncOpenAI, str], Awaitable[object]]
SYNC_SURFACES: dict[str, SyncSurface] = {
    "chat": chat,
    "chat-stream": chat_streamed,
    "responses": responses,
    "responses-stream": responses_streamed,
}
ASYNC_SURFACES: dict[str, AsyncSurface] = {
    "chat": chat_async,
    "chat-stream": chat_streamed_async,
    "responses": responses_async,
    "responses-stream": responses_streamed_async,
}


# -- what the model said, read back from each surface's parsed result ------------------------------


def expected(answer: Answer) -> Said:
    stop = "cut_off" if answer.cut_off else "tool" if answer.tool_calls else "end"
    return Said(answer.text, [(call.name, call.arguments) for call in answer.tool_calls], stop)


CHAT_STOPS = {"stop": "end", "tool_calls": "tool", "length": "cut_off"}


def said_by_chat(result: object) -> Said:
    completion = cast(ChatCompletion, result)
    message, finish = completion.choices[0].message, completion.choices[0].finish_reason
    calls = [
        (call.function.name, json.loads(call.function.arguments))
        for call in message.tool_calls or []
        if call.type == "function"
    ]
    return Said(message.content or "", calls, CHAT_STOPS[finish])


def said_by_chat_stream(result: object) -> Said:
    chunks = cast(list[ChatCompletionChunk], result)
    text, names, arguments, finish = "", dict[int, str](), dict[int, str](), ""
    for choice in (choice for chunk in chunks for choice in chunk.choices):
        text += choice.delta.content or ""
        for call in choice.delta.tool_calls or []:
            if call.function is not None:
                names[call.index] = names.get(call.index, "") + (call.function.name or "")
                arguments[call.index] = arguments.get(call.index, "") + (
                    call.function.arguments or ""
                )
        finish = choice.finish_reason or finish
    calls = [(names[index], json.loads(arguments[index])) for index in sorted(names)]
    return Said(text, calls, CHAT_STOPS[finish])


def said_by_response(result: object) -> Said:
    response = cast(Response, result)
    calls = [
        (item.name, json.loads(item.arguments))
        for item in response.output
        if item.type == "function_call"
    ]
    cut_off = response.incomplete_details is not None and (
        response.incomplete_details.reason == "max_output_tokens"
    )
    stop = "cut_off" if cut_off else "tool" if calls else "end"
    return Said(response.output_text, calls, stop)


def said_by_response_stream(result: object) -> Said:
    events = cast(list[ResponseStreamEvent], result)
    last = events[-1]
    assert last.type in ("response.completed", "response.incomplete")
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    said = said_by_response(last.response)
    assert deltas == said.text
    return said


SAID_BY: dict[str, Callable[[object], Said]] = {
    "chat": said_by_chat,
    "chat-stream": said_by_chat_stream,
    "responses": said_by_response,
    "responses-stream": said_by_response_stream,
}


def said(answer: Answer) -> Callable[[str, object], None]:
    def check(surface: str, recorded: object) -> None:
        assert SAID_BY[surface](recorded) == expected(answer)

    return check


def rate_limited(error: ProviderError) -> Callable[[str, object], None]:
    def check(surface: str, recorded: object) -> None:
        assert isinstance(recorded, Failure)
        assert recorded.error_type is openai.RateLimitError
        assert recorded.status_code == 429
        assert error.message in recorded.message

    return check


def on_sync_client(surface: SyncSurface) -> Callable[[str, CassetteTransport, str], object]:
    def call(base_url: str, transport: CassetteTransport, prompt: str) -> object:
        with sync_client(base_url, transport) as client:
            return surface(client, prompt)

    return call


def on_async_client(
    surface: AsyncSurface,
) -> Callable[[str, CassetteTransport, str], Awaitable[object]]:
    async def call(base_url: str, transport: CassetteTransport, prompt: str) -> object:
        async with async_client(base_url, transport) as client:
            return await surface(client, prompt)

    return call


SUITE = SdkSuite(
    script=SCRIPT,
    expectations={
        case: said(outcome) if isinstance(outcome, Answer) else rate_limited(outcome)
        for case, outcome in OUTCOMES.items()
    },
    sync_surfaces={name: on_sync_client(surface) for name, surface in SYNC_SURFACES.items()},
    async_surfaces={name: on_async_client(surface) for name, surface in ASYNC_SURFACES.items()},
)
test_sync_client_replays_what_it_recorded = SUITE.sync_test()
test_async_client_replays_what_it_recorded = SUITE.async_test()


# -- misses, client kinds, abandoned streams -------------------------------------------------------


@pytest.fixture
def recorded_text(tmp_path: Path) -> Path:
    """A cassette holding one recorded chat completion, for the prompt "text"."""
    path = tmp_path / "text.json"
    with (
        serve(SCRIPT) as provider,
        sync_client(provider.base_url, CassetteTransport(path, "once")) as client,
    ):
        chat(client, "text")
    return path


HTTP_CLIENTS: dict[str, Callable[[Path], Any]] = {
    "httpx2-CassetteTransport": lambda path: httpx2.Client(transport=CassetteTransport(path)),
    "httpx2-HttpxCassetteTransport": lambda path: httpx2.Client(
        transport=HttpxCassetteTransport(path)
    ),
    # openai still accepts an httpx 0.28 client at run time (its types say httpx2 only)
    "httpx-CassetteTransport": lambda path: httpx.Client(
        transport=cast(httpx.BaseTransport, CassetteTransport(path))
    ),
    "httpx-HttpxCassetteTransport": lambda path: httpx.Client(
        transport=HttpxCassetteTransport(path)
    ),
    "openai-DefaultHttpxClient": lambda path: openai.DefaultHttpxClient(
        transport=CassetteTransport(path)
    ),
}


@pytest.mark.parametrize("http_client", HTTP_CLIENTS)
def test_every_http_client_kind_replays_and_a_miss_is_our_cassette_miss(
    recorded_text: Path, network_guard: NetworkGuard, http_client: str
) -> None:
    """A hit parses; a miss is `CassetteMissError` itself, unchanged by openai and with its
    explanation, never a bare `AssertionError` from inside an HTTP library."""
    with (
        network_guard.blocked(),
        openai.OpenAI(
            base_url="http://127.0.0.1:9/v1",
            api_key="sk-test",
            max_retries=2,  # the SDK's default: a miss still surfaces as itself
            http_client=HTTP_CLIENTS[http_client](recorded_text),
        ) as client,
    ):
        assert said_by_chat(chat(client, "text")) == expected(cast(Answer, OUTCOMES["text"]))
        with pytest.raises(CassetteMissError) as caught:
            chat(client, "a prompt that was never recorded")
    assert type(caught.value) is CassetteMissError
    assert f"cassette {recorded_text} has no interaction for POST /v1/chat/completions" in str(
        caught.value
    )


ASYNC_HTTP_CLIENTS: dict[str, Callable[[Path], Any]] = {
    "httpx2-CassetteTransport": lambda path: httpx2.AsyncClient(transport=CassetteTransport(path)),
    "httpx-HttpxCassetteTransport": lambda path: httpx.AsyncClient(
        transport=HttpxCassetteTransport(path)
    ),
    "openai-DefaultAsyncHttpxClient": lambda path: openai.DefaultAsyncHttpxClient(
        transport=CassetteTransport(path)
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("http_client", ASYNC_HTTP_CLIENTS)
async def test_an_async_miss_is_our_cassette_miss(
    recorded_text: Path, network_guard: NetworkGuard, http_client: str
) -> None:
    with network_guard.blocked():
        async with openai.AsyncOpenAI(
            base_url="http://127.0.0.1:9/v1",
            api_key="sk-test",
            max_retries=2,
            http_client=ASYNC_HTTP_CLIENTS[http_client](recorded_text),
        ) as client:
            assert said_by_chat(await chat_async(client, "text")).text.endswith("Paris.")
            with pytest.raises(CassetteMissError) as caught:
                await chat_async(client, "a prompt that was never recorded")
    assert type(caught.value) is CassetteMissError
    assert "has no interaction for POST /v1/chat/completions" in str(caught.value)


# the request `chat_streamed` sends for the prompt "count"
STREAMED_COUNT: Any = {
    "model": MODEL,
    "messages": user("count"),
    "tools": CHAT_TOOLS,
    "max_tokens": 64,
    "stream": True,
}


def stream_script(request: Any) -> Reply:
    return openai_chat_reply(Answer(text="one two three four five six"), stream=True)


def test_a_stream_left_after_break_is_still_recorded_whole(
    tmp_path: Path, network_guard: NetworkGuard
) -> None:
    """Leaving a stream with `break` and no `with` leaves the response open until the garbage
    collector closes it, after the client has closed: the cassette still gets all of it."""
    path = tmp_path / "abandoned.json"
    with serve(stream_script) as provider:
        with sync_client(provider.base_url, CassetteTransport(path, "once")) as client:
            for _chunk in client.chat.completions.create(**STREAMED_COUNT):
                break
    (interaction,) = Cassette.load(path).interactions
    assert interaction.response.events is not None
    assert interaction.response.events[-1].data == "[DONE]"
    with network_guard.blocked(), sync_client(provider.base_url, CassetteTransport(path)) as client:
        replayed = chat_streamed(client, "count")
    assert said_by_chat_stream(replayed).text == "one two three four five six"


@pytest.mark.anyio
async def test_an_async_stream_left_after_break_is_still_recorded_whole(
    tmp_path: Path, network_guard: NetworkGuard
) -> None:
    path = tmp_path / "abandoned.json"
    with serve(stream_script) as provider:
        async with async_client(provider.base_url, CassetteTransport(path, "once")) as client:
            async for _chunk in await client.chat.completions.create(**STREAMED_COUNT):
                break
    (interaction,) = Cassette.load(path).interactions
    assert interaction.response.events is not None
    assert interaction.response.events[-1].data == "[DONE]"
    with network_guard.blocked():
        async with async_client(provider.base_url, CassetteTransport(path)) as client:
            replayed = await chat_streamed_async(client, "count")
    assert said_by_chat_stream(replayed).text == "one two three four five six"


def test_the_providers_request_id_is_not_replayed(
    tmp_path: Path, network_guard: NetworkGuard
) -> None:
    """Cassettes drop per-call headers such as `x-request-id` (re-recording the same traffic
    must not rewrite the file), so `_request_id` is None on replay; everything else matches."""

    def with_request_id(request: Any) -> Reply:
        reply = openai_chat_reply(Answer(text="Paris."))
        return Reply(headers={"x-request-id": "req_fake123"}, body=reply.body)

    path = tmp_path / "request-id.json"
    with serve(with_request_id) as provider:
        with sync_client(provider.base_url, CassetteTransport(path, "once")) as client:
            recorded = cast(ChatCompletion, chat(client, "text"))
    with network_guard.blocked(), sync_client(provider.base_url, CassetteTransport(path)) as client:
        replayed = cast(ChatCompletion, chat(client, "text"))
    assert recorded._request_id == "req_fake123"
    assert replayed._request_id is None
    assert replayed.model_dump() == recorded.model_dump()
