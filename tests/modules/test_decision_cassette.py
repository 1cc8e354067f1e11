"""The example of the Agent Decision module's contract end to end: real gateway, real adapter,
a committed cassette."""

from __future__ import annotations

from pathlib import Path

from harness.cassettes import Cassette, CassetteTransport
from tests.support.recordings import (
    DECISION_SEED_CASSETTE,
    SEED_STATE,
    decision_module,
    record_decision_seed,
)

EXPECTED_DECISION = {
    "outcome": "TOOL_CALLS",
    "toolCalls": [
        {
            "id": "call_inspect_release42",
            "name": "workflow.execution.inspect",
            "arguments": {"executionId": "release-42"},
        }
    ],
}


def test_the_seed_example_replays_from_its_cassette() -> None:
    transport = CassetteTransport(DECISION_SEED_CASSETTE, strict=True)
    try:
        outputs = decision_module(transport, "https://api.openai.com").execute(SEED_STATE)
    finally:
        transport.close()
    assert outputs["agentDecisionOutcome"] == "tool_calls"
    assert outputs["agentDecision"] == EXPECTED_DECISION
    assert outputs["costTokens"] == 128
    assert outputs["costCredits"] == 0
    assert outputs["agentApprovalGranted"] is False
    assert "agentRetrievalEvidence" not in outputs


def test_the_committed_cassette_is_what_the_harness_records_today(tmp_path: Path) -> None:
    fresh = tmp_path / "contract-example.json"
    outputs = record_decision_seed(fresh)
    assert outputs["agentDecision"] == EXPECTED_DECISION
    committed = Cassette.load(DECISION_SEED_CASSETTE).interactions
    recorded = Cassette.load(fresh).interactions
    assert [i.digest for i in recorded] == [i.digest for i in committed], (
        "the decision request changed: re-record with `python -m tests.support.recordings`"
    )
