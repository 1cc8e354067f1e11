"""Paced replay: an event stream delivered with the timing it was recorded with.

A streaming UI under test (tokens appearing as a user sees them, a stop button pressed mid-answer)
needs the events to arrive over time, not all at once. A recording keeps when each event arrived
(`Interaction.offsets_ms`); a replay paced `recorded` waits for each event's offset, `N` waits
N times less, and `off` (the default) sends everything as fast as the client reads it.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Final

import anyio

from harness.errors import HarnessError
from harness.http_clients import ChunkStream

PACES: Final = ("recorded", "off")
"""The named paces; a positive number is a speed factor (2 = twice as fast as recorded)."""


class PaceError(HarnessError, ValueError):
    """Raised for a pace that is neither `recorded`, `off` nor a positive number."""

    code = "cassette_pace_invalid"


def parse_pace(value: str | float | None) -> float | None:
    """The speed factor of a pace: `recorded` is 1, `off` (or None) is None (no waiting), a
    positive number is itself (`"4"`: four times faster than recorded)."""
    if value is None or value == "off":
        return None
    if value == "recorded":
        return 1.0
    try:
        speed = float(value)
    except (TypeError, ValueError):
        speed = math.nan
    if not math.isfinite(speed) or speed <= 0:
        raise PaceError(
            f"expected a pace of 'recorded' (the recorded timing), 'off' (as fast as possible) or "
            f"a positive number of times faster, such as 4, but got {value!r}"
        )
    return speed


class PacedStream(ChunkStream):
    """Chunks delivered at their offsets (seconds from the first read), sync or async."""

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
    an event stream, or one recorded before timing was kept)."""
    if speed is None or offsets_ms is None or len(offsets_ms) != chunks:
        return None
    return [offset / 1000 / speed for offset in offsets_ms]
