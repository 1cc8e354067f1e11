"""Both HTTP client libraries, every client kind: httpx2 (the official SDKs' stack) and httpx 0.28,
sync and async, replaying, recording and scripting through one implementation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import httpx
import httpx2
import pytest

from harness.cassettes import Cassette, CassetteTransport, HttpxCassetteTransport, RecordModeError
from harness.http_clients import HTTPX2, HttpLibrary, httpx_library
from harness.llm.adapters import RequestFormatError
from harness.llm.gateway import GatewayConfig, GatewayConfigError, LlmGateway
from harness.llm.models import LlmRequest, UserMessage
from harness.llm.script import (
    HttpxScriptTransport,
    ScriptedReply,
    ScriptProviderMismatchError,
    ScriptTransport,
)
from tests.support.cassette_traffic import CHAT, OPENAI, chat
from tests.support.fake_provider import openai_text_reply, serve

HTTPX = httpx_library()
Kind = Literal["sync", "async"]
CLIENT_KINDS: list[tuple[HttpLibrary, Kind]] = [
    (library, kind) for library in (HTTPX2, HTTPX) for kind in ("sync", "async")
]
ids = [f"{library.name}-{kind}" for library, kind in CLIENT_KINDS]


def post(library: HttpLibrary, kind: Kind, transport: Any, body: dict[str, Any]) -> Any:
    """POST `body` through a client of `library` and `kind`; the response, read in full."""
    if kind == "sync":
        with library.module.Client(transport=transport, base_url=OPENAI) as client:
            return client.post(CHAT, json=body)

    async def send() -> Any:
        async with library.module.AsyncClient(transport=transport, base_url=OPENAI) as client:
            return await client.post(CHAT, json=body)

    return asyncio.run(send())


def stream(library: HttpLibrary, kind: Kind, transport: Any, body: dict[str, Any]) -> list[bytes]:
    """The raw chunks of a streamed response, as the client receives them."""
    if kind == "sync":
        with (
            library.module.Client(transport=transport, base_url=OPENAI) as client,
            client.stream("POST", CHAT, json=body) as response,
        ):
            return list(response.iter_raw())

    async def send() -> list[bytes]:
        async with (
            library.module.AsyncClient(transport=transport, base_url=OPENAI) as client,
            client.stream("POST", CHAT, json=body) as response,
        ):
            return [chunk async for chunk in response.aiter_raw()]

    return asyncio.run(send())


def record_with_mock(path: Path, library: HttpLibrary) -> None:
    """Record two answers, plain and streamed, through `library`'s MockTransport."""

    def answer(request: Any) -> Any:
        body = json.loads(request.content)
        if body.get("stream"):
            events = "".join(f"data: {json.dumps({'part': n})}\n\n" for n in range(3))
            return library.module.Response(
                200, headers={"content-type": "text/event-stream"}, content=events
            )
        return library.module.Response(200, json={"answer": body["messages"][0]["content"]})

    transport = CassetteTransport(path, mode="all", inner=library.module.MockTransport(answer))
    with library.module.Client(transport=transport, base_url=OPENAI) as client:  # closing saves
        client.post(CHAT, json=chat("plain"))
        with client.stream("POST", CHAT, json=chat("streamed", stream=True)) as response:
            response.read()


@pytest.mark.parametrize("transport_class", [CassetteTransport, HttpxCassetteTransport])
@pytest.mark.parametrize(("library", "kind"), CLIENT_KINDS, ids=ids)
def test_replay_answers_every_client_with_its_own_library(
    tmp_path: Path, library: HttpLibrary, kind: Kind, transport_class: type[CassetteTransport]
) -> None:
    path = tmp_path / "c.json"
    record_with_mock(path, HTTPX2)
    response = post(library, kind, transport_class(path), chat("plain"))
    assert isinstance(response, library.module.Response)
    assert response.json() == {"answer": "plain"}
    chunks = stream(library, kind, transport_class(path), chat("streamed", stream=True))
    assert chunks == [f"data: {json.dumps({'part': n})}\n\n".encode() for n in range(3)]


@pytest.mark.parametrize(("library", "kind"), CLIENT_KINDS, ids=ids)
def test_recording_reaches_the_network_with_the_clients_own_library(
    tmp_path: Path, library: HttpLibrary, kind: Kind
) -> None:
    """With no inner transport, a miss goes out through the client's own library's network
    transport; what is written does not depend on the library."""
    path = tmp_path / f"{library.name}-{kind}.json"
    with serve(lambda request: openai_text_reply("It is Paris.")) as provider:
        transport = CassetteTransport(path, mode="once")
        if kind == "sync":
            with library.module.Client(transport=transport) as client:
                answer = client.post(provider.base_url + CHAT, json=chat("capital")).json()
        else:

            async def send() -> Any:
                async with library.module.AsyncClient(transport=transport) as client:
                    response = await client.post(provider.base_url + CHAT, json=chat("capital"))
                    return response.json()

            answer = asyncio.run(send())
    assert answer["choices"][0]["message"]["content"] == "It is Paris."
    (interaction,) = Cassette.load(path).interactions
    assert interaction.response.body == answer
    assert "user-agent" not in interaction.request.headers, "client versions are not recorded"
    replayed = post(library, kind, CassetteTransport(path), chat("capital"))
    assert replayed.json() == answer


