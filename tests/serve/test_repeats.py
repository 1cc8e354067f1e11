"""`allow_repeats` (`harness serve --allow-repeats`): a server kept running across test runs
answers a request again once its recorded answers are used up, as `CassetteTransport` does."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.serve import ReplayServer, ServeConfig
from tests.support.streamed_cassette import CAPITAL_REQUEST, record_streamed_answer

OTHER_REQUEST = {**CAPITAL_REQUEST, "messages": [{"role": "user", "content": "And of Italy?"}]}


def ask(base_url: str, request: dict[str, object], times: int) -> list[httpx2.Response]:
    with httpx2.Client(base_url=base_url) as client:
        return [client.post("/chat/completions", json=request) for _ in range(times)]


def test_without_repeats_a_recorded_answer_is_served_once(tmp_path: Path) -> None:
    record_streamed_answer(tmp_path)
    with ReplayServer(tmp_path) as server:
        first, second = ask(server.cassette_url("capital", "openai"), CAPITAL_REQUEST, 2)
    assert first.status_code == 200
    assert second.status_code == 404
    assert second.json()["error"]["type"] == "not_found_error"


def test_with_repeats_the_same_request_gets_the_recorded_stream_every_time(tmp_path: Path) -> None:
    stream = record_streamed_answer(tmp_path)
    with ReplayServer(tmp_path, allow_repeats=True) as server:
        replies = ask(server.cassette_url("capital", "openai"), CAPITAL_REQUEST, 3)
        (unrecorded,) = ask(server.cassette_url("capital", "openai"), OTHER_REQUEST, 1)
    assert [reply.status_code for reply in replies] == [200, 200, 200]
    assert [reply.content for reply in replies] == [stream] * 3
    assert unrecorded.status_code == 404, "repeats replay recorded answers, never invent one"
    assert "And of Italy?" in json.dumps(unrecorded.json()), "the miss names what was asked"


def test_a_cassette_session_of_a_repeating_server_repeats_too(tmp_path: Path) -> None:
    stream = record_streamed_answer(tmp_path)
    with ReplayServer(tmp_path, allow_repeats=True) as server:
        session = server.session(cassette="capital")
        replies = ask(session.base_url("openai"), CAPITAL_REQUEST, 2)
    assert [(reply.status_code, reply.content) for reply in replies] == [(200, stream)] * 2


@pytest.mark.parametrize("allow_repeats", [False, True])
def test_the_command_line_flag_sets_the_servers_repeats(
    allow_repeats: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[ServeConfig] = []
    monkeypatch.setattr(
        "harness.serve.serve_forever", lambda config, **options: served.append(config)
    )
    arguments = ["serve", "--port", "0", *(["--allow-repeats"] if allow_repeats else [])]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    assert [config.allow_repeats for config in served] == [allow_repeats]
