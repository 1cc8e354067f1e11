"""Paced replay: a recorded event stream keeps when each event arrived, and a replay paced
`recorded` (or N times faster) delivers the events no sooner than that. Every wait is bounded:
a pace outside 0.001 to 1,000,000 is refused where it is given, and a cassette whose timing is
out of range or out of order is refused when it is loaded."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.cassettes import Cassette, CassetteTransport
from harness.cassettes.cassette import MAX_OFFSET_MS, Interaction
from harness.cassettes.pacing import (
    LONGEST_WAIT_SECONDS,
    MAX_SPEED,
    MIN_SPEED,
    PaceError,
    parse_pace,
)
from harness.errors import CassetteFormatError
from tests.support.cassette_files import edit_cassette
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


ACCEPTED = r"'recorded'.*'off'.*a number of times faster from 0\.001 .* to 1,000,000"


@pytest.mark.parametrize("pace", ["fast", "0", "-1", "nan", "inf", "", [2], True])
def test_a_pace_that_is_not_one_is_refused_by_name(pace: object) -> None:
    with pytest.raises(PaceError, match=ACCEPTED) as refused:
        parse_pace(pace)
    assert f"but got pace={pace!r} (type={type(pace).__name__})" in str(refused.value)


@pytest.mark.parametrize(
    "pace",
    [
        pytest.param("1e400", id="text-beyond-any-float"),
        pytest.param(1e400, id="infinity"),
        pytest.param(10**400, id="int-beyond-any-float"),
        pytest.param("1e-320", id="text-below-the-slowest"),
        pytest.param(1e-320, id="below-the-slowest"),
        pytest.param(0.000_999, id="just-below-the-slowest"),
        pytest.param(1_000_001, id="just-beyond-the-fastest"),
    ],
)
def test_a_pace_out_of_range_is_refused_never_an_overflow(recorded: Path, pace: object) -> None:
    with pytest.raises(PaceError, match=ACCEPTED) as refused:
        parse_pace(pace)
    assert len(str(refused.value)) < 300  # 10**400 is not spelt out
    with pytest.raises(PaceError, match=ACCEPTED):
        CassetteTransport(recorded, inner=NoNetwork(), pace=pace)  # type: ignore[arg-type]  # what a caller may pass


def test_the_named_paces_and_the_range() -> None:
    assert parse_pace("recorded") == 1.0
    assert parse_pace("off") is None
    assert parse_pace(None) is None
    assert parse_pace("2.5") == 2.5
    assert parse_pace(MIN_SPEED) == MIN_SPEED
    assert parse_pace("1e6") == MAX_SPEED
    assert parse_pace(10**6) == MAX_SPEED
    assert LONGEST_WAIT_SECONDS == MAX_OFFSET_MS / 1000 / MIN_SPEED


# -- the recorded timing, checked on load --------------------------------------------------------


def with_offsets(path: Path, offsets: list[int]) -> Path:
    """`path` with its one interaction's offsets replaced: timing is outside the digest, so the
    file still verifies, and only the check of the timing itself can refuse it."""

    def change(data: dict[str, Any]) -> None:
        (interaction,) = data["interactions"]
        interaction["offsets_ms"] = offsets

    return edit_cassette(path, change)


@pytest.mark.parametrize(
    ("offsets", "problem"),
    [
        pytest.param(
            [0, 1, 1_000_000_000],
            "event 2 is at 1,000,000,000 ms, outside the 0 to 3,600,000 ms (an hour)",
            id="beyond-an-hour",
        ),
        pytest.param([0, 1, 10**40], "event 2 is at 10^15 ms or more, outside the 0 to", id="huge"),
        pytest.param([0, -1, 2], "event 1 is at -1 ms, outside the 0 to", id="negative"),
        pytest.param(
            [0, 50, 20], "event 2 is at 20 ms, before event 1 at 50 ms", id="out-of-order"
        ),
    ],
)
def test_timing_out_of_range_or_order_is_refused_on_load(
    recorded: Path, offsets: list[int], problem: str
) -> None:
    with_offsets(recorded, offsets)
    for load in (
        lambda: Cassette.load(recorded),
        lambda: Cassette.load(recorded, allow_tampered=True),
        lambda: CassetteTransport(recorded, inner=NoNetwork(), pace="recorded"),
    ):
        with pytest.raises(CassetteFormatError) as refused:
            load()
        message = str(refused.value)
        assert message.startswith(f"{recorded}: invalid interaction #0 at offsets_ms: {problem}")
        assert "re-record the cassette, or delete the interaction's offsets_ms" in message
        assert refused.value.code == "cassette_format_invalid"


def test_timing_up_to_an_hour_loads(recorded: Path) -> None:
    with_offsets(recorded, [0, 0, MAX_OFFSET_MS])
    (interaction,) = Cassette.load(recorded).interactions
    assert interaction.offsets_ms == [0, 0, MAX_OFFSET_MS]


def test_a_recording_longer_than_an_hour_keeps_no_timing(recorded: Path) -> None:
    """What is recorded always loads again: timing a file may not hold is left out, and the
    answer replays unpaced."""
    (interaction,) = Cassette.load(recorded).interactions
    rebuilt = Interaction.build(
        interaction.key,
        interaction.occurrence,
        interaction.request,
        interaction.response,
        [0, MAX_OFFSET_MS, MAX_OFFSET_MS + 1],
    )
    assert rebuilt.offsets_ms is None
    assert rebuilt.digest == interaction.digest
