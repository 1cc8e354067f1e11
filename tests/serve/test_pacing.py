"""Pacing for streaming UIs through `harness serve`: a stream recorded through the server keeps
when each event arrived, and `--pace recorded` (or a session's own pace) delivers the events no
sooner than that; `off` (the default) as fast as the client reads. A pace out of range is
refused wherever it is given, and a stop is prompt: `harness serve` exits within 2 s of SIGTERM
or SIGINT, the paced streams and recordings still under way cut off."""

from __future__ import annotations

import dataclasses
import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest
from click.testing import CliRunner

from harness.cassettes import Cassette
from harness.cassettes.pacing import PaceError
from harness.cli import main
from harness.serve import ServeConfig
from harness.serve.server import ReplayServer
from tests.support.cassette_files import edit_cassette
from tests.support.fake_provider import (
    Answer,
    HeldStream,
    ReceivedRequest,
    Reply,
    reply_for,
    serve,
)
from tests.support.serve_http import provider_environ
from tests.support.serve_process import ServeProcess, harness_serve
from tests.support.streamed_cassette import CAPITAL_REQUEST, record_streamed_answer

GAP = 0.1
BODY = {
    "model": "gpt-4o-mini",
    "stream": True,
    "messages": [{"role": "user", "content": "Tell me slowly."}],
}


def slow(request: ReceivedRequest) -> Reply:
    reply = reply_for(request, Answer(text="one two three four"))
    return dataclasses.replace(reply, pace=lambda index: time.sleep(GAP) if index else None)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cassettes")
    with serve(slow) as provider:
        environ = {"OPENAI_BASE_URL": provider.base_url, "OPENAI_API_KEY": "sk-server-key"}
        with ReplayServer(cassettes=folder, record_mode="once", environ=environ) as server:
            read_stream(f"{server.url}/c/slow/v1")
    return folder


def read_stream(base_url: str) -> tuple[int, float]:
    started = time.monotonic()
    with httpx2.stream("POST", f"{base_url}/chat/completions", json=BODY) as response:
        assert response.status_code == 200, response.read()
        events = [line for line in response.iter_lines() if line.startswith("data:")]
    return len(events), time.monotonic() - started


def test_the_recording_keeps_each_event_s_offset(recorded: Path) -> None:
    (interaction,) = Cassette.load(recorded / "slow.json").interactions
    assert interaction.response.events is not None
    offsets = interaction.offsets_ms
    assert offsets is not None
    assert len(offsets) == len(interaction.response.events)
    assert offsets[-1] >= (len(offsets) - 2) * GAP * 1000 * 0.9


def test_pace_recorded_replays_with_the_recorded_timing(recorded: Path) -> None:
    (interaction,) = Cassette.load(recorded / "slow.json").interactions
    assert interaction.offsets_ms is not None
    with ReplayServer(cassettes=recorded, pace="recorded") as server:
        count, elapsed = read_stream(f"{server.url}/c/slow/v1")
    assert count == len(interaction.offsets_ms)
    assert elapsed >= interaction.offsets_ms[-1] / 1000 * 0.9


def test_a_session_sets_its_own_pace(recorded: Path) -> None:
    (interaction,) = Cassette.load(recorded / "slow.json").interactions
    assert interaction.offsets_ms is not None
    with ReplayServer(cassettes=recorded) as server:
        opened = httpx2.post(
            f"{server.url}/_harness/sessions", json={"cassette": "slow", "pace": 2}
        ).json()
        _, elapsed = read_stream(opened["base_urls"]["openai"])
    assert elapsed >= interaction.offsets_ms[-1] / 1000 / 2 * 0.9


def test_a_pace_that_is_not_one_is_refused_with_a_400(recorded: Path) -> None:
    with ReplayServer(cassettes=recorded) as server:
        refused = httpx2.post(
            f"{server.url}/_harness/sessions", json={"cassette": "slow", "pace": "fast"}
        )
    assert refused.status_code == 400
    assert "'recorded'" in refused.text
    assert "'fast'" in refused.text


RANGE: Final = "a number of times faster from 0.001 (a thousand times slower) to 1,000,000"


@pytest.mark.parametrize(
    "pace",
    [
        pytest.param(b"1e400", id="number-beyond-any-float"),
        pytest.param(b"1" + b"0" * 400, id="integer-beyond-any-float"),
        pytest.param(b'"1e400"', id="text-beyond-any-float"),
        pytest.param(b"1e-320", id="below-the-slowest"),
        pytest.param(b'"0.0001"', id="text-below-the-slowest"),
        pytest.param(b"2000000", id="beyond-the-fastest"),
        pytest.param(b"true", id="a-bool"),
    ],
)
@pytest.mark.parametrize("plays", ["cassette", "script"])
def test_a_session_pace_out_of_range_is_a_400_naming_the_range(
    recorded: Path, pace: bytes, plays: str
) -> None:
    opens: dict[str, Any] = (
        {"cassette": "slow"}
        if plays == "cassette"
        else {"script": [{"text": "Paris."}], "provider": "openai"}
    )
    body = json.dumps(opens).encode()[:-1] + b', "pace": ' + pace + b"}"  # as the client spelt it
    with ReplayServer(cassettes=recorded) as server:
        refused = httpx2.post(f"{server.url}/_harness/sessions", content=body)
    assert refused.status_code == 400, refused.text
    message: str = refused.json()["error"]["message"]
    assert message.startswith("invalid session: pace: expected a pace of 'recorded'"), message
    assert RANGE in message


