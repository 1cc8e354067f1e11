"""The Redis store: one hash per run; `forcedCompletion` is a hash field (schemaless)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

import redis

from harness.protocol.forced import ForcedCompletionState
from harness.stores.base import StoredRun
from harness.stores.timeouts import StoreTimeouts

KEY_PREFIX: Final = "harness:run:"
SCHEMA_KEY: Final = "harness:schema"
SCHEMA_VERSION: Final = "1"
FIELDS: Final = ("status", "stateJson", "forcedCompletion", "updatedAt")
"""The hash fields a run may have; `forcedCompletion` is absent while null."""


class RedisStore:
    """Runs in Redis hashes; a save replaces the run's fields in one transaction."""

    def __init__(
        self, url: str, *, migrate: bool = True, timeouts: StoreTimeouts | None = None
    ) -> None:
        """Connect and mark the schema; with `migrate=False` nothing is written.

        Connecting and every command are bounded by `timeouts` (default: from the environment,
        `StoreTimeouts.from_environment()`); `socket_connect_timeout=` / `socket_timeout=` in the
        URL's query win.
        """
        self.url = url
        bounds = timeouts or StoreTimeouts.from_environment()
        self._client = redis.Redis.from_url(  # the URL's own query values win
            url,
            decode_responses=True,
            socket_connect_timeout=bounds.connect_seconds,
            socket_timeout=bounds.statement_seconds,
        )
        if migrate:
            self._client.set(SCHEMA_KEY, SCHEMA_VERSION)

    def schema_version(self) -> str | None:
        value = self._client.get(SCHEMA_KEY)
        return None if value is None else str(value)

    def fields(self, run_id: str) -> list[str]:
        return sorted(str(name) for name in self._client.hkeys(KEY_PREFIX + run_id))

    def run_ids(self, limit: int | None = None) -> list[str]:
        """The ids of stored runs (at most `limit`), found with SCAN, never KEYS."""
        found: list[str] = []
        for key in self._client.scan_iter(match=KEY_PREFIX + "*", count=500):
            found.append(str(key).removeprefix(KEY_PREFIX))
            if limit is not None and len(found) >= limit:
                break
        return sorted(found)

    def key_type(self, run_id: str) -> str:
        """The Redis type of a run's key (`hash` for every run this store wrote)."""
        return str(self._client.type(KEY_PREFIX + run_id))

    def load(self, run_id: str) -> StoredRun | None:
        data = self._client.hgetall(KEY_PREFIX + run_id)
        if not data:
            return None
        raw_forced = data.get("forcedCompletion")
        forced = (
            None if raw_forced is None else ForcedCompletionState.model_validate_json(raw_forced)
        )
        return StoredRun(
            run_id=run_id,
            status=str(data["status"]),
            state_json=str(data["stateJson"]),
            forced_completion=forced,
        )

    def save(self, run: StoredRun) -> None:
        key = KEY_PREFIX + run.run_id
        mapping: dict[str | bytes, str | bytes] = {
            "status": run.status,
            "stateJson": run.state_json,
            "updatedAt": datetime.now(UTC).isoformat(),
        }
        pipeline = self._client.pipeline(transaction=True)
        if run.forced_completion is None:
            pipeline.hdel(key, "forcedCompletion")
        else:
            mapping["forcedCompletion"] = run.forced_completion.model_dump_json()
        pipeline.hset(key, mapping=mapping)  # type: ignore[arg-type]
        pipeline.execute()

    def delete(self, run_id: str) -> bool:
        return bool(self._client.delete(KEY_PREFIX + run_id))

    def close(self) -> None:
        self._client.close()
