"""Many clients at once each get their own answer; a client leaving mid-stream harms nothing.

Twenty clients start together, each streaming: ten on ten different cassettes under `/c/`, five
on sessions over five of those cassettes (a session plays its cassette afresh), five on scripted
sessions. Each must parse exactly the answer recorded (or scripted) for its own cassette or
session. A client that closes its stream after the first event leaves the server answering the
next request, and, while recording, the cassette still gets the provider's whole answer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from harness.cassettes import Cassette
from harness.serve import ReplayServer
from tests.support.fake_provider import (
    Answer,
    HeldStream,
    ReceivedRequest,
    Reply,
    last_user_prompt,
    reply_for,
    serve,
)
from tests.support.serve_http import provider_environ
from tests.support.serve_sdk import (
    Parsed,
    Provider,
    SdkCall,
    async_client,
    make_call,
    recorded_answer,
    sdk_call,
    send_async,
    send_sync,
    sync_client,
)

CASSETTES = 10
SESSIONS = 5


def streamed(provider: Provider, prompt: str) -> SdkCall:
    if provider == "openai":
        body = {"model": "gpt-4o-mini", "stream": True}
        return SdkCall(
            "openai", "chat", {**body, "messages": [{"role": "user", "content": prompt}]}
        )
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": True}
    return SdkCall(
        "anthropic", "messages", {**body, "messages": [{"role": "user", "content": prompt}]}
    )


def provider_for(index: int) -> Provider:
    return "openai" if index % 2 == 0 else "anthropic"


def answer_the_prompt(request: ReceivedRequest) -> Reply:
    return reply_for(request, Answer(text=f"answer to {last_user_prompt(request.json())}"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Cassettes `many/0` ... `many/9`, each one streamed answer naming its own cassette."""
    folder = tmp_path_factory.mktemp("many")
    with serve(answer_the_prompt) as provider:
        environ = provider_environ(provider.base_url)
        with ReplayServer(folder, record_mode="once", environ=environ) as server:
            for index in range(CASSETTES):
                provider_name = provider_for(index)
                url = server.cassette_url(f"many/{index}", provider_name)
                with sync_client(provider_name, url) as client:
                    send_sync(client, streamed(provider_name, f"cassette {index}"))
    return folder


@dataclass(frozen=True)
class Client:
    """One client of the crowd: where it sends, what, and what it must parse."""

    base_url: str
    call: SdkCall
    expected: Parsed


def scripted_text(parsed: Parsed) -> str:
    assert parsed.events is not None
    return "".join(
        event["choices"][0]["delta"].get("content") or ""
        for event in parsed.events
        if event.get("choices")
    )


def crowd(server: ReplayServer, folder: Path) -> list[Client]:
    clients: list[Client] = []
    for index in range(CASSETTES):
        (interaction,) = Cassette.load(folder / "many" / f"{index}.json").interactions
        call, expected = sdk_call(interaction), recorded_answer(interaction)
        assert expected.events, "each cassette holds a stream"
        clients.append(Client(server.cassette_url(f"many/{index}", call.provider), call, expected))
        if index < SESSIONS:
            session = server.session(cassette=f"many/{index}")
            clients.append(Client(session.base_url(call.provider), call, expected))
    return clients


def scripted_sessions(server: ReplayServer) -> list[tuple[str, str]]:
    """(base URL, the text it is scripted to stream) of each scripted session."""
    sessions = []
    for index in range(SESSIONS):
        text = f"scripted session {index}"
        session = server.session(script=[{"text": text}], provider="openai")
        sessions.append((session.base_url("openai"), text))
    return sessions


@pytest.fixture
def replaying(recorded: Path) -> Iterator[ReplayServer]:
    with ReplayServer(recorded) as server:
        yield server


