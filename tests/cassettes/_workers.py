"""Code run in child processes by the concurrency tests (importable under spawn)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import httpx2

from harness.cassettes import CassetteTransport
from harness.cassettes.cassette import (
    Cassette,
    CassetteDocument,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    new_metadata,
    write_atomically,
)


def record_many(path: str, worker: int, count: int, mode: str) -> None:
    """Record `count` distinct requests plus one request every worker sends identically."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        return httpx2.Response(200, json={"worker": worker, "echo": body})

    transport = CassetteTransport(path, mode=mode, inner=httpx2.MockTransport(handler))
    with httpx2.Client(transport=transport, base_url="https://api.openai.com") as client:
        for index in range(count):
            client.post("/v1/chat/completions", json={"worker": worker, "index": index})
        client.post("/v1/chat/completions", json={"shared": True})


def big_document(version: str, size: int) -> bytes:
    interactions = [
        Interaction.build(
            "sha256:" + f"{index:064x}",
            1,
            RecordedRequest(method="POST", path="/v1/x", body={"i": index, "pad": "x" * 2000}),
            RecordedResponse(status=200, body={"version": version}),
        )
        for index in range(size)
    ]
    document = CassetteDocument(metadata=new_metadata("openai"), interactions=interactions)
    return Cassette.from_document(Path("unused"), document).dumps()


def save_forever(path: str) -> None:
    """Alternate two versions of a large cassette until killed."""
    versions = [big_document("A", 400), big_document("B", 400)]
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for data in itertools.cycle(versions):
        write_atomically(Path(path), data)


def converse(path: str, worker: int, run_id: str, out: str, start: Any) -> None:
    """A three-turn conversation recorded in mode `all` as one process of the run `run_id`:
    the first turn ("What time is it?") is every worker's, answered with the time of the call."""
    import os
    import time

    os.environ["HARNESS_RECORD_RUN_ID"] = run_id

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        last = body["messages"][-1]["content"]
        time.sleep(0.2)
        text = f"It is {time.time():.6f}" if last == "What time is it?" else f"re: {last}"
        return httpx2.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": text}}]}
        )

    transport = CassetteTransport(path, mode="all", inner=httpx2.MockTransport(handler))
    start.wait()  # every worker is ready: their first requests overlap
    messages = [{"role": "user", "content": "What time is it?"}]
    answers = []
    with httpx2.Client(transport=transport, base_url="https://api.openai.com") as client:
        for turn in range(3):
            if turn:
                messages.append({"role": "user", "content": f"worker {worker}, turn {turn}"})
            reply = client.post("/v1/chat/completions", json={"model": "m", "messages": messages})
            text = reply.json()["choices"][0]["message"]["content"]
            answers.append(text)
            messages.append({"role": "assistant", "content": text})
    Path(out).write_text(json.dumps(answers))


KILL_STEPS = ("in_flight", "answered", "published", "released", "before_save")
"""Where the process that sends a shared request first dies by SIGKILL: while its request is at
the provider, after the answer came but before it was handed over, after it was handed over but
before the request's lock was let go, after that, and after its whole conversation but before
its save."""


def converse_handing_over(
    path: str, role: str, step: str, run_id: str, folder: str, out: str
) -> None:
    """One process of a mode-`all` recording run holding a three-turn conversation whose first
    turn every process sends identically. The `leader` sends it first and is killed at `step`
    of handing its answer over; the `follower` sends it while the leader holds it, and saves."""
    import os
    import signal
    import time

    from harness.cassettes import sharing

    os.environ["HARNESS_RECORD_RUN_ID"] = run_id
    marks = Path(folder)

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def wait_for(name: str) -> None:
        deadline = time.monotonic() + 30
        while not (marks / name).exists():
            if time.monotonic() > deadline:
                raise TimeoutError(name)
            time.sleep(0.01)

    def handler(request: httpx2.Request) -> httpx2.Response:
        last = json.loads(request.content)["messages"][-1]["content"]
        if role == "leader" and last == "What time is it?":
            (marks / "leading").touch()
            wait_for("following")
            time.sleep(0.3)  # the follower's identical request now waits on the leader's lock
            if step == "in_flight":
                die()
        text = (
            f"{role} says it is {time.time():.6f}" if last == "What time is it?" else f"re: {last}"
        )
        return httpx2.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": text}}]}
        )

    if role == "leader":
        publish, land = sharing.RunAnswers.publish, sharing.SharedAnswers.land

        def publishing(self: Any, key: str, answer: Any) -> None:
            if step == "answered":
                die()
            publish(self, key, answer)
            if step == "published":
                die()

        def landing(self: Any, key: str, answer: Any) -> None:
            land(self, key, answer)
            if step == "released":
                die()

        sharing.RunAnswers.publish = publishing  # type: ignore[method-assign]
        sharing.SharedAnswers.land = landing  # type: ignore[method-assign]
    else:
        wait_for("leading")

    transport = CassetteTransport(path, mode="all", inner=httpx2.MockTransport(handler))
    messages = [{"role": "user", "content": "What time is it?"}]
    answers = []
    with httpx2.Client(transport=transport, base_url="https://api.openai.com") as client:
        for turn in range(3):
            if turn:
                messages.append({"role": "user", "content": f"{role}, turn {turn}"})
            if role == "follower" and not turn:
                (marks / "following").touch()
            reply = client.post("/v1/chat/completions", json={"model": "m", "messages": messages})
            text = reply.json()["choices"][0]["message"]["content"]
            answers.append(text)
            messages.append({"role": "assistant", "content": text})
        Path(out).write_text(json.dumps(answers))
        if role == "leader" and step == "before_save":
            die()
