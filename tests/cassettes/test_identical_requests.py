"""Order-free replay of a shared cassette: parallel conversations that share a first turn whose
answer varies (a real model's "current time") record once into one cassette and replay in
parallel with zero misses, however their requests arrive."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from harness.cassettes import Cassette, CassetteTransport
from harness.cassettes.cassette import IdenticalRequests
from harness.cassettes.sharing import IdenticalRequestsError
from harness.cli import main
from harness.errors import CassetteMissError
from tests.support.cassette_traffic import CHAT, OPENAI, NoNetwork

WORKERS = 4
TURNS = 3
QUESTION = "What time is it?"


class ClockProvider:
    """Answers the time question with the time of the call (it differs on every call), and any
    other turn with an echo of its last message; each answer takes a moment, so parallel
    requests overlap. Optionally refuses the first `rate_limited` calls with a 429."""

    def __init__(self, *, rate_limited: int = 0, delay: float = 0.02) -> None:
        self.calls: list[dict[str, Any]] = []
        self.rate_limited = rate_limited
        self.delay = delay
        self._lock = threading.Lock()

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        with self._lock:
            self.calls.append(body)
            count = len(self.calls)
        if count <= self.rate_limited:
            return httpx2.Response(429, json={"error": {"message": "slow down"}})
        last = body["messages"][-1]["content"]
        text = f"It is 12:00:{count:02d}" if last == QUESTION else f"re: {last}"
        return httpx2.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": text}}]}
        )

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        time.sleep(self.delay)
        return self._answer(request)

    async def async_handler(self, request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(self.delay)
        return self._answer(request)


def conversation(post: Callable[[dict[str, Any]], httpx2.Response], worker: int) -> list[str]:
    """Three turns; each later turn carries the earlier answers, as a chat app sends them."""
    messages: list[dict[str, str]] = [{"role": "user", "content": QUESTION}]
    answers = []
    for turn in range(TURNS):
        if turn:
            messages.append({"role": "user", "content": f"worker {worker}, turn {turn}"})
        response = post({"model": "gpt-4o-mini", "messages": messages, "temperature": 1.0})
        if response.status_code == 429:
            response = post({"model": "gpt-4o-mini", "messages": messages, "temperature": 1.0})
        assert response.status_code == 200, response.text
        text = response.json()["choices"][0]["message"]["content"]
        answers.append(text)
        messages.append({"role": "assistant", "content": text})
    return answers


def in_parallel(work: Callable[[int], list[str]]) -> list[list[str]]:
    results: list[list[str] | BaseException] = [[] for _ in range(WORKERS)]
    start = threading.Barrier(WORKERS)

    def run(worker: int) -> None:
        start.wait()
        try:
            results[worker] = work(worker)
        except BaseException as error:  # reported below, with the worker
            results[worker] = error

    threads = [threading.Thread(target=run, args=(w,)) for w in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, failures[0]
    return [r for r in results if isinstance(r, list)]


def replay_in_parallel(path: Path) -> list[list[str]]:
    """Replay on a fresh transport, each worker's requests delayed at random, so they arrive in
    a different order every time."""
    transport = CassetteTransport(path, inner=NoNetwork())
    order = random.Random()

    def work(worker: int) -> list[str]:
        with httpx2.Client(transport=transport, base_url=OPENAI) as client:

            def post(body: dict[str, Any]) -> httpx2.Response:
                time.sleep(order.random() * 0.01)
                return client.post(CHAT, json=body)

            return conversation(post, worker)

    answers = in_parallel(work)
    transport.close()
    return answers


def assert_consistent(answers: list[list[str]]) -> None:
    first_turns = {worker[0] for worker in answers}
    assert len(first_turns) == 1, f"the shared first turn got several answers: {first_turns}"
    for worker, turns in enumerate(answers):
        assert turns[1:] == [f"re: worker {worker}, turn {t}" for t in range(1, TURNS)]


@pytest.mark.parametrize("transports", ["one", "one per worker"])
def test_parallel_workers_sharing_a_varying_first_turn_replay_with_zero_misses(
    tmp_path: Path, transports: str
) -> None:
    path = tmp_path / "shared.json"
    provider = ClockProvider()
    run_id = uuid.uuid4().hex
    shared = CassetteTransport(
        path, mode="all", inner=httpx2.MockTransport(provider.handler), run_id=run_id
    )

    def record(worker: int) -> list[str]:
        transport = (
            shared
            if transports == "one"
            else CassetteTransport(
                path, mode="all", inner=httpx2.MockTransport(provider.handler), run_id=run_id
            )
        )
        client = httpx2.Client(transport=transport, base_url=OPENAI)
        try:
            return conversation(lambda body: client.post(CHAT, json=body), worker)
        finally:
            if transport is not shared:
                client.close()

    recorded = in_parallel(record)
    shared.close()
    assert_consistent(recorded)
    questions = [c for c in provider.calls if c["messages"][-1]["content"] == QUESTION]
    assert len(questions) == 1, "identical requests in flight together went to the provider once"
    cassette = Cassette.load(path)
    assert cassette.identical_requests == "shared"
    assert len(cassette) == 1 + WORKERS * (TURNS - 1)

    for _ in range(5):
        assert replay_in_parallel(path) == recorded


def test_async_clients_share_the_answer_too(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    provider = ClockProvider()
    transport = CassetteTransport(
        path, mode="once", inner=httpx2.MockTransport(provider.async_handler)
    )

    async def worker(client: httpx2.AsyncClient, number: int) -> list[str]:
        messages = [{"role": "user", "content": QUESTION}]
        response = await client.post(CHAT, json={"model": "m", "messages": messages})
        first = response.json()["choices"][0]["message"]["content"]
        messages += [
            {"role": "assistant", "content": first},
            {"role": "user", "content": f"worker {number}, turn 1"},
        ]
        response = await client.post(CHAT, json={"model": "m", "messages": messages})
        return [first, response.json()["choices"][0]["message"]["content"]]

    async def record() -> list[list[str]]:
        async with httpx2.AsyncClient(transport=transport, base_url=OPENAI) as client:
            return list(await asyncio.gather(*(worker(client, n) for n in range(WORKERS))))

    recorded = asyncio.run(record())
    assert len({turns[0] for turns in recorded}) == 1
    assert len([c for c in provider.calls if c["messages"][-1]["content"] == QUESTION]) == 1

    replayer = CassetteTransport(path, inner=NoNetwork())

    async def replay() -> list[list[str]]:
        async with httpx2.AsyncClient(transport=replayer, base_url=OPENAI) as client:
            return list(await asyncio.gather(*(worker(client, n) for n in range(WORKERS))))

    assert asyncio.run(replay()) == recorded


def test_separate_keeps_one_answer_per_occurrence(tmp_path: Path) -> None:
    path = tmp_path / "separate.json"
    provider = ClockProvider(delay=0)
    with httpx2.Client(
        transport=CassetteTransport(
            path,
            mode="once",
            inner=httpx2.MockTransport(provider.handler),
            identical_requests="separate",
        ),
        base_url=OPENAI,
    ) as client:
        body = {"model": "m", "messages": [{"role": "user", "content": QUESTION}]}
        first, second = (client.post(CHAT, json=body).json() for _ in range(2))
    assert first != second
    cassette = Cassette.load(path)
    assert cassette.identical_requests == "separate"
    assert [i.occurrence for i in cassette.interactions] == [1, 2]


def test_a_retried_rate_limit_is_recorded_then_the_answer_is_shared(tmp_path: Path) -> None:
    path = tmp_path / "retried.json"
    provider = ClockProvider(rate_limited=1, delay=0)
    body = {"model": "m", "messages": [{"role": "user", "content": QUESTION}]}
    with httpx2.Client(
        transport=CassetteTransport(
            path, mode="once", inner=httpx2.MockTransport(provider.handler)
        ),
        base_url=OPENAI,
    ) as client:
        statuses = [client.post(CHAT, json=body).status_code for _ in range(3)]
    assert statuses == [429, 200, 200]
    assert len(provider.calls) == 2, "the retry went to the provider, the third was shared"
    assert [i.response.status for i in Cassette.load(path).interactions] == [429, 200]
    with httpx2.Client(
        transport=CassetteTransport(path, inner=NoNetwork()), base_url=OPENAI
    ) as client:
        assert [client.post(CHAT, json=body).status_code for _ in range(4)] == [429, 200, 200, 200]


def test_an_unknown_choice_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(IdenticalRequestsError, match=r"'shared'.*'separate'.*'seperate'"):
        CassetteTransport(
            tmp_path / "c.json",
            mode="all",
            identical_requests="seperate",  # type: ignore[arg-type]
        )


@pytest.mark.parametrize("choice", ["shared", "separate"])
def test_the_choice_given_is_written_and_kept_by_later_recordings(
    tmp_path: Path, choice: IdenticalRequests
) -> None:
    path = tmp_path / "c.json"
    provider = ClockProvider(delay=0)
    for mode, given in (("all", choice), ("new_episodes", None)):
        with httpx2.Client(
            transport=CassetteTransport(
                path,
                mode=mode,
                inner=httpx2.MockTransport(provider.handler),
                identical_requests=given,
            ),
            base_url=OPENAI,
        ) as client:
            client.post(CHAT, json={"model": "m", "messages": [{"role": "user", "content": mode}]})
    assert Cassette.load(path).identical_requests == choice


def test_verify_warns_when_identical_requests_hold_different_answers(tmp_path: Path) -> None:
    path = tmp_path / "ordered.json"
    provider = ClockProvider(delay=0)
    body = {"model": "m", "messages": [{"role": "user", "content": QUESTION}]}
    with httpx2.Client(
        transport=CassetteTransport(
            path,
            mode="once",
            inner=httpx2.MockTransport(provider.handler),
            identical_requests="separate",
        ),
        base_url=OPENAI,
    ) as client:
        client.post(CHAT, json=body)
        client.post(CHAT, json=body)
    result = CliRunner().invoke(main, ["cassettes", "verify", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning" in result.output
    assert "POST /v1/chat/completions" in result.output
    assert "2 different answers" in result.output
    assert "It is 12:00:01" in result.output
    assert "It is 12:00:02" in result.output

    same = tmp_path / "same.json"
    with httpx2.Client(
        transport=CassetteTransport(
            same, mode="once", inner=httpx2.MockTransport(ClockProvider(delay=0).handler)
        ),
        base_url=OPENAI,
    ) as client:
        client.post(CHAT, json=body)
        client.post(CHAT, json=body)
    result = CliRunner().invoke(main, ["cassettes", "verify", str(same)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output


def test_a_miss_groups_repeats_and_names_the_earlier_turn_answered_differently(
    tmp_path: Path,
) -> None:
    """Recorded per occurrence, one after the other: worker 0 got 12:00:01, worker 1 (the
    provider's fourth call) 12:00:04.
    Replayed worker 1 first, it is dealt 12:00:01 and its second turn misses."""
    path = tmp_path / "ordered.json"
    provider = ClockProvider(delay=0)
    with httpx2.Client(
        transport=CassetteTransport(
            path,
            mode="once",
            inner=httpx2.MockTransport(provider.handler),
            identical_requests="separate",
        ),
        base_url=OPENAI,
    ) as client:
        for worker in range(2):
            conversation(lambda body: client.post(CHAT, json=body), worker)

    with (
        httpx2.Client(
            transport=CassetteTransport(path, inner=NoNetwork()), base_url=OPENAI
        ) as client,
        pytest.raises(CassetteMissError) as miss,
    ):
        conversation(lambda body: client.post(CHAT, json=body), 1)
    message = str(miss.value)
    assert message.count("(recorded 2 times)") == 1, message
    assert "This request continues a conversation whose earlier turn was answered" in message
    assert '$.messages[1].content: "It is 12:00:04" -> "It is 12:00:01"' in message
    nearest = message.split("most similar first:\n")[1].splitlines()
    assert "(recorded 2 times)" in nearest[2], "the first turn is the farthest of the three"
    assert "was recorded 2 times with 2 different answers" in message


@pytest.mark.subprocess
def test_processes_of_one_recording_run_share_the_answer(tmp_path: Path) -> None:
    """pytest-xdist workers, each with its own transport on one cassette, in one named run."""
    import multiprocessing

    from tests.cassettes._workers import converse

    path = tmp_path / "shared.json"
    run_id = uuid.uuid4().hex
    context = multiprocessing.get_context("spawn")
    outputs = [tmp_path / f"worker-{w}.json" for w in range(WORKERS)]
    start = context.Barrier(WORKERS)
    processes = [
        context.Process(target=converse, args=(str(path), w, run_id, str(outputs[w]), start))
        for w in range(WORKERS)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    recorded = [json.loads(output.read_text()) for output in outputs]
    assert len({answers[0] for answers in recorded}) == 1, recorded
    cassette = Cassette.load(path)
    assert len(cassette) == 1 + WORKERS * (TURNS - 1)

    transport = CassetteTransport(path, inner=NoNetwork())

    def work(worker: int) -> list[str]:
        with httpx2.Client(transport=transport, base_url=OPENAI) as client:
            messages = [{"role": "user", "content": QUESTION}]
            answers = []
            for turn in range(TURNS):
                if turn:
                    messages.append({"role": "user", "content": f"worker {worker}, turn {turn}"})
                reply = client.post(CHAT, json={"model": "m", "messages": messages})
                answers.append(reply.json()["choices"][0]["message"]["content"])
                messages.append({"role": "assistant", "content": answers[-1]})
            return answers

    assert in_parallel(work) == recorded


def test_a_client_sending_a_request_again_before_reading_the_first_is_not_stuck(
    tmp_path: Path,
) -> None:
    provider = ClockProvider(delay=0)
    transport = CassetteTransport(
        tmp_path / "c.json", mode="once", inner=httpx2.MockTransport(provider.handler)
    )
    body = {"model": "m", "messages": [{"role": "user", "content": QUESTION}]}
    finished = threading.Event()

    def send_twice() -> None:
        with httpx2.Client(transport=transport, base_url=OPENAI) as client:
            first = client.send(client.build_request("POST", CHAT, json=body), stream=True)
            second = client.send(client.build_request("POST", CHAT, json=body), stream=True)
            first.read()
            second.read()
        finished.set()

    thread = threading.Thread(target=send_twice, daemon=True)
    thread.start()
    assert finished.wait(10), "the second request waited for an answer its own client holds"
    assert len(provider.calls) == 2
