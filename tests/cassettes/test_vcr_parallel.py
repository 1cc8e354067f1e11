"""vcrpy and pytest-recording under pytest-xdist, with `register(vcr)`: workers recording into one
cassette lose none of each other's interactions.

vcrpy saves the whole cassette as its process knows it, so a plain write keeps only the last
worker's view. The persister merges under the cassette's lock instead; in record mode `all`, the
first save of a run replaces the file and later saves of the run merge. The pytest-recording
project runs out of process with `pytester`, as a user's suite runs, against a loopback fake
provider; the persister's own contract is checked in process, a worker's load and save at a time.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from vcr import VCR  # type: ignore[import-untyped]
from vcr.persisters.filesystem import CassetteNotFoundError  # type: ignore[import-untyped]
from vcr.request import Request  # type: ignore[import-untyped]

from harness.cassettes import Cassette
from harness.cassettes.vcr import (
    HarnessPersister,
    HarnessRerecordingPersister,
    VcrMergeError,
    register,
)
from tests.support.fake_provider import CHAT_PATH, FakeProvider, ReceivedRequest, Reply, serve

pytest_plugins = ["pytester"]

TESTS = 8
WORKERS = ("-n", "2")

# cassetter (a benchmark-only dependency) and pytest-recording both define --record-mode; the
# plugins the project does not need are left out so that each run starts sooner.
INI = """
[pytest]
addopts =
    --strict-markers --strict-config -p no:cacheprovider -p no:cassetter
    -p no:xdist.looponfail -p no:pytest_cov -p no:faker -p no:respx -p no:hypothesispytest
    -p no:examples -p no:anyio
filterwarnings = error
"""

# One cassette for every test, as `default_cassette_name` names it: cassettes/test_shared/shared.json
CONFTEST = """
import pytest

from harness.cassettes.vcr import register


def pytest_recording_configure(config, vcr):
    register(vcr)


@pytest.fixture(scope="module")
def vcr_config():
    return {"serializer": "json", "match_on": ["method", "path", "request_hash"]}


@pytest.fixture
def default_cassette_name():
    return "shared"
"""

SHARED_TESTS = f"""
import os

import httpx
import pytest


@pytest.mark.vcr
@pytest.mark.parametrize("number", range({TESTS}))
def test_ask(number):
    question = {{"role": "user", "content": f"question {{number}}"}}
    response = httpx.post(
        os.environ["FAKE_PROVIDER_URL"] + "{CHAT_PATH}", json={{"model": "m", "messages": [question]}}
    )
    assert response.json()["answer"] == f"answer {{number}}"
