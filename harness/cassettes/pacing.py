"""Paced replay: an event stream delivered with the timing it was recorded with.

A streaming UI under test (tokens appearing as a user sees them, a stop button pressed mid-answer)
needs the events to arrive over time, not all at once. A recording keeps when each event arrived
(`Interaction.offsets_ms`); a replay paced `recorded` waits for each event's offset, `N` waits
N times less, and `off` (the default) sends everything as fast as the client reads it.

Every wait is finite and bounded: a speed factor is refused outside `MIN_SPEED` to `MAX_SPEED`,
and a cassette is refused when an event's offset is beyond `MAX_OFFSET_MS`
(`harness.cassettes.cassette`), so no event waits longer than `MAX_OFFSET_MS / MIN_SPEED`.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Final

import anyio

from harness.cassettes.cassette import MAX_OFFSET_MS
from harness.errors import HarnessError
from harness.http_clients import ChunkStream

PACES: Final = ("recorded", "off")
"""The named paces; a number is a speed factor (2 = twice as fast as recorded)."""
MIN_SPEED: Final = 0.001
"""The slowest pace: a thousand times slower than recorded (an event recorded a second in
arrives after about 17 minutes)."""
MAX_SPEED: Final = 1_000_000.0
"""The fastest pace: a million times faster than recorded (an hour of events within 4 ms)."""
LONGEST_WAIT_SECONDS: Final = MAX_OFFSET_MS / 1000 / MIN_SPEED
"""The latest any event of a paced replay is due, from the start of its answer."""
_SHOWN_CHARACTERS: Final = 40


class PaceError(HarnessError, ValueError):
    """Raised for a pace that is neither `recorded`, `off` nor a number of times faster from
    0.001 (a thousand times slower) to 1,000,000: other text, infinity, NaN, zero, a negative
    number, or one out of that range (`1e400`, `1e-320`). Checked where a pace is given
    (`CassetteTransport(pace=)`, `harness serve --pace`, a session's `pace`), so a replay never
    waits an unbounded time; the message names the accepted paces and the range."""

    code = "cassette_pace_invalid"


def parse_pace(value: object) -> float | None:
    """The speed factor of a pace: `recorded` is 1, `off` (or None) is None (no waiting), a
    number from `MIN_SPEED` to `MAX_SPEED`, or its text, is itself (`"4"`: four times faster
    than recorded). Anything else (a bool included) raises `PaceError`, never `OverflowError`:
    `"1e400"` reads as infinity and `10**400` as no float at all, and both are refused."""
    if value is None or value == "off":
        return None
    if value == "recorded":
        return 1.0
    speed = _speed(value)
    if speed is None or not MIN_SPEED <= speed <= MAX_SPEED:  # NaN fails every comparison
        shown = repr(value)
        if len(shown) > _SHOWN_CHARACTERS:
            shown = f"{shown[: _SHOWN_CHARACTERS - 3]}..."
        raise PaceError(
            f"expected a pace of 'recorded' (the recorded timing), 'off' (as fast as possible) "
            f"or a number of times faster from {MIN_SPEED:g} (a thousand times slower) to "
            f"{MAX_SPEED:,.0f}, such as 4 or 0.5, but got pace={shown} "
            f"(type={type(value).__name__})"
        )
    return speed


def _speed(value: object) -> float | None:
    """`value` as a finite float, or None when it is none (a bool is not a speed)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        speed = float(value)
    except (ValueError, OverflowError):  # not a number; an int beyond any float
        return None
    return speed if math.isfinite(speed) else None


class PacedStream(ChunkStream):
    """Chunks delivered at their offsets (seconds from the first read), sync or async.

    The async form waits with `anyio.sleep`, so cancelling its reader (a client leaving, the
    server stopping) ends the wait at once."""

    def __init__(self, chunks: Sequence[bytes], offsets: Sequence[float]) -> None:
        super().__init__(chunks)
        self._offsets = offsets

    def __iter__(self) -> Iterator[bytes]:
        start = time.monotonic()
        for chunk, due in zip(self._chunks, self._offsets, strict=True):
            wait = due - (time.monotonic() - start)
            if wait > 0:
                time.sleep(wait)
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        start = time.monotonic()
        for chunk, due in zip(self._chunks, self._offsets, strict=True):
            wait = due - (time.monotonic() - start)
            if wait > 0:
                await anyio.sleep(wait)
            yield chunk


def paced_offsets(
    chunks: int, offsets_ms: Sequence[int] | None, speed: float | None
) -> list[float] | None:
    """When each of `chunks` is due, in seconds: the recorded offsets divided by `speed`; None
    (unpaced) when `speed` is None or the offsets are not one per chunk (an answer that is not
    an event stream, or one recorded before timing was kept). With a speed `parse_pace` gave
    and offsets a loaded cassette holds, each is at most `LONGEST_WAIT_SECONDS`."""
    if speed is None or offsets_ms is None or len(offsets_ms) != chunks:
        return None
    return [offset / 1000 / speed for offset in offsets_ms]
