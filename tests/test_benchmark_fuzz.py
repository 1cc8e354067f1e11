"""The fuzz benchmark's smoke run: every mode (the reference target, the Python example target,
`--compare-reference`) and the shrink report print, with the verdict (no timing is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks.fuzz_speed import main


@pytest.mark.subprocess  # the Python example target is a command
def test_a_small_run_reports_both_modes_the_shrink_and_the_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--cells", "5", "--repeats", "1", "--seeds", "1"]) == 0
    report = capsys.readouterr().out
    for mode in (
        "harness fuzz (agent cells)",
        "harness fuzz (every kind)",
        "harness run --compare-reference",
        "harness fuzz, Python example target (agent cells, once)",
    ):
        assert re.search(rf"\| {re.escape(mode)} \| [\d.]+ s \| [\d.]+ \| [\d.]+x \|", report)
    assert re.search(r"shrink \(mutant, 1 seeds\): median [\d.]+ s", report)
    assert re.search(
        r"harness fuzz on the reference target: [\d.]+ agent cells/s \(target >= 20\): (PASS|FAIL)",
        report,
    )
