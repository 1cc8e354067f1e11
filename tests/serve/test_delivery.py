"""How answers leave the server: connections never hold back small writes, an event stream is
relayed event by event at its recorded boundaries, and a JSON answer goes out whole."""

from __future__ import annotations

import asyncio
import json
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


def chunked_events(base_url: str, path: str, body: dict[str, object]) -> tuple[str, list[bytes]]:
    """POST `body` over a raw HTTP/1.1 connection; the response head and the body's chunks as
    framed on the wire (each chunk one write of the server)."""
    url = httpx2.URL(base_url + path)
    payload = json.dumps(body).encode()
    with socket.create_connection((url.host, url.port), timeout=10) as connection:
        connection.sendall(
            f"POST {url.raw_path.decode()} HTTP/1.1\r\nHost: {url.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            f"Connection: close\r\n\r\n".encode()
            + payload
        )
        received = b""
        while data := connection.recv(65536):
            received += data
    head, _, rest = received.partition(b"\r\n\r\n")
    chunks: list[bytes] = []
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return head.decode(), chunks
        chunks.append(rest[:size])
        rest = rest[size + 2 :]


def test_a_replayed_stream_is_relayed_event_by_event(tmp_path: Path) -> None:
    stream = record_streamed_answer(tmp_path)
    with ReplayServer(tmp_path) as server:
        head, chunks = chunked_events(
            server.cassette_url("capital", "openai"), "/chat/completions", CAPITAL_REQUEST
        )
    assert "transfer-encoding: chunked" in head.lower()
    assert "content-length" not in head.lower()
    assert b"".join(chunks) == stream
    events = [event + b"\n\n" for event in stream.split(b"\n\n") if event]
    assert chunks == events, "one write per recorded event, at the recorded boundaries"


def test_a_scripted_stream_is_relayed_event_by_event(tmp_path: Path) -> None:
    with ReplayServer(tmp_path) as server:
        session = server.session(script=[{"text": "Paris."}], provider="openai")
        head, chunks = chunked_events(
            session.base_url("openai"), "/chat/completions", CAPITAL_REQUEST
        )
    assert "transfer-encoding: chunked" in head.lower()
    assert len(chunks) > 2
    assert all(chunk.startswith(b"data: ") and chunk.endswith(b"\n\n") for chunk in chunks)
    assert chunks[-1] == b"data: [DONE]\n\n"


def test_a_replayed_json_answer_arrives_whole_with_its_length(tmp_path: Path) -> None:
    with ReplayServer(tmp_path) as server:
        session = server.session(script=[{"text": "Paris."}], provider="openai")
        with httpx2.Client(base_url=session.base_url("openai")) as client:
            reply = client.post("/chat/completions", json={**CAPITAL_REQUEST, "stream": False})
    assert reply.status_code == 200
    assert reply.headers["content-length"] == str(len(reply.content))
    assert reply.json()["choices"][0]["message"]["content"] == "Paris."
