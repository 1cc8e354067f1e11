"""Choosing a store by URL: SQLite is the embedded default."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from harness.errors import HarnessError
from harness.stores.base import StateStore, StoreKind
from harness.stores.memory import MemoryStore

DEFAULT_SQLITE_PATH: Final = Path(".harness") / "runs.sqlite3"


class StoreUrlError(HarnessError, ValueError):
    """Raised when a store URL (`--store-url`, a store variable, `harness stores check`) has an
    unknown scheme or does not parse; the message says what is expected, never echoing the URL (it
    may hold a password)."""

    code = "store_url_invalid"


def default_store_url(folder: Path | None = None) -> str:
    """`sqlite:///<folder>/.harness/runs.sqlite3`, the folder being the working folder.

    Each worker of `harness run -n` and of pytest-xdist gets its own file (`runs-w0.sqlite3`,
    `runs-gw0.sqlite3`, ...): runs never span workers, and separate files keep workers from
    queueing on one database's write lock.
    """
    path = (folder or Path.cwd()) / DEFAULT_SQLITE_PATH
    worker = os.environ.get("HARNESS_WORKER") or os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        path = path.with_name(f"{path.stem}-{worker}{path.suffix}")
    return f"sqlite:///{path}"


def store_kind(url: str) -> StoreKind:
    """The kind of store `url` names by its scheme (`postgresql` and `rediss` included)."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    kinds: dict[str, StoreKind] = {
        "memory": "memory",
        "sqlite": "sqlite",
        "postgres": "postgres",
        "postgresql": "postgres",
        "redis": "redis",
        "rediss": "redis",
    }
    if scheme not in kinds:
        raise StoreUrlError(
            "expected a store URL such as memory://, sqlite:///path/runs.sqlite3, "
            f"postgresql://user@host/db or redis://host:6379/0 but got scheme {scheme or '(none)'!r}"
        )
    return kinds[scheme]


def sqlite_path(url: str) -> str:
    """The file path of a `sqlite:///relative` or `sqlite:////absolute` URL."""
    path = url.split("://", 1)[1]
    path = path[1:] if path.startswith("/") and not path.startswith("//") else path
    if not path:
        raise StoreUrlError(
            "a sqlite URL needs a file path: sqlite:///relative or sqlite:////absolute"
        )
    return path


def check_store_url(url: str) -> StoreKind:
    """The store kind of `url` once its form is checked (nothing is opened): a known scheme, a
    SQLite file path, a PostgreSQL conninfo or Redis URL that parses. Raises `StoreUrlError`
    saying what is wrong, never echoing the URL (it may hold a password)."""
    kind = store_kind(url)
    if kind == "sqlite":
        sqlite_path(url)
    elif kind == "postgres":
        from psycopg import ProgrammingError
        from psycopg.conninfo import conninfo_to_dict

        try:
            conninfo_to_dict(url.replace("postgres://", "postgresql://", 1))
        except ProgrammingError:
            raise StoreUrlError(
                "the PostgreSQL URL does not parse; expected postgresql://user:password@host:5432/db"
            ) from None
    elif kind == "redis":
        from redis import ConnectionPool

        try:
            ConnectionPool.from_url(url)  # parses only; nothing connects until a command
        except ValueError as error:
            raise StoreUrlError(
                f"the Redis URL does not parse ({type(error).__name__}); expected "
                "redis://[:password@]host:port/db"
            ) from None
    return kind


def open_store(url: str) -> StateStore:
    """Open (and migrate) the store the URL names."""
    kind = store_kind(url)
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        from harness.stores.sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(url))
    if kind == "postgres":
        from harness.stores.postgres import PostgresStore

        return PostgresStore(url.replace("postgres://", "postgresql://", 1))
    from harness.stores.redis import RedisStore

    return RedisStore(url)
