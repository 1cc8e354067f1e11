"""Pacing for streaming UIs through `harness serve`: a stream recorded through the server keeps
when each event arrived, and `--pace recorded` (or a session's own pace) delivers the events no
sooner than that; `off` (the default) as fast as the client reads."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import httpx2
import pytest

from harness.cassettes import Cassette
from harness.serve.server import ReplayServer
from tests.support.fake_provider import Answer, ReceivedRequest, Reply, reply_for, serve

GAP = 0.1
BODY = {
    "model": "gpt-4o-mini",
    "stream": True,
    "messages": [{"role": "user", "content": "Tell me slowly."}],
}


def slow(request: ReceivedRequest) -> Reply:
    reply = reply_for(request, Answer(text="one two three four"))
    return dataclasses.replace(reply, pace=lambda index: time.sleep(GAP) if index else None)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cassettes")
    with serve(slow) as provider:
        environ = {"OPENAI_BASE_URL": provider.base_url, "OPENAI_API_KEY": "sk-server-key"}
        with ReplayServer(cassettes=folder, record_mode="once", environ=environ) as server:
            read_stream(f"{server.url}/c/slow/v1")
    return folder


def read_stream(base_url: str) -> tuple[int, float]:
    started = time.monotonic()
    with httpx2.stream("POST", f"{base_url}/chat/completions", json=BODY) as response:
        assert response.status_code == 200, response.read()
        events = [line for line in response.iter_lines() if line.startswith("data:")]
    return len(events), time.monotonic() - started


def test_the_recording_keeps_each_event_s_offset(recorded: Path) -> None:
    (interaction,) = Cassette.load(recorded / "slow.json").interactions
    assert interaction.response.events is not None
    offsets = interaction.offsets_ms
    assert offsets is not None
    assert len(offsets) == len(interaction.response.events)
    assert offsets[-1] >= (len(offsets) - 2) * GAP * 1000 * 0.9


def test_pace_recorded_replays_with_the_recorded_timing(recorded: Path) -> None:
    (interaction,) = Cassette.load(recorded / "slow.json").interactions
    assert interaction.offsets_ms is not None
    with ReplayServer(cassettes=recorded, pace="recorded") as server:
        count, elapsed = read_stream(f"{server.url}/c/slow/v1")
    assert count == len(interaction.offsets_ms)
    assert elapsed >= interaction.offsets_ms[-1] / 1000 * 0.9


def test_a_session_sets_its_own_pace(recorded: Path) -> None:
    (interaction,) = Cassette.load(recorded / "slow.json").interactions
    assert interaction.offsets_ms is not None
    with ReplayServer(cassettes=recorded) as server:
        opened = httpx2.post(
            f"{server.url}/_harness/sessions", json={"cassette": "slow", "pace": 2}
        ).json()
        _, elapsed = read_stream(opened["base_urls"]["openai"])
    assert elapsed >= interaction.offsets_ms[-1] / 1000 / 2 * 0.9


def test_a_pace_that_is_not_one_is_refused_with_a_400(recorded: Path) -> None:
    with ReplayServer(cassettes=recorded) as server:
        refused = httpx2.post(
            f"{server.url}/_harness/sessions", json={"cassette": "slow", "pace": "fast"}
        )
    assert refused.status_code == 400
    assert "'recorded'" in refused.text
    assert "'fast'" in refused.text
