"""The official SDKs against `harness serve`: our cassettes replayed, and recordings made through it.

Our cassettes (`cassettes/agent`, `cassettes/decision`: Chat Completions replies with tool calls
and a reply cut off by the token limit, Messages streams with tool calls and a `max_tokens` stop)
are replayed to `openai` and `anthropic`, sync and async, each recorded request rebuilt as the
SDK call that sends it; what the SDK parsed must be what the cassette recorded. (The Gemini ones
go to `google-genai` the same way, in tests/serve/test_gemini.py.)

What they lack (streamed Chat Completions, Responses plain and streamed, plain Messages, provider
errors, an overload in the middle of a stream) the SDKs record through the server against the
fake provider (record mode `once`), each case into a cassette of its own. Then, with the
provider gone, every case replays through the server to the same parse, and to exactly what the
cassette holds; every replayed body is the bytes the provider sent (a stream byte for byte; a
JSON body as the same JSON, written compactly, since a cassette stores the JSON value); and
re-recording the same traffic (record mode `all`) parses the same and leaves every cassette
file untouched, not even rewritten with the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import httpx2
import pytest

from harness.cassettes import KEYED_HEADERS, Cassette
from harness.serve import ReplayServer
from tests.support.fake_provider import (
    Answer,
    FakeProvider,
    Outcome,
    ProviderError,
    ToolCall,
    answer_by_prompt,
    serve,
)
from tests.support.recordings import REPOSITORY
from tests.support.serve_http import provider_environ
from tests.support.serve_sdk import (
    Parsed,
    Provider,
    SdkCall,
    async_client,
    provider_of,
    recorded_answer,
    sdk_call,
    send_async,
    send_sync,
    sync_client,
)

OURS = sorted(
    path.relative_to(REPOSITORY / "cassettes").with_suffix("").as_posix()
    for folder in ("agent", "decision")
    for path in (REPOSITORY / "cassettes" / folder).glob("*.json")
    if Cassette.load(path).metadata.provider in get_args(Provider)
)

Send = Callable[[Provider, str, SdkCall], Awaitable[Parsed]]


async def send_with_a_sync_client(provider: Provider, base_url: str, call: SdkCall) -> Parsed:
    with sync_client(provider, base_url) as client:
        return send_sync(client, call)


async def send_with_an_async_client(provider: Provider, base_url: str, call: SdkCall) -> Parsed:
    async with async_client(provider, base_url) as client:
        return await send_async(client, call)


SENDERS = pytest.mark.parametrize(
    "send", [send_with_a_sync_client, send_with_an_async_client], ids=["sync", "async"]
)


# -- our cassettes ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ours() -> Iterator[dict[str, ReplayServer]]:
    """One server per client kind over the repository's cassettes: each plays them once."""
    with (
        ReplayServer(REPOSITORY / "cassettes") as for_sync,
        ReplayServer(REPOSITORY / "cassettes") as for_async,
    ):
        yield {"sync": for_sync, "async": for_async}


def test_our_cassettes_are_found() -> None:
    assert "decision/contract-example" in OURS
    assert len(OURS) >= 7, OURS


@pytest.mark.anyio
@SENDERS
@pytest.mark.parametrize("name", OURS)
async def test_the_sdks_parse_every_answer_of_our_cassettes_as_recorded(
    name: str, send: Send, ours: dict[str, ReplayServer]
) -> None:
    server = ours["sync" if send is send_with_a_sync_client else "async"]
    cassette = Cassette.load(REPOSITORY / "cassettes" / f"{name}.json")
    for index, interaction in enumerate(cassette.interactions):
        provider = provider_of(interaction.request.path)
        parsed = await send(provider, server.cassette_url(name, provider), sdk_call(interaction))
        assert parsed == recorded_answer(interaction), f"{name} interaction #{index}"


# -- recorded through the server -------------------------------------------------------------------

