"""The summary benchmark's smoke run: both summaries printed for a small library, per cell and
the verdict (no timing is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks.summary import main


def test_a_small_run_prints_both_summaries_and_the_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--size", "20", "--repeats", "1"]) == 0
    report = capsys.readouterr().out
    assert re.search(r"\| a row per cell \(before\) \| [\d.]+ ms \| [\d.]+ ms \|", report)
    assert re.search(r"\| as harness run prints it \(now\) \| [\d.]+ ms \| [\d.]+ ms \|", report)
    assert re.search(r"summary per cell: [\d.]+ ms \(target <= 0.1 ms\): (PASS|FAIL)", report)
