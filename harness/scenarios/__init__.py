"""Scenario files: load, run and check what must be true at the end of a run."""

from harness.scenarios.format import CompletionScenario, Scenario
from harness.scenarios.load import ScenarioFileError, load_scenarios
from harness.scenarios.run import CellResult, Mismatch, run_scenario

__all__ = [
    "CellResult",
    "CompletionScenario",
    "Mismatch",
    "Scenario",
    "ScenarioFileError",
    "load_scenarios",
    "run_scenario",
]
