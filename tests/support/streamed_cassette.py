"""A cassette holding one streamed OpenAI chat completion, for the `harness serve` tests."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import httpx2

from harness.cassettes import CassetteTransport
from tests.support.fake_provider import openai_stream_reply

CAPITAL_REQUEST: Final[dict[str, object]] = {
    "model": "gpt-4o-mini",
    "stream": True,
    "messages": [{"role": "user", "content": "What is the capital of France?"}],
}


def record_streamed_answer(folder: Path, name: str = "capital") -> bytes:
    """`folder/<name>.json`, answering `CAPITAL_REQUEST` with one event stream; returns the
    stream's bytes, which a replay must deliver unchanged."""
    stream = "".join(openai_stream_reply("Paris is the capital.").events or []).encode()

    def provider(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=stream)

    transport = CassetteTransport(
        folder / f"{name}.json",
        mode="all",
        inner=httpx2.MockTransport(provider),
        identical_requests="separate",  # one answer, served once unless repeats are allowed
    )
    with httpx2.Client(base_url="https://api.openai.com/v1", transport=transport) as client:
        client.post("/chat/completions", json=CAPITAL_REQUEST).raise_for_status()
    return stream
