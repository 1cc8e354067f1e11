"""The vcrpy route: pytest-recording with our matcher and persister, and the `anthropic` SDK on
its default client, recorded against the fake provider and replayed with it stopped.

Run out of process with `pytester`, as a user's suite runs: a `conftest.py` that calls
`harness.cassettes.vcr.register(vcr)` in `pytest_recording_configure`, `@pytest.mark.vcr` tests,
`--record-mode=once` with the provider up, then `--record-mode=none --block-network` without it.
"""

from __future__ import annotations

import json

import pytest

from harness.cassettes import FORMAT, PLACEHOLDER, Cassette
from tests.support.fake_provider import Answer, answer_by_prompt, serve

pytest_plugins = ["pytester"]

API_KEY = "sk-ant-api03-CANARYvcrRoute0123456789abcdef"

# cassetter (a benchmark-only dependency) and pytest-recording both define --record-mode; the
# other plugins this project does not need are left out so that each run starts sooner.
INI = """
[pytest]
addopts =
    --strict-markers --strict-config -p no:cacheprovider -p no:cassetter
    -p no:xdist -p no:xdist.looponfail -p no:pytest_cov -p no:faker -p no:respx
    -p no:hypothesispytest
filterwarnings = error
"""

CONFTEST = """
import pytest

from harness.cassettes.vcr import register


def pytest_recording_configure(config, vcr):
    register(vcr)


@pytest.fixture(scope="module")
def vcr_config():
    return {"serializer": "json", "match_on": ["method", "path", "request_hash"]}


@pytest.fixture
def anyio_backend():
    return "asyncio"
"""

# The SDK reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY, as in a user's suite.
TESTS = """
import anthropic
import pytest

REQUEST = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "What is the capital of France?"}],
}


@pytest.mark.vcr
def test_create_and_stream():
    with anthropic.Anthropic(max_retries=0) as client:
        message = client.messages.create(**REQUEST)
        assert message.content[0].text == "The capital of France is Paris."
        with client.messages.create(**REQUEST, stream=True) as stream:
            kinds = [event.type for event in stream]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        with client.messages.stream(**REQUEST) as stream:
            assert "".join(stream.text_stream) == "The capital of France is Paris."
            assert stream.get_final_message().stop_reason == "end_turn"


@pytest.mark.vcr
@pytest.mark.anyio
async def test_async_create_and_stream():
    async with anthropic.AsyncAnthropic(max_retries=0) as client:
        message = await client.messages.create(**REQUEST)
        assert message.content[0].text == "The capital of France is Paris."
        async with client.messages.stream(**REQUEST) as stream:
            text = "".join([part async for part in stream.text_stream])
            assert text == "The capital of France is Paris."
"""

SCRIPT = answer_by_prompt(
    {"What is the capital of France?": Answer(text="The capital of France is Paris.")}
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_anthropic_vcr=TESTS)
    return pytester


@pytest.mark.subprocess
def test_vcrpy_records_harness_cassettes_and_replays_them_offline(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    with serve(SCRIPT) as provider:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.base_url)
        project.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=2)
    assert len(provider.received) == 3 + 2

    folder = project.path / "cassettes" / "test_anthropic_vcr"
    names = ["test_async_create_and_stream.json", "test_create_and_stream.json"]
    assert sorted(path.name for path in folder.iterdir()) == names
    for name in names:
        text = (folder / name).read_text()
        assert json.loads(text)["format"] == FORMAT
        assert API_KEY not in text
        interactions = Cassette.load(folder / name).interactions
        assert {item.request.path for item in interactions} == {"/v1/messages"}
        sent = [item.request.headers for item in interactions]
        # anthropic sends the key as `x-api-key` or as `authorization`, depending on how it got it
        assert {h.get("x-api-key", h.get("authorization")) for h in sent} == {PLACEHOLDER}
    streamed = Cassette.load(folder / names[1]).interactions[1].response
    assert streamed.events is not None
    assert streamed.events[-1].event == "message_stop"

    # The provider has stopped: the replay must not need it, nor any other network.
    replay = project.runpytest_subprocess("--record-mode=none", "--block-network")
    replay.assert_outcomes(passed=2)
    assert len(provider.received) == 3 + 2
