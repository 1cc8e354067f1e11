"""The engines benchmark's smoke run: one library cell per engine, simulated and real, with the
start-up, cells per second, ratio and memory of each (no timing is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks.engines import main

pytestmark = [pytest.mark.subprocess, pytest.mark.engine, pytest.mark.xdist_group("engines")]


def test_a_small_run_prints_a_row_per_engine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--cells", "1", "--workers", "1"]) == 0
    report = capsys.readouterr().out
    for engine in ("temporal", "dbos"):
        assert re.search(
            rf"\| {engine} \| 1 \| [\d.]+ s \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+ MiB \|", report
        ), report