@pytest.mark.parametrize(("library", "kind"), CLIENT_KINDS, ids=ids)
@pytest.mark.parametrize(("inner_library", "inner_kind"), CLIENT_KINDS, ids=ids)
def test_an_inner_transport_of_another_library_or_kind_is_named_with_what_is_needed(
    tmp_path: Path, library: HttpLibrary, kind: Kind, inner_library: HttpLibrary, inner_kind: Kind
) -> None:
    base = (
        inner_library.module.AsyncBaseTransport
        if inner_kind == "async"
        else (inner_library.module.BaseTransport)
    )
    inner = type("MyInner", (base,), {})()
    transport = CassetteTransport(tmp_path / "c.json", mode="all", inner=inner)
    if (inner_library, inner_kind) == (library, kind):
        with pytest.raises(NotImplementedError):  # it was used: the base class has no body
            post(library, kind, transport, chat("a"))
        return
    with pytest.raises(RecordModeError) as caught:
        post(library, kind, transport, chat("a"))
    message = str(caught.value)
    assert f"an {library.name} {kind} client sent this request" in message
    assert f"needs an {library.name} {kind} transport as inner" in message
    assert f"but inner is an {inner_library.name} {inner_kind} transport (MyInner)" in message


def test_an_inner_that_is_no_transport_is_refused_when_built(tmp_path: Path) -> None:
    with pytest.raises(RecordModeError, match="expected an httpx2 or httpx transport as inner"):
        CassetteTransport(tmp_path / "c.json", mode="all", inner="https://api.openai.com")  # type: ignore[arg-type]


@pytest.mark.parametrize("transport_class", [ScriptTransport, HttpxScriptTransport])
@pytest.mark.parametrize(("library", "kind"), CLIENT_KINDS, ids=ids)
def test_scripts_answer_every_client(
    library: HttpLibrary, kind: Kind, transport_class: type[ScriptTransport]
) -> None:
    replies = [ScriptedReply(text="It is Paris."), ScriptedReply(text="Streamed.")]
    transport = transport_class("openai", replies)
    response = post(library, kind, transport, chat("capital"))
    assert isinstance(response, library.module.Response)
    assert response.json()["choices"][0]["message"]["content"] == "It is Paris."
    chunks = stream(library, kind, transport, chat("capital", stream=True))
    assert b"".join(chunks).endswith(b"data: [DONE]\n\n")
    assert [type(request).__module__.split(".")[0] for request in transport.requests] == [
        library.name,
        library.name,
    ]


def test_a_script_for_one_provider_says_so_when_called_for_the_other() -> None:
    transport = ScriptTransport("openai", [ScriptedReply(text="hi")])
    with (
        httpx2.Client(transport=transport) as client,
        pytest.raises(
            ScriptProviderMismatchError,
            match="renders openai replies but the code under test called the anthropic API",
        ),
    ):
        client.post("https://api.anthropic.com/v1/messages", json={"model": "claude"})


REQUEST = LlmRequest(model="gpt-4o-mini", messages=(UserMessage(content="capital?"),))


@pytest.mark.parametrize(
    ("transport", "client_library"),
    [
        (lambda: ScriptTransport("openai", [ScriptedReply(text="Paris.")]), "httpx2"),
        (lambda: HttpxScriptTransport("openai", [ScriptedReply(text="Paris.")]), "httpx2"),
        (
            lambda: httpx.MockTransport(
                lambda request: httpx.Response(200, json=_completion("Paris."))
            ),
            "httpx",
        ),
        (
            lambda: httpx2.MockTransport(
                lambda request: httpx2.Response(200, json=_completion("Paris."))
            ),
            "httpx2",
        ),
    ],
    ids=["script", "httpx-typed-script", "httpx-mock", "httpx2-mock"],
)
def test_the_gateway_runs_on_httpx2_unless_given_an_httpx_transport(
    transport: Callable[[], Any], client_library: str
) -> None:
    config = GatewayConfig(provider="openai", base_url=OPENAI)
    with LlmGateway(config, transport=transport()) as gateway:
        assert type(gateway._client).__module__.split(".")[0] == client_library
        assert gateway.complete(REQUEST).text == "Paris."


def test_the_gateway_refuses_a_transport_it_cannot_call() -> None:
    config = GatewayConfig(provider="openai", base_url=OPENAI)
    with pytest.raises(GatewayConfigError, match="an httpx2 async transport"):
        LlmGateway(config, transport=httpx2.AsyncHTTPTransport())  # type: ignore[arg-type]
    with pytest.raises(GatewayConfigError, match="no httpx2 or httpx transport"):
        LlmGateway(config, transport=object())  # type: ignore[arg-type]


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'"text"'])
def test_a_script_refuses_a_body_that_is_no_json_object(body: bytes) -> None:
    transport = ScriptTransport("openai", [ScriptedReply(text="hi")])
    with httpx2.Client(transport=transport) as client, pytest.raises(RequestFormatError):
        client.post(OPENAI + CHAT, content=body)


class BrokenOff(httpx2.SyncByteStream):
    """A provider answer whose connection drops after the first SSE event."""

    def __iter__(self) -> Any:
        yield b'data: {"part": 0}\n\n'
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message")


def test_an_answer_the_provider_breaks_off_is_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "c.json"

    def answer(request: httpx2.Request) -> httpx2.Response:
        if json.loads(request.content)["messages"][0]["content"] == "whole":
            return httpx2.Response(200, json={"answer": "whole"})
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=BrokenOff()
        )

    transport = CassetteTransport(path, mode="all", inner=httpx2.MockTransport(answer))
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        with (
            pytest.raises(httpx2.RemoteProtocolError),
            client.stream("POST", CHAT, json=chat("broken", stream=True)) as response,
        ):
            response.read()
        client.post(CHAT, json=chat("whole"))
    (kept,) = Cassette.load(path).interactions  # a partial answer is never stored as whole
    assert kept.response.body == {"answer": "whole"}
