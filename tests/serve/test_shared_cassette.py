"""Parallel end-to-end workers on one shared cassette, through `harness serve` and the official
Node `openai` SDK: four workers hold three-turn conversations whose first turn is the same for
all and answered with the time of the call (it varies, as a real model's answer does). Recorded
once in parallel, the cassette replays in parallel on fresh servers with zero misses, every run,
through the cassette route of the CLI server and through sessions."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest

from harness.cassettes import Cassette
from harness.serve.server import ReplayServer
from tests.support.fake_provider import (
    Answer,
    ReceivedRequest,
    Reply,
    last_user_prompt,
    reply_for,
    serve,
)
from tests.support.node import NODE_FOLDER, installed_node
from tests.support.serve_http import provider_environ
from tests.support.serve_process import harness_serve

pytestmark = pytest.mark.subprocess

WORKERS: Final = 4
QUESTION: Final = "What time is it?"
REPLAYS: Final = 3


def clock(request: ReceivedRequest) -> Reply:
    """The time question answered with the time of the call; other turns echoed. Each answer
    takes a moment, so the workers' requests overlap."""
    time.sleep(0.05)
    prompt = last_user_prompt(request.json())
    text = f"It is {time.time():.6f}" if prompt == QUESTION else f"re: {prompt}"
    return reply_for(request, Answer(text=text))


@pytest.fixture(scope="module")
def node() -> str:
    return installed_node(NODE_FOLDER)


def conversations(node: str, base_urls: list[str], *, stream: bool) -> list[list[str]]:
    payload = {
        "workers": [{"baseURL": url, "worker": index} for index, url in enumerate(base_urls)],
        "stream": stream,
    }
    completed = subprocess.run(
        [node, str(NODE_FOLDER / "conversations.mjs")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=NODE_FOLDER,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    results = [json.loads(line) for line in completed.stdout.splitlines()]
    errors = [result["error"] for result in results if "error" in result]
    assert not errors, errors
    return [result["answers"] for result in results]


def assert_one_shared_first_turn(answers: list[list[str]]) -> None:
    assert len({turns[0] for turns in answers}) == 1, answers
    for worker, turns in enumerate(answers):
        assert turns[1:] == [f"re: worker {worker}, turn {turn}" for turn in (1, 2)]


class Sessions:
    """One session per worker on the shared cassette, closed after the conversation."""

    def __init__(self, url: str, record_mode: str | None) -> None:
        self.url = url
        self.record_mode = record_mode
        self.ids: list[str] = []

    def open(self) -> list[str]:
        urls = []
        for _ in range(WORKERS):
            body: dict[str, Any] = {"cassette": "shared"}
            if self.record_mode:
                body["record_mode"] = self.record_mode
            opened = httpx2.post(f"{self.url}/_harness/sessions", json=body).json()
            self.ids.append(opened["id"])
            urls.append(opened["base_urls"]["openai"])
        return urls

    def close(self) -> None:
        for identifier in self.ids:
            assert httpx2.delete(f"{self.url}/_harness/sessions/{identifier}").is_success


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_cassette_route_replays_a_parallel_recording_with_zero_misses(
    node: str, tmp_path: Path, stream: bool
) -> None:
    folder = tmp_path / "cassettes"
    with serve(clock) as provider:
        with harness_serve(
            folder, "--record-mode=once", environ=provider_environ(provider.base_url)
        ) as server:
            recorded = conversations(node, [f"{server.url}/c/shared/v1"] * WORKERS, stream=stream)
    assert_one_shared_first_turn(recorded)
    questions = [r for r in provider.received if last_user_prompt(r.json()) == QUESTION]
    assert len(questions) == 1
    assert Cassette.load(folder / "shared.json").identical_requests == "shared"

    for _ in range(REPLAYS):
        with harness_serve(folder, "--log-format=json") as server:
            replayed = conversations(node, [f"{server.url}/c/shared/v1"] * WORKERS, stream=stream)
            assert replayed == recorded
        outcomes = [line["outcome"] for line in server.log_lines()]
        assert outcomes == ["replayed"] * WORKERS * 3, server.stderr


def test_sessions_on_one_cassette_replay_a_parallel_recording_with_zero_misses(
    node: str, tmp_path: Path
) -> None:
    folder = tmp_path / "cassettes"
    with serve(clock) as provider:
        environ = {"OPENAI_BASE_URL": provider.base_url, "OPENAI_API_KEY": "sk-server-key"}
        with ReplayServer(cassettes=folder, record_mode="once", environ=environ) as server:
            sessions = Sessions(server.url, None)
            recorded = conversations(node, sessions.open(), stream=True)
            sessions.close()
    assert_one_shared_first_turn(recorded)
    assert len([r for r in provider.received if last_user_prompt(r.json()) == QUESTION]) == 1

    for _ in range(REPLAYS):
        with ReplayServer(cassettes=folder) as server:
            sessions = Sessions(server.url, None)
            assert conversations(node, sessions.open(), stream=True) == recorded
            sessions.close()
