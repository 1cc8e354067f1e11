"""Run-level invariants over generated agents, scripts, providers and runtime profiles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.agent.result import RunResult
from harness.agent.state import PERSISTENCE_POINTS
from harness.factories import AgentDefinitionFactory, MemoryFactory
from harness.invariants import (
    chunk_sequence_valid,
    crash_resume_equivalent,
    envelope_matches_result,
    forced_budget_respected,
    forced_requests_are_minimal,
    memory_extracted_once_at_terminal,
    outcome_record_round_trips,
    replay_reproduces_run,
    run_ends_validly,
    same_result_on_every_profile,
    work_requests_carry_everything,
    work_requests_unchanged,
)
from harness.llm.models import Message
from harness.llm.script import ScriptedReply
from harness.runtimes.run import run_agent
from harness.strategies import RUNTIMES, AgentRun, agent_runs

USER_MESSAGE = "What is the capital of France?"


def runs(**options: Any) -> st.SearchStrategy[AgentRun]:
    return agent_runs(**options)


def run(case: AgentRun, runtime: str = "js", **options: object) -> RunResult:
    with case.completer() as gateway:
        return run_agent(
            case.agent,
            gateway,
            user_message=USER_MESSAGE,
            runtime=runtime,
            **options,  # type: ignore[arg-type]
        )


@given(runs(), st.sampled_from(RUNTIMES))
def test_every_run_ends_validly(case: AgentRun, runtime: str) -> None:
    result = run(case, runtime)
    run_ends_validly(result)
    outcome_record_round_trips(result)
    envelope_matches_result(result)


@given(runs(), st.sampled_from(RUNTIMES))
def test_forced_budget_is_respected(case: AgentRun, runtime: str) -> None:
    forced_budget_respected(run(case, runtime))


@given(runs(budgets=st.just(0)))
def test_budget_zero_makes_no_forced_call(case: AgentRun) -> None:
    result = run(case)
    forced_budget_respected(result)
    assert result.requests("forced") == []


@given(runs())
def test_forced_requests_are_minimal_and_work_requests_complete(case: AgentRun) -> None:
    result = run(case)
    forced_requests_are_minimal(result)
    work_requests_carry_everything(result)


@given(runs(budgets=st.integers(1, 3)))
def test_the_budget_changes_no_work_call(case: AgentRun) -> None:
    baseline = run(case)
    unlimited = AgentRun(
        case.agent.model_copy(update={"max_completion_retries": 0}), case.provider, case.replies
    )
    work_requests_unchanged(run(unlimited), baseline)


@given(runs())
def test_chunk_sequences_are_valid(case: AgentRun) -> None:
    chunk_sequence_valid(run(case).chunks)


@given(runs())
def test_memory_is_extracted_once_at_the_terminal_outcome(case: AgentRun) -> None:
    calls: list[tuple[Message, ...]] = []
    result = run(case, extract_memories=calls.append)
    memory_extracted_once_at_terminal(result, extractor_calls=len(calls), extracted=calls)


@given(runs(max_steps=st.integers(1, 2), budgets=st.integers(0, 2)))
def test_same_result_on_every_profile(case: AgentRun) -> None:
    results = same_result_on_every_profile(case.agent, case.completer, user_message=USER_MESSAGE)
    assert set(results) == set(RUNTIMES)


@given(runs(max_steps=st.integers(1, 2), budgets=st.integers(0, 2)))
def test_crash_and_resume_at_every_persistence_point(case: AgentRun) -> None:
    checked = crash_resume_equivalent(case.agent, case.completer, user_message=USER_MESSAGE)
    assert checked >= 2  # run_started and run_finished at least


@given(runs(max_steps=st.integers(1, 2), budgets=st.integers(0, 2)))
def test_replay_reproduces_the_recorded_run(case: AgentRun) -> None:
    replay_reproduces_run(
        case.agent, case.replies, provider=case.provider, user_message=USER_MESSAGE
    )


# -- the invariants themselves catch broken runs -------------------------------------------------


def broken(result: RunResult, **update: object) -> RunResult:
    return RunResult(agent=result.agent, state=result.state.model_copy(update=update))


@pytest.fixture
def completed() -> RunResult:
    case = AgentRun(
        agent=AgentDefinitionFactory.build(max_completion_retries=2, max_steps=2, memory=None),
        provider="openai",
        replies=(ScriptedReply(text="Paris."), ScriptedReply(text="Paris."))
        + (
            ScriptedReply.model_validate(
                {"tool_calls": [{"name": "__finish__", "arguments": {"city": "Paris"}}]}
            ),
        )
        * 2,
    )
    result = run(case)
    assert result.status == "completed"
    return result


@pytest.mark.parametrize(
    ("check", "update", "message"),
    [
        (run_ends_validly, {"output": None}, "without structured output"),
        (run_ends_validly, {"output": {"town": 1}}, "fails the schema"),
        (run_ends_validly, {"status": "failed", "error_code": "boom"}, "error_code=boom"),
        (forced_budget_respected, {"forced_calls_returned": 3}, "budget is 2"),
        (memory_extracted_once_at_terminal, {"memory_extractions": 2}, "extracted 2 time"),
    ],
)
def test_invariants_reject_broken_runs(
    completed: RunResult,
    check: Callable[[RunResult], None],
    update: dict[str, object],
    message: str,
) -> None:
    with pytest.raises(AssertionError, match=message):
        check(broken(completed, **update))


def test_an_extraction_from_an_earlier_history_is_caught(completed: RunResult) -> None:
    assert completed.agent.memory is None
    with_memory = RunResult(
        agent=completed.agent.model_copy(update={"memory": MemoryFactory.build(memories=())}),
        state=completed.state.model_copy(update={"memory_extractions": 1}),
    )
    final = completed.state.messages
    memory_extracted_once_at_terminal(with_memory, extracted=[final])
    with pytest.raises(AssertionError, match="before the terminal outcome"):
        memory_extracted_once_at_terminal(with_memory, extracted=[final[:2]])


def test_a_provider_failure_must_leave_no_output_either() -> None:
    case = AgentRun(
        agent=AgentDefinitionFactory.build(max_completion_retries=1, max_steps=1, memory=None),
        provider="openai",
        replies=(ScriptedReply.model_validate({"error": {"status": 500, "body": "down"}}),),
    )
    failed = run(case)
    assert failed.state.error_code == "framework_llm_call_failed"
    run_ends_validly(failed)
    with pytest.raises(AssertionError, match="left output behind"):
        run_ends_validly(broken(failed, output={"city": "Paris"}))


def test_chunk_sequence_rejects_a_repeated_attempt(completed: RunResult) -> None:
    chunks = list(completed.chunks)
    forced = [i for i, c in enumerate(chunks) if getattr(c, "phase", None) == "attempt_started"]
    assert forced
    duplicated = chunks[: forced[0] + 1] + chunks[forced[0] :]
    with pytest.raises(AssertionError, match="attempt"):
        chunk_sequence_valid(duplicated)


def test_every_persistence_point_is_a_crash_point() -> None:
    assert len(PERSISTENCE_POINTS) == 6


def test_cut_off_forced_call_on_anthropic_stream() -> None:
    """Found by the properties: a forced __finish__ cut off mid-input must not stay in the
    history, or the next Anthropic request cannot be rendered."""
    agent = AgentDefinitionFactory.build(
        model="claude-sonnet-4-5",
        stream=True,
        max_steps=1,
        max_completion_retries=2,
        tools=(),
        skills=None,
        workspace=None,
        memory=None,
        output_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    cut_off = ScriptedReply.model_validate(
        {"tool_calls": [{"name": "__finish__", "arguments": '{"cit'}], "truncated": True}
    )
    case = AgentRun(agent, "anthropic", (ScriptedReply(text=""), cut_off, ScriptedReply(text="")))
    run_ends_validly(run(case))
