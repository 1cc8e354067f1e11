"""A suite's shared cassette kept the way a team keeps it: re-record a part of the suite and keep
the rest, then prune what no test plays any more, by the usage log a replay run leaves."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from harness.cassettes import Cassette, CassetteTransport, Interaction, RecordModeError
from harness.cassettes.usage import (
    USAGE_VARIABLE,
    CassetteUsageError,
    RunSummary,
    Usage,
    append_line,
    prune,
    read_usage,
)
from harness.cli import main
from tests.support.cassette_traffic import CHAT, OPENAI, NoNetwork, ScriptedProvider, chat

pytest_plugins = ["pytester"]

INI = """
[pytest]
addopts = --strict-markers --strict-config -p no:cacheprovider -p no:cassetter -p no:randomly
filterwarnings = error
"""

SUITE = """
import os

import pytest

from harness.llm.models import LlmRequest, UserMessage


@pytest.mark.parametrize("number", range(3))
@pytest.mark.parametrize("model", {models})
def test_ask(model, number, harness_cassette, harness_script, harness_gateway):
    version = os.environ.get("ANSWER_VERSION", "1")
    script = harness_script("openai", [{{"text": f"{{model}} {{number}} v{{version}}"}}])
    gateway = harness_gateway("openai", harness_cassette("cassettes/shared.json", inner=script))
    question = UserMessage(content=f"{{model}} question {{number}}")
    answer = gateway.complete(LlmRequest(model="gpt-4o-mini", messages=(question,))).text
    assert answer.startswith(f"{{model}} {{number}} v")
"""


def answers(cassette: Path) -> list[str]:
    return sorted(
        json.dumps(interaction.response.body)
        for interaction in Cassette.load(cassette).interactions
    )


def versions(cassette: Path) -> dict[str, str]:
    """The answer's version per question, from the cassette."""
    found = {}
    for interaction in Cassette.load(cassette).interactions:
        question = json_of(interaction.request.body)["messages"][-1]["content"]
        text = json_of(interaction.response.body)["choices"][0]["message"]["content"]
        found[question] = text.rsplit(" ", 1)[1]
    return found


def json_of(body: object) -> Any:
    """A recorded JSON body, as the test reads it."""
    return body


