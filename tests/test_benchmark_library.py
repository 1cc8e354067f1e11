"""The scenario-library benchmark's own parts: its libraries pass, its plugin set is a user's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks._scenarios import RUNTIMES, SHAPES, Shape, scenario
from benchmarks.scenario_library import break_even, build_library, run_library, user_closure


@pytest.mark.parametrize("shape", SHAPES)
def test_both_libraries_of_each_shape_pass_and_cover_every_ending(
    shape: Shape, tmp_path: Path
) -> None:
    scripted, cassettes = build_library(tmp_path, 5, shape)
    run_library(scripted)  # raises SystemExit naming the cells that failed
    run_library(cassettes)
    endings = {
        (data["expect"]["status"], data["expect"].get("forced_calls"))
        for data in (yaml.safe_load(path.read_text()) for path in sorted(cassettes.glob("*.yaml")))
    }
    assert endings == {("completed", 0), ("completed", 1), ("failed", None)}
    assert len(list(cassettes.glob("*.json"))) == 5


def test_realistic_scenarios_carry_the_cassette_benchmarks_agent() -> None:
    data = scenario(3, "realistic")
    agent = data["agent"]
    assert len(agent["system_prompt"]) > 1_400
    assert [tool["name"] for tool in agent["tools"]] == [
        "lookup_order",
        "search_tickets",
        "issue_refund",
        "get_shipment_status",
        "escalate_to_human",
    ]
    assert data["runtimes"] == RUNTIMES
    assert scenario(3, "realistic") == data, "the same index gives the same scenario"
    assert scenario(4, "realistic")["agent"]["user_message"] != agent["user_message"]


def test_pytest_runs_with_the_plugins_a_user_of_harness_and_xdist_has() -> None:
    closure = user_closure()
    assert {"completion-harness", "pytest", "pytest-xdist", "hypothesis", "faker"} <= closure
    assert "respx" not in closure, "respx is a dev-group tool, not something users install"


def test_break_even_fits_both_modes_and_finds_the_size_that_reaches_the_target() -> None:
    # -n 0: 1 s + 10 ms/cell; -n 2: 2 s + 5 ms/cell -> 1.6x where 1 + 0.01n = 1.6 (2 + 0.005n)
    rows = [(1_000, 11.0, 7.0), (3_000, 31.0, 17.0)]
    line = break_even(rows)
    assert "-n 0 = 1.00 s + 10.00 ms/cell" in line
    assert "-n 2 = 2.00 s + 5.00 ms/cell" in line
    assert "1.6x from about 1,100 cells (220 scenarios)" in line
    never = break_even([(1_000, 11.0, 9.0), (3_000, 31.0, 25.0)])
    assert never.endswith("-n 2 never reaches 1.6x on this machine")
