"""Cassette test traffic: a scripted provider behind an httpx2 MockTransport, chat request bodies,
and an inner transport that fails the test if replay reaches the network."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

OPENAI = "https://api.openai.com"
CHAT = "/v1/chat/completions"


@dataclass
class ScriptedProvider:
    """Answers every request with a numbered JSON reply (or SSE when `stream` is true)."""

    calls: list[httpx2.Request] = field(default_factory=list)
    sse_events: int = 3

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.calls.append(request)
        body = json.loads(request.content) if request.content else {}
        if body.get("stream"):
            text = "".join(
                f"data: {json.dumps({'n': len(self.calls), 'part': part})}\n\n"
                for part in range(self.sse_events)
            )
            return httpx2.Response(
                200,
                headers={"content-type": "text/event-stream"},
                content=text + "data: [DONE]\n\n",
            )
        return httpx2.Response(200, json={"n": len(self.calls), "echo": body})

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self.handler)


def chat(content: str, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}], **extra}


class NoNetwork(httpx2.BaseTransport):
    """An inner transport that fails the test if anything tries to reach the network."""

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        raise AssertionError(f"network reached in replay: {request.method} {request.url}")


Post = Callable[..., httpx2.Response]
