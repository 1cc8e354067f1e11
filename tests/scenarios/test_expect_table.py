"""`check_observation` is one table: every `expect:` key of an agent run has exactly one checker,
mismatches come in the table's order, and a key whose counter the run did not report is skipped
(never passed)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.protocol.forced import ForcedCompletionState
from harness.scenarios.expect import AGENT_CHECKS, AgentObservation, Mismatch, check_observation
from harness.scenarios.format import Expect, _keys_not_applicable


def _observation(**changes: Any) -> AgentObservation:
    fields: dict[str, Any] = {
        "status": "completed",
        "error_code": None,
        "error_message": None,
        "output": {"city": "Paris"},
        "output_schema": {"type": "object"},
        "chunks": [],
        "outcome_record": {"stop_reason": "end_turn"},
        "envelope": {"response": "Paris"},
        "requests": {"work": [], "forced": []},
        "memory_extractions": 0,
        "override_calls": [],
        "crashes": 0,
        "forced_state": None,
    }
    return AgentObservation(**(fields | changes))


def _setting(key: str) -> Expect:
    """An `expect:` block that gives `key` a value (any value: only its presence is read)."""
    values: dict[str, Any] = {key: 1}
    return Expect.model_construct(**values)


def test_every_agent_expect_key_has_one_checker() -> None:
    agent_keys = {
        key for key in Expect.model_fields if not _keys_not_applicable(_setting(key), "agent")
    }
    assert set(AGENT_CHECKS) == agent_keys - {"downstream"}  # checked on the workflow's result


def test_mismatches_come_in_the_tables_order() -> None:
    expect = Expect(envelope={"response": "Rome"}, status="failed", output={"city": "Rome"})
    mismatches, skipped = check_observation(expect, _observation())
    assert mismatches == [
        Mismatch("status", "failed", "completed"),
        Mismatch("output", {"city": "Rome"}, {"city": "Paris"}),
        Mismatch("envelope", {"response": "Rome"}, {"response": "Paris"}),
    ]
    assert skipped == []


def test_an_unreported_counter_is_skipped_with_its_reason() -> None:
    expect = Expect(crashes=1, memory_extractions=2, store_absent=True)
    run = _observation(crashes=None, memory_extractions=None, forced_state_reported=False)
    mismatches, skipped = check_observation(expect, run)
    assert mismatches == []
    assert skipped == [
        "expect.memory_extractions: the target does not report it (counters)",
        "expect.crashes: the target does not report it (counters)",
        "expect.store_absent: the target does not report forced_state (counters)",
    ]


@pytest.mark.parametrize(
    ("expect", "mismatch"),
    [
        (Expect(store_absent=True), Mismatch("store_absent", True, False)),
        (
            Expect(store={"attemptsUsed": 2}),
            Mismatch(
                "store",
                {"attemptsUsed": 2},
                {
                    "trigger": "max_steps",
                    "attemptsUsed": 1,
                    "maxAttempts": 2,
                    "status": "active",
                    "lastFailureCode": None,
                    "enteredAtStep": 0,
                },
            ),
        ),
        (Expect(llm_config_override_calls=1), Mismatch("llm_config_override_calls", 1, 0)),
        (Expect(output_valid=False), Mismatch("output_valid", False, True)),
        (Expect(error_message="boom"), Mismatch("error_message", "boom", None)),
    ],
)
def test_each_checker_reports_what_it_found(expect: Expect, mismatch: Mismatch) -> None:
    stored = ForcedCompletionState(trigger="max_steps", max_attempts=2, attempts_used=1)
    mismatches, _ = check_observation(expect, _observation(forced_state=stored))
    assert mismatches == [mismatch]


def test_a_key_set_to_null_checks_nothing_where_null_means_unset() -> None:
    expect = Expect.model_validate({"crashes": None, "chunks": None, "work_request": None})
    assert check_observation(expect, _observation(crashes=3)) == ([], [])
