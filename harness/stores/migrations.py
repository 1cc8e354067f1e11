"""Versioned schema migrations for the SQL stores, applied automatically on start-up.

Each migration is additive. Version 3 adds the nullable `forced_completion` column that persists
`ForcedCompletionState`; a database created at version 2 upgrades in place, its rows intact and
their `forced_completion` null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Dialect = Literal["sqlite", "postgres"]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sqlite: str
    postgres: str

    def sql(self, dialect: Dialect) -> str:
        return self.sqlite if dialect == "sqlite" else self.postgres


MIGRATIONS_TABLE: Final = "harness_schema_migrations"
RUNS_TABLE: Final = "harness_runs"

MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(
        1,
        "create_runs",
        sqlite=(
            f"CREATE TABLE {RUNS_TABLE} ("
            "run_id TEXT PRIMARY KEY, status TEXT NOT NULL, state_json TEXT NOT NULL, "
            "created_at TEXT NOT NULL, updated_at TEXT NOT NULL)"
        ),
        postgres=(
            f"CREATE TABLE {RUNS_TABLE} ("
            "run_id TEXT PRIMARY KEY, status TEXT NOT NULL, state_json JSONB NOT NULL, "
            "created_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
            "updated_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        ),
    ),
    Migration(
        2,
        "add_interrupt_context",
        sqlite=f"ALTER TABLE {RUNS_TABLE} ADD COLUMN interrupt_context TEXT",
        postgres=f"ALTER TABLE {RUNS_TABLE} ADD COLUMN interrupt_context JSONB",
    ),
    Migration(
        3,
        "add_forced_completion",
        sqlite=f"ALTER TABLE {RUNS_TABLE} ADD COLUMN forced_completion TEXT",
        postgres=f"ALTER TABLE {RUNS_TABLE} ADD COLUMN forced_completion JSONB",
    ),
)
LATEST_VERSION: Final = MIGRATIONS[-1].version

EXPECTED_COLUMNS: Final[dict[str, tuple[str, bool]]] = {
    "run_id": ("text", False),
    "status": ("text", False),
    "state_json": ("json", False),
    "created_at": ("timestamp", False),
    "updated_at": ("timestamp", False),
    "interrupt_context": ("json", True),
    "forced_completion": ("json", True),
}
"""Column -> (kind, nullable) at the latest version, for schema-drift checks."""


def pending(applied: set[int], target: int = LATEST_VERSION) -> list[Migration]:
    """The migrations still to apply, in order, up to `target`."""
    return [m for m in MIGRATIONS if m.version not in applied and m.version <= target]
