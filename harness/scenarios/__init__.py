"""Scenario files: load, plan a run (`plan_run`: one set of rules for `harness run`,
`run_scenarios` and the pytest plugin), run it (on the reference or on a target) and check what
must be true at the end of a run."""

from typing import TYPE_CHECKING

from harness.lazy import imported, on_first_use
from harness.scenarios.expect import Mismatch
from harness.scenarios.format import Expect, Scenario
from harness.scenarios.load import LoadedScenario, ScenarioFileError, load_scenarios
from harness.scenarios.project import configured_target
from harness.scenarios.run import Cell, CellResult, RunOptions, expand, run_cell, run_scenario

if TYPE_CHECKING:
    from harness.scenarios.on_target import (
        TargetRunner,
        TargetSpec,
        target_runner,
    )
    from harness.scenarios.plan import RunPlan, execute_plan, plan_run

# The target runner loads on first use: it brings the replay server (Starlette, uvicorn). The
# run plan does too: it brings the reports and the worker pool's module, which loading or running
# one scenario does not need.
__getattr__, __dir__ = on_first_use(
    __name__,
    imported(
        {
            **dict.fromkeys(
                ("TargetRunner", "TargetSpec", "target_runner"), f"{__name__}.on_target"
            ),
            **dict.fromkeys(("RunPlan", "execute_plan", "plan_run"), f"{__name__}.plan"),
        }
    ),
)


__all__ = [
    "Cell",
    "CellResult",
    "Expect",
    "LoadedScenario",
    "Mismatch",
    "RunOptions",
    "RunPlan",
    "Scenario",
    "ScenarioFileError",
    "TargetRunner",
    "TargetSpec",
    "configured_target",
    "execute_plan",
    "expand",
    "load_scenarios",
    "plan_run",
    "run_cell",
    "run_scenario",
    "target_runner",
]
