"""`CassetteTransport` edge cases: bodies that are not JSON, wrong inner kinds, context use."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import pytest

from harness.cassettes import Cassette, CassetteMissError, CassetteTransport
from tests.support.cassette_traffic import CHAT, OPENAI, ScriptedProvider, chat


def test_text_binary_and_empty_bodies_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "bodies.json"

    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/text":
            return httpx2.Response(200, text="plain words")
        if request.url.path == "/binary":
            return httpx2.Response(200, content=b"\x00\xff\x10")
        return httpx2.Response(204)

    transport = CassetteTransport(path, mode="once", inner=httpx2.MockTransport(handler))
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        client.post("/text", content=b"form=1")
        client.post("/binary", content=b"\xff\xfe")
        client.get("/empty")
        assert len(transport.recorded) == 3
    stored = Cassette.load(path).interactions
    assert stored[0].request.body_text == "form=1"
    assert stored[0].response.body_text == "plain words"
    assert stored[1].request.body_base64 == "//4="
    assert stored[1].response.body_base64 == "AP8Q"
    assert stored[2].response.chunks() == []
    with httpx2.Client(transport=CassetteTransport(path), base_url=OPENAI) as client:
        assert client.post("/text", content=b"form=1").text == "plain words"
        assert client.post("/binary", content=b"\xff\xfe").content == b"\x00\xff\x10"
        assert client.get("/empty").status_code == 204


def test_async_misses_are_explained(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    provider = ScriptedProvider()
    with httpx2.Client(
        transport=CassetteTransport(path, mode="once", inner=provider.transport()), base_url=OPENAI
    ) as client:
        client.post(CHAT, json=chat("a"))

    async def scenario() -> None:
        async with httpx2.AsyncClient(transport=CassetteTransport(path), base_url=OPENAI) as client:
            await client.post(CHAT, json=chat("b"))

    with pytest.raises(CassetteMissError, match=r'\$\.messages\[0\]\.content: "a" -> "b"'):
        asyncio.run(scenario())


def test_the_transport_is_a_context_manager_that_saves_even_on_error(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    provider = ScriptedProvider()

    def record_then_fail() -> None:
        with CassetteTransport(path, mode="all", inner=provider.transport()) as transport:
            client = httpx2.Client(transport=transport, base_url=OPENAI)
            client.post(CHAT, json=chat("a"))
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        record_then_fail()
    assert len(Cassette.load(path).interactions) == 1
    with CassetteTransport(path) as transport:
        client = httpx2.Client(transport=transport, base_url=OPENAI)
        assert client.post(CHAT, json=chat("a")).json()["n"] == 1
    transport.close()  # closing twice is harmless


@pytest.mark.parametrize(
    "body",
    [b"[" * 1_000 + b"]" * 1_000, b'{"a": NaN, "b": Infinity}'],
    ids=["nested-1000-deep", "nan-and-infinity"],
)
def test_a_body_json_cannot_hold_is_recorded_as_text_and_replays(
    tmp_path: Path, body: bytes
) -> None:
    path = tmp_path / "c.json"
    inner = httpx2.MockTransport(lambda request: httpx2.Response(200, content=request.content))
    with httpx2.Client(transport=CassetteTransport(path, mode="once", inner=inner)) as client:
        assert client.post(f"{OPENAI}{CHAT}", content=body).content == body
    (interaction,) = Cassette.load(path).interactions
    assert interaction.request.body_text == body.decode()
    assert interaction.response.body_text == body.decode()
    with httpx2.Client(transport=CassetteTransport(path)) as client:
        assert client.post(f"{OPENAI}{CHAT}", content=body).content == body
