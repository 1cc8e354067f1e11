"""`harness fuzz --engine real`: the reference runs the generated agent cells on DBOS itself
(a SQLite system database, worker processes a crash point kills), so a target is compared with
what the engine does, crash points and cancellations included."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.engines.run import close_engines
from harness.fuzz import FuzzOptionError, fuzz
from harness.scenarios.load import load_file
from harness.scenarios.on_target import TargetSpec
from harness.targets import REFERENCE_TARGET

pytestmark = [pytest.mark.subprocess, pytest.mark.engine, pytest.mark.xdist_group("dbos")]

FORGETS_ITS_CRASHES = "tests.support.fuzz_mutants:forgets_its_crashes"


@pytest.fixture(autouse=True)
def _engines_stopped() -> object:
    yield
    close_engines()


def test_a_runtime_that_forgets_its_crashes_differs_from_the_engine(tmp_path: Path) -> None:
    outcome = fuzz(
        TargetSpec(callable=FORGETS_ITS_CRASHES),
        runtime="dbos",
        engine="real",
        cells=20,
        out=tmp_path,
        kinds=["agent"],
        shrink=False,
    )
    finding = outcome.finding
    assert finding is not None, f"no difference in {outcome.cells_run} cells"
    assert any(line.startswith("answer.counters.crashes: ") for line in finding.differences)
    (loaded,) = load_file(finding.path)
    scenario = loaded.scenario
    assert scenario.runtimes == ["dbos"]
    assert scenario.faults, "the cell that differs crashes the run"
    assert scenario.expect.crashes == len(scenario.faults)  # every generated crash point fires
    assert finding.caught_by_expect  # expect.crashes reaches it


def test_the_reference_on_the_simulated_loop_agrees_with_dbos(tmp_path: Path) -> None:
    outcome = fuzz(
        TargetSpec(callable=REFERENCE_TARGET),
        runtime="dbos",
        engine="real",
        cells=6,
        out=tmp_path,
        kinds=["agent"],
    )
    assert outcome.finding is None, outcome.finding and outcome.finding.differences
    assert outcome.cells_run == 6


@pytest.mark.parametrize(
    ("arguments", "refusal"),
    [
        (
            ["--engine", "real"],
            "--engine real runs the reference's agent cells on Temporal or DBOS",
        ),
        (["--engine", "real", "--runtime", "js"], "give --runtime temporal or --runtime dbos"),
    ],
)
def test_the_real_engine_needs_a_runtime_that_has_one(
    arguments: list[str], refusal: str, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        main, ["fuzz", "--target", REFERENCE_TARGET, *arguments, "--out", str(tmp_path)]
    )
    assert result.exit_code == 2, result.output
    assert refusal in result.output
    with pytest.raises(FuzzOptionError, match="expected --engine simulated or real"):
        fuzz(TargetSpec(callable=REFERENCE_TARGET), engine="quantum", out=tmp_path)
