"""The pytest plugin, run out of process with `pytester`: scenario collection, reports, options,
fixtures, and pytest-xdist (recording included)."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cassettes import Cassette
from harness.llm.adapters import adapter_for
from harness.llm.script import ScriptedReply, ScriptedToolCall
from tests.support.fake_provider import FakeProvider, ReceivedRequest, Reply, serve

pytest_plugins = ["pytester"]

# cassetter (a benchmark-only dependency) and pytest-recording both define --record-mode
INI = """
[pytest]
harness_scenarios = scenarios
addopts = --strict-markers --strict-config -p no:cacheprovider -p no:cassetter
filterwarnings = error
"""

AGENT = """
  agent:
    output_schema:
      type: object
      properties: {city: {type: string}}
      required: [city]
"""
FINISH = "    - tool_calls: [{name: __finish__, arguments: {city: Paris}}]\n"

PASSING = f"""
- name: finish-direct
  tags: [smoke, forced-completion]
  runtimes: [js, temporal]
  stores: [sqlite, memory]
  script:
{FINISH}{AGENT}
  expect:
    status: completed
    output: {{city: Paris}}
"""

FAILING = f"""
- name: finish-wrong
  script:
{FINISH}{AGENT}
  expect:
    status: completed
    output: {{city: Rome}}
"""

RECORDED = f"""
- name: finish-recorded
  runtimes: [js, temporal, dbos]
  stores: [memory, sqlite]
  cassette: ../cassettes/finish.json
{AGENT}
  expect:
    status: completed
    output: {{city: Paris}}
"""

GATEWAY_TESTS = """
import pytest

from harness.llm.models import LlmRequest, UserMessage
from harness.llm.script import ScriptedReply


def ask(gateway, question):
    request = LlmRequest(model="gpt-4o-mini", messages=(UserMessage(content=question),))
    return gateway.complete(request).text


def test_script_through_gateway(harness_script, harness_gateway):
    script = harness_script("anthropic", [{"text": "Bonjour"}, ScriptedReply(text="Salut")])
    gateway = harness_gateway("anthropic", script)
    assert [ask(gateway, "hello"), ask(gateway, "hi")] == ["Bonjour", "Salut"]


def test_recorded_then_replayed(harness_cassette, harness_script, harness_gateway, harness_record_mode):
    script = harness_script("openai", [{"text": "Bonjour"}])
    gateway = harness_gateway("openai", harness_cassette("cassettes/hello.json", inner=script))
    assert ask(gateway, "hello") == "Bonjour"
    assert len(script.requests) == (1 if harness_record_mode == "once" else 0)


@pytest.mark.harness_cassette("cassettes/marked.json")
def test_marker_names_the_cassette(harness_cassette, harness_script, harness_gateway):
    gateway = harness_gateway("openai", harness_cassette(inner=harness_script("openai", [{"text": "Hi"}])))
    assert ask(gateway, "hi") == "Hi"
"""

STRICT_TEST = """
def test_unplayed_interaction_fails_at_teardown(harness_cassette):
    harness_cassette("cassettes/hello.json", strict=True)
"""

PARALLEL_RECORDING = """
import pytest

from harness.llm.models import LlmRequest, UserMessage


@pytest.mark.parametrize("number", range(6))
def test_record_into_one_cassette(number, harness_cassette, harness_script, harness_gateway):
    script = harness_script("openai", [{"text": f"answer {number}"}])
    gateway = harness_gateway("openai", harness_cassette("cassettes/shared.json", inner=script))
    request = LlmRequest(model="gpt-4o-mini", messages=(UserMessage(content=f"question {number}"),))
    assert gateway.complete(request).text == f"answer {number}"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project whose `scenarios/` folder is collected, with this repository's strict settings."""
    pytester.makeini(INI)
    (pytester.path / "scenarios").mkdir()
    return pytester