def content(interaction: Interaction) -> Any:
    return json_of(interaction.request.body)["messages"][0]["content"]


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("HARNESS_RECORD_RUN_ID", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    monkeypatch.delenv("ANSWER_VERSION", raising=False)
    pytester.makeini(INI)
    pytester.makepyfile(test_suite=SUITE.format(models=["gpt", "claude"]))
    return pytester


def prune_command(*arguments: str) -> Any:
    return CliRunner().invoke(main, ["cassettes", "prune", *arguments])


def test_re_recording_part_of_a_suite_replaces_its_requests_and_keeps_every_other(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = suite.path / "cassettes" / "shared.json"
    suite.runpytest("--harness-record-mode=once").assert_outcomes(passed=6)
    assert set(versions(shared).values()) == {"v1"}

    monkeypatch.setenv("ANSWER_VERSION", "2")
    suite.runpytest("--harness-record-mode=all", "-k", "claude").assert_outcomes(
        passed=3, deselected=3
    )
    assert versions(shared) == {
        **{f"gpt question {n}": "v1" for n in range(3)},
        **{f"claude question {n}": "v2" for n in range(3)},
    }
    monkeypatch.delenv("ANSWER_VERSION")
    suite.runpytest().assert_outcomes(passed=6)

    # a whole-suite re-recording is a fresh cassette, as before
    monkeypatch.setenv("ANSWER_VERSION", "3")
    suite.runpytest("--harness-record-mode=all").assert_outcomes(passed=6)
    assert set(versions(shared).values()) == {"v3"}
    assert len(Cassette.load(shared).interactions) == 6


def test_a_node_id_or_a_narrower_file_is_a_part_of_the_suite_too(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = suite.path / "cassettes" / "shared.json"
    suite.runpytest("--harness-record-mode=once").assert_outcomes(passed=6)
    monkeypatch.setenv("ANSWER_VERSION", "2")
    suite.runpytest("--harness-record-mode=all", "test_suite.py::test_ask[gpt-1]").assert_outcomes(
        passed=1
    )
    changed = {question for question, version in versions(shared).items() if version == "v2"}
    assert changed == {"gpt question 1"}
    assert len(Cassette.load(shared).interactions) == 6


def test_prune_drops_what_a_green_whole_suite_replay_never_played(
    suite: pytest.Pytester,
) -> None:
    shared = suite.path / "cassettes" / "shared.json"
    suite.runpytest("--harness-record-mode=once").assert_outcomes(passed=6)
    suite.makepyfile(test_suite=SUITE.format(models=["gpt"]))  # the claude tests are gone
    suite.runpytest().assert_outcomes(passed=3)
    log = suite.path / ".harness" / "cassette-usage.jsonl"
    assert RunSummary(complete=True, failed=0) in read_usage([log]).runs[0]

    before = shared.read_bytes()
    dry = prune_command("cassettes/shared.json", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "would drop 3 of 6 interaction(s) no test played" in dry.output
    assert shared.read_bytes() == before

    pruned = prune_command("cassettes/shared.json")
    assert pruned.exit_code == 0, pruned.output
    assert "dropped 3 of 6" in pruned.output
    assert set(versions(shared)) == {f"gpt question {n}" for n in range(3)}
    suite.runpytest().assert_outcomes(passed=3)  # what is left replays

    again = prune_command("cassettes/shared.json")
    assert "dropped 0 of 3" in again.output


def test_prune_refuses_the_log_of_a_part_of_the_suite_unless_told(
    suite: pytest.Pytester,
) -> None:
    shared = suite.path / "cassettes" / "shared.json"
    suite.runpytest("--harness-record-mode=once").assert_outcomes(passed=6)
    suite.runpytest("-k", "gpt").assert_outcomes(passed=3, deselected=3)

    refused = prune_command("cassettes/shared.json")
    assert refused.exit_code == 2
    assert "it ran a part of the suite (-k gpt)" in refused.output
    assert "--from-partial-run" in refused.output
    assert len(Cassette.load(shared).interactions) == 6

    told = prune_command("cassettes/shared.json", "--from-partial-run")
    assert told.exit_code == 0, told.output
    assert len(Cassette.load(shared).interactions) == 3


def test_prune_refuses_a_log_of_a_failing_run(suite: pytest.Pytester) -> None:
    suite.runpytest("--harness-record-mode=once").assert_outcomes(passed=6)
    suite.makepyfile(test_more="def test_broken():\n    assert False\n")
    suite.runpytest().assert_outcomes(passed=6, failed=1)
    refused = prune_command("cassettes/shared.json")
    assert refused.exit_code == 2
    assert "1 test(s) failed" in refused.output


def record_three(path: Path, provider: ScriptedProvider) -> None:
    transport = CassetteTransport(path, mode="once", inner=provider.transport(), run_id="first")
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        for text in ("a", "b", "c"):
            client.post(CHAT, json=chat(text))


def test_a_transport_logs_what_it_played_and_prune_keeps_exactly_that(
    tmp_path: Path, provider: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "c.json"
    record_three(cassette, provider)
    log = tmp_path / "usage.jsonl"
    monkeypatch.setenv(USAGE_VARIABLE, str(log))
    with httpx2.Client(
        transport=CassetteTransport(cassette, inner=NoNetwork()), base_url=OPENAI
    ) as client:
        client.post(CHAT, json=chat("b"))
    pruned = prune(cassette, read_usage([log]))
    assert [content(i) for i in pruned.dropped] == ["a", "c"]
    assert [content(i) for i in Cassette.load(cassette).interactions] == ["b"]


def test_prune_refuses_a_log_that_never_opened_the_cassette_and_a_log_that_is_not_one(
    tmp_path: Path, provider: ScriptedProvider
) -> None:
    cassette = tmp_path / "c.json"
    record_three(cassette, provider)
    with pytest.raises(CassetteUsageError, match="no test of the logged run opened it"):
        prune(cassette, Usage())
    log = tmp_path / "usage.jsonl"
    append_line(log, RunSummary(complete=True, failed=0))
    with log.open("a") as file:
        file.write('{"kind": "cassette", "cassette": 3}\n')
    with pytest.raises(CassetteUsageError, match=r"usage\.jsonl:2: not a cassette usage record"):
        read_usage([log])
    with pytest.raises(CassetteUsageError, match="cannot be read"):
        read_usage([tmp_path / "missing.jsonl"])
    assert len(Cassette.load(cassette).interactions) == 3


def test_a_tampered_cassette_is_never_pruned(
    tmp_path: Path, provider: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "c.json"
    record_three(cassette, provider)
    log = tmp_path / "usage.jsonl"
    monkeypatch.setenv(USAGE_VARIABLE, str(log))
    with httpx2.Client(
        transport=CassetteTransport(cassette, inner=NoNetwork()), base_url=OPENAI
    ) as client:
        client.post(CHAT, json=chat("a"))
    tampered = cassette.read_text().replace('"n": 2', '"n": 20')
    cassette.write_text(tampered)
    result = prune_command(str(cassette), "--unplayed-in", str(log))
    assert result.exit_code == 2
    assert cassette.read_text() == tampered


def test_within_one_partial_re_recording_a_request_recorded_once_replays_to_later_tests(
    tmp_path: Path, provider: ScriptedProvider
) -> None:
    cassette = tmp_path / "c.json"
    record_three(cassette, provider)  # answers n=1, 2, 3
    run = f"partial-{uuid.uuid4().hex}"

    def send(text: str) -> Any:
        transport = CassetteTransport(
            cassette, mode="all", inner=provider.transport(), run_id=run, rerecord="requests"
        )
        with httpx2.Client(transport=transport, base_url=OPENAI) as client:
            return client.post(CHAT, json=chat(text)).json()["n"]

    first = send("b")  # re-recorded: a new answer
    assert first == 4
    assert send("b") == first  # the same run replays what it recorded
    contents = {
        content(i): json_of(i.response.body)["n"] for i in Cassette.load(cassette).interactions
    }
    assert contents == {"a": 1, "b": 4, "c": 3}


def test_an_unknown_rerecord_value_names_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_RERECORD", "some")
    with pytest.raises(RecordModeError, match="HARNESS_RERECORD='some'"):
        CassetteTransport(tmp_path / "c.json", mode="all")
    with pytest.raises(RecordModeError, match="rerecord='everything'"):
        CassetteTransport(tmp_path / "c.json", mode="all", rerecord="everything")  # type: ignore[arg-type]
