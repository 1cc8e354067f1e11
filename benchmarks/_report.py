"""What several benchmarks print and measure alike: the heading line, and modes timed in turns."""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Callable, Mapping
from datetime import UTC, datetime


def heading(subject: str) -> str:
    """A benchmark's first line: when, on what machine, which Python, and what it measures."""
    return (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.machine()}, {os.cpu_count()} cores; "
        f"Python {platform.python_version()}; {subject}"
    )


def alternated(modes: Mapping[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Each mode's median of `repeats` measurements, the modes taking turns in every round, so
    a machine that slows down for a while weighs on every mode alike."""
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(repeats):
        for mode, measure in modes.items():
            times[mode].append(measure())
    return {mode: statistics.median(values) for mode, values in times.items()}
