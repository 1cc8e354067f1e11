"""Scenario files: load, run and check what must be true at the end of a run."""

from harness.scenarios.expect import Mismatch
from harness.scenarios.format import Expect, Scenario
from harness.scenarios.load import LoadedScenario, ScenarioFileError, load_scenarios
from harness.scenarios.run import Cell, CellResult, RunOptions, expand, run_cell, run_scenario

__all__ = [
    "Cell",
    "CellResult",
    "Expect",
    "LoadedScenario",
    "Mismatch",
    "RunOptions",
    "Scenario",
    "ScenarioFileError",
    "expand",
    "load_scenarios",
    "run_cell",
    "run_scenario",
]
