"""A loopback HTTP server that speaks the OpenAI Chat Completions and Anthropic Messages wire.

Tests record through it as they would through the real providers: real sockets, real headers,
plain JSON and `text/event-stream` answers. Replies are scripted per test; every request is kept
for assertions.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True, kw_only=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One scripted answer: status, extra headers, and a JSON body or a list of SSE blocks."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    events: list[str] | None = None


Script = Callable[[ReceivedRequest], Reply]


@dataclass
class FakeProvider:
    base_url: str
    received: list[ReceivedRequest]


def openai_text_reply(text: str, *, model: str = "gpt-4o-mini") -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        }
    )


def openai_stream_reply(text: str) -> Reply:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        *({"choices": [{"index": 0, "delta": {"content": part}}]} for part in text.split(" ")),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return Reply(headers={"content-type": "text/event-stream"}, events=events)


def anthropic_stream_reply(text: str) -> Reply:
    blocks = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_1", "usage": {}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    events = [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in blocks]
    return Reply(headers={"content-type": "text/event-stream"}, events=events)


@contextmanager
def serve(script: Script) -> Iterator[FakeProvider]:
    """Run the fake provider on 127.0.0.1 (a free port) until the block ends."""
    received: list[ReceivedRequest] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            request = ReceivedRequest(
                method=self.command,
                path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=self.rfile.read(length),
            )
            received.append(request)
            reply = script(request)
            self.send_response(reply.status)
            headers = {"content-type": "application/json", **reply.headers}
            if reply.events is not None:
                self.send_header("transfer-encoding", "chunked")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for event in reply.events:
                    data = event.encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                return
            payload = json.dumps(reply.body).encode()
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST  # a schema or file fetch, for tests that nothing is fetched

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FakeProvider(
            base_url=f"http://127.0.0.1:{server.server_address[1]}", received=received
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