OVERLOADED = ProviderError(
    status=529, kind="overloaded_error", message="Overloaded", mid_stream=True
)
OUTCOMES: dict[str, Outcome] = {
    "text": Answer(text="The capital of France is Paris."),
    "tool": Answer(
        text="Let me check.",
        tool_calls=(ToolCall(id="call_weather1", name="get_weather", arguments={"city": "Paris"}),),
    ),
    "cut_off": Answer(text="The capital of France is", cut_off=True),
    "rate_limited": ProviderError(),
    "overloaded": OVERLOADED,
}
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TEMPLATES: dict[str, SdkCall] = {
    "chat": SdkCall(
        "openai",
        "chat",
        {
            "model": "gpt-4o-mini",
            "max_tokens": 64,
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}
            ],
        },
    ),
    "responses": SdkCall(
        "openai",
        "responses",
        {
            "model": "gpt-4o-mini",
            "max_output_tokens": 64,
            "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER}],
        },
    ),
    "messages": SdkCall(
        "anthropic",
        "messages",
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "tools": [{"name": "get_weather", "input_schema": WEATHER}],
        },
    ),
}


@dataclass(frozen=True)
class Case:
    """One SDK call recorded into its own cassette."""

    name: str
    call: SdkCall

    @property
    def provider(self) -> Provider:
        return self.call.provider


def call_for(surface: str, streamed: bool, prompt: str) -> SdkCall:
    template = TEMPLATES[surface]
    turn: Any = [{"role": "user", "content": prompt}]
    asked = {"input": turn} if surface == "responses" else {"messages": turn}
    return SdkCall(
        template.provider,
        template.method,
        {**template.body, **asked, **({"stream": True} if streamed else {})},
    )


CASES = [
    Case(
        f"{surface}{'-stream' if streamed else ''}/{outcome}", call_for(surface, streamed, outcome)
    )
    for surface in TEMPLATES
    for streamed in (False, True)
    for outcome in OUTCOMES
    if outcome != "overloaded" or (surface == "messages" and streamed)
]


async def record(folder: Path, mode: str, send: Send) -> tuple[FakeProvider, list[Parsed]]:
    """Send every case through a server recording into `folder` in `mode`."""
    with serve(answer_by_prompt(OUTCOMES)) as provider:
        environ = provider_environ(provider.base_url)
        with ReplayServer(folder, record_mode=mode, environ=environ) as server:
            parsed = [
                await send(case.provider, server.cassette_url(case.name, case.provider), case.call)
                for case in CASES
            ]
    assert len(provider.sent) == len(CASES)
    return provider, parsed


def compact(body: bytes) -> bytes:
    """A JSON body as a replay sends it: the same JSON value, without insignificant spaces."""
    value = json.loads(body)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def replayed_bytes(server: ReplayServer, case: Case, provider: FakeProvider, index: int) -> bytes:
    """The body the server replays for case `index`, sent as the provider received it, on a
    session of its own (the case's cassette was already played once)."""
    received = provider.received[index]
    headers = {name: value for name, value in received.headers.items() if name in KEYED_HEADERS}
    with server.session(cassette=case.name) as session:
        answer = httpx2.post(
            session.base_url(case.provider).removesuffix("/v1") + received.path,
            content=received.body,
            headers={"content-type": "application/json", **headers},
        )
    return answer.content


@pytest.mark.anyio
@SENDERS
async def test_what_the_sdks_record_through_the_server_replays_as_the_provider_sent_it(
    send: Send, tmp_path: Path
) -> None:
    provider, recorded = await record(tmp_path, "once", send)
    files = sorted(tmp_path.rglob("*.json"))
    written = {path: (path.read_bytes(), path.stat().st_ino) for path in files}

    with ReplayServer(tmp_path) as server:
        for case, parsed in zip(CASES, recorded, strict=True):
            (interaction,) = Cassette.load(tmp_path / f"{case.name}.json").interactions
            url = server.cassette_url(case.name, case.provider)
            assert await send(case.provider, url, case.call) == parsed, case.name
            assert parsed == recorded_answer(interaction), case.name
        for index, case in enumerate(CASES):
            sent = provider.sent[index]
            streamed = b"data: " in sent and not sent.startswith(b"{")
            expected = sent if streamed else compact(sent)
            assert replayed_bytes(server, case, provider, index) == expected, case.name
    _, again = await record(tmp_path, "all", send)

    assert {parsed.error.typed for parsed in recorded if parsed.error} == {
        "RateLimitError",
        "APIStatusError",  # the overload error event of a stream that started with 200
    }
    assert again == recorded
    assert sorted(tmp_path.rglob("*.json")) == files
    assert {path: (path.read_bytes(), path.stat().st_ino) for path in files} == written, (
        "re-recording the same traffic rewrote a cassette"
    )
