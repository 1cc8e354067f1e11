"""Stores for tests: the kinds every store test runs on, and fresh PostgreSQL databases."""

from __future__ import annotations

import uuid

import psycopg

STORE_KINDS = ["memory", "sqlite", "postgres", "redis"]


def fresh_postgres_database(server_url: str) -> str:
    """A new, empty database on the session's server (tests never share tables)."""
    name = f"harness_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"'.encode())
    return server_url.rsplit("/", 1)[0] + f"/{name}"
