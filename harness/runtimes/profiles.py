"""The five runtime profiles, and the differences their documentation states.

Every profile persists at every persistence point (the forced-completion state is persisted
before each forced call on all of them) and validates `__finish__` output against the schema
(DBOS too, since the fix the forced-completion migration guide documents). They differ where
the guide says they do:

- `llm_config_override` is invoked (with the execution phase and the forced-completion state)
  only on `js` and `cloudflare-do`, which delegates its step loop to the JS iterator;
  `cloudflare-workflows`, `temporal` and `dbos` never invoke it;
- `temporal` persists the forced-completion state through the `persistForcedCompletion`
  activity: a worker that registers activities explicitly without it fails with "activity not
  registered" the first time a run enters forced completion, and only then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from harness.agent.state import PERSISTENCE_POINTS
from harness.errors import HarnessError
from harness.runtimes.base import (
    RUNTIME_NAMES,
    Fault,
    Runtime,
    RuntimeName,
    RuntimeOptions,
    RuntimeProfile,
)
from harness.stores.base import StateStore


class UnknownRuntimeError(HarnessError, ValueError):
    """Raised when a runtime profile name is unknown (`run_agent(runtime=...)`, `runtime_for`); the
    message lists the profiles."""

    code = "runtime_unknown"


_EVERY_POINT: Final = frozenset(PERSISTENCE_POINTS)

JS: Final = RuntimeProfile(
    name="js",
    persists_at=_EVERY_POINT,
    invokes_config_override=True,
    description="runtime-js: the in-process step loop; persists to its state store at every step",
)
CLOUDFLARE_DO: Final = RuntimeProfile(
    name="cloudflare-do",
    persists_at=_EVERY_POINT,
    invokes_config_override=True,
    description="Cloudflare Durable Object: delegates its step loop to the JS iterator; "
    "persists to Durable Object storage",
)
CLOUDFLARE_WORKFLOWS: Final = RuntimeProfile(
    name="cloudflare-workflows",
    persists_at=_EVERY_POINT,
    invokes_config_override=False,
    description="Cloudflare Workflows: each unit is a durable step.do; llm_config_override is "
    "not invoked",
)
TEMPORAL: Final = RuntimeProfile(
    name="temporal",
    persists_at=_EVERY_POINT,
    invokes_config_override=False,
    needs_forced_completion_activity=True,
    description="Temporal: units are activities; the forced-completion state is persisted by "
    "the persistForcedCompletion activity; llm_config_override is not invoked",
)
DBOS: Final = RuntimeProfile(
    name="dbos",
    persists_at=_EVERY_POINT,
    invokes_config_override=False,
    description="DBOS: units are checkpointed workflow steps; __finish__ output is validated "
    "against the live output schema; llm_config_override is not invoked",
)

_BY_NAME: Final[Mapping[str, RuntimeProfile]] = {
    profile.name: profile for profile in (JS, CLOUDFLARE_DO, CLOUDFLARE_WORKFLOWS, TEMPORAL, DBOS)
}
PROFILES: Final[Mapping[RuntimeName, RuntimeProfile]] = {
    name: _BY_NAME[name] for name in RUNTIME_NAMES
}
"""Every runtime's profile, in `RuntimeName` order (a name without a profile fails at import)."""


def runtime_for(
    name: str,
    store: StateStore,
    faults: Sequence[Fault] = (),
    options: RuntimeOptions | None = None,
) -> Runtime:
    """The runtime of profile `name` over `store`; an unknown name lists the profiles."""
    profile = _BY_NAME.get(name)
    if profile is None:
        raise UnknownRuntimeError(
            f"expected one of {', '.join(PROFILES)} but got runtime={name!r} "
            f"(type={type(name).__name__})"
        )
    return Runtime(profile=profile, store=store, faults=faults, options=options or RuntimeOptions())


UnknownRuntime = UnknownRuntimeError
"""The earlier name of `UnknownRuntimeError`, deprecated: kept until 1.0."""
