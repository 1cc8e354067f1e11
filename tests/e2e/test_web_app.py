"""The web-app recipe of docs/serve.md, run as a TypeScript team runs it: examples/e2e (a Node chat
app on the official `openai` SDK, streaming its answers to the page) and its Playwright suite,
four workers on one shared cassette, in headless Chromium.

The suite records once through `harness serve --record-mode once` against the loopback fake
provider, which answers the question every test asks first ("What time is it?") with the time to
the millisecond and a count, so no two recorded answers are alike; each later turn sends the
earlier answers back. Then a fresh replay-only server (`--record-mode none`) replays it five times
in a row (`--repeat-each=5`, every repetition of every test a session of its own, which plays the
cassette from its start): every test passes, the page shows what it showed while recording, no
model call of the app fails (a replay miss is a 404 the app logs), the server logs every request
as replayed and no recorded answer left unplayed, and the cassette is left as it was.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from itertools import count
from pathlib import Path
from typing import Any, Final

import pytest

from tests.support.browser import chromium_executable
from tests.support.fake_provider import (
    Answer,
    ReceivedRequest,
    Reply,
    last_user_prompt,
    reply_for,
    serve,
)
from tests.support.node import installed_node
from tests.support.serve_process import harness_serve
from tests.support.servers import free_port

pytestmark = [pytest.mark.browser, pytest.mark.subprocess]

ROOT: Final = Path(__file__).resolve().parents[2]
EXAMPLE: Final = ROOT / "examples" / "e2e"
PLAYWRIGHT: Final = EXAMPLE / "node_modules" / "@playwright" / "test" / "cli.js"
HARNESS: Final = Path(sys.executable).with_name("harness")
CASSETTE: Final = "web-app/chat"
FIRST_QUESTION: Final = "What time is it?"
TESTS: Final = 4
"""The conversations of examples/e2e/tests/chat.spec.ts, three turns each."""
REPLAYS: Final = 5
SERVER_KEY: Final = "sk-server-openai-CANARY0123456789"
STARTUP_SECONDS: Final = 30.0
SUITE_SECONDS: Final = 120.0
TIME_ANSWER: Final = re.compile(r"It is \d\d:\d\d:\d\d\.\d{3} \(answer \d+\)\.")
APP_FAILURE: Final = "model call failed"
"""What the example app logs for every model call that fails (a replay miss is a 404)."""
UNPLAYED: Final = re.compile(r"\b(missed|used up|never played)\b")
"""What `harness serve` prints for a request it had no answer for, and at its end for recorded
answers no client asked for."""


class TellingTime:
    """The fake provider's script: the first question answered with the time to the millisecond
    and a count of the answers given, so no two are alike; any other question by its turn and
    its text, the same every time."""

    def __init__(self) -> None:
        self._answers = count(1)
        self._lock = threading.Lock()

    def __call__(self, request: ReceivedRequest) -> Reply:
        body = request.json()
        prompt = last_user_prompt(body)
        if prompt == FIRST_QUESTION:
            with self._lock:
                number = next(self._answers)
            now = datetime.now()
            text = f"It is {now:%H:%M:%S}.{now.microsecond // 1000:03d} (answer {number})."
        else:
            turn = sum(1 for message in body["messages"] if message["role"] == "user")
            text = f"Turn {turn}: noted {prompt!r}."
        return reply_for(request, Answer(text=text))


@dataclass(frozen=True, kw_only=True)
class SuiteRun:
    """One run of the Playwright suite: what it printed and, per test (by title) and repetition,
    the answers the page showed and the requests its harness session received."""

    output: str
    transcripts: dict[str, list[list[str]]]
    sessions: dict[str, list[list[dict[str, Any]]]]


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> str:
    """`node`, with the example's pinned packages installed (never a browser: the suite drives
    the system's Chromium)."""
    chromium_executable()  # skips first without a browser: nothing is installed for nothing
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    return installed_node(EXAMPLE)


