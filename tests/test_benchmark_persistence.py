"""The persistence benchmark's smoke run: a small library's states saved both ways, the bytes and
the cost per cell of each, and the verdict (no timing is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks.persistence import main


def test_a_small_run_prints_both_ways_and_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--size", "4", "--repeats", "1"]) == 0
    report = capsys.readouterr().out
    assert re.search(r"20 cells, [\d,]+ saves \([\d.]+ per cell\)", report)
    rows = re.findall(r"\| (.+?) \| ([\d,]+) \| [\d.]+ ms \| \d+% \|", report)
    sizes = {way: int(size.replace(",", "")) for way, size in rows}
    assert set(sizes) == {"whole state at every save (before)", "StateWriter (now)"}
    assert sizes["StateWriter (now)"] < sizes["whole state at every save (before)"]
    assert re.search(r"now / before: [\d.]+ \(target <= 0.5\): (PASS|FAIL)", report)
