"""Paced replay: a recorded event stream keeps when each event arrived, and a replay paced
`recorded` (or N times faster) delivers the events no sooner than that."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from harness.cassettes import Cassette, CassetteTransport
from harness.cassettes.pacing import PaceError, parse_pace
from tests.support.cassette_traffic import CHAT, OPENAI, NoNetwork

GAP = 0.1
EVENTS = 3


def slow_stream(request: httpx2.Request) -> httpx2.Response:
    def events() -> Iterator[bytes]:
        for part in range(EVENTS):
            if part:
                time.sleep(GAP)
            yield f"data: {json.dumps({'part': part})}\n\n".encode()

    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=events())


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "stream.json"
    transport = CassetteTransport(path, mode="once", inner=httpx2.MockTransport(slow_stream))
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        client.post(CHAT, json={"model": "m", "stream": True}).read()
    return path


def test_a_recording_keeps_when_each_event_arrived(recorded: Path) -> None:
    (interaction,) = Cassette.load(recorded).interactions
    offsets = interaction.offsets_ms
    assert offsets is not None
    assert len(offsets) == EVENTS
    assert offsets == sorted(offsets)
    assert offsets[-1] >= (EVENTS - 1) * GAP * 1000 * 0.9


def test_timing_is_not_content(recorded: Path) -> None:
    """Re-recording the same traffic with other timing leaves the file as it was."""
    before = recorded.read_bytes()
    data = json.loads(before)
    data["interactions"][0]["offsets_ms"] = [0, 1, 2]
    recorded.write_text(json.dumps(data, indent=2) + "\n")
    assert Cassette.load(recorded).interactions[0].offsets_ms == [0, 1, 2]  # still verifies


def read_events(path: Path, pace: str | float | None) -> tuple[list[str], float]:
    transport = CassetteTransport(path, inner=NoNetwork(), pace=pace)
    started = time.monotonic()
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        with client.stream("POST", CHAT, json={"model": "m", "stream": True}) as response:
            lines = [line for line in response.iter_lines() if line]
    return lines, time.monotonic() - started


@pytest.mark.parametrize(("pace", "at_least"), [("recorded", 1.0), (4, 0.25), ("2", 0.5)])
def test_a_paced_replay_waits_for_the_recorded_offsets(
    recorded: Path, pace: str | float, at_least: float
) -> None:
    lines, elapsed = read_events(recorded, pace)
    assert lines == [f"data: {json.dumps({'part': part})}" for part in range(EVENTS)]
    assert elapsed >= (EVENTS - 1) * GAP * at_least * 0.9


def test_an_async_client_is_paced_too(recorded: Path) -> None:
    async def read() -> float:
        transport = CassetteTransport(recorded, inner=NoNetwork(), pace="recorded")
        started = time.monotonic()
        async with httpx2.AsyncClient(transport=transport, base_url=OPENAI) as client:
            response = await client.post(CHAT, json={"model": "m", "stream": True})
            assert response.text.count("data:") == EVENTS
        return time.monotonic() - started

    assert asyncio.run(read()) >= (EVENTS - 1) * GAP * 0.9


@pytest.mark.parametrize("pace", ["fast", "0", "-1", "nan", "inf", ""])
def test_a_pace_that_is_not_one_is_refused_by_name(pace: str) -> None:
    with pytest.raises(PaceError, match=r"'recorded'.*'off'.*positive number"):
        parse_pace(pace)


def test_the_named_paces() -> None:
    assert parse_pace("recorded") == 1.0
    assert parse_pace("off") is None
    assert parse_pace(None) is None
    assert parse_pace("2.5") == 2.5
