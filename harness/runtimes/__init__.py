"""Runtime profiles: where a run persists, and what each real runtime does differently."""

from harness.runtimes.base import Runtime, RuntimeProfile, SimulatedCrash, SimulatedCrashError
from harness.runtimes.profiles import PROFILES, runtime_for

__all__ = [
    "PROFILES",
    "Runtime",
    "RuntimeProfile",
    "SimulatedCrash",  # the earlier name of SimulatedCrashError, kept until 1.0
    "SimulatedCrashError",
    "runtime_for",
]
