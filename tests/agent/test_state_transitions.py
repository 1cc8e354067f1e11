"""The run state changes only through validated transitions: a misspelt field or a value the
field refuses raises where the change is made, instead of being persisted and read back wrong."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.agent.forced import ForcedCompletion
from harness.agent.state import RunState
from harness.llm.models import UserMessage
from harness.protocol.chunks import RunFinishChunk


def _state() -> RunState:
    return RunState(run_id="run-1", session_id="session-1", messages=(UserMessage(content="hi"),))


def test_evolve_changes_the_named_fields_and_keeps_the_rest() -> None:
    state = _state()
    evolved = state.evolve(step=2, phase="forced")
    assert (evolved.step, evolved.phase) == (2, "forced")
    assert evolved.messages == state.messages
    assert (state.step, state.phase) == (0, "work")  # the original is untouched


def test_a_misspelt_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="stepp") as caught:
        _state().evolve(stepp=1)
    assert caught.value.errors()[0]["type"] == "no_such_attribute"


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("step", -1, "greater_than_equal"),
        ("status", "paused", "literal_error"),
        ("pending_forced_attempt", 0, "greater_than"),
        ("messages", ("not a message",), "model_attributes_type"),
    ],
)
def test_a_value_the_field_refuses_is_refused(field: str, value: object, error: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _state().evolve(**{field: value})
    assert caught.value.errors()[0]["loc"][0] == field
    assert error in {detail["type"] for detail in caught.value.errors()}


def test_the_persisted_shape_is_what_a_built_state_has() -> None:
    evolved = (
        _state().evolve(step=3, answers=("a",)).with_chunks(RunFinishChunk(status="completed"))
    )
    built = RunState(
        run_id="run-1",
        session_id="session-1",
        messages=(UserMessage(content="hi"),),
        step=3,
        answers=("a",),
        chunks=(RunFinishChunk(status="completed"),),
    )
    assert evolved.model_dump_json() == built.model_dump_json()
    assert RunState.model_validate_json(evolved.model_dump_json()) == evolved


def test_the_forced_phase_counts_attempts_through_validated_changes() -> None:
    phase = ForcedCompletion.enter("max_steps", 2, step=4)
    assert phase.succeed().attempts_used == 1
    with pytest.raises(ValidationError):
        phase.state.evolve(attempts_used=-1)
