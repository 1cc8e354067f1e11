"""The five runtime profiles: the same outcome everywhere except the documented differences."""

from __future__ import annotations

from typing import Any

import pytest

from harness.runtimes.base import RuntimeOptions
from harness.runtimes.profiles import PROFILES, UnknownRuntimeError, runtime_for
from harness.runtimes.run import run_agent
from harness.stores.memory import MemoryStore
from tests.support.agents import agent, call, finish, reset_ids, text
from tests.support.scripted import TestCompleter

ALL = ["js", "cloudflare-do", "cloudflare-workflows", "temporal", "dbos"]


def script() -> TestCompleter:
    reset_ids()
    return TestCompleter([call("search", {}), text("Paris."), finish({"answer": "x"}), finish()])


def override(config: Any, context: Any) -> dict[str, object] | None:
    if context.execution_phase == "forced_completion":
        return {"temperature": 0.0}
    return None


def test_the_profiles_are_the_seeds_five() -> None:
    assert sorted(PROFILES) == sorted(ALL)


@pytest.mark.parametrize("runtime", ALL)
def test_every_profile_gives_the_same_outcome(runtime: str) -> None:
    baseline = run_agent(agent(), script(), user_message="q", run_id="r", session_id="s")
    result = run_agent(
        agent(), script(), user_message="q", run_id="r", session_id="s", runtime=runtime
    )
    assert result.state.model_dump(exclude={"override_calls"}) == baseline.state.model_dump(
        exclude={"override_calls"}
    )
    assert result.status == "completed"
    assert result.state.forced_completion is not None
    assert result.state.forced_completion.attempts_used == 2


@pytest.mark.parametrize(
    ("runtime", "invoked"),
    [
        ("js", True),
        ("cloudflare-do", True),
        ("cloudflare-workflows", False),
        ("temporal", False),
        ("dbos", False),
    ],
)
def test_llm_config_override_runs_only_on_js_and_cloudflare_do(runtime: str, invoked: bool) -> None:
    result = run_agent(
        agent(), script(), user_message="q", runtime=runtime, llm_config_override=override
    )
    forced = result.requests("forced")
    if invoked:
        phases = [c.execution_phase for c in result.state.override_calls]
        assert phases == ["work", "work", "forced_completion", "forced_completion"]
        forced_call = result.state.override_calls[2]
        assert forced_call.forced_completion is not None
        assert forced_call.forced_completion.trigger == "terminal_text"
        assert all(r.temperature == 0.0 for r in forced)
    else:
        assert result.state.override_calls == ()
        assert all(r.temperature is None for r in forced)


def test_temporal_without_the_activity_fails_when_entering_forced_completion() -> None:
    options = RuntimeOptions(temporal_register_persist_forced_completion=False)
    result = run_agent(agent(), script(), user_message="q", runtime="temporal", options=options)
    assert result.status == "failed"
    assert result.error_code == "temporal_activity_not_registered"
    assert "Activity function persistForcedCompletion for workflow" in (
        result.state.error_message or ""
    )
    assert result.requests("forced") == [], "it fails the first time the phase is entered"
    assert result.state.forced_completion is None


def test_temporal_without_the_activity_is_fine_until_forced_completion() -> None:
    options = RuntimeOptions(temporal_register_persist_forced_completion=False)
    reset_ids()
    result = run_agent(
        agent(),
        TestCompleter([call("search", {}), finish()]),
        user_message="q",
        runtime="temporal",
        options=options,
    )
    assert result.status == "completed"


@pytest.mark.parametrize("runtime", ALL)
def test_every_profile_validates_finish_output(runtime: str) -> None:
    reset_ids()
    completer = TestCompleter([finish({"answer": 7}), finish()])
    result = run_agent(agent(), completer, user_message="q", runtime=runtime)
    assert result.output == {"answer": "Paris", "score": 3}
    assert len(completer.requests) == 2, "the invalid payload was rejected, not accepted"


def test_an_unknown_runtime_lists_the_profiles() -> None:
    with pytest.raises(UnknownRuntimeError, match="expected one of js, cloudflare-do"):
        runtime_for("lambda", MemoryStore())


def test_the_temporal_failure_is_persisted_as_failed() -> None:
    store = MemoryStore()
    options = RuntimeOptions(temporal_register_persist_forced_completion=False)
    result = run_agent(
        agent(),
        script(),
        user_message="q",
        runtime="temporal",
        options=options,
        store=store,
        run_id="t",
    )
    stored = store.load("t")
    assert stored is not None
    assert stored.status == "failed"
    assert result.chunks[-1].kind == "run_finish"
