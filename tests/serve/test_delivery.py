"""How answers leave the server: connections never hold back small writes, and an answer that is
already in memory (a replay, a script) goes out whole."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx2
import pytest

from harness.serve import ReplayServer, ServeError
from harness.serve.server import bind
from tests.support.streamed_cassette import CAPITAL_REQUEST, record_streamed_answer


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_every_connection_the_listener_accepts_has_nagle_off(host: str) -> None:
    """uvicorn serves the listener through asyncio, which turns Nagle's algorithm off only on
    IPPROTO_TCP sockets; with it on, each write after the first of a response waited for the
    client's delayed ACK (about 40 ms a response on Linux)."""
    try:
        listener = bind(host, 0)
    except ServeError:
        pytest.skip(f"{host} is not available on this machine")

    async def accept_one() -> int:
        accepted: asyncio.Queue[int] = asyncio.Queue()

        async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connection = writer.get_extra_info("socket")
            await accepted.put(connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        async with await asyncio.start_server(on_connection, sock=listener):
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            nodelay = await asyncio.wait_for(accepted.get(), 10)
            writer.close()
            return nodelay

    assert asyncio.run(accept_one()) != 0


def test_a_replayed_stream_arrives_whole_with_its_length(tmp_path: Path) -> None:
    stream = record_streamed_answer(tmp_path)
    with (
        ReplayServer(tmp_path) as server,
        httpx2.Client(base_url=server.cassette_url("capital", "openai")) as client,
    ):
        reply = client.post("/chat/completions", json=CAPITAL_REQUEST)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "text/event-stream"
    assert reply.content == stream
    assert reply.headers["content-length"] == str(len(stream))
    assert "transfer-encoding" not in reply.headers


def test_a_scripted_stream_arrives_whole_with_its_length(tmp_path: Path) -> None:
    with ReplayServer(tmp_path) as server:
        session = server.session(script=[{"text": "Paris."}], provider="openai")
        with httpx2.Client(base_url=session.base_url("openai")) as client:
            reply = client.post("/chat/completions", json=CAPITAL_REQUEST)
    events = [line for line in reply.text.split("\n\n") if line]
    assert reply.status_code == 200
    assert events[-1] == "data: [DONE]"
    assert reply.headers["content-length"] == str(len(reply.content))
