"""The start-up benchmark's smoke run: it times a one-scenario harness run beside its third-party
imports alone and names the heaviest imports (no timing is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks.startup import main


@pytest.mark.subprocess
def test_a_short_run_prints_the_time_the_verdict_and_the_imports(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--repeats", "1"]) == 0
    report = capsys.readouterr().out
    assert re.search(
        r"one-scenario harness run, median of 1: [\d.]+ s \(target < 0.3 s\): (PASS|FAIL)", report
    )
    assert re.search(
        r"its third-party imports alone, in a process of their own: [\d.]+ s; "
        r"the harness's own share: -?[\d.]+ s",
        report,
    )
    assert re.search(r"\| \d+ ms \| `harness[\w.]*` \|", report)
