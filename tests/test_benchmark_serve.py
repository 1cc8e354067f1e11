"""The `harness serve` load benchmark's own parts: realistic streams, and a report of every mode.

No timing is asserted here: the smoke run only checks what the report says and that every
stream came back as recorded."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from openai.types.chat import ChatCompletionChunk

from benchmarks.serve_load import (
    EVENTS_PER_STREAM,
    IN_PROCESS_MODE,
    PROMPTS,
    SERVER_MODE,
    SERVER_SDK_MODE,
    BenchmarkError,
    Load,
    Settings,
    build_stream_traffic,
    load_server,
    main,
    parse_settings,
)
from harness.serve import ReplayServer
from harness.sse import parse_sse

pytestmark = pytest.mark.subprocess  # the benchmark starts processes of its own


def test_each_stream_is_twenty_chat_completion_chunks_that_rebuild_the_answer() -> None:
    traffic = build_stream_traffic()
    assert len(traffic.bodies) == len(set(traffic.bodies)) == PROMPTS
    kinds: set[str] = set()
    for body, stream in zip(traffic.bodies, traffic.streams, strict=True):
        assert json.loads(body)["stream"] is True
        events = parse_sse(stream.decode())
        assert len(events) == EVENTS_PER_STREAM
        assert events[-1].data == "[DONE]"
        chunks = [
            ChatCompletionChunk.model_validate_json(event.data or "") for event in events[:-1]
        ]
        deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
        text = "".join(delta.content or "" for delta in deltas)
        arguments = "".join(
            call.function.arguments or ""
            for delta in deltas
            for call in delta.tool_calls or ()
            if call.function is not None
        )
        if arguments:
            kinds.add("tool call")
            json.loads(arguments)  # the argument pieces join into the recorded JSON object
        else:
            kinds.add("text")
            assert len(text) > 100
        assert chunks[-1].usage is not None
        assert chunks[-1].choices == []
    assert kinds == {"text", "tool call"}


def test_percentiles_are_nearest_rank() -> None:
    load = Load("m", latencies=[float(value) for value in range(1, 101)])
    assert (load.percentile(0.5), load.percentile(0.99), load.percentile(1.0)) == (50, 99, 100)


def _row(report: str, mode: str) -> list[str]:
    (line,) = [line for line in report.splitlines() if line.startswith(f"| {mode} ")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def _milliseconds(cell: str) -> float:
    return float(cell.removesuffix(" ms").replace(",", ""))


@pytest.mark.subprocess
def test_a_short_run_reports_every_mode_without_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--clients", "2", "--seconds", "1"]) == 0
    report = capsys.readouterr().out
    assert re.search(r"completion-harness \S+ at (commit \w+|unknown commit)", report)
    assert "2 clients, against harness serve in 2 process(es); 1 s per mode" in report
    for mode in (SERVER_MODE, SERVER_SDK_MODE, IN_PROCESS_MODE):
        _, requests, per_second, p50, p99, longest, errors, cpu, busy = _row(report, mode)
        assert int(requests.replace(",", "")) > 0
        assert float(per_second.replace(",", "")) > 0
        assert 0 < _milliseconds(p50) <= _milliseconds(p99) <= _milliseconds(longest)
        assert errors == "0", f"{mode}: every stream must come back as recorded"
        assert "clients" in cpu
        assert "clients" in busy
    assert "server" in _row(report, SERVER_MODE)[7]
    assert "server" in _row(report, SERVER_SDK_MODE)[7]
    assert "#### Targets (harness serve, minimal HTTP/1.1 clients)" in report
    assert re.search(r"\| zero errors +\| 0 +\| PASS +\|", report)
    assert re.search(
        r"\| p99 < 50\.0 ms for a 20-event stream +\| [\d.,]+ ms +\| (PASS|FAIL) +\|", report
    )


@pytest.mark.subprocess
def test_a_server_answering_wrongly_stops_the_run_with_the_reason(tmp_path: Path) -> None:
    traffic = build_stream_traffic()
    with ReplayServer(tmp_path) as server, pytest.raises(BenchmarkError) as caught:
        # no cassette in the folder: every request is a 404
        load_server(server.url, os.getpid(), traffic, Settings(clients=2, seconds=1, processes=2))
    assert "errors during the warm-up: {'HTTP 404': " in str(caught.value)


def test_nonsense_settings_are_refused_with_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--clients", "0"])
    assert "expected at least 1 but got --clients=0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--clients", "2", "--processes", "3"])
    assert "expected 1 to --clients=2 but got --processes=3" in capsys.readouterr().err
    assert parse_settings(["--clients", "1"]).processes == 1, "the default fits one client"
