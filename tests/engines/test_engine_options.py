"""`--engine` and its options are checked before anything runs, named as each face spells them;
no engine is started here."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import AgentDefinition, LlmGateway, run_agent
from harness.cli import main
from harness.engines.settings import EngineSettings, EngineUnknownError, engine_of
from harness.scenarios.plan import RunPlanError, plan_run

LIBRARY = Path(__file__).parents[2] / "scenarios"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"engine": "turbo"}, "expected engine to be one of simulated, real but got 'turbo'"),
        ({"temporal_address": "127.0.0.1:7233"}, "temporal_address goes with engine real"),
        ({"engine_workers": 3}, "engine_workers goes with engine real"),
        (
            {"engine": "real", "temporal_address": "no-port"},
            "expected a Temporal address as HOST:PORT, such as 127.0.0.1:7233, but got "
            "temporal_address 'no-port'",
        ),
        ({"engine": "real", "engine_workers": 0}, "at least 1 but got engine_workers 0"),
        (
            {"engine": "real", "target": "harness.scenarios.reference:run"},
            "engine real runs the reference on Temporal and DBOS; a target runs on its own",
        ),
    ],
)
def test_engine_options_are_refused_before_anything_runs(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(RunPlanError) as raised:
        plan_run([LIBRARY], load=False, **options)  # type: ignore[arg-type]
    assert message in str(raised.value)


def test_the_command_line_names_its_own_options() -> None:
    result = CliRunner().invoke(main, ["run", str(LIBRARY), "--temporal-address", "127.0.0.1:7233"])
    assert result.exit_code == 2
    assert "--temporal-address goes with --engine real, not simulated" in result.output
    result = CliRunner().invoke(main, ["run", str(LIBRARY), "--engine", "turbo"])
    assert result.exit_code == 2
    assert "'turbo' is not one of 'simulated', 'real'" in result.output


def test_only_temporal_and_dbos_have_a_real_engine() -> None:
    assert [engine_of("real", r) for r in ("temporal", "dbos", "js", "cloudflare-do")] == [
        "real",
        "real",
        "simulated",
        "simulated",
    ]
    assert engine_of("simulated", "temporal") == "simulated"


def test_run_agent_on_a_profile_without_a_real_engine_runs_simulated_and_says_so() -> None:
    gateway = LlmGateway.scripted("openai", [{"text": "Paris."}])
    result = run_agent(
        AgentDefinition(system_prompt="Say it."), gateway, user_message="?", engine="real"
    )
    assert (result.status, result.engine) == ("completed", "simulated")
    with pytest.raises(EngineUnknownError, match="expected one of simulated, real"):
        run_agent(AgentDefinition(), gateway, user_message="?", engine="warp")


def test_engine_settings_refuse_what_cannot_be_used() -> None:
    with pytest.raises(EngineUnknownError, match="at least 1 but got workers=0"):
        EngineSettings(workers=0)
    with pytest.raises(EngineUnknownError, match="as HOST:PORT"):
        EngineSettings(temporal_address="localhost:99999")
