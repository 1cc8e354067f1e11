"""The serve-memory benchmark's smoke run: a little traffic against both servers; it prints the
memory table and the verdict (no figure is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks.serve_memory import main

pytestmark = pytest.mark.subprocess  # the benchmark starts processes of its own


@pytest.mark.subprocess
def test_a_small_run_prints_both_servers_and_the_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--sessions", "30", "--names", "6"]) == 0
    report = capsys.readouterr().out
    for server in ("default limits", "no limit reached"):
        assert re.search(
            rf"\| harness serve \({server}\) \|( [\d.]+ MiB \|){{3}} [+-][\d.]+ MiB \|", report
        )
    assert re.search(r"limited / unlimited: [\d.]+ \(target <= 0.05\): (PASS|FAIL)", report)
