"""Every store keeps runs and their forced-completion state, and a run resumes from any of them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import psycopg
import pytest

from harness.agent.state import PERSISTENCE_POINTS, PersistencePoint, RunState
from harness.protocol.forced import ForcedCompletionState
from harness.runtimes.base import Fault
from harness.runtimes.run import run_agent
from harness.stores.base import StateStore, StoredRun
from harness.stores.migrations import LATEST_VERSION, MIGRATIONS_TABLE, RUNS_TABLE
from harness.stores.postgres import PostgresStore
from harness.stores.redis import RedisStore
from harness.stores.sqlite import SQLiteStore
from harness.stores.urls import StoreUrlError, default_store_url, open_store, store_kind
from tests.support.agents import agent, call, finish, reset_ids, text
from tests.support.scripted import TestCompleter
from tests.support.stores import fresh_postgres_database

FORCED = ForcedCompletionState(trigger="max_tokens", attempts_used=1, max_attempts=2)


def test_runs_round_trip_with_their_forced_completion_state(store: StateStore) -> None:
    run = StoredRun(run_id="r-1", status="running", state_json='{"a": 1}')
    store.save(run)
    assert store.load("r-1") == run
    forced = run.model_copy(update={"status": "failed", "forced_completion": FORCED})
    store.save(forced)
    loaded = store.load("r-1")
    assert loaded == forced
    assert loaded is not None
    assert json.loads(loaded.state_json) == {"a": 1}
    assert store.load("missing") is None


def test_delete_removes_one_run_and_says_whether_it_was_there(store: StateStore) -> None:
    kept = StoredRun(run_id="kept", status="completed", state_json="{}")
    gone = StoredRun(run_id="gone", status="failed", state_json="{}", forced_completion=FORCED)
    store.save(kept)
    store.save(gone)
    assert store.delete("gone") is True
    assert store.load("gone") is None
    assert store.load("kept") == kept
    assert store.delete("gone") is False
    assert store.delete("never-saved") is False
    store.save(gone)  # a deleted run id can be saved again
    assert store.load("gone") == gone


def replies() -> TestCompleter:
    reset_ids()
    return TestCompleter([call("search", {}), text("Paris."), text("prose"), finish()])


REACHED_TWICE = ("work_step_persisted", "forced_attempt_persisted", "forced_attempt_finished")


@pytest.mark.parametrize("point", PERSISTENCE_POINTS)
def test_a_run_killed_at_any_persistence_point_resumes_from_the_store(
    store: StateStore, point: PersistencePoint
) -> None:
    baseline = run_agent(agent(), replies(), user_message="q", run_id="base", session_id="s")
    completer = replies()
    run_id = f"crash-{point}"
    resumed = run_agent(
        agent(),
        completer,
        user_message="q",
        run_id=run_id,
        session_id="s",
        store=store,
        faults=[Fault(point, 1), *([Fault(point, 2)] if point in REACHED_TWICE else [])],
    )
    assert resumed.crashes == (2 if point in REACHED_TWICE else 1)
    assert resumed.state.model_dump(exclude={"run_id"}) == baseline.state.model_dump(
        exclude={"run_id"}
    )
    assert len(completer.requests) == len(baseline.requests()), "no call was made twice"
    assert resumed.state.forced_calls_returned <= resumed.agent.max_completion_retries
    stored = store.load(run_id)
    assert stored is not None
    assert stored.status == "completed"
    assert stored.forced_completion == resumed.state.forced_completion
    assert stored.forced_completion is not None
    assert stored.forced_completion.status == "succeeded"
    assert json.loads(stored.state_json)["output"] == {"answer": "Paris", "score": 3}
    assert RunState.model_validate_json(stored.state_json) == resumed.state


def test_a_new_sqlite_database_has_16_kib_pages_and_an_old_one_keeps_its_own(
    tmp_path: Path,
) -> None:
    new = SQLiteStore(tmp_path / "new.sqlite3")
    old_path = tmp_path / "old.sqlite3"
    with sqlite3.connect(old_path) as connection:  # created as the previous release created it
        connection.execute("CREATE TABLE made_before (x INTEGER)")
    old = SQLiteStore(old_path)
    try:
        assert new._connection.execute("PRAGMA page_size").fetchone() == (16_384,)
        assert old._connection.execute("PRAGMA page_size").fetchone() == (4_096,)
        for store in (new, old):
            store.save(StoredRun(run_id="r", status="running", state_json='{"step": 1}'))
            assert store.load("r") == StoredRun(
                run_id="r", status="running", state_json='{"step": 1}'
            )
    finally:
        new.close()
        old.close()


# -- migrations ------------------------------------------------------------------------------------

VERSION_2_SQLITE = [
    f"CREATE TABLE {MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    f"CREATE TABLE {RUNS_TABLE} (run_id TEXT PRIMARY KEY, status TEXT NOT NULL, state_json TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, interrupt_context TEXT)",
    f"INSERT INTO {MIGRATIONS_TABLE} VALUES (1, 'create_runs', '2026-01-01'), (2, 'add_interrupt_context', '2026-02-01')",
    f"INSERT INTO {RUNS_TABLE} VALUES ('old-1', 'completed', '{{\"step\": 3}}', '2026-02-02', '2026-02-02', NULL)",
    f"INSERT INTO {RUNS_TABLE} VALUES ('old-2', 'running', '{{\"step\": 1}}', '2026-02-03', '2026-02-03', '{{\"reason\": \"approval\"}}')",
]


def test_a_version_2_sqlite_database_upgrades_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as connection:  # written as the previous release wrote it
        for statement in VERSION_2_SQLITE:
            connection.execute(statement)
    store = SQLiteStore(path)
    try:
        assert store.schema_version() == LATEST_VERSION == 3
        assert store.columns()["forced_completion"] == ("text", True)
        old = store.load("old-1")
        assert old == StoredRun(run_id="old-1", status="completed", state_json='{"step": 3}')
        assert old.forced_completion is None
        assert store.load("old-2") is not None
    finally:
        store.close()
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            f"SELECT run_id, interrupt_context, forced_completion FROM {RUNS_TABLE} ORDER BY run_id"
        ).fetchall()
    assert rows == [("old-1", None, None), ("old-2", '{"reason": "approval"}', None)]
    assert SQLiteStore(path).migrate() == [], "migrations apply once"


@pytest.mark.server
def test_a_version_2_postgres_database_upgrades_in_place(postgres_url: str) -> None:
    url = fresh_postgres_database(postgres_url)
    old = PostgresStore(url, migrate_to=2)
    assert old.schema_version() == 2
    assert "forced_completion" not in old.columns()
    old.close()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            f"INSERT INTO {RUNS_TABLE} (run_id, status, state_json) VALUES "
            "('old-1', 'completed', '{\"step\": 3}'::jsonb)".encode()
        )
    store = PostgresStore(url)
    try:
        assert store.schema_version() == 3
        assert store.columns()["forced_completion"] == ("jsonb", True)
        loaded = store.load("old-1")
        assert loaded is not None
        assert json.loads(loaded.state_json) == {"step": 3}
        assert loaded.forced_completion is None
        store.save(loaded.model_copy(update={"forced_completion": FORCED}))
    finally:
        store.close()
    with psycopg.connect(url) as connection:
        row = connection.execute(f"SELECT forced_completion FROM {RUNS_TABLE}".encode()).fetchone()
    assert row is not None
    assert row[0] == {
        "trigger": "max_tokens",
        "attemptsUsed": 1,
        "maxAttempts": 2,
        "status": "active",
        "lastFailureCode": None,
        "enteredAtStep": 0,
    }


@pytest.mark.server
def test_redis_keeps_forced_completion_as_a_hash_field(redis_url: str) -> None:
    store = RedisStore(redis_url)
    try:
        store.save(StoredRun(run_id="redis-1", status="running", state_json="{}"))
        assert store.fields("redis-1") == ["stateJson", "status", "updatedAt"]
        store.save(
            StoredRun(run_id="redis-1", status="failed", state_json="{}", forced_completion=FORCED)
        )
        assert "forcedCompletion" in store.fields("redis-1")
        assert store.schema_version() == "1"
    finally:
        store.close()


# -- choosing a store ------------------------------------------------------------------------------


def test_sqlite_is_the_default_under_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    url = default_store_url(tmp_path)
    assert url == f"sqlite:///{tmp_path}/.harness/runs.sqlite3"
    store = open_store(url)
    try:
        assert isinstance(store, SQLiteStore)
        assert (tmp_path / ".harness" / "runs.sqlite3").is_file()
    finally:
        store.close()


def test_each_xdist_worker_gets_its_own_default_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert default_store_url(tmp_path) == f"sqlite:///{tmp_path}/.harness/runs-gw1.sqlite3"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("memory://", "memory"),
        ("sqlite:///x.db", "sqlite"),
        ("postgresql://u@h/d", "postgres"),
        ("postgres://u@h/d", "postgres"),
        ("redis://h:6379/0", "redis"),
    ],
)
def test_store_kinds_by_url(url: str, kind: str) -> None:
    assert store_kind(url) == kind


@pytest.mark.parametrize("url", ["mysql://x", "runs.sqlite3", "sqlite://"])
def test_unknown_store_urls_say_what_is_expected(url: str) -> None:
    with pytest.raises(StoreUrlError, match="sqlite"):
        open_store(url)
