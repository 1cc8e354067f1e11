"""The `anthropic` SDK recorded and replayed through `CassetteTransport` on its own httpx2 client.

`messages.create` plain and with `stream=True`, and the `messages.stream(...)` helper, sync
(`Anthropic`) and async (`AsyncAnthropic`): each call is recorded against the loopback fake
provider, then replayed with the provider stopped and sockets blocked, and the replay must parse to
exactly what the recording parsed. A text answer, a tool call, an answer cut off by `max_tokens`,
a rate-limit error and an overload error in the middle of a stream are each covered.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import anthropic
import httpx2
import pytest
from anthropic.types import Message, RawMessageStreamEvent

from harness.cassettes import CassetteMissError, CassetteTransport, HttpxCassetteTransport
from tests.support.fake_provider import (
    Answer,
    Outcome,
    ProviderError,
    ToolCall,
    answer_by_prompt,
    serve,
)
from tests.support.sdk_replay import Failure, NetworkGuard, Said, SdkSuite

MODEL = "claude-sonnet-4-5"
OVERLOADED = ProviderError(
    status=529, kind="overloaded_error", message="Overloaded", mid_stream=True
)
OUTCOMES: dict[str, Outcome] = {
    "text": Answer(text="The capital of France is Paris."),
    "tool": Answer(
        text="Let me check.",
        tool_calls=(
            ToolCall(id="toolu_weather1", name="get_weather", arguments={"city": "Paris"}),
        ),
    ),
    "cut_off": Answer(text="The capital of France is", cut_off=True),
    "error": ProviderError(),
    "overloaded": OVERLOADED,
}
SCRIPT = answer_by_prompt(OUTCOMES)
TOOLS: Any = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]


def request(prompt: str) -> Any:
    return {
        "model": MODEL,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": prompt}],
        "tools": TOOLS,
    }


def sync_client(base_url: str, http_client: httpx2.Client) -> anthropic.Anthropic:
    # max_retries=0: anthropic retries any transport failure, a cassette miss included
    return anthropic.Anthropic(
        base_url=base_url, api_key="sk-ant-test", max_retries=0, http_client=http_client
    )


def async_client(base_url: str, http_client: httpx2.AsyncClient) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=base_url, api_key="sk-ant-test", max_retries=0, http_client=http_client
    )


# -- the three surfaces, sync and async ------------------------------------------------------------


def create(client: anthropic.Anthropic, prompt: str) -> object:
    return client.messages.create(**request(prompt))


def create_streamed(client: anthropic.Anthropic, prompt: str) -> object:
    with client.messages.create(**request(prompt), stream=True) as stream:
        return list(stream)


def stream_helper(client: anthropic.Anthropic, prompt: str) -> object:
    with client.messages.stream(**request(prompt)) as stream:
        return list(stream), stream.get_final_message()


async def create_async(client: anthropic.AsyncAnthropic, prompt: str) -> object:
    return await client.messages.create(**request(prompt))


async def create_streamed_async(client: anthropic.AsyncAnthropic, prompt: str) -> object:
    async with await client.messages.create(**request(prompt), stream=True) as stream:
        return [event async for event in stream]


async def stream_helper_async(client: anthropic.AsyncAnthropic, prompt: str) -> object:
    async with client.messages.stream(**request(prompt)) as stream:
        return [event async for event in stream], await stream.get_final_message()


SyncSurface = Callable[[anthropic.Anthropic, str], object]
AsyncSurface = Callable[[anthropic.AsyncAnthropic, str], Awaitable[object]]
SYNC_SURFACES: dict[str, SyncSurface] = {
    "create": create,
    "create-stream": create_streamed,
    "stream": stream_helper,
}
ASYNC_SURFACES: dict[str, AsyncSurface] = {
    "create": create_async,
    "create-stream": create_streamed_async,
    "stream": stream_helper_async,
}


# -- what the model said, read back from each surface's parsed result ------------------------------


def expected(answer: Answer) -> Said:
    stop = "max_tokens" if answer.cut_off else "tool_use" if answer.tool_calls else "end_turn"
    return Said(answer.text, [(call.name, call.arguments) for call in answer.tool_calls], stop)


def said_by_message(result: object) -> Said:
    message = cast(Message, result)
    text = "".join(block.text for block in message.content if block.type == "text")
    calls = [(block.name, block.input) for block in message.content if block.type == "tool_use"]
    return Said(text, calls, message.stop_reason)


def said_by_events(result: object) -> Said:
    """The reply rebuilt from the raw events, as a caller of `create(stream=True)` does."""
    events = cast(list[RawMessageStreamEvent], result)
    assert [event.type for event in events[:1]] == ["message_start"]
    assert events[-1].type == "message_stop"
    text, names, partial, stop = "", dict[int, str](), dict[int, str](), None
    for event in events:
        if event.type == "content_block_start" and event.content_block.type == "tool_use":
            names[event.index] = event.content_block.name
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            text += event.delta.text
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            partial[event.index] = partial.get(event.index, "") + event.delta.partial_json
        elif event.type == "message_delta":
            stop = event.delta.stop_reason
    calls = [(names[index], json.loads(partial[index])) for index in sorted(names)]
    return Said(text, calls, stop)


def said_by_stream_helper(result: object) -> Said:
    events, final = cast(tuple[list[Any], Message], result)
    streamed = "".join(event.text for event in events if event.type == "text")
    said = said_by_message(final)
    assert streamed == said.text
    return said


SAID_BY: dict[str, Callable[[object], Said]] = {
    "create": said_by_message,
    "create-stream": said_by_events,
    "stream": said_by_stream_helper,
}


def said(answer: Answer) -> Callable[[str, object], None]:
    def check(surface: str, recorded: object) -> None:
        assert SAID_BY[surface](recorded) == expected(answer)

    return check


def refused(error: ProviderError) -> Callable[[str, object], None]:
    def check(surface: str, recorded: object) -> None:
        assert isinstance(recorded, Failure)
        if error.mid_stream and surface != "create":
            # the stream had started with status 200: anthropic raises its base status error
            assert recorded.error_type is anthropic.APIStatusError
            assert recorded.status_code == 200
        else:
            assert recorded.status_code == error.status
            assert issubclass(recorded.error_type, anthropic.APIStatusError)
        assert recorded.body == {
            "type": "error",
            "error": {"type": error.kind, "message": error.message},
        }

    return check


def on_sync_client(surface: SyncSurface) -> Callable[[str, CassetteTransport, str], object]:
    def call(base_url: str, transport: CassetteTransport, prompt: str) -> object:
        with sync_client(base_url, httpx2.Client(transport=transport)) as client:
            return surface(client, prompt)

    return call


def on_async_client(
    surface: AsyncSurface,
) -> Callable[[str, CassetteTransport, str], Awaitable[object]]:
    async def call(base_url: str, transport: CassetteTransport, prompt: str) -> object:
        async with async_client(base_url, httpx2.AsyncClient(transport=transport)) as client:
            return await surface(client, prompt)

    return call


SUITE = SdkSuite(
    script=SCRIPT,
    expectations={
        case: said(outcome) if isinstance(outcome, Answer) else refused(outcome)
        for case, outcome in OUTCOMES.items()
    },
    sync_surfaces={name: on_sync_client(surface) for name, surface in SYNC_SURFACES.items()},
    async_surfaces={name: on_async_client(surface) for name, surface in ASYNC_SURFACES.items()},
)
test_sync_client_replays_what_it_recorded = SUITE.sync_test()
test_async_client_replays_what_it_recorded = SUITE.async_test()


# -- anthropic's own http clients, misses --------------------------------------------------------


@pytest.fixture
def recorded_text(tmp_path: Path) -> Path:
    """A cassette holding one recorded message, for the prompt "text"."""
    path = tmp_path / "text.json"
    with (
        serve(SCRIPT) as provider,
        sync_client(
            provider.base_url, httpx2.Client(transport=CassetteTransport(path, "once"))
        ) as client,
    ):
        create(client, "text")
    return path


def test_default_httpx_client_takes_our_transport(
    recorded_text: Path, network_guard: NetworkGuard
) -> None:
    """`anthropic.DefaultHttpxClient` refuses any transport with an httpx 0.28 class in its
    MRO; `CassetteTransport` is a pure httpx2 transport, so it is accepted and replays."""
    http_client = anthropic.DefaultHttpxClient(transport=CassetteTransport(recorded_text))
    with network_guard.blocked(), sync_client("http://127.0.0.1:9", http_client) as client:
        message = create(client, "text")
    assert said_by_message(message) == expected(cast(Answer, OUTCOMES["text"]))


@pytest.mark.anyio
async def test_default_async_httpx_client_takes_our_transport(
    recorded_text: Path, network_guard: NetworkGuard
) -> None:
    http_client = anthropic.DefaultAsyncHttpxClient(transport=CassetteTransport(recorded_text))
    with network_guard.blocked():
        async with async_client("http://127.0.0.1:9", http_client) as client:
            message = await create_async(client, "text")
    assert said_by_message(message) == expected(cast(Answer, OUTCOMES["text"]))


def test_the_httpx_typed_transport_is_refused_by_anthropic_with_its_own_advice(
    recorded_text: Path,
) -> None:
    """`HttpxCassetteTransport` is for httpx 0.28 clients; anthropic says which class to use."""
    with pytest.raises(TypeError, match="this SDK uses `httpx2`"):
        anthropic.DefaultHttpxClient(transport=HttpxCassetteTransport(recorded_text))


def test_a_miss_is_a_connection_error_caused_by_our_cassette_miss(
    recorded_text: Path, network_guard: NetworkGuard
) -> None:
    """anthropic wraps whatever its transport raises in `APIConnectionError`; our `CassetteMissError`,
    with its explanation, is the `__cause__`. (max_retries=0: anthropic would retry it first.)"""
    transport = CassetteTransport(recorded_text)
    with (
        network_guard.blocked(),
        sync_client("http://127.0.0.1:9", httpx2.Client(transport=transport)) as client,
    ):
        with pytest.raises(anthropic.APIConnectionError) as caught:
            create(client, "a prompt that was never recorded")
    miss = caught.value.__cause__
    assert type(miss) is CassetteMissError
    assert f"cassette {recorded_text} has no interaction for POST /v1/messages" in str(miss)


@pytest.mark.anyio
async def test_an_async_miss_is_a_connection_error_caused_by_our_cassette_miss(
    recorded_text: Path, network_guard: NetworkGuard
) -> None:
    transport = CassetteTransport(recorded_text)
    with network_guard.blocked():
        async with async_client(
            "http://127.0.0.1:9", httpx2.AsyncClient(transport=transport)
        ) as client:
            with pytest.raises(anthropic.APIConnectionError) as caught:
                await create_async(client, "a prompt that was never recorded")
    assert type(caught.value.__cause__) is CassetteMissError
    assert "has no interaction for POST /v1/messages" in str(caught.value.__cause__)
