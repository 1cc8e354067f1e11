"""`StateWriter`: what a runtime stores at each save reads back as the state it saved, each
record is serialised once per run, and a record a request shares is stored once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic_core import SchemaSerializer

from harness.agent.state import RunState, SentRequest, StateWriter
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    SystemFragment,
    ToolDefinition,
    UserMessage,
)
from harness.protocol.chunks import StepStartChunk, TextDeltaChunk
from harness.runtimes.run import run_agent
from harness.stores.memory import MemoryStore
from harness.strategies import RUNTIMES, AgentRun, agent_runs


@contextmanager
def every_dump_checked() -> Iterator[list[str]]:
    """Check that each state a runtime stores reads back equal to the state it saved."""
    written: list[str] = []
    dump = StateWriter.dump

    def checked(writer: StateWriter, state: RunState) -> str:
        text = dump(writer, state)
        assert RunState.model_validate_json(text) == state
        written.append(text)
        return text

    with mock.patch.object(StateWriter, "dump", checked):
        yield written


@given(agent_runs(), st.sampled_from(RUNTIMES))
def test_every_stored_state_reads_back_as_the_state_saved(case: AgentRun, runtime: str) -> None:
    store = MemoryStore()
    with every_dump_checked() as written, case.completer() as gateway:
        result = run_agent(case.agent, gateway, user_message="q", runtime=runtime, store=store)
    assert written, "the run saved no state"
    stored = store.load(result.state.run_id)
    assert stored is not None
    assert RunState.model_validate_json(stored.state_json) == result.state
    assert len(stored.state_json) <= len(result.state.model_dump_json())


SYSTEM = (SystemFragment(name="base", text="You answer questions about geography, briefly."),)
TOOLS = (
    ToolDefinition(
        name="search",
        description="Search the atlas for a place.",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}},
    ),
)
QUESTION = UserMessage(content="What is the capital of France, and why is it there?")
ANSWER = AssistantMessage(text="Paris, on the Seine, where the roads of Gaul met.")


def request(*messages: Any, step: int) -> SentRequest:
    return SentRequest(
        kind="work",
        step=step,
        request=LlmRequest(model="m", system=SYSTEM, messages=messages, tools=TOOLS),
    )


def two_requests() -> RunState:
    follow_up = UserMessage(content="And of Germany?")
    return RunState(
        run_id="r",
        session_id="s",
        messages=(QUESTION, ANSWER, follow_up),
        # history names inside a value: the writer is not misled by them
        output={"requests": [{"$same": [0, "messages", 0]}], "chunks": []},
        chunks=(StepStartChunk(step=0), TextDeltaChunk(step=0, text=ANSWER.text or "")),
        requests=(request(QUESTION, step=0), request(QUESTION, ANSWER, follow_up, step=1)),
    )


def test_a_record_a_request_shares_is_stored_once_and_read_back_whole() -> None:
    state = two_requests()
    text = StateWriter().dump(state)
    stored = json.loads(text)
    first, second = (sent["request"] for sent in stored["requests"])
    assert first["messages"] == [{"$same": ["messages", 0]}]
    assert first["system"] == [SYSTEM[0].model_dump(mode="json")]
    assert first["tools"] == [TOOLS[0].model_dump(mode="json")]
    assert second["messages"] == [{"$same": ["messages", place]} for place in range(3)]
    assert second["system"] == [{"$same": [0, "system", 0]}]
    assert second["tools"] == [{"$same": [0, "tools", 0]}]
    assert stored["output"] == state.output
    assert RunState.model_validate_json(text) == state
    assert len(text) < len(state.model_dump_json())


def test_a_record_written_once_is_not_serialised_again() -> None:
    serialised: list[object] = []
    to_json = SchemaSerializer.to_json

    def counted(serializer: SchemaSerializer, value: object, **options: Any) -> bytes:
        if not isinstance(value, RunState | SentRequest | LlmRequest):  # plain fields
            serialised.append(value)
        return to_json(serializer, value, **options)

    writer = StateWriter()
    first = two_requests()
    with mock.patch.object(SchemaSerializer, "to_json", counted):
        writer.dump(first)
        assert set(map(id, serialised)) == {
            id(record) for record in (*first.messages, *first.chunks, *SYSTEM, *TOOLS)
        }
        serialised.clear()
        grown = first.with_chunks(TextDeltaChunk(step=0, text=" It still is."))
        assert RunState.model_validate_json(writer.dump(grown)) == grown
    assert serialised == [grown.chunks[-1]]


def test_a_state_that_does_not_continue_the_last_one_is_written_from_its_own_records() -> None:
    writer = StateWriter()
    state = two_requests()
    writer.dump(state)
    other = state.evolve(
        messages=(UserMessage(content="Where is Lyon?"),),
        requests=(request(UserMessage(content="Where is Lyon?"), step=0),),
    )
    assert RunState.model_validate_json(writer.dump(other)) == other
    assert RunState.model_validate_json(writer.dump(state)) == state


def test_the_whole_json_still_reads() -> None:
    state = two_requests()
    assert RunState.model_validate_json(state.model_dump_json()) == state


@pytest.mark.parametrize(
    "pointer",
    [
        ["messages", 7],
        ["messages", -1],
        [1, "messages", 0],  # request 1 is the one pointing: only earlier requests count
        [0, "model", 0],
        [0, "messages", 9],
        "messages",
    ],
)
def test_a_damaged_pointer_is_a_validation_error_that_names_it(pointer: object) -> None:
    stored = json.loads(StateWriter().dump(two_requests()))
    stored["requests"][1]["request"]["messages"][0] = {"$same": pointer}
    with pytest.raises(ValidationError, match="points to no message") as caught:
        RunState.model_validate_json(json.dumps(stored))
    assert repr(pointer) in str(caught.value)
