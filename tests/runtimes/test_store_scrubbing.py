"""What a store keeps is scrubbed as every other output is: a key a model echoes never reaches the
store's file, and a run resumed from that state ends as the run that never stopped, with
`[SCRUBBED]` where the key was (as a run replaying a cassette has it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent.state import PERSISTENCE_POINTS, PersistencePoint, RunState, StateWriter
from harness.llm.models import AssistantMessage, UserMessage
from harness.runtimes.base import Fault
from harness.runtimes.run import run_agent
from harness.scrub import PLACEHOLDER, Scrubber
from harness.stores.sqlite import SQLiteStore
from tests.support.agents import agent, call, finish, reset_ids, text
from tests.support.scripted import TestCompleter

CANARY = "gsk_" + "7c1e" * 10
"""Shaped like no known key: only the environment's value gives it away."""
REACHED_TWICE = ("work_step_persisted", "forced_attempt_persisted", "forced_attempt_finished")


@pytest.fixture(autouse=True)
def environment_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)


def echoing() -> TestCompleter:
    reset_ids()
    return TestCompleter(
        [call("search", {}), text(f"The key is {CANARY}."), text("prose"), finish()]
    )


def files_under(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


@pytest.mark.parametrize(
    ("point", "occurrence"),
    [(None, 0)]
    + [(point, 1) for point in PERSISTENCE_POINTS]
    + [(point, 2) for point in REACHED_TWICE],
)
def test_a_key_the_model_echoes_never_reaches_the_store_and_a_resumed_run_ends_the_same(
    tmp_path: Path, point: PersistencePoint | None, occurrence: int
) -> None:
    baseline = run_agent(agent(), echoing(), user_message="q", run_id="r", session_id="s")
    assert CANARY in baseline.state.answers[0], "the run itself is unchanged: only its store"
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    completer = echoing()
    resumed = run_agent(
        agent(),
        completer,
        user_message="q",
        run_id="r",
        session_id="s",
        store=store,
        faults=[Fault(point, occurrence)] if point is not None else [],
    )
    stored = store.load("r")
    store.close()
    assert CANARY.encode() not in files_under(tmp_path)
    assert stored is not None
    assert PLACEHOLDER in stored.state_json
    assert RunState.model_validate_json(stored.state_json).answers[0] == (
        f"The key is {PLACEHOLDER}."
    )
    assert (resumed.status, resumed.state.forced_calls_returned) == ("completed", 2)
    assert resumed.state.output == baseline.state.output
    assert len(completer.requests) == len(baseline.requests())
    for sent, before in zip(completer.requests, baseline.requests(), strict=True):
        # each request is the one the uninterrupted run sent, or, after the run resumed from
        # its store, that request with [SCRUBBED] where the key was
        assert sent.model_dump_json() in (
            before.model_dump_json(),
            before.model_dump_json().replace(CANARY, PLACEHOLDER),
        )


def test_the_writer_scrubs_strings_and_keeps_the_run_id_numbers_and_everything_else() -> None:
    state = RunState(
        run_id=f"run-{CANARY}",
        session_id="s",
        step=12345678,
        messages=(
            UserMessage(content="a plain question, stored as it is"),
            AssistantMessage(text=f'the key is "{CANARY}" and sk-proj-{"Ab1" * 8}'),
        ),
        answers=(f"{CANARY}\n",),
        output={"token_count": 3, "note": CANARY},
    )
    text = StateWriter().dump(state)
    stored = RunState.model_validate_json(text)
    assert stored.run_id == state.run_id, "the key the store files the run under is kept"
    assert CANARY not in text.replace(state.run_id, "")
    assert stored.messages[0] == state.messages[0]
    assert stored.messages[1] == AssistantMessage(
        text=f'the key is "{PLACEHOLDER}" and {PLACEHOLDER}'
    )
    assert stored.answers == (f"{PLACEHOLDER}\n",)
    assert stored.output == {"token_count": 3, "note": PLACEHOLDER}
    assert stored.step == 12345678
    assert CANARY in StateWriter(Scrubber()).dump(state.evolve(run_id="r")), (
        "the environment's key is scrubbed as the environment's: a writer given a scrubber "
        "without it keeps it"
    )
