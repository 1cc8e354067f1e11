"""Stores under test: memory, SQLite, and real PostgreSQL and Redis servers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from harness.stores.base import StateStore
from harness.stores.urls import open_store

STORE_KINDS = ["memory", "sqlite", "postgres", "redis"]


def fresh_postgres_database(server_url: str) -> str:
    """A new, empty database on the session's server (tests never share tables)."""
    name = f"harness_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"'.encode())
    return server_url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=STORE_KINDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    kind = request.param
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.sqlite3'}"
    request.applymarker(pytest.mark.server)
    if kind == "postgres":
        return fresh_postgres_database(request.getfixturevalue("postgres_url"))
    base: str = request.getfixturevalue("redis_url")
    return base


@pytest.fixture
def store(store_url: str) -> Iterator[StateStore]:
    opened = open_store(store_url)
    yield opened
    opened.close()
