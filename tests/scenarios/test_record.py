"""`harness record`: re-recording cassettes against a live provider, end to end, over loopback
servers that speak the OpenAI and Anthropic wire protocols (plain and streamed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cassettes import Cassette, Interaction
from harness.cli import main
from harness.llm.adapters import adapter_for
from harness.llm.gateway import parse_provider
from harness.llm.script import ScriptedReply
from tests.support.recordings import scripted_provider

KEY = "sk-proj-RECORDCANARY0000000000000000"

SCENARIO = """\
- name: record-{provider}
  provider: {provider}
  stores: [memory]
  cassette: cassettes/{provider}.json
  agent:
    user_message: Capital of France?
    stream: {stream}
    output_schema:
      type: object
      properties: {{city: {{type: string}}}}
      required: [city]
  expect:
    status: completed
    output: {{city: {city}}}
    forced_calls: 1
"""


def answer_of(provider: str, interaction: Interaction) -> str:
    """The text or tool arguments a recorded response carries, read by the adapter."""
    adapter = adapter_for(parse_provider(provider))
    response = interaction.response
    parsed = (
        adapter.parse_stream(response.events)
        if response.events is not None
        else adapter.parse_response(response.body)
    )
    return parsed.text or parsed.tool_calls[0].arguments


def replies(city: str) -> list[ScriptedReply]:
    return [
        ScriptedReply(text=f"It is {city}."),
        ScriptedReply.model_validate(
            {"tool_calls": [{"name": "__finish__", "arguments": {"city": city}}]}
        ),
    ]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HARNESS_CASSETTE_KEY"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


def write_scenario(folder: Path, provider: str, stream: bool, city: str) -> Path:
    path = folder / f"{provider}.yaml"
    path.write_text(
        SCENARIO.format(provider=provider, stream=str(stream).lower(), city=city), "utf-8"
    )
    return path


@pytest.mark.parametrize(("provider", "stream"), [("openai", False), ("anthropic", True)])
def test_record_then_replay_then_re_record_what_changed(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, provider: str, stream: bool
) -> None:
    variable = "OPENAI" if provider == "openai" else "ANTHROPIC"
    scenario = write_scenario(workdir, provider, stream, "Paris")
    runner = CliRunner()
    with scripted_provider(provider, replies("Paris")) as base_url:
        monkeypatch.setenv(f"{variable}_BASE_URL", base_url)
        monkeypatch.setenv(f"{variable}_API_KEY", KEY)
        recorded = runner.invoke(main, ["record", str(scenario), "--provider", provider])
    assert recorded.exit_code == 0, recorded.output
    cassette = workdir / "cassettes" / f"{provider}.json"
    assert (
        f"{cassette}: created; 2 new, 0 changed, 0 removed (record-{provider})" in recorded.output
    )
    assert KEY.encode() not in cassette.read_bytes()
    interactions = Cassette.load(cassette).interactions
    assert len(interactions) == 2
    assert (interactions[0].response.events is not None) is stream

    monkeypatch.delenv(f"{variable}_API_KEY")
    monkeypatch.setenv(f"{variable}_BASE_URL", "http://127.0.0.1:9")  # nothing listens: replay only
    replayed = runner.invoke(main, ["run", str(scenario), "--strict-cassettes"])
    assert replayed.exit_code == 0, replayed.output

    write_scenario(workdir, provider, stream, "Lyon")
    with scripted_provider(provider, replies("Lyon")) as base_url:
        monkeypatch.setenv(f"{variable}_BASE_URL", base_url)
        monkeypatch.setenv(f"{variable}_API_KEY", KEY)
        again = runner.invoke(main, ["record", str(scenario), "--provider", provider])
    assert again.exit_code == 0, again.output
    # the first request is the same with a new answer; the second request itself changed
    assert "re-recorded; 1 new, 1 changed, 1 removed" in again.output
    answers = [answer_of(provider, i) for i in Cassette.load(cassette).interactions]
    assert answers == ["It is Lyon.", '{"city":"Lyon"}'], "no stale interaction survives"


def test_a_missing_key_is_an_error_before_any_request(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = write_scenario(workdir, "openai", False, "Paris")
    with scripted_provider("openai", replies("Paris")) as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        result = CliRunner().invoke(main, ["record", str(scenario), "--provider", "openai"])
    assert result.exit_code == 2
    assert "set OPENAI_API_KEY" in result.output
    assert not (workdir / "cassettes").exists()


def test_only_the_providers_cassettes_are_recorded(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = write_scenario(workdir, "openai", False, "Paris")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    result = CliRunner().invoke(main, ["record", str(scenario), "--provider", "anthropic"])
    assert result.exit_code == 2
    assert "no scenario under the given paths replays a anthropic cassette" in result.output


@pytest.mark.parametrize("outage", [True, False])
def test_a_failing_re_recording_keeps_the_previous_cassette_and_the_new_traffic_beside_it(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, outage: bool
) -> None:
    scenario = write_scenario(workdir, "openai", False, "Paris")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    runner = CliRunner()
    with scripted_provider("openai", replies("Paris")) as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        assert runner.invoke(main, ["record", str(scenario), "--provider", "openai"]).exit_code == 0
    cassette = workdir / "cassettes" / "openai.json"
    before = cassette.read_bytes()
    if outage:
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")  # nothing listens
        result = runner.invoke(main, ["record", str(scenario), "--provider", "openai"])
    else:  # the model now answers differently from what the scenario expects
        with scripted_provider("openai", replies("Lyon")) as base_url:
            monkeypatch.setenv("OPENAI_BASE_URL", base_url)
            result = runner.invoke(main, ["record", str(scenario), "--provider", "openai"])
    assert result.exit_code == 1, result.output
    rejected = workdir / "cassettes" / "openai.rejected.json"
    assert (
        f"kept the previous cassette: 1 scenario cell(s) failed with the new recording, which is in {rejected}"
        in result.output
    )
    assert cassette.read_bytes() == before, "the committed cassette is untouched"
    kept = Cassette.load(rejected).interactions
    if outage:
        assert kept == []
    else:
        assert [answer_of("openai", i) for i in kept] == ["It is Lyon.", '{"city":"Lyon"}']
    monkeypatch.delenv("OPENAI_API_KEY")
    assert runner.invoke(main, ["run", str(scenario)]).exit_code == 0