def scenario_file(pytester: pytest.Pytester, name: str, text: str) -> Path:
    path = pytester.path / "scenarios" / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_cells_are_collected_with_their_matrix_ids(project: pytest.Pytester) -> None:
    scenario_file(project, "forced.yaml", PASSING)
    collected = project.runpytest("--collect-only", "-q")
    collected.stdout.fnmatch_lines(
        [
            "scenarios/forced.yaml::finish-direct[[]js-sqlite[]]",
            "scenarios/forced.yaml::finish-direct[[]js-memory[]]",
            "scenarios/forced.yaml::finish-direct[[]temporal-sqlite[]]",
            "scenarios/forced.yaml::finish-direct[[]temporal-memory[]]",
            "4 tests collected*",
        ]
    )
    project.runpytest().assert_outcomes(passed=4)
    # Tags are markers, accepted under --strict-markers.
    project.runpytest("-m", "smoke and forced-completion").assert_outcomes(passed=4)


def test_runtime_and_store_options_limit_the_matrix(project: pytest.Pytester) -> None:
    scenario_file(project, "forced.yaml", PASSING)
    result = project.runpytest(
        "-v",
        "--harness-runtime",
        "temporal",
        "--harness-store",
        "memory",
        "--harness-store",
        "sqlite",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*::finish-direct[[]temporal-memory[]] PASSED*"])
    result.stdout.no_fnmatch_line("*js-*")


def test_a_failing_cell_reports_the_expectation_and_its_line(project: pytest.Pytester) -> None:
    path = scenario_file(project, "wrong.yaml", FAILING)
    line = path.read_text(encoding="utf-8").splitlines().index("    output: {city: Rome}") + 1
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ finish-wrong[[]js-sqlite[]] _*",
            # the file relative to the folder pytest runs in, as pytest names it
            f"scenarios/wrong.yaml:{line} finish-wrong[[]js-sqlite[]]: expect.output: expected "
            '{"city": "Rome"}, got {"city": "Paris"}',
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*runtest*")
    # The report points at the scenario (pytest's locations count lines from 0).
    [report] = project.inline_run().getfailures()
    start = path.read_text(encoding="utf-8").splitlines().index("- name: finish-wrong")
    assert report.location == ("scenarios/wrong.yaml", start, "finish-wrong[js-sqlite]")


def test_an_invalid_file_is_one_collection_error_at_its_line(project: pytest.Pytester) -> None:
    path = scenario_file(
        project, "broken.yaml", "name: broken\nscript: [{text: hi}]\nagent:\n  max_stepz: 3\n"
    )
    scenario_file(project, "forced.yaml", PASSING)
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"{path}:4:3: agent.max_stepz: unknown key 'max_stepz'; did you mean 'max_steps'? *"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_a_scenario_file_that_is_no_regular_file_is_a_collection_error(
    project: pytest.Pytester,
) -> None:
    """pytest passes over what is not a regular file; `harness run` refuses it, and so does the
    plugin, naming the file and what it is."""
    scenario_file(project, "forced.yaml", PASSING)
    (project.path / "scenarios" / "nested").mkdir()
    fifo = project.path / "scenarios" / "nested" / "pipe.yaml"
    os.mkfifo(fifo)
    os.mkfifo(project.path / "elsewhere.yaml")  # outside the scenario folders: not collected
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "collected 4 items / 1 error",
            "*ERROR collecting scenarios/nested/pipe.yaml*",
            f"{fifo}: it is a FIFO (named pipe), not a regular file; give the path of a YAML file",
        ]
    )
    result.stdout.no_fnmatch_line("*elsewhere.yaml*")
    result.stdout.no_fnmatch_line("*Traceback*")


def test_nothing_is_collected_without_the_ini_option(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", stray=PASSING)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:cassetter")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            "--harness-record-mode=sometimes",
            "ERROR: --harness-record-mode: expected one of none, once, new_episodes, all but got "
            "record_mode='sometimes' (type=str)",
        ),
        ("--harness-runtime=node", "ERROR: expected --harness-runtime to be one of js, *"),
        ("--harness-store=mysql", "ERROR: expected --harness-store to be one of memory, *"),
    ],
)
def test_a_wrong_option_value_is_a_usage_error_listing_the_allowed_ones(
    project: pytest.Pytester, option: str, message: str
) -> None:
    result = project.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


