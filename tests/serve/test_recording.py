"""A recording server: misses go to the provider with the server's key, never the client's.

The server runs with `record_mode="once"` and its own environment (`OPENAI_API_KEY`,
`OPENAI_BASE_URL`, `ANTHROPIC_...`) pointing at the loopback fake provider; SDK clients hold a
canary key of their own. The provider must receive the server's key and nothing of the client's;
the cassette must hold neither key in any byte (even where the provider echoes the key back),
must verify on load and refuse to load once edited; two clients recording into one cassette at
once must both be kept; and a stream must reach the client event by event while it is recorded.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from harness.cassettes import Cassette, CassetteTamperedError
from harness.serve import ReplayServer
from tests.support.fake_provider import (
    Answer,
    FakeProvider,
    HeldStream,
    ReceivedRequest,
    Reply,
    last_user_prompt,
    reply_for,
    serve,
)
from tests.support.serve_http import SERVER_KEYS, provider_environ
from tests.support.serve_sdk import (
    CLIENT_KEYS,
    SdkCall,
    as_json,
    make_call,
    recorded_answer,
    sdk_call,
    send_sync,
    sync_client,
)

CALLS: dict[str, SdkCall] = {
    "chat": SdkCall("openai", "chat", {"model": "gpt-4o-mini", "messages": []}),
    "chat-stream": SdkCall(
        "openai", "chat", {"model": "gpt-4o-mini", "messages": [], "stream": True}
    ),
    "responses": SdkCall("openai", "responses", {"model": "gpt-4o-mini", "input": []}),
    "messages": SdkCall(
        "anthropic", "messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": []}
    ),
    "messages-stream": SdkCall(
        "anthropic",
        "messages",
        {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [], "stream": True},
    ),
}


def asking(call: SdkCall, prompt: str) -> SdkCall:
    """`call` with one user turn saying `prompt`."""
    turn = [{"role": "user", "content": prompt}]
    field = "input" if call.method == "responses" else "messages"
    return SdkCall(call.provider, call.method, {**call.body, field: turn})


def echo_credentials(request: ReceivedRequest) -> Reply:
    """Answers with the credential the request came with, as a careless provider error might."""
    key = request.headers.get("authorization") or request.headers.get("x-api-key") or ""
    return reply_for(request, Answer(text=f"you sent {key} and asked {request.json()}"))


def answer_the_prompt(request: ReceivedRequest) -> Reply:
    return reply_for(request, Answer(text=f"answer to {last_user_prompt(request.json())}"))


@pytest.fixture
def echoing() -> Iterator[FakeProvider]:
    with serve(echo_credentials) as provider:
        yield provider


@pytest.mark.parametrize("surface", CALLS)
def test_a_miss_is_forwarded_with_the_servers_key_and_recorded_without_any_key(
    surface: str, echoing: FakeProvider, tmp_path: Path
) -> None:
    # the client's key is in its prompt too: the prompt goes to the provider, but not to disk
    call = asking(CALLS[surface], f"my key is {CLIENT_KEYS[CALLS[surface].provider]}")
    with ReplayServer(
        tmp_path, record_mode="once", environ=provider_environ(echoing.base_url)
    ) as server:
        with sync_client(call.provider, server.cassette_url("recorded", call.provider)) as client:
            answer = send_sync(client, call)

    assert answer.error is None
    (received,) = echoing.received
    if call.provider == "openai":
        assert received.headers["authorization"] == f"Bearer {SERVER_KEYS['openai']}"
        assert "x-api-key" not in received.headers
    else:
        assert received.headers["x-api-key"] == SERVER_KEYS["anthropic"]
        assert "authorization" not in received.headers
    client_key = CLIENT_KEYS[call.provider]
    assert all(client_key not in value for value in received.headers.values())
    written = (tmp_path / "recorded.json").read_bytes()
    assert b"you sent" in written  # the echo was recorded...
    assert b"CANARY" not in written  # ...without either key: every canary key holds the word
    (interaction,) = Cassette.load(tmp_path / "recorded.json").interactions
    credential = "authorization" if call.provider == "openai" else "x-api-key"
    assert interaction.request.headers[credential] == "[SCRUBBED]"


def test_an_edited_recording_no_longer_loads(echoing: FakeProvider, tmp_path: Path) -> None:
    with ReplayServer(
        tmp_path, record_mode="once", environ=provider_environ(echoing.base_url)
    ) as server:
        with sync_client("openai", server.cassette_url("recorded", "openai")) as client:
            send_sync(client, asking(CALLS["chat"], "What is the capital of France?"))
    path = tmp_path / "recorded.json"
    Cassette.load(path)

    path.write_text(path.read_text(encoding="utf-8").replace("you sent", "you said"), "utf-8")

    with pytest.raises(CassetteTamperedError, match=r"interaction #0 .* digest mismatch"):
        Cassette.load(path)


def test_a_session_on_a_server_allowing_session_records_records_with_the_servers_key(
    echoing: FakeProvider, tmp_path: Path
) -> None:
    with ReplayServer(
        tmp_path, allow_session_record=True, environ=provider_environ(echoing.base_url)
    ) as server:
        with server.session(cassette="by-session", record_mode="once") as session:
            with sync_client("anthropic", session.base_url("anthropic")) as client:
                answer = send_sync(client, asking(CALLS["messages"], "Hello"))

    assert answer.error is None
    (received,) = echoing.received
    assert received.headers["x-api-key"] == SERVER_KEYS["anthropic"]
    assert b"CANARY" not in (tmp_path / "by-session.json").read_bytes()


def test_a_provider_that_cannot_be_reached_is_a_502_naming_the_variable(tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port nothing listens on once this block ends
        closed.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{closed.getsockname()[1]}"
    with ReplayServer(tmp_path, record_mode="once", environ=provider_environ(nowhere)) as server:
        with sync_client("openai", server.cassette_url("unreachable", "openai")) as client:
            failed = send_sync(client, asking(CALLS["chat"], "Hello"))

    assert failed.error is not None
    assert (failed.error.status, failed.error.typed) == (502, "InternalServerError")
    assert failed.error.body == {
        "message": "the provider could not be reached to record this request (ConnectError); "
        "check OPENAI_BASE_URL",
        "type": "api_error",
        "param": None,
        "code": None,
    }
    assert not (tmp_path / "unreachable.json").exists()


# -- two clients at once ---------------------------------------------------------------------------

PROMPTS = ("first", "second", "third")


def record_concurrently(servers: list[ReplayServer], cassette: str) -> None:
    """Two clients, on two threads and (given two) two servers, start together and record three
    prompts each into `cassette`."""
    start = threading.Barrier(2)

    def client(index: int) -> None:
        server = servers[index % len(servers)]
        with sync_client("openai", server.cassette_url(cassette, "openai")) as sdk:
            start.wait(10)
            for prompt in PROMPTS:
                answer = send_sync(sdk, asking(CALLS["chat"], f"client {index} {prompt}"))
                assert answer.error is None, answer

    with ThreadPoolExecutor(max_workers=2) as pool:
        for done in [pool.submit(client, index) for index in range(2)]:
            done.result()


@pytest.mark.parametrize(
    ("servers", "mode"),
    [(1, "once"), (2, "new_episodes")],
    ids=["one-server", "two-servers"],
)
def test_two_clients_recording_into_one_cassette_at_once_keep_both_recordings(
    servers: int, mode: str, tmp_path: Path
) -> None:
    # Two servers use new_episodes: in mode once, a server whose first request comes after the
    # other server's first save finds the cassette there and only replays.
    with serve(answer_the_prompt) as provider, ExitStack() as running:
        environ = provider_environ(provider.base_url)
        started = [
            running.enter_context(ReplayServer(tmp_path, record_mode=mode, environ=environ))
            for _ in range(servers)
        ]
        record_concurrently(started, "shared")

    cassette = Cassette.load(tmp_path / "shared.json")
    asked = sorted(last_user_prompt(i.request.body) for i in cassette.interactions)
    assert asked == sorted(f"client {index} {prompt}" for index in range(2) for prompt in PROMPTS)
    with ReplayServer(tmp_path) as replaying:
        with sync_client("openai", replaying.cassette_url("shared", "openai")) as client:
            for interaction in cassette.interactions:
                assert send_sync(client, sdk_call(interaction)) == recorded_answer(interaction)


# -- a stream is relayed as it arrives -------------------------------------------------------------


@pytest.mark.parametrize("surface", ["chat-stream", "messages-stream"])
def test_a_stream_reaches_the_client_event_by_event_while_it_is_recorded(
    surface: str, tmp_path: Path
) -> None:
    held = HeldStream(Answer(text="The capital of France is Paris."))
    call = asking(CALLS[surface], "What is the capital of France?")
    with serve(held) as provider:
        with ReplayServer(
            tmp_path, record_mode="once", environ=provider_environ(provider.base_url)
        ) as server:
            with sync_client(call.provider, server.cassette_url("streamed", call.provider)) as sdk:
                stream = make_call(sdk, call)
                with stream:
                    events = iter(stream)
                    first = next(events)
                    sent_before_the_client_read = held.last_sent.is_set()
                    held.release.set()
                    rest = list(events)

    assert not sent_before_the_client_read, "the first event waited for the whole stream"
    (interaction,) = Cassette.load(tmp_path / "streamed.json").interactions
    assert interaction.response.body_bytes() == provider.sent[0]
    assert [as_json(event) for event in (first, *rest)] == recorded_answer(interaction).events


def test_mode_once_sessions_of_one_server_all_record_into_the_cassette_its_run_created(
    tmp_path: Path,
) -> None:
    """A session per test in mode `once`, as the Playwright and Vitest fixtures open them: every
    session of the server that created the cassette records what it lacks; a later server (a
    later run) replays it, and a request it lacks is a miss, not a recording."""
    with serve(answer_the_prompt) as provider:
        environ = provider_environ(provider.base_url)
        with ReplayServer(tmp_path, record_mode="once", environ=environ) as server:
            for test in ("first", "second", "third"):
                with server.session(cassette="shared", record_mode="once") as session:
                    with sync_client("openai", session.base_url("openai")) as client:
                        answer = send_sync(client, asking(CALLS["chat"], test))
                assert answer.error is None
                assert answer.reply["choices"][0]["message"]["content"] == f"answer to {test}"
        assert len(provider.received) == 3
        assert len(Cassette.load(tmp_path / "shared.json").interactions) == 3
        with ReplayServer(tmp_path, record_mode="once", environ=environ) as later:
            with later.session(cassette="shared", record_mode="once") as session:
                with sync_client("openai", session.base_url("openai")) as client:
                    replayed = send_sync(client, asking(CALLS["chat"], "second"))
                    missed = send_sync(client, asking(CALLS["chat"], "fourth"))
        assert replayed.error is None
        assert missed.error is not None, "a later run only replays"
        assert len(provider.received) == 3


def test_a_server_re_recording_a_part_of_a_suite_keeps_every_request_its_clients_do_not_send(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`HARNESS_RERECORD=requests` in the server's environment: a Playwright or Vitest run of a
    part of the suite (`-g claude`) in mode `all` replaces only what it sends."""
    prompts = ["gpt question", "claude question", "other question"]
    with serve(answer_the_prompt) as provider:
        with ReplayServer(
            tmp_path, record_mode="once", environ=provider_environ(provider.base_url)
        ) as server:
            with sync_client("openai", server.cassette_url("suite", "openai")) as client:
                for prompt in prompts:
                    send_sync(client, asking(CALLS["chat"], prompt))
    monkeypatch.setenv("HARNESS_RERECORD", "requests")
    with serve(echo_credentials) as provider:
        with ReplayServer(
            tmp_path, record_mode="all", environ=provider_environ(provider.base_url)
        ) as server:
            with sync_client("openai", server.cassette_url("suite", "openai")) as client:
                send_sync(client, asking(CALLS["chat"], "claude question"))
    answers: dict[str, str] = {}
    for interaction in Cassette.load(tmp_path / "suite.json").interactions:
        request: Any = interaction.request.body
        response: Any = interaction.response.body
        answers[request["messages"][0]["content"]] = response["choices"][0]["message"]["content"]
    assert answers["gpt question"] == "answer to gpt question"
    assert answers["other question"] == "answer to other question"
    assert answers["claude question"].startswith("you sent")
    assert len(answers) == 3
