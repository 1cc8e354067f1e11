"""`harness stores check URL`: schema drift against the expected schema, without migrating."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
import redis
from click.testing import CliRunner

from harness.cli import main
from harness.errors import StoreUnavailableError
from harness.stores.base import StoredRun
from harness.stores.check import check_store, compare_sql
from harness.stores.migrations import EXPECTED_COLUMNS, LATEST_VERSION, MIGRATIONS, RUNS_TABLE
from harness.stores.postgres import PostgresStore
from harness.stores.redis import KEY_PREFIX, SCHEMA_KEY, RedisStore
from harness.stores.sqlite import SQLiteStore
from harness.stores.urls import StoreUrlError
from tests.support.stores import fresh_postgres_database


def invoke(url: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["stores", "check", url])
    return result.exit_code, result.output


def sqlite_url(tmp_path: Path, *, migrate_to: int = LATEST_VERSION) -> tuple[str, Path]:
    path = tmp_path / "runs.sqlite3"
    SQLiteStore(path, migrate_to=migrate_to).close()
    return f"sqlite:///{path}", path


def test_a_current_sqlite_store_matches(tmp_path: Path) -> None:
    url, _ = sqlite_url(tmp_path)
    code, output = invoke(url)
    assert code == 0, output
    assert "matches the expected schema (version 3)" in output


def test_a_v2_sqlite_store_reports_the_missing_column_and_version_and_is_not_migrated(
    tmp_path: Path,
) -> None:
    url, path = sqlite_url(tmp_path, migrate_to=2)
    before = path.read_bytes()
    code, output = invoke(url)
    assert code == 1
    assert (
        f"column {RUNS_TABLE}.forced_completion: expected text NULL but found no column" in output
    )
    assert "migration version: expected 3 but found 2 (pending v3 add_forced_completion)" in output
    assert path.read_bytes() == before
    assert SQLiteStore(path, migrate=False).applied_versions() == [1, 2]


def test_a_raw_v2_sqlite_database_reports_the_same(tmp_path: Path) -> None:
    path = tmp_path / "raw.sqlite3"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE harness_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT "
            "NULL, applied_at TEXT NOT NULL)"
        )
        for migration in MIGRATIONS[:2]:
            connection.execute(migration.sqlite)
            connection.execute(
                "INSERT INTO harness_schema_migrations VALUES (?, ?, 'then')",
                (migration.version, migration.name),
            )
    result = check_store(f"sqlite:///{path}")
    assert (result.actual_version, result.expected_version) == ("2", "3")
    assert {d.subject for d in result.differences} == {
        "migration version",
        f"column {RUNS_TABLE}.forced_completion",
    }


def test_an_extra_or_renamed_column_is_reported(tmp_path: Path) -> None:
    url, path = sqlite_url(tmp_path)
    with sqlite3.connect(path) as connection:
        connection.execute(f"ALTER TABLE {RUNS_TABLE} RENAME COLUMN forced_completion TO forced")
        connection.execute(f"ALTER TABLE {RUNS_TABLE} ADD COLUMN note TEXT NOT NULL DEFAULT ''")
    code, output = invoke(url)
    assert code == 1
    assert (
        f"column {RUNS_TABLE}.forced_completion: expected text NULL but found no column" in output
    )
    assert f"column {RUNS_TABLE}.forced: expected no such column but found text NULL" in output
    assert f"column {RUNS_TABLE}.note: expected no such column but found text NOT NULL" in output
    assert "3 difference(s)" in output


def test_an_empty_or_missing_sqlite_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite3"
    sqlite3.connect(empty).close()
    result = check_store(f"sqlite:///{empty}")
    assert {d.subject for d in result.differences} >= {
        "table harness_runs",
        "table harness_schema_migrations",
    }
    code, output = invoke(f"sqlite:///{tmp_path / 'missing.sqlite3'}")
    assert code == 2
    assert "does not exist" in output
    assert not (tmp_path / "missing.sqlite3").exists()


def test_a_file_that_is_no_harness_store_exits_2_and_is_left_alone(tmp_path: Path) -> None:
    not_sqlite = tmp_path / "notes.sqlite3"
    not_sqlite.write_bytes(b"these are notes, not a database" * 20)
    drifted = tmp_path / "drifted.sqlite3"
    with sqlite3.connect(drifted) as connection:
        connection.execute("CREATE TABLE harness_schema_migrations (name TEXT)")
    for path in (not_sqlite, drifted):
        before = path.read_bytes()
        code, output = invoke(f"sqlite:///{path}")
        assert code == 2, output
        assert "cannot inspect the SQLite store" in output
        assert "Traceback" not in output
        assert path.read_bytes() == before


@pytest.mark.parametrize("url", ["redis://:secret-pw@localhost:notaport/0", "redis://[::1/0"])
def test_a_redis_url_that_does_not_parse_exits_2_without_its_password(url: str) -> None:
    code, output = invoke(url)
    assert code == 2, output
    assert "the Redis URL does not parse" in output
    assert "secret-pw" not in output


def test_a_bad_url_exits_2() -> None:
    code, output = invoke("mysql://localhost/db")
    assert code == 2
    assert "expected a store URL" in output
    with pytest.raises(StoreUrlError):
        check_store("nope")


def test_memory_has_no_stored_schema() -> None:
    assert check_store("memory://").matches


def test_compare_sql_reports_type_and_nullability() -> None:
    columns = {name: ("text", nullable) for name, (_, nullable) in EXPECTED_COLUMNS.items()}
    columns["status"] = ("text", True)
    columns["state_json"] = ("json", False)
    differences = compare_sql(
        "postgres",
        ["harness_runs", "harness_schema_migrations"],
        {**columns, "forced_completion": ("jsonb", True), "interrupt_context": ("jsonb", True)},
        [1, 2, 3, 4],
    )
    shown = [str(d) for d in differences]
    assert "migration version: expected 3 but found 4 (unknown v4)" in shown
    assert f"column {RUNS_TABLE}.status: expected text NOT NULL but found text NULL" in shown
    assert (
        f"column {RUNS_TABLE}.state_json: expected jsonb NOT NULL but found json NOT NULL" in shown
    )


@pytest.mark.server
def test_postgres_current_v2_and_drifted(postgres_url: str) -> None:
    current = fresh_postgres_database(postgres_url)
    PostgresStore(current).close()
    assert invoke(current)[0] == 0
    old = fresh_postgres_database(postgres_url)
    PostgresStore(old, migrate_to=2).close()
    code, output = invoke(old)
    assert code == 1
    assert (
        f"column {RUNS_TABLE}.forced_completion: expected jsonb NULL but found no column" in output
    )
    assert "expected 3 but found 2" in output
    inspector = PostgresStore(old, migrate=False)
    assert inspector.applied_versions() == [1, 2]  # the check did not migrate
    inspector.close()
    read_only = PostgresStore(current, migrate=False)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        read_only.save(StoredRun(run_id="r", status="s", state_json="{}"))
    read_only.close()
    with psycopg.connect(current, autocommit=True) as connection:
        connection.execute(f"ALTER TABLE {RUNS_TABLE} RENAME COLUMN status TO state")
    code, output = invoke(current)
    assert code == 1
    assert f"column {RUNS_TABLE}.status: expected text NOT NULL but found no column" in output
    assert f"column {RUNS_TABLE}.state: expected no such column" in output


@pytest.mark.server
def test_postgres_unreachable_exits_2() -> None:
    code, output = invoke("postgresql://nobody:secret-canary@127.0.0.1:1/none")
    assert code == 2
    assert "cannot connect" in output
    assert "secret-canary" not in output
    with pytest.raises(StoreUnavailableError):
        check_store("postgresql://nobody@127.0.0.1:1/none")


@pytest.mark.server
def test_redis_current_and_drifted(redis_url: str) -> None:
    base = redis_url.rsplit("/", 1)[0]
    url = f"{base}/7"
    client = redis.Redis.from_url(url, decode_responses=True)
    client.flushdb()
    unmarked = check_store(url)
    assert [str(d) for d in unmarked.differences] == [
        f"key {SCHEMA_KEY}: expected '1' but found no key"
    ]
    assert client.get(SCHEMA_KEY) is None  # checking did not mark it
    store = RedisStore(url)
    store.save(StoredRun(run_id="r-1", status="running", state_json="{}"))
    store.close()
    code, output = invoke(url)
    assert code == 0, output
    client.hset(KEY_PREFIX + "r-1", "forced_completion", "{}")
    client.hdel(KEY_PREFIX + "r-1", "updatedAt")
    client.set(KEY_PREFIX + "r-2", "not a hash")
    code, output = invoke(url)
    assert code == 1
    assert (
        "run r-1 hash fields: expected only status, stateJson, forcedCompletion, updatedAt but found unknown forced_completion"
        in output
    )
    assert (
        "run r-1 hash fields: expected status, stateJson, updatedAt but found missing updatedAt"
        in output
    )
    assert "run r-2: expected a hash but found a string" in output
    client.flushdb()
    client.close()