LIBRARY_TESTS = """
import httpx
import httpx2
import pytest

from harness.cassettes import HttpxCassetteTransport
from harness.llm.script import HttpxScriptTransport

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
URL = "https://api.openai.com/v1/chat/completions"


def test_httpx2_by_default(harness_script, harness_cassette):
    inner = harness_script("openai", [{"text": "It is Paris."}])
    with httpx2.Client(transport=harness_cassette("cassettes/c2.json", inner=inner)) as client:
        assert client.post(URL, json=BODY).json()["choices"][0]["message"]["content"] == "It is Paris."


def test_httpx_on_request(harness_script, harness_cassette):
    inner = harness_script("openai", [{"text": "It is Rome."}], library="httpx")
    assert isinstance(inner, HttpxScriptTransport)
    transport = harness_cassette("cassettes/c1.json", inner=inner, library="httpx")
    assert isinstance(transport, HttpxCassetteTransport)
    with httpx.Client(transport=transport) as client:
        assert client.post(URL, json=BODY).json()["choices"][0]["message"]["content"] == "It is Rome."


def test_an_unknown_library(harness_script):
    harness_script("openai", [{"text": "x"}], library="requests")
"""


def test_fixtures_give_the_transport_of_the_clients_library(project: pytest.Pytester) -> None:
    project.makepyfile(test_libraries=LIBRARY_TESTS)
    result = project.runpytest("--harness-record-mode=once")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*expected library= one of httpx2, httpx but got library='requests'*"]
    )
    project.runpytest("-k", "not unknown").assert_outcomes(passed=2)


def test_fixtures_script_record_and_replay(project: pytest.Pytester) -> None:
    project.makepyfile(test_gateway=GATEWAY_TESTS)
    project.runpytest("--harness-record-mode=once").assert_outcomes(passed=3)
    for name in ("hello.json", "marked.json"):
        assert len(Cassette.load(project.path / "cassettes" / name).interactions) == 1
    project.runpytest().assert_outcomes(passed=3)
    # The cassette is closed at teardown: with strict=True an unplayed interaction is an error.
    project.makepyfile(test_strict=STRICT_TEST)
    result = project.runpytest("test_strict.py")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*1 recorded interaction(s) were never requested*"])


WRONG_MARKER = """
import pytest

@pytest.mark.harness_cassette(42)
def test_marked(harness_cassette):
    pass
"""
WRONG_MARKER_MESSAGE = (
    "expected @pytest.mark.harness_cassette(path) with one non-empty str or os.PathLike path "
    "but got harness_cassette(42) (type=int)"
)


def test_a_wrong_cassette_marker_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(WRONG_MARKER)
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {WRONG_MARKER_MESSAGE}"])


@pytest.mark.subprocess
def test_under_xdist_a_wrong_cassette_marker_is_an_error_of_its_test(
    project: pytest.Pytester,
) -> None:
    # A usage error raised while a worker collects would crash it; the fixture reports instead.
    project.makepyfile(WRONG_MARKER)
    result = project.runpytest_subprocess("-n", "1")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([WRONG_MARKER_MESSAGE])
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


