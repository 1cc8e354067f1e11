"""The store interface: what a runtime persists at each persistence point.

A store holds, per run, the run state as JSON and, in a field of its own, the forced-completion
state (`forced_completion`: a nullable JSON column in SQL stores, a `forcedCompletion` hash field
in Redis). Stores know nothing of agents: they keep what they are given.
"""

from __future__ import annotations

from typing import Final, Literal, Protocol, get_args

from harness.protocol._base import WireModel
from harness.protocol.forced import ForcedCompletionState

StoreKind = Literal["memory", "sqlite", "postgres", "redis"]
"""The stores the harness ships; a store URL's scheme names one (`harness.stores.urls`)."""
STORE_KINDS: Final[tuple[StoreKind, ...]] = get_args(StoreKind)


class StoredRun(WireModel):
    """One run as a store keeps it."""

    run_id: str
    status: str
    state_json: str
    forced_completion: ForcedCompletionState | None = None


class StateStore(Protocol):
    """Load, save and delete runs; `save` replaces the run atomically."""

    def load(self, run_id: str) -> StoredRun | None: ...

    def save(self, run: StoredRun) -> None: ...

    def delete(self, run_id: str) -> bool:
        """Remove the run; True if it was stored. Other runs are untouched."""
        ...

    def close(self) -> None: ...
