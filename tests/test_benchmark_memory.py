"""The replay-memory benchmark's smoke run: a small cassette, each tool in its own process; it
prints each tool's peak and load time and the verdict (no figure is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks.replay_memory import main

pytestmark = pytest.mark.subprocess  # the benchmark starts processes of its own


@pytest.mark.subprocess
def test_a_small_run_prints_every_tool_and_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--size", "30", "--sample", "5", "--repeats", "1"]) == 0
    report = capsys.readouterr().out
    for tool in ("harness", "vcrpy", "cassetter"):
        assert re.search(rf"\| {tool} \| [\d.]+ MiB \| [\d.]+ MiB \| [\d.]+x \| \d+ ms \|", report)
    assert re.search(r"harness peak / file size: [\d.]+x \(target <= 2x\): (PASS|FAIL)", report)
