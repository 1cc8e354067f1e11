"""What several benchmarks print and measure alike: the heading line, the library benchmarks'
arguments, and modes timed in turns."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime


def heading(subject: str) -> str:
    """A benchmark's first line: when, on what machine, which Python, and what it measures."""
    return (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.machine()}, {os.cpu_count()} cores; "
        f"Python {platform.python_version()}; {subject}"
    )


def library_arguments(
    description: str | None, argv: Sequence[str] | None, *, repeats: int
) -> argparse.Namespace:
    """The `--size` and `--repeats` of a benchmark over the scenario library, its heading printed."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=200, help="scenarios (x5 runtime profiles)")
    parser.add_argument("--repeats", type=int, default=repeats)
    arguments = parser.parse_args(argv)
    print(heading(f"{arguments.size} scenarios x 5 runtime profiles"))
    return arguments


def alternated(modes: Mapping[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Each mode's median of `repeats` measurements, the modes taking turns in every round, so
    a machine that slows down for a while weighs on every mode alike."""
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(repeats):
        for mode, measure in modes.items():
            times[mode].append(measure())
    return {mode: statistics.median(values) for mode, values in times.items()}