def test_twenty_threads_streaming_at_once_each_parse_their_own_answer(
    replaying: ReplayServer, recorded: Path
) -> None:
    clients, scripted = crowd(replaying, recorded), scripted_sessions(replaying)
    start = threading.Barrier(len(clients) + len(scripted))

    def replay(client: Client) -> Parsed:
        with sync_client(client.call.provider, client.base_url) as sdk:
            start.wait(30)
            return send_sync(sdk, client.call)

    def script(base_url: str) -> Parsed:
        with sync_client("openai", base_url) as sdk:
            start.wait(30)
            return send_sync(sdk, streamed("openai", "anything"))

    with ThreadPoolExecutor(max_workers=len(clients) + len(scripted)) as pool:
        replayed = [pool.submit(replay, client) for client in clients]
        played = [pool.submit(script, base_url) for base_url, _ in scripted]

    assert len(replayed) + len(played) == 20
    for client, result in zip(clients, replayed, strict=True):
        assert result.result() == client.expected, client.base_url
    for (base_url, text), result in zip(scripted, played, strict=True):
        assert scripted_text(result.result()) == text, base_url


@pytest.mark.anyio
async def test_twenty_tasks_streaming_at_once_each_parse_their_own_answer(
    replaying: ReplayServer, recorded: Path
) -> None:
    clients, scripted = crowd(replaying, recorded), scripted_sessions(replaying)
    results: dict[int, Parsed] = {}

    async def replay(slot: int, base_url: str, provider: Provider, call: SdkCall) -> None:
        async with async_client(provider, base_url) as sdk:
            results[slot] = await send_async(sdk, call)

    async with anyio.create_task_group() as tasks:
        for slot, client in enumerate(clients):
            tasks.start_soon(replay, slot, client.base_url, client.call.provider, client.call)
        for slot, (base_url, _) in enumerate(scripted, start=len(clients)):
            tasks.start_soon(replay, slot, base_url, "openai", streamed("openai", "anything"))

    assert len(results) == 20
    for slot, client in enumerate(clients):
        assert results[slot] == client.expected, client.base_url
    for slot, (base_url, text) in enumerate(scripted, start=len(clients)):
        assert scripted_text(results[slot]) == text, base_url


# -- a client that leaves mid-stream ---------------------------------------------------------------


def leave_after_the_first_event(base_url: str, call: SdkCall) -> object:
    """Stream `call` and close the stream (and its connection) after the first event."""
    with sync_client(call.provider, base_url) as sdk:
        stream = make_call(sdk, call)
        with stream:
            return next(iter(stream))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_client_leaving_mid_stream_while_recording_leaves_the_cassette_whole(
    provider: Provider, tmp_path: Path
) -> None:
    held = HeldStream(Answer(text="The capital of France is Paris, on the Seine."))
    call = streamed(provider, "What is the capital of France?")
    with serve(held) as fake:
        environ = provider_environ(fake.base_url)
        with ReplayServer(tmp_path, record_mode="once", environ=environ) as server:
            url = server.cassette_url("left", provider)
            first = leave_after_the_first_event(url, call)
            held.release.set()
            assert held.last_sent.wait(10), "the provider was not read to the end"
            with sync_client(provider, url) as sdk:
                after = send_sync(sdk, streamed(provider, "And of Italy?"))

    assert first is not None
    assert after.events, "the server stopped answering"
    left, then = Cassette.load(tmp_path / "left.json").interactions
    assert left.response.body_bytes() == fake.sent[0]  # the whole stream, not the part read
    assert then.response.body_bytes() == fake.sent[1]
    with ReplayServer(tmp_path) as replaying:
        with sync_client(provider, replaying.cassette_url("left", provider)) as sdk:
            assert send_sync(sdk, sdk_call(left)) == recorded_answer(left)


def test_a_client_leaving_mid_replay_leaves_the_server_serving(recorded: Path) -> None:
    (interaction,) = Cassette.load(recorded / "many" / "0.json").interactions
    call = sdk_call(interaction)
    with ReplayServer(recorded) as server:
        first = leave_after_the_first_event(server.cassette_url("many/0", "openai"), call)
        with server.session(cassette="many/0") as session:
            with sync_client("openai", session.base_url("openai")) as sdk:
                again = send_sync(sdk, call)

    assert first is not None
    assert again == recorded_answer(interaction)
