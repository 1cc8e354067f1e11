"""How answers leave the server: connections never hold back small writes."""

from __future__ import annotations

import asyncio
import socket

import pytest

from harness.serve import ServeError
from harness.serve.server import bind


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
