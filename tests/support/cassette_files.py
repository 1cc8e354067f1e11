"""Cassette files for robustness tests: one recording holding every stored shape, and edits.

`record_every_shape` records, through `CassetteTransport` in mode `all`, one interaction per way
a cassette stores a body: a JSON request and response, a streamed (SSE) response whose events use
every field, a text body, a binary (base64) body and an empty one. Tests and fuzzers mutate
copies of it, so every shape check is exercised on a file the harness itself wrote.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from harness.cassettes import CassetteTransport

BASE_URL = "https://api.openai.com"
CHAT = "/v1/chat/completions"

STREAM = (
    ": keep-alive\n\n"
    'event: delta\nid: 1\nretry: 3000\ndata: {"n": 1}\n\n'
    'data: {"n": 2}\ndata: second line\n\n'
    "data: [DONE]\n\n"
)


def _answer(request: httpx2.Request) -> httpx2.Response:
    if request.url.path == CHAT:
        body = json.loads(request.content)
        if body.get("stream"):
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=STREAM.encode()
            )
        return httpx2.Response(
            200, headers=[(b"x-served-by", "café".encode())], json={"echo": body, "huge": 2**70}
        )
    if request.url.path == "/text":
        return httpx2.Response(201, text="plain words")
    if request.url.path == "/binary":
        return httpx2.Response(200, content=b"\x00\xff\x10")
    return httpx2.Response(204)


def send_every_shape(client: httpx2.Client) -> list[httpx2.Response]:
    """The requests `record_every_shape` records; sending them again replays every answer."""
    return [
        client.post(CHAT, json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
        client.post(CHAT, json={"model": "m", "stream": True, "seed": 2**65}),
        client.post("/text", content=b"form=1"),
        client.post("/binary", content=b"\xff\xfe"),
        client.get("/empty", params={"q": "1"}),
    ]


def record_every_shape(path: Path) -> Path:
    """Record the interactions described in the module docstring into `path`; return `path`."""
    transport = CassetteTransport(
        path, mode="all", inner=httpx2.MockTransport(_answer), run_id=uuid.uuid4().hex
    )
    with httpx2.Client(transport=transport, base_url=BASE_URL) as client:
        send_every_shape(client)
    return path


def edit_cassette(path: Path, change: Callable[[dict[str, Any]], object]) -> Path:
    """Apply `change` to the parsed file (exact numbers kept) and write it back indented."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def nested(levels: int) -> Any:
    """A JSON value nesting `levels` containers (alternating lists and objects)."""
    value: Any = []
    for level in range(levels - 1):
        value = [value] if level % 2 else {"a": value}
    return value