def test_re_recording_in_mode_all_keeps_every_test_of_the_session(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without one run id for the session, each test's save would replace the one before.
    monkeypatch.delenv("HARNESS_RECORD_RUN_ID", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    project.makepyfile(test_parallel=PARALLEL_RECORDING)
    shared = project.path / "cassettes" / "shared.json"
    for _ in range(2):
        project.runpytest("--harness-record-mode=all").assert_outcomes(passed=6)
        assert len(Cassette.load(shared).interactions) == 6


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_mode_once_records_every_test_of_the_run_that_creates_the_cassette(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    """Six tests share one cassette in mode `once`: the session that creates it records all
    six; a later session replays it, byte for byte unchanged."""
    monkeypatch.delenv("HARNESS_RECORD_RUN_ID", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    project.makepyfile(test_parallel=PARALLEL_RECORDING)
    shared = project.path / "cassettes" / "shared.json"
    run = project.runpytest_subprocess if workers else project.runpytest
    run("--harness-record-mode=once", *workers).assert_outcomes(passed=6)
    recorded = shared.read_bytes()
    assert len(Cassette.load(shared).interactions) == 6
    run("--harness-record-mode=once", *workers).assert_outcomes(passed=6)
    run(*workers).assert_outcomes(passed=6)  # replay only
    assert shared.read_bytes() == recorded, "a later run replays, it records nothing"


def test_re_recording_with_a_run_name_that_is_not_safe_is_a_usage_error(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_RECORD_RUN_ID", "nightly\r")
    project.makepyfile(test_parallel=PARALLEL_RECORDING)
    result = project.runpytest("--harness-record-mode=all")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*expected HARNESS_RECORD_RUN_ID to be 1 to 128 ASCII*"])
    assert not (project.path / "cassettes" / "shared.json").exists()


def finish_reply(request: ReceivedRequest) -> Reply:
    reply = ScriptedReply(
        tool_calls=(ScriptedToolCall(name="__finish__", arguments={"city": "Paris"}),)
    )
    body = adapter_for("openai").render_response(
        reply.to_response(0), model="gpt-4o-mini", response_id="chatcmpl-fake"
    )
    return Reply(body=body)


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """A loopback OpenAI-compatible server that the pytester subprocesses record from."""
    with serve(finish_reply) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        yield fake


@pytest.mark.subprocess
def test_xdist_records_scenarios_and_tests_in_parallel(
    project: pytest.Pytester, provider: FakeProvider
) -> None:
    scenario_file(project, "forced.yaml", PASSING)
    scenario_file(project, "recorded.yaml", RECORDED)
    project.makepyfile(test_parallel=PARALLEL_RECORDING)

    recording = project.runpytest_subprocess("-n", "2", "--harness-record-mode=new_episodes")
    recording.assert_outcomes(passed=4 + 6 + 6)
    # Only the first cell of the recorded scenario reached the provider; the others replayed it.
    assert len(provider.received) == 1
    shared = Cassette.load(project.path / "cassettes" / "shared.json")
    bodies = json.dumps([interaction.request.body for interaction in shared.interactions])
    assert len(shared.interactions) == 6
    assert all(f"question {number}" in bodies for number in range(6))
    assert len(Cassette.load(project.path / "cassettes" / "finish.json").interactions) == 1

    project.runpytest_subprocess("-n", "2").assert_outcomes(passed=4 + 6 + 6)
    assert len(provider.received) == 1


def test_harness_target_runs_the_cells_on_the_implementation_under_test(
    project: pytest.Pytester,
) -> None:
    scenario_file(project, "forced.yaml", PASSING)
    (project.path / "my_runtime.py").write_text(
        textwrap.dedent(
            """
            from harness.scenarios.reference import run as reference

            def run(message):
                answer = reference(message)
                if message.get("type") == "hello":
                    answer["runtimes"] = ["js"]  # temporal cells are skipped, with the reason
                if message.get("type") == "cell":
                    answer["output"] = {"city": "Lyon"}
                return answer
            """
        )
    )
    result = project.runpytest("-rs", "--harness-target", "my_runtime:run")
    result.assert_outcomes(failed=2, skipped=2)
    result.stdout.fnmatch_lines(
        [
            '*forced.yaml:*finish-direct[[]js-sqlite[]]: expect.output: expected {"city": "Paris"}, '
            'got {"city": "Lyon"}',
            "*the target does not declare the temporal runtime profile (hello.runtimes)*",
        ]
    )
