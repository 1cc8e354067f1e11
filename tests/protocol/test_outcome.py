"""The agent-outcome record: every test of `agent_outcome.rs`, ported, plus the decode boundary."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from harness import AgentOutcome, HarnessError, Payload, StopKind
from harness.errors import EmptySessionIdError
from harness.protocol import CANONICAL_STOP_REASONS, ContentType


def test_every_stop_kind_has_its_canonical_snake_case_spelling() -> None:
    cases: list[tuple[StopKind, str]] = [
        (StopKind.EndTurn(), "end_turn"),
        (StopKind.ToolUse(), "tool_use"),
        (StopKind.LimitReached(), "limit_reached"),
        (StopKind.Cancelled(), "cancelled"),
        (StopKind.Error(message="boom"), "error"),
        (StopKind.Other(reason="teleported"), "other"),
    ]
    for kind, expected in cases:
        assert kind.canonical_stop_reason() == expected
    assert {expected for _, expected in cases} == set(CANONICAL_STOP_REASONS)


def test_the_record_serializes_as_the_four_snake_case_fields() -> None:
    outcome = AgentOutcome.new("narration\nthe answer", "the answer", StopKind.EndTurn(), "sess-7")
    assert json.loads(outcome.into_payload().bytes) == {
        "text": "narration\nthe answer",
        "final_message": "the answer",
        "stop_reason": "end_turn",
        "session_id": "sess-7",
    }
    assert outcome.model_dump() == json.loads(outcome.into_payload().bytes)


def test_the_record_round_trips_through_its_payload() -> None:
    outcome = AgentOutcome.new("", "", StopKind.EndTurn(), "sess-7")
    payload = outcome.into_payload()
    assert payload.content_type == ContentType.JSON
    assert payload.content_type == "application/json"
    decoded = AgentOutcome.model_validate_json(payload.bytes)
    assert decoded == outcome
    assert decoded.text == "", "an empty text on a completed run is honest and survives the wire"
    assert decoded.final_message == "", "an empty final_message survives the wire"
    assert AgentOutcome.from_payload(payload) == outcome


def test_an_empty_session_id_is_refused_by_name() -> None:
    record = AgentOutcome.new("the answer", "the answer", StopKind.EndTurn(), "")
    with pytest.raises(EmptySessionIdError) as caught:
        record.into_payload()
    assert "session_id" in str(caught.value)
    assert str(caught.value) == (  # the Rust definition's #[error] text, continuation lines joined
        "the agent-outcome record's mandatory `session_id` is empty \u2014 every harness fills it "
        "with the handle of the conversation that produced this outcome, and an empty handle "
        "names no conversation"
    )
    assert isinstance(caught.value, HarnessError)
    assert caught.value.code == "agent_outcome_empty_session_id"


def test_a_three_field_payload_no_longer_decodes() -> None:
    stale = {"text": "the answer", "stop_reason": "end_turn", "session_id": "sess-7"}
    with pytest.raises(ValidationError, match="final_message"):
        AgentOutcome.model_validate(stale)


@pytest.mark.parametrize("missing", ["text", "final_message", "stop_reason", "session_id"])
def test_a_payload_missing_any_key_does_not_decode(missing: str) -> None:
    payload = {"text": "t", "final_message": "t", "stop_reason": "end_turn", "session_id": "s"}
    del payload[missing]
    with pytest.raises(ValidationError, match=missing):
        AgentOutcome.model_validate_json(json.dumps(payload))


def test_a_payload_with_an_extra_key_does_not_decode() -> None:
    payload = {
        "text": "t",
        "final_message": "t",
        "stop_reason": "end_turn",
        "session_id": "s",
        "stop": "end_turn",
    }
    with pytest.raises(ValidationError, match="stop"):
        AgentOutcome.model_validate(payload)


@pytest.mark.parametrize("value", [7, None, b"bytes", ["x"]])
def test_a_non_string_field_does_not_decode(value: object) -> None:
    payload = {"text": value, "final_message": "t", "stop_reason": "end_turn", "session_id": "s"}
    with pytest.raises(ValidationError):
        AgentOutcome.model_validate(payload)


def test_the_record_is_frozen() -> None:
    outcome = AgentOutcome.new("a", "a", StopKind.EndTurn(), "s")
    with pytest.raises(ValidationError):
        outcome.text = "b"  # type: ignore[misc]


def test_payload_bytes_are_compact_json_in_field_order() -> None:
    payload = AgentOutcome.new("é", "é", StopKind.Cancelled(), "s").into_payload()
    assert payload.bytes == (
        '{"text":"é","final_message":"é","stop_reason":"cancelled","session_id":"s"}'.encode()
    )
    assert isinstance(payload, Payload)


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ({"kind": "end_turn"}, StopKind.EndTurn()),
        ({"kind": "error", "message": "boom"}, StopKind.Error(message="boom")),
        ('{"kind": "other", "reason": "pause_turn"}', StopKind.Other(reason="pause_turn")),
    ],
)
def test_stop_kind_is_a_tagged_union(wire: object, expected: StopKind) -> None:
    assert StopKind.parse(wire) == expected


def test_stop_kind_refuses_unknown_tags_and_missing_details() -> None:
    with pytest.raises(ValidationError):
        StopKind.parse({"kind": "teleported"})
    with pytest.raises(ValidationError, match="message"):
        StopKind.parse({"kind": "error"})
    with pytest.raises(TypeError, match="variants"):
        StopKind(kind="end_turn")


def test_snake_case_constructors_build_the_same_variants() -> None:
    assert StopKind.end_turn() == StopKind.EndTurn()
    assert StopKind.tool_use().canonical_stop_reason() == "tool_use"
    assert StopKind.limit_reached().canonical_stop_reason() == "limit_reached"
    assert StopKind.cancelled().canonical_stop_reason() == "cancelled"
    assert StopKind.error("boom") == StopKind.Error(message="boom")
    assert StopKind.other("pause_turn") == StopKind.Other(reason="pause_turn")


def test_a_payload_repeating_a_key_does_not_decode() -> None:
    raw = b'{"text":"a","text":"b","final_message":"t","stop_reason":"end_turn","session_id":"s"}'
    with pytest.raises(ValidationError, match="the key 'text' appears more than once"):
        AgentOutcome.from_payload(Payload(content_type=ContentType.JSON, bytes=raw))
    for json_data in (raw, raw.decode()):  # the pydantic entry point decodes the same way
        with pytest.raises(ValidationError, match="the key 'text' appears more than once"):
            AgentOutcome.model_validate_json(json_data)
    nested = b'{"text":"a","final_message":"t","stop_reason":"end_turn","session_id":"s","x":{}}'
    with pytest.raises(ValidationError, match="x"):  # still refused for the extra key
        AgentOutcome.from_payload(Payload(content_type=ContentType.JSON, bytes=nested))