def run_suite(node: str, harness_url: str, folder: Path, *, repeat: int = 1) -> SuiteRun:
    """The example's Playwright suite as `npx playwright test` runs it (its config: 4 workers,
    fully parallel, the app started by Playwright), against the harness server at
    `harness_url`. Fails the test, with everything Playwright printed, unless every test passed
    and no model call of the app failed."""
    report = folder / "report.json"
    environ = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_", "HARNESS_", "PLAYWRIGHT_"))
        },
        "HARNESS_URL": harness_url,
        "HARNESS_CASSETTE": CASSETTE,
        "APP_PORT": str(free_port()),
        "CHROMIUM_PATH": chromium_executable(),
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        "PLAYWRIGHT_JSON_OUTPUT_FILE": str(report),
        "FORCE_COLOR": "0",
    }
    # A session of its own, so a run that hangs is ended whole: Playwright, its workers, the
    # browsers and the app it started.
    with subprocess.Popen(
        [
            node,
            str(PLAYWRIGHT),
            "test",
            "--reporter=list,json",
            f"--output={folder}",
            f"--repeat-each={repeat}",
        ],
        cwd=EXAMPLE,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as child:
        try:
            output, _ = child.communicate(timeout=SUITE_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            output, _ = child.communicate()
            pytest.fail(f"the Playwright suite did not finish within {SUITE_SECONDS:g}s:\n{output}")
    assert child.returncode == 0, f"the Playwright suite failed:\n{output}"
    assert APP_FAILURE not in output, output
    document = json.loads(report.read_text(encoding="utf-8"))
    stats = document["stats"]
    outcomes = {name: stats[name] for name in ("expected", "unexpected", "flaky", "skipped")}
    expected = {"expected": TESTS * repeat, "unexpected": 0, "flaky": 0, "skipped": 0}
    assert outcomes == expected, output
    transcripts: dict[str, list[list[str]]] = {}
    sessions: dict[str, list[list[dict[str, Any]]]] = {}
    for title, files in _attachments(document["suites"]):
        transcripts.setdefault(title, []).append(files["transcript"])
        sessions.setdefault(title, []).append(files["harness-session"]["requests"])
    return SuiteRun(output=output, transcripts=transcripts, sessions=sessions)


def _attachments(suites: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(test title, its JSON attachments by name) of every test of the report's `suites`."""
    for suite in suites:
        for spec in suite.get("specs", []):
            for test in spec["tests"]:
                (result,) = test["results"]
                yield (
                    spec["title"],
                    {
                        attachment["name"]: json.loads(base64.b64decode(attachment["body"]))
                        for attachment in result["attachments"]
                        if attachment.get("contentType") == "application/json"
                    },
                )
        yield from _attachments(suite.get("suites", []))


def server_environ(provider_url: str) -> dict[str, str]:
    """A recording server's environment: OpenAI at the fake provider, with the server's key."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))},
        "OPENAI_BASE_URL": f"{provider_url}/v1",
        "OPENAI_API_KEY": SERVER_KEY,
    }


def recorded_prompts(cassette: Mapping[str, Any]) -> list[str]:
    return [
        last_user_prompt(interaction["request"]["body"]) for interaction in cassette["interactions"]
    ]


def test_the_web_app_suite_records_with_four_workers_and_replays_five_times_in_a_row(
    node: str, tmp_path: Path
) -> None:
    cassettes = tmp_path / "cassettes"
    with serve(TellingTime()) as provider:
        environ = server_environ(provider.base_url)
        with harness_serve(cassettes, "--record-mode=once", environ=environ) as server:
            recording = run_suite(node, server.url, tmp_path / "record")
    assert "Traceback" not in server.stderr, server.stderr

    assert len(recording.transcripts) == TESTS
    for title, runs in recording.transcripts.items():
        ((first, *later),) = runs
        assert TIME_ANSWER.fullmatch(first), (title, first)
        assert [answer.split(":")[0] for answer in later] == ["Turn 2", "Turn 3"], title
        (requests,) = recording.sessions[title]
        assert [request["kind"] for request in requests] == ["work"] * 3, title
    cassette_file = cassettes / f"{CASSETTE}.json"
    saved = cassette_file.read_bytes()
    assert SERVER_KEY.encode() not in saved
    prompts = recorded_prompts(json.loads(saved))
    later_prompts = [prompt for prompt in prompts if prompt != FIRST_QUESTION]
    assert len(later_prompts) == len(set(later_prompts)) == TESTS * 2
    assert FIRST_QUESTION in prompts

    # the provider is stopped: a replay that reached it would fail
    with harness_serve(
        cassettes, "--record-mode=none", "--log-format=json", environ=environ
    ) as server:
        replayed = run_suite(node, server.url, tmp_path / "replay", repeat=REPLAYS)
    assert "Traceback" not in server.stderr, server.stderr
    assert not UNPLAYED.search(server.stderr), server.stderr
    model_calls = [line for line in server.log_lines() if line["outcome"] != "control"]
    assert [line["outcome"] for line in model_calls] == ["replayed"] * TESTS * 3 * REPLAYS
    for title, runs in replayed.transcripts.items():
        assert runs == recording.transcripts[title] * REPLAYS, f"{title}:\n{replayed.output}"
    assert cassette_file.read_bytes() == saved, "the replays changed the cassette"
