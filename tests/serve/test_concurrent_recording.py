"""Concurrent clients recording into one cassette lose nothing, in any record mode.

Twenty clients send ten distinct requests each at once, through the cassette's `/c/` URL or each
through a session of its own on that cassette: every one of the 200 is answered from the
provider, and the cassette holds exactly those 200, each once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest

from harness.cassettes import Cassette
from harness.serve import ReplayServer
from tests.support.fake_provider import (
    Answer,
    FakeProvider,
    ReceivedRequest,
    Reply,
    last_user_prompt,
    reply_for,
    serve,
)
from tests.support.serve_http import provider_environ

CLIENTS = 20
REQUESTS = 10


def answer_the_prompt(request: ReceivedRequest) -> Reply:
    return reply_for(request, Answer(text=f"answer to {last_user_prompt(request.json())}"))


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with serve(answer_the_prompt) as running:
        yield running


def chat(prompt: str) -> dict[str, object]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}


@pytest.mark.parametrize("through", ["cassette-url", "sessions"])
@pytest.mark.parametrize("mode", ["once", "new_episodes", "all"])
def test_twenty_clients_recording_ten_requests_each_keep_all_two_hundred(
    mode: str, through: str, provider: FakeProvider, tmp_path: Path
) -> None:
    start = threading.Barrier(CLIENTS)
    with ReplayServer(
        tmp_path, record_mode=mode, environ=provider_environ(provider.base_url)
    ) as server:

        def client(index: int) -> list[int]:
            if through == "sessions":
                session = server.session(cassette="shared")
                base = session.base_url("openai")
            else:
                session, base = None, server.cassette_url("shared", "openai")
            statuses = []
            with httpx2.Client(base_url=base, timeout=60) as http:
                start.wait(30)
                for number in range(REQUESTS):
                    answer = http.post("/chat/completions", json=chat(f"client {index} #{number}"))
                    statuses.append(answer.status_code)
            if session is not None:
                session.close()
            return statuses

        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            statuses = [status for done in pool.map(client, range(CLIENTS)) for status in done]

    assert statuses == [200] * CLIENTS * REQUESTS
    cassette = Cassette.load(tmp_path / "shared.json")
    recorded = sorted(last_user_prompt(i.request.body) for i in cassette.interactions)
    assert recorded == sorted(
        f"client {index} #{number}" for index in range(CLIENTS) for number in range(REQUESTS)
    )
    assert len(provider.received) == CLIENTS * REQUESTS
