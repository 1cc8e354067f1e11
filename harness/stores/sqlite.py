"""The SQLite store: the embedded default, one file, migrations applied on open."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from harness.errors import HarnessError
from harness.protocol.forced import ForcedCompletionState
from harness.stores.base import StoredRun
from harness.stores.migrations import LATEST_VERSION, MIGRATIONS_TABLE, RUNS_TABLE, pending


class StoreError(HarnessError):
    """Raised when a SQLite store opened without migrating (as `harness stores check` opens it) has
    no database file: a missing file is never read as an empty database."""

    code = "store_error"


PAGE_SIZE: Final = 16_384
"""The page size of a database this store creates (SQLite's default is 4,096)."""


class SQLiteStore:
    """Runs in a SQLite file (WAL journal, synchronous=NORMAL); `forced_completion` is a nullable
    JSON column."""

    def __init__(
        self, path: str | Path, *, migrate_to: int = LATEST_VERSION, migrate: bool = True
    ) -> None:
        """Open (creating and migrating) the database at `path`.

        With `migrate=False` the file is opened read-only and left exactly as it is: nothing
        is created, no migration runs and the journal mode is not touched (what a schema-drift
        check needs). A missing file is then an error, never an empty database.
        """
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._lock = threading.Lock()
        if not migrate:
            if not self.path.is_file():
                raise StoreError(f"no SQLite database at {self.path}: the file does not exist")
            self._connection = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro",
                uri=True,
                check_same_thread=False,
                isolation_level=None,
            )
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        # A run state is a row of kilobytes to tens of kilobytes, saved at every persistence
        # point: in 16 KiB pages it spans one or two pages, not a dozen. A new database only: an
        # existing one keeps the page size it was created with.
        self._connection.execute(f"PRAGMA page_size={PAGE_SIZE}")
        self._connection.execute("PRAGMA journal_mode=WAL")
        # WAL with synchronous=NORMAL: a commit survives a crash of the process (what resuming a
        # run needs); only a power loss may drop the last commits. FULL would fsync every step.
        self._connection.execute("PRAGMA synchronous=NORMAL")
        self._connection.execute("PRAGMA busy_timeout=10000")
        self.migrate(migrate_to)

    def migrate(self, target: int = LATEST_VERSION) -> list[int]:
        """Apply pending migrations up to `target` in one transaction; return the versions."""
        with self._lock:
            connection = self._connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute(
                    f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
                    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
                applied = {
                    row[0] for row in connection.execute(f"SELECT version FROM {MIGRATIONS_TABLE}")
                }
                done = []
                for migration in pending(applied, target):
                    connection.execute(migration.sqlite)
                    connection.execute(
                        f"INSERT INTO {MIGRATIONS_TABLE} (version, name, applied_at) VALUES (?, ?, ?)",
                        (migration.version, migration.name, _now()),
                    )
                    done.append(migration.version)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        return done

    def schema_version(self) -> int:
        with self._lock:
            row = self._connection.execute(
                f"SELECT max(version) FROM {MIGRATIONS_TABLE}"
            ).fetchone()
        return int(row[0] or 0)

    def applied_versions(self) -> list[int]:
        """Every migration version recorded as applied, ascending (empty without the table)."""
        if MIGRATIONS_TABLE not in self.tables():
            return []
        with self._lock:
            rows = self._connection.execute(
                f"SELECT version FROM {MIGRATIONS_TABLE} ORDER BY version"
            ).fetchall()
        return [int(row[0]) for row in rows]

    def tables(self) -> list[str]:
        """The names of the database's tables, sorted."""
        with self._lock:
            rows = self._connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            ).fetchall()
        return [str(row[0]) for row in rows]

    def columns(self) -> dict[str, tuple[str, bool]]:
        """Column -> (declared type, nullable), as the database reports them."""
        with self._lock:
            rows = self._connection.execute(f"PRAGMA table_info({RUNS_TABLE})").fetchall()
        return {row[1]: (str(row[2]).lower(), not row[3]) for row in rows}

    def primary_key(self) -> list[str]:
        """The runs table's primary-key columns."""
        with self._lock:
            rows = self._connection.execute(f"PRAGMA table_info({RUNS_TABLE})").fetchall()
        return [str(row[1]) for row in rows if row[5]]

    def load(self, run_id: str) -> StoredRun | None:
        with self._lock:
            row = self._connection.execute(
                f"SELECT run_id, status, state_json, forced_completion FROM {RUNS_TABLE} "
                "WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        if row is None:
            return None
        forced = None if row[3] is None else ForcedCompletionState.model_validate_json(row[3])
        return StoredRun(run_id=row[0], status=row[1], state_json=row[2], forced_completion=forced)

    def save(self, run: StoredRun) -> None:
        forced = None if run.forced_completion is None else run.forced_completion.model_dump_json()
        now = _now()
        with self._lock:
            self._connection.execute(
                f"INSERT INTO {RUNS_TABLE} (run_id, status, state_json, forced_completion, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET status = excluded.status, "
                "state_json = excluded.state_json, forced_completion = excluded.forced_completion, "
                "updated_at = excluded.updated_at",
                (run.run_id, run.status, run.state_json, forced, now, now),
            )

    def delete(self, run_id: str) -> bool:
        with self._lock:
            cursor = self._connection.execute(
                f"DELETE FROM {RUNS_TABLE} WHERE run_id = ?", (run_id,)
            )
        return cursor.rowcount > 0

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def _now() -> str:
    return datetime.now(UTC).isoformat()
