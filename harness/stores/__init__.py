"""Durable run-state stores: memory, SQLite, PostgreSQL, Redis."""

from harness.stores.base import StateStore, StoredRun
from harness.stores.memory import MemoryStore

__all__ = ["MemoryStore", "StateStore", "StoredRun"]
