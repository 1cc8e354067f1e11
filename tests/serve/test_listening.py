"""The listening socket: each connection it accepts is served without Nagle's algorithm.

asyncio (under uvicorn) turns Nagle off (`TCP_NODELAY`) only on sockets whose protocol says TCP.
With Nagle on, uvicorn writing a response's head and body separately makes every answer wait
for the client's delayed acknowledgement: some 40 ms a request on loopback instead of about 1.
"""

from __future__ import annotations

import asyncio
import socket

from harness.serve.server import bind


def test_each_accepted_connection_has_nagle_turned_off() -> None:
    listener = bind("127.0.0.1", 0)
    settings: list[int] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection: socket.socket = writer.get_extra_info("socket")
        settings.append(connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    async def connect_once() -> None:
        server = await asyncio.start_server(accepted, sock=listener)
        async with server:
            host, port = listener.getsockname()[:2]
            reader, writer = await asyncio.open_connection(host, port)
            assert await reader.read() == b""  # the server closed it
            writer.close()
            await writer.wait_closed()

    asyncio.run(connect_once())

    assert settings == [1]
