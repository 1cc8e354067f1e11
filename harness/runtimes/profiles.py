"""The runtime profiles. Issue-5 scope: the in-process `js` runtime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from harness.agent.state import PERSISTENCE_POINTS
from harness.errors import HarnessError
from harness.runtimes.base import Fault, Runtime, RuntimeProfile
from harness.stores.base import StateStore


class UnknownRuntime(HarnessError, ValueError):
    code = "runtime_unknown"


JS: Final = RuntimeProfile(
    name="js",
    persists_at=frozenset(PERSISTENCE_POINTS),
    invokes_config_override=True,
    description="runtime-js: the in-process step loop; persists at every step boundary",
)

PROFILES: Final[Mapping[str, RuntimeProfile]] = {JS.name: JS}


def runtime_for(name: str, store: StateStore, faults: Sequence[Fault] = ()) -> Runtime:
    profile = PROFILES.get(name)
    if profile is None:
        raise UnknownRuntime(
            f"expected one of {', '.join(PROFILES)} but got runtime={name!r} "
            f"(type={type(name).__name__})"
        )
    return Runtime(profile=profile, store=store, faults=faults)