"""

EVERY_QUESTION = [f"question {number}" for number in range(TESTS)]


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """Answers `question N` with `answer N`, and numbers every answer it serves."""
    served = itertools.count(1)

    def answer(request: ReceivedRequest) -> Reply:
        question = request.json()["messages"][-1]["content"]
        return Reply(
            body={"answer": question.replace("question", "answer"), "served": next(served)}
        )

    with serve(answer) as fake:
        monkeypatch.setenv("FAKE_PROVIDER_URL", fake.base_url)
        yield fake


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # Each pytest session below is a recording run of its own, named by pytest-xdist.
    monkeypatch.delenv("HARNESS_RECORD_RUN_ID", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_shared=SHARED_TESTS)
    return pytester


def questions(project: pytest.Pytester) -> list[str]:
    """The question of each interaction of the shared cassette, sorted."""
    return [question for question, _ in shared_cassette(project)]


def shared_cassette(project: pytest.Pytester) -> list[tuple[str, int]]:
    """`(question, served)` of each interaction of the shared cassette, sorted."""
    cassette = Cassette.load(project.path / "cassettes" / "test_shared" / "shared.json")
    return sorted(
        (
            json.loads(interaction.request.body_bytes())["messages"][-1]["content"],
            json.loads(interaction.response.body_bytes())["served"],
        )
        for interaction in cassette.interactions
    )


@pytest.mark.subprocess
def test_workers_recording_one_cassette_lose_none_of_each_others_interactions(
    project: pytest.Pytester, provider: FakeProvider
) -> None:
    # vcrpy's `once` records only into a cassette that does not exist yet, so only the tests that
    # find it absent record (the others fail, as they do without workers); each of them is kept.
    once = project.runpytest_subprocess(*WORKERS, "--record-mode=once", "-rA")
    passed = re.findall(r"PASSED test_shared\.py::test_ask\[(\d+)\]", once.stdout.str())
    assert passed, once.stdout.str()
    assert questions(project) == sorted(f"question {number}" for number in passed)

    project.runpytest_subprocess(*WORKERS, "--record-mode=new_episodes").assert_outcomes(
        passed=TESTS
    )
    assert questions(project) == sorted(EVERY_QUESTION)
    assert len(provider.received) == TESTS, "an answer recorded in mode once was lost"

    replay = project.runpytest_subprocess(*WORKERS, "--record-mode=none", "--block-network")
    replay.assert_outcomes(passed=TESTS)
    assert len(provider.received) == TESTS, "the replay reached the network"


@pytest.mark.subprocess
def test_workers_re_recording_one_cassette_replace_it_once_per_run(
    project: pytest.Pytester, provider: FakeProvider
) -> None:
    for run in range(2):
        project.runpytest_subprocess(*WORKERS, "--record-mode=all").assert_outcomes(passed=TESTS)
        recorded = shared_cassette(project)
        assert [question for question, _ in recorded] == sorted(EVERY_QUESTION)
        assert all(served > run * TESTS for _, served in recorded), "a stale answer survived"
    assert len(provider.received) == 2 * TESTS


# -- the persister, one worker's load and save at a time -------------------------------------------

URL = "https://api.openai.com" + CHAT_PATH


def request_for(question: str) -> Any:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": question}]})
    return Request("POST", URL, body.encode(), {"content-type": "application/json"})


def response_for(answer: str) -> dict[str, Any]:
    return {
        "status": {"code": 200, "message": "OK"},
        "headers": {"content-type": ["application/json"]},
        "body": {"string": json.dumps({"answer": answer}).encode()},
    }


def load(persister: type[HarnessPersister], path: Path) -> tuple[list[Any], list[Any]]:
    """What vcrpy holds after loading the cassette: nothing when it does not exist yet."""
    try:
        requests, responses = persister.load_cassette(path, serializer=None)
    except CassetteNotFoundError:
        return [], []
    return list(requests), list(responses)


def save(
    persister: type[HarnessPersister],
    path: Path,
    loaded: tuple[list[Any], list[Any]],
    *answers: str,
) -> None:
    """Save as vcrpy does: what it loaded, then each question it recorded with its answer."""
    requests, responses = loaded
    new = [(request_for(a.replace("answer", "question")), response_for(a)) for a in answers]
    persister.save_cassette(
        path,
        {
            "requests": [*requests, *(request for request, _ in new)],
            "responses": [*responses, *(response for _, response in new)],
        },
        serializer=None,
    )


def answers_in(path: Path) -> list[str]:
    return [
        json.loads(interaction.response.body_bytes())["answer"]
        for interaction in Cassette.load(path).interactions
    ]


def test_register_picks_the_persister_for_the_vcrs_record_mode() -> None:
    assert register(VCR(record_mode="all")).persister is HarnessRerecordingPersister
    for mode in ("once", "new_episodes", "none", "any"):
        assert register(VCR(record_mode=mode)).persister is HarnessPersister


def test_saves_of_workers_that_loaded_the_same_file_merge(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    first, second = load(HarnessPersister, path), load(HarnessPersister, path)
    save(HarnessPersister, path, first, "answer 1")
    save(HarnessPersister, path, second, "answer 2", "answer 3")
    third = load(HarnessPersister, path)
    save(HarnessPersister, path, third, "answer 4")

    assert answers_in(path) == ["answer 1", "answer 2", "answer 3", "answer 4"]


def test_a_request_sent_twice_keeps_both_answers(tmp_path: Path) -> None:
    path = tmp_path / "twice.json"
    save(HarnessPersister, path, load(HarnessPersister, path), "answer 1", "answer 1")
    save(HarnessPersister, path, load(HarnessPersister, path), "answer 1")

    assert answers_in(path) == ["answer 1"] * 3
    occurrences = [i.occurrence for i in Cassette.load(path).interactions]
    assert occurrences == [1, 2, 3], "vcrpy replays each recorded answer once"


def test_a_save_that_leaves_out_what_it_loaded_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dropped.json"
    save(HarnessPersister, path, load(HarnessPersister, path), "answer 1", "answer 2")
    before = path.read_bytes()
    requests, responses = load(HarnessPersister, path)

    with pytest.raises(VcrMergeError) as caught:  # record_mode='all' given to use_cassette
        save(HarnessPersister, path, (requests[1:], responses[1:]), "answer 1")

    assert caught.value.code == "cassette_vcr_merge_refused"
    assert "without 1 of the 2 interaction(s)" in str(caught.value)
    assert "VCR(record_mode='all')" in str(caught.value)
    assert path.read_bytes() == before


def test_re_recording_replaces_the_file_at_the_first_save_of_a_run_and_merges_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rerecorded.json"
    save(HarnessPersister, path, load(HarnessPersister, path), "answer 1", "answer 2")
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    for run in (f"vcr-{uuid.uuid4().hex}", f"vcr-{uuid.uuid4().hex}"):
        monkeypatch.setenv("HARNESS_RECORD_RUN_ID", run)
        first = load(HarnessRerecordingPersister, path)
        second = load(HarnessRerecordingPersister, path)
        save(HarnessRerecordingPersister, path, first, f"answer 2 of {run}")
        save(HarnessRerecordingPersister, path, second, f"answer 3 of {run}")

        assert answers_in(path) == [f"answer 2 of {run}", f"answer 3 of {run}"]
