"""Expectation keys that guard against scenarios that cannot fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenarios import RunOptions, ScenarioFileError, load_scenarios, run_scenario

BASE = """\
name: s
stores: [memory]
script:
  - text: Paris.
  - tool_calls: [{name: __finish__, arguments: {city: Paris}}]
agent:
  output_schema: {type: object, properties: {city: {type: string}}, required: [city]}
"""


def run(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    results = run_scenario(load_scenarios([path])[0], RunOptions(workdir=tmp_path))
    return [m.key for r in results for m in r.mismatches] + [
        r.error or "" for r in results if r.error
    ]


def test_exact_chunk_phases_and_attempt_budgets(tmp_path: Path) -> None:
    good = BASE + (
        "expect:\n  chunk_phases: [started, attempt_started, succeeded]\n"
        "  chunks: [{phase: started, max_attempts: 2}]\n"
    )
    assert run(tmp_path, good) == []
    bad = (
        BASE
        + "expect:\n  chunk_phases: [started, succeeded]\n  chunks: [{phase: started, max_attempts: 3}]\n"
    )
    assert run(tmp_path, bad) == ["chunks", "chunk_phases"]


def test_crashes_are_counted_and_a_fault_that_cannot_fire_is_an_error(tmp_path: Path) -> None:
    crashed = (
        BASE + "faults: [{crash_after: forced_entered}]\nexpect: {crashes: 1, status: completed}\n"
    )
    assert run(tmp_path, crashed) == []
    unreachable = (
        BASE
        + "faults: [{crash_after: forced_entered, occurrence: 2}]\nexpect: {status: completed}\n"
    )
    (error,) = run(tmp_path, unreachable)
    assert "FaultNotReachedError" in error
    assert "crash_after forced_entered occurrence 2 (reached 1x)" in error


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + "expect: {outputs: {}}\n", "outputs do not apply to a agent scenario"),
        (BASE + "expect: {error_type: X}\n", "error_type do not apply"),
        (
            "name: c\nkind: completion\ninput: {agentFinalAnswer: x}\nexpect: {forced_calls: 0}\n",
            "forced_calls do not apply to a completion scenario",
        ),
    ],
)
def test_expect_keys_that_do_not_apply_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioFileError, match=message):
        load_scenarios([path])


DECISION = """\
name: d
kind: decision
provider: openai
models:
  - {id: 00000000-0000-4000-8000-000000000009, name: claude, provider: anthropic, model: claude-sonnet-4-5}
config: {modelSelection: first-visible}
input: {agentTask: Verify the release}
script:
  - text: Verified.
expect:
  status: completed
  outputs: {}
"""


def test_a_decision_script_speaks_the_selected_models_wire(tmp_path: Path) -> None:
    assert run(tmp_path, DECISION) == ["outputs"], "the run succeeded; only the outputs differ"


def test_an_openai_refusal_is_a_refusal(tmp_path: Path) -> None:
    text = DECISION.replace(
        "provider: anthropic, model: claude-sonnet-4-5", "provider: openai, model: gpt-4o"
    )
    text = text.replace(
        "  - text: Verified.", "  - {text: I cannot help with that., stop: refusal}"
    )
    text = text.replace(
        "  status: completed\n  outputs: {}\n",
        "  status: failed\n  error_type: AgentDecisionProtocolException\n",
    )
    assert run(tmp_path, text) == []


STORE_CHECK = """\
name: drift
kind: store_check
store_check: {{schema_version: {version}}}
expect:
  status: {status}
  differences: [{difference}]
"""


@pytest.mark.parametrize(
    ("version", "status", "difference", "mismatches"),
    [
        (2, "failed", "forced_completion", []),
        (2, "completed", "forced_completion", ["status"]),
        (3, "failed", "forced_completion", ["status", "differences"]),
    ],
)
def test_store_check_scenarios(
    tmp_path: Path, version: int, status: str, difference: str, mismatches: list[str]
) -> None:
    text = STORE_CHECK.format(version=version, status=status, difference=difference)
    assert run(tmp_path, text) == mismatches


def test_store_check_needs_its_block(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: x\nkind: store_check\n", encoding="utf-8")
    with pytest.raises(ScenarioFileError, match="needs a 'store_check' block"):
        load_scenarios([path])
