"""Scenario files: load, run (on the reference or on a target) and check what must be true at
the end of a run."""

from typing import TYPE_CHECKING

from harness.lazy import imported, on_first_use
from harness.scenarios.expect import Mismatch
from harness.scenarios.format import Expect, Scenario
from harness.scenarios.load import LoadedScenario, ScenarioFileError, load_scenarios
from harness.scenarios.project import configured_target
from harness.scenarios.run import Cell, CellResult, RunOptions, expand, run_cell, run_scenario

if TYPE_CHECKING:
    from harness.scenarios.targets import (
        TargetRunner,
        TargetSpec,
        target_runner,
    )

# The target runner loads on first use: it brings the replay server (Starlette, uvicorn).
__getattr__, __dir__ = on_first_use(
    __name__,
    imported(dict.fromkeys(("TargetRunner", "TargetSpec", "target_runner"), f"{__name__}.targets")),
)


__all__ = [
    "Cell",
    "CellResult",
    "Expect",
    "LoadedScenario",
    "Mismatch",
    "RunOptions",
    "Scenario",
    "ScenarioFileError",
    "TargetRunner",
    "TargetSpec",
    "configured_target",
    "expand",
    "load_scenarios",
    "run_cell",
    "run_scenario",
    "target_runner",
]