@pytest.mark.parametrize("pace", ["1e400", "1e-320", "0.0001", "2e6", "0", "fast"])
def test_the_command_line_refuses_a_pace_out_of_range_before_serving(
    pace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[ServeConfig] = []
    monkeypatch.setattr(
        "harness.serve.serve_forever", lambda config, **options: served.append(config)
    )
    result = CliRunner().invoke(main, ["serve", "--port", "0", "--pace", pace])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "error: expected a pace of 'recorded' (the recorded timing), 'off' (as fast as possible) "
        f"or {RANGE}, such as 4 or 0.5, but got pace={pace!r} (type=str)\n"
    )
    assert not served


@pytest.mark.parametrize(
    "pace",
    [
        pytest.param(10**400, id="integer-beyond-any-float"),
        pytest.param(1e-320, id="below-the-slowest"),
        pytest.param(float("nan"), id="nan"),
    ],
)
def test_a_python_caller_gets_a_pace_error(tmp_path: Path, pace: float) -> None:
    with pytest.raises(PaceError, match=re.escape(RANGE)):
        ReplayServer(cassettes=tmp_path, pace=pace)
    with pytest.raises(PaceError, match=re.escape(RANGE)):
        ServeConfig(cassettes=tmp_path, pace=pace)


def test_a_cassette_whose_timing_is_out_of_range_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes"
    record_streamed_answer(folder)

    def days_later(data: dict[str, Any]) -> None:
        (interaction,) = data["interactions"]
        interaction["offsets_ms"] = [0] * (len(interaction["response"]["events"]) - 1) + [10**9]

    edit_cassette(folder / "capital.json", days_later)
    problem = "capital.json: invalid interaction #0 at offsets_ms: event "
    bound = "outside the 0 to 3,600,000 ms (an hour)"
    with ReplayServer(cassettes=folder, pace="recorded") as server:
        replayed = httpx2.post(f"{server.url}/c/capital/v1/chat/completions", json=CAPITAL_REQUEST)
        opened = httpx2.post(
            f"{server.url}/_harness/sessions", json={"cassette": "capital", "pace": "recorded"}
        )
    assert replayed.status_code == 404, replayed.text
    assert problem in replayed.json()["error"]["message"]
    assert bound in replayed.json()["error"]["message"]
    assert opened.status_code == 400, opened.text
    assert problem in opened.json()["error"]["message"]
    assert str(tmp_path) not in replayed.text + opened.text


# -- a stop is prompt ----------------------------------------------------------------------------

STOP_SECONDS: Final = 2.0
"""The promise: `harness serve` exits within this long of SIGTERM or SIGINT, whatever is still
going out."""
STOPS: Final = [
    pytest.param(signal.SIGTERM, id="SIGTERM"),
    pytest.param(signal.SIGINT, id="SIGINT"),
]
EXIT_CODES: Final = {signal.SIGTERM: -signal.SIGTERM, signal.SIGINT: 0}
"""SIGTERM ends the process as the signal does once it has stopped; Ctrl-C is a normal end."""


def paced_over(folder: Path, seconds: float) -> None:
    """`folder/capital.json`: one event stream whose events were recorded evenly over
    `seconds` (timing is outside the digest, so the file still verifies)."""
    record_streamed_answer(folder)

    def spread(data: dict[str, Any]) -> None:
        (interaction,) = data["interactions"]
        last = len(interaction["response"]["events"]) - 1
        interaction["offsets_ms"] = [
            round(index * seconds * 1000 / last) for index in range(last + 1)
        ]

    edit_cassette(folder / "capital.json", spread)


def stop_within_bound(server: ServeProcess, stop: int) -> None:
    started = time.monotonic()
    server.process.send_signal(stop)
    try:
        server.process.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
        pytest.fail(
            f"harness serve did not exit within {STOP_SECONDS:g}s of {signal.Signals(stop).name}"
        )
    assert time.monotonic() - started < STOP_SECONDS


@pytest.mark.subprocess
@pytest.mark.parametrize("stop", STOPS)
def test_a_stop_cuts_a_paced_stream_off_and_exits_within_two_seconds(
    tmp_path: Path, stop: signal.Signals
) -> None:
    folder = tmp_path / "cassettes"
    paced_over(folder, seconds=20)  # a realistic answer, paced as recorded
    with harness_serve(folder, "--pace=recorded", stop=stop) as server:
        url = f"{server.url}/c/capital/v1/chat/completions"
        with httpx2.stream("POST", url, json=CAPITAL_REQUEST, timeout=30) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            assert next(lines).startswith("data: ")  # the first event is due at once
            stop_within_bound(server, stop)
            with pytest.raises(httpx2.RemoteProtocolError):  # cut off, never ended as if whole
                list(lines)
    assert server.process.returncode == EXIT_CODES[stop]
    assert "Traceback" not in server.stderr
    assert "ERROR" not in server.stderr


@pytest.mark.subprocess
@pytest.mark.parametrize("stop", STOPS)
def test_a_recording_under_way_at_a_stop_is_cut_off_and_not_saved(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """A recording is whole or not at all: one the stop breaks off is not saved, and a
    provider slow to finish does not hold the stop."""
    folder = tmp_path / "cassettes"
    held = HeldStream(Answer(text="Paris is the capital."))  # the last event waits
    with serve(held) as provider:
        try:
            with harness_serve(
                folder, "--record-mode=once", environ=provider_environ(provider.base_url), stop=stop
            ) as server:
                url = f"{server.url}/c/held/v1/chat/completions"
                with httpx2.stream("POST", url, json=CAPITAL_REQUEST, timeout=30) as response:
                    lines = response.iter_lines()
                    assert next(lines).startswith("data: ")
                    stop_within_bound(server, stop)
                    with pytest.raises(httpx2.RemoteProtocolError):
                        list(lines)
        finally:
            held.release.set()
    assert server.process.returncode == EXIT_CODES[stop]
    assert not (folder / "held.json").exists()
    assert "Traceback" not in server.stderr
    assert "ERROR" not in server.stderr
