"""The in-memory store: a dict, with the same copy semantics as a durable store."""

from __future__ import annotations

from harness.stores.base import StoredRun


class MemoryStore:
    """Keeps runs in process; what is saved is a snapshot, never a live reference."""

    url = "memory://"

    def __init__(self) -> None:
        self._runs: dict[str, str] = {}

    def load(self, run_id: str) -> StoredRun | None:
        raw = self._runs.get(run_id)
        return None if raw is None else StoredRun.model_validate_json(raw)

    def save(self, run: StoredRun) -> None:
        self._runs[run.run_id] = run.model_dump_json()

    def delete(self, run_id: str) -> bool:
        return self._runs.pop(run_id, None) is not None

    def close(self) -> None:
        return None
