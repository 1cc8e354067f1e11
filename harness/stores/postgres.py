"""The PostgreSQL store: `state_json` and the nullable `forced_completion` as JSONB."""

from __future__ import annotations

import threading

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb

from harness.protocol.forced import ForcedCompletionState
from harness.stores.base import StoredRun
from harness.stores.migrations import LATEST_VERSION, MIGRATIONS_TABLE, RUNS_TABLE, pending
from harness.stores.timeouts import StoreTimeouts

_MIGRATION_LOCK = 0x6861726E  # pg_advisory_xact_lock key: migrations run one at a time


class PostgresStore:
    """Runs in PostgreSQL; migrations are applied on start-up under an advisory lock."""

    def __init__(
        self,
        url: str,
        *,
        migrate_to: int = LATEST_VERSION,
        migrate: bool = True,
        timeouts: StoreTimeouts | None = None,
    ) -> None:
        """Connect and apply pending migrations up to `migrate_to`.

        With `migrate=False` nothing is migrated and the session is read-only
        (`default_transaction_read_only`), so inspecting a database cannot change it. The
        connection and every statement are bounded by `timeouts` (default: from the environment,
        `StoreTimeouts.from_environment()`), unless the URL sets its own.
        """
        self.url = url
        self._lock = threading.Lock()
        bounds = timeouts or StoreTimeouts.from_environment()
        self._connection = psycopg.connect(
            make_conninfo(url, **_bounded(url, bounds)), autocommit=True
        )
        if not migrate:
            self._connection.execute("SET default_transaction_read_only = on")
            return
        self.migrate(migrate_to)

    def migrate(self, target: int = LATEST_VERSION) -> list[int]:
        done: list[int] = []
        with self._lock, self._connection.transaction():
            cursor = self._connection.cursor()
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, "
                "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            cursor.execute(f"SELECT version FROM {MIGRATIONS_TABLE}")
            applied = {row[0] for row in cursor.fetchall()}
            for migration in pending(applied, target):
                cursor.execute(migration.postgres.encode())
                cursor.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
                done.append(migration.version)
        return done

    def schema_version(self) -> int:
        with self._lock:
            row = self._connection.execute(
                f"SELECT max(version) FROM {MIGRATIONS_TABLE}"
            ).fetchone()
        return int(row[0] or 0) if row else 0

    def columns(self) -> dict[str, tuple[str, bool]]:
        """Column -> (data type, nullable) of the runs table in the current schema."""
        with self._lock:
            rows = self._connection.execute(
                "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                "WHERE table_name = %s AND table_schema = current_schema()",
                (RUNS_TABLE,),
            ).fetchall()
        return {row[0]: (str(row[1]).lower(), row[2] == "YES") for row in rows}

    def tables(self) -> list[str]:
        """The names of the tables in the current schema, sorted."""
        with self._lock:
            rows = self._connection.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() ORDER BY table_name"
            ).fetchall()
        return [str(row[0]) for row in rows]

    def applied_versions(self) -> list[int]:
        """Every migration version recorded as applied, ascending (empty without the table)."""
        if MIGRATIONS_TABLE not in self.tables():
            return []
        with self._lock:
            rows = self._connection.execute(
                f"SELECT version FROM {MIGRATIONS_TABLE} ORDER BY version"
            ).fetchall()
        return [int(row[0]) for row in rows]

    def load(self, run_id: str) -> StoredRun | None:
        with self._lock:
            row = self._connection.execute(
                f"SELECT run_id, status, state_json::text, forced_completion::text FROM {RUNS_TABLE} "
                "WHERE run_id = %s",
                (run_id,),
            ).fetchone()
        if row is None:
            return None
        forced = None if row[3] is None else ForcedCompletionState.model_validate_json(row[3])
        return StoredRun(run_id=row[0], status=row[1], state_json=row[2], forced_completion=forced)

    def save(self, run: StoredRun) -> None:
        forced = (
            None
            if run.forced_completion is None
            else Jsonb(run.forced_completion.model_dump(mode="json", by_alias=True))
        )
        with self._lock:
            self._connection.execute(
                f"INSERT INTO {RUNS_TABLE} (run_id, status, state_json, forced_completion) "
                "VALUES (%s, %s, %s::jsonb, %s) ON CONFLICT (run_id) DO UPDATE SET "
                "status = excluded.status, state_json = excluded.state_json, "
                "forced_completion = excluded.forced_completion, updated_at = now()",
                (run.run_id, run.status, run.state_json, forced),
            )

    def delete(self, run_id: str) -> bool:
        with self._lock:
            cursor = self._connection.execute(
                f"DELETE FROM {RUNS_TABLE} WHERE run_id = %s", (run_id,)
            )
        return cursor.rowcount > 0

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def _bounded(url: str, timeouts: StoreTimeouts) -> dict[str, str]:
    """Connection parameters that bound the connect and each statement, unless `url` sets them.

    `statement_timeout` is enforced by the server, so a slow query ends with an error instead of
    holding a cell forever; `connect_timeout` covers a server that accepts and never answers.
    """
    given = conninfo_to_dict(url)
    extra: dict[str, str] = {}
    if "connect_timeout" not in given:
        extra["connect_timeout"] = str(timeouts.connect_whole_seconds)
    options = str(given.get("options") or "")
    if "statement_timeout" not in options:
        milliseconds = max(1, round(timeouts.statement_seconds * 1000))
        extra["options"] = f"{options} -c statement_timeout={milliseconds}".strip()
    return extra
