"""The target benchmark's smoke run: every mode runs the library with every cell passing, and the
report prints the ratio and a verdict (no timing is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks.target_overhead import main

pytestmark = pytest.mark.subprocess  # the benchmark starts processes of its own


@pytest.mark.subprocess
def test_a_small_run_reports_every_mode_and_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--size", "2", "--repeats", "1"]) == 0
    report = capsys.readouterr().out
    for mode in ("in process", "--target (Python callable)", "--target-cmd (JSON lines)"):
        assert re.search(rf"\| {re.escape(mode)} \| [\d.]+ s \| [\d.]+ ms \| [\d.]+x \|", report)
    assert re.search(r"--target / in process: [\d.]+x \(target <= 2x\): (PASS|FAIL)", report)
