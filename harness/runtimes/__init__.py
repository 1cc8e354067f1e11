"""Runtime profiles: where a run persists, and what each real runtime does differently."""

from harness.runtimes.base import Runtime, RuntimeProfile, SimulatedCrash
from harness.runtimes.profiles import PROFILES, runtime_for

__all__ = ["PROFILES", "Runtime", "RuntimeProfile", "SimulatedCrash", "runtime_for"]
