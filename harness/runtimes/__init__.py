"""Runtime profiles: where a run persists, and what each real runtime does differently."""

from harness.runtimes.base import Runtime, RuntimeProfile, SimulatedCrashError
from harness.runtimes.profiles import PROFILES, runtime_for

__all__ = ["PROFILES", "Runtime", "RuntimeProfile", "SimulatedCrashError", "runtime_for"]
