"""Schema-drift check: compare a live store's schema with what this harness expects.

SQL stores (SQLite, PostgreSQL) are compared table by table and column by column (kind and
nullability) with `harness.stores.migrations.EXPECTED_COLUMNS`, and their applied migration
versions with `MIGRATIONS`. Redis is schemaless: its schema key must hold `SCHEMA_VERSION`, and
every stored run must be a hash whose fields are among `FIELDS` (with the mandatory ones present).

The check never migrates nor writes: SQLite is opened read-only, PostgreSQL in a read-only
session, Redis without marking its schema key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from harness.errors import StoreUnavailableError
from harness.stores.migrations import (
    EXPECTED_COLUMNS,
    LATEST_VERSION,
    MIGRATIONS,
    MIGRATIONS_TABLE,
    RUNS_TABLE,
    Dialect,
)
from harness.stores.urls import StoreUrlError, store_kind

if TYPE_CHECKING:
    from harness.stores.postgres import PostgresStore

# The column kinds of EXPECTED_COLUMNS as each database reports them.
_SQL_TYPES: Final[dict[Dialect, dict[str, str]]] = {
    "sqlite": {"text": "text", "json": "text", "timestamp": "text"},
    "postgres": {"text": "text", "json": "jsonb", "timestamp": "timestamp with time zone"},
}
REDIS_REQUIRED_FIELDS: Final = ("status", "stateJson", "updatedAt")
REDIS_RUNS_CHECKED: Final = 1_000
"""At most this many stored runs are inspected (found with SCAN) per check."""


@dataclass(frozen=True, kw_only=True)
class SchemaDifference:
    """One way the live schema differs: what, what the harness expects, what is there."""

    subject: str
    expected: str
    actual: str

    def __str__(self) -> str:
        return f"{self.subject}: expected {self.expected} but found {self.actual}"


@dataclass(frozen=True, kw_only=True)
class StoreCheck:
    """The result of one check; `matches` when there is no difference."""

    kind: str
    expected_version: str
    actual_version: str | None
    differences: list[SchemaDifference] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return not self.differences


def check_store(url: str) -> StoreCheck:
    """Compare the store at `url` with the schema this harness expects, changing nothing.

    Raises `StoreUrlError` for a URL that names no store and `StoreUnavailableError` when the
    store cannot be reached or opened; the message never contains the URL (it may hold a
    password).
    """
    kind = store_kind(url)
    if kind == "memory":
        # a memory store lives and dies with its process: there is no stored schema to drift
        return StoreCheck(kind=kind, expected_version="-", actual_version="-")
    if kind == "redis":
        return _check_redis(url)
    return _check_sql(url, kind)


def compare_sql(
    dialect: Dialect,
    tables: list[str],
    columns: dict[str, tuple[str, bool]],
    applied: list[int],
) -> list[SchemaDifference]:
    """The differences between a SQL schema as inspected and the expected one."""
    differences: list[SchemaDifference] = []
    for table in (MIGRATIONS_TABLE, RUNS_TABLE):
        if table not in tables:
            differences.append(
                SchemaDifference(subject=f"table {table}", expected="present", actual="no table")
            )
    expected_versions = [migration.version for migration in MIGRATIONS]
    if applied != expected_versions:
        missing = [m for m in MIGRATIONS if m.version not in applied]
        unknown = [v for v in applied if v not in expected_versions]
        detail = []
        if missing:
            detail.append("pending " + ", ".join(f"v{m.version} {m.name}" for m in missing))
        if unknown:
            detail.append("unknown " + ", ".join(f"v{v}" for v in unknown))
        differences.append(
            SchemaDifference(
                subject="migration version",
                expected=str(LATEST_VERSION),
                actual=f"{max(applied) if applied else 0} ({'; '.join(detail)})",
            )
        )
    if RUNS_TABLE not in tables:
        return differences
    types = _SQL_TYPES[dialect]
    for name, (kind, nullable) in EXPECTED_COLUMNS.items():
        subject = f"column {RUNS_TABLE}.{name}"
        wanted = f"{types[kind]} {_null(nullable)}"
        if name not in columns:
            differences.append(
                SchemaDifference(subject=subject, expected=wanted, actual="no column")
            )
            continue
        actual_type, actual_nullable = columns[name]
        if actual_type != types[kind] or actual_nullable != nullable:
            differences.append(
                SchemaDifference(
                    subject=subject,
                    expected=wanted,
                    actual=f"{actual_type} {_null(actual_nullable)}",
                )
            )
    for name in sorted(set(columns) - set(EXPECTED_COLUMNS)):
        actual_type, actual_nullable = columns[name]
        differences.append(
            SchemaDifference(
                subject=f"column {RUNS_TABLE}.{name}",
                expected="no such column",
                actual=f"{actual_type} {_null(actual_nullable)}",
            )
        )
    return differences


def _null(nullable: bool) -> str:
    return "NULL" if nullable else "NOT NULL"


def _check_sql(url: str, kind: str) -> StoreCheck:
    dialect: Dialect = "sqlite" if kind == "sqlite" else "postgres"
    from harness.stores.sqlite import SQLiteStore, StoreError

    if dialect == "sqlite":
        from harness.stores.urls import sqlite_path

        try:
            store: SQLiteStore | PostgresStore = SQLiteStore(sqlite_path(url), migrate=False)
        except (StoreError, OSError) as error:
            raise StoreUnavailableError(f"cannot open the SQLite store: {error}") from None
    else:
        import psycopg

        from harness.stores.postgres import PostgresStore

        try:
            store = PostgresStore(url.replace("postgres://", "postgresql://", 1), migrate=False)
        except psycopg.Error as error:
            raise StoreUnavailableError(
                f"cannot connect to the PostgreSQL store ({type(error).__name__}); check the "
                "host, port, database and credentials of the URL"
            ) from None
    try:
        tables = store.tables()
        applied = store.applied_versions() if MIGRATIONS_TABLE in tables else []
        columns = store.columns() if RUNS_TABLE in tables else {}
        if isinstance(store, SQLiteStore):
            # SQLite lets a non-INTEGER PRIMARY KEY hold NULL (a legacy quirk it keeps for
            # compatibility); the key is never written null, so it counts as NOT NULL here.
            for name in store.primary_key() if columns else []:
                columns[name] = (columns[name][0], False)
    except Exception as error:  # sqlite3 / psycopg: not a database, or a table it cannot read
        raise StoreUnavailableError(
            f"cannot inspect the {'SQLite' if dialect == 'sqlite' else 'PostgreSQL'} store "
            f"({type(error).__name__}): is it a harness store? Its tables could not be read"
        ) from None
    finally:
        store.close()
    return StoreCheck(
        kind=kind,
        expected_version=str(LATEST_VERSION),
        actual_version=str(max(applied)) if applied else None,
        differences=compare_sql(dialect, tables, columns, applied),
    )


def _check_redis(url: str) -> StoreCheck:
    import redis

    from harness.stores.redis import FIELDS, SCHEMA_KEY, SCHEMA_VERSION, RedisStore

    try:
        store = RedisStore(url, migrate=False)
    except ValueError as error:  # redis-py parses the URL here: a bad port or host
        raise StoreUrlError(
            f"the Redis URL does not parse ({type(error).__name__}); expected "
            "redis://[:password@]host:port/db"
        ) from None
    except redis.RedisError as error:
        raise StoreUnavailableError(
            f"cannot connect to the Redis store ({type(error).__name__}); check the host, port "
            "and database of the URL"
        ) from None
    try:
        version = store.schema_version()
        run_ids = store.run_ids(limit=REDIS_RUNS_CHECKED)
        differences: list[SchemaDifference] = []
        if version != SCHEMA_VERSION:
            differences.append(
                SchemaDifference(
                    subject=f"key {SCHEMA_KEY}",
                    expected=repr(SCHEMA_VERSION),
                    actual="no key" if version is None else repr(version),
                )
            )
        for run_id in run_ids:
            key_type = store.key_type(run_id)
            subject = f"run {run_id}"
            if key_type != "hash":
                differences.append(
                    SchemaDifference(subject=subject, expected="a hash", actual=f"a {key_type}")
                )
                continue
            fields = store.fields(run_id)
            unknown = sorted(set(fields) - set(FIELDS))
            if unknown:
                differences.append(
                    SchemaDifference(
                        subject=f"{subject} hash fields",
                        expected=f"only {', '.join(FIELDS)}",
                        actual=f"unknown {', '.join(unknown)}",
                    )
                )
            missing = [name for name in REDIS_REQUIRED_FIELDS if name not in fields]
            if missing:
                differences.append(
                    SchemaDifference(
                        subject=f"{subject} hash fields",
                        expected=", ".join(REDIS_REQUIRED_FIELDS),
                        actual=f"missing {', '.join(missing)}",
                    )
                )
    except redis.RedisError as error:
        raise StoreUnavailableError(
            f"cannot inspect the Redis store ({type(error).__name__}); check the host, port "
            "and database of the URL"
        ) from None
    finally:
        store.close()
    return StoreCheck(
        kind="redis",
        expected_version=SCHEMA_VERSION,
        actual_version=version,
        differences=differences,
    )


__all__ = [
    "SchemaDifference",
    "StoreCheck",
    "StoreUnavailableError",
    "StoreUrlError",
    "check_store",
    "compare_sql",
]
