"""Stores under test: memory, SQLite, and real PostgreSQL and Redis servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.stores.base import StateStore
from harness.stores.urls import open_store
from tests.support.stores import STORE_KINDS, fresh_postgres_database


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
