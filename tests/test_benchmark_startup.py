"""The start-up benchmark's smoke run: it times two kinds of one-scenario harness run, each beside
its third-party imports alone, and names the heaviest imports (no timing is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks.startup import main

pytestmark = pytest.mark.subprocess  # the benchmark starts processes of its own


@pytest.mark.subprocess
def test_a_short_run_prints_the_time_the_verdict_and_the_imports(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--repeats", "1"]) == 0
    report = capsys.readouterr().out
    for case in ("forced-completion cell", "plain agent cell"):
        assert re.search(rf"\| {case} \| [\d.]+ s \| [\d.]+ s \| -?[\d.]+ s \|", report)
        assert re.search(rf"{case}: (PASS|FAIL)", report)
    assert re.search(r"\| \d+ ms \| `harness[\w.]*` \|", report)
