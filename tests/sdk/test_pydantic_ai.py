"""pydantic-ai agents recorded and replayed through `CassetteTransport` on an httpx2 client.

An `Agent` with a pydantic `output_type` (answered through its output tool), on `OpenAIChatModel`
and `AnthropicModel`, with `run` and `run_stream`: recorded against the loopback fake provider,
replayed with it stopped and sockets blocked. The replay must give the same output, the same
partial outputs while streaming and the same model responses, and no warning at all may be
emitted (pydantic-ai's deprecation warnings are `UserWarning`s, so they are checked here too).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import httpx2
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from harness.cassettes import CassetteTransport
from tests.support.fake_provider import Answer, ToolCall, answer_by_prompt
from tests.support.sdk_replay import RecordAndReplay, Runs, assert_same_parse

PROMPT = "What is the capital of France?"


class City(BaseModel):
    name: str
    country: str


PARIS = City(name="Paris", country="France")
OUTPUT_TOOL = "final_result"  # the name pydantic-ai gives the output tool of a structured output


def answer_with_city(call_id: str) -> Answer:
    return Answer(
        tool_calls=(ToolCall(id=call_id, name=OUTPUT_TOOL, arguments=PARIS.model_dump()),)
    )


ModelFactory = Callable[[str, httpx2.AsyncClient], Model]


def openai_model(base_url: str, http_client: httpx2.AsyncClient) -> Model:
    provider = OpenAIProvider(base_url=f"{base_url}/v1", api_key="sk-test", http_client=http_client)
    return OpenAIChatModel("gpt-4o-mini", provider=provider)


def anthropic_model(base_url: str, http_client: httpx2.AsyncClient) -> Model:
    provider = AnthropicProvider(base_url=base_url, api_key="sk-ant-test", http_client=http_client)
    return AnthropicModel("claude-sonnet-4-5", provider=provider)


MODELS: dict[str, tuple[ModelFactory, Answer, str]] = {
    "openai-chat": (openai_model, answer_with_city("call_city1"), "/v1/chat/completions"),
    "anthropic": (anthropic_model, answer_with_city("toolu_city1"), "/v1/messages"),
}

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def model_responses(messages: list[ModelMessage]) -> list[ModelResponse]:
    """The model's responses, without what differs on every run by design: when the run
    happened and its run and conversation ids."""
    return [
        dataclasses.replace(message, timestamp=EPOCH, run_id=None, conversation_id=None)
        for message in messages
        if isinstance(message, ModelResponse)
    ]


async def run(agent: Agent[None, City]) -> object:
    result = await agent.run(PROMPT)
    return result.output, model_responses(result.all_messages())


async def run_stream(agent: Agent[None, City]) -> object:
    async with agent.run_stream(PROMPT) as result:
        # debounce_by=None: every partial output, not those that a timer happens to group
        partial = [output async for output in result.stream_output(debounce_by=None)]
        output = await result.get_output()
    return partial, output, model_responses(result.all_messages())


RUNS = {"run": run, "run_stream": run_stream}


async def record_and_replay_agent(record_and_replay: RecordAndReplay, model: str, how: str) -> Runs:
    factory, answer, _ = MODELS[model]

    async def call(base_url: str, transport: CassetteTransport) -> object:
        async with httpx2.AsyncClient(transport=transport) as http_client:
            agent = Agent(factory(base_url, http_client), output_type=City)
            return await RUNS[how](agent)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = await record_and_replay.asynchronous(answer_by_prompt({PROMPT: answer}), call)
    assert [str(warning.message) for warning in caught] == []
    return runs


def sent_request(runs: Runs) -> Any:
    (interaction,) = runs.cassette.interactions
    return interaction.request


@pytest.mark.anyio
@pytest.mark.parametrize("model", MODELS)
async def test_run_replays_the_structured_output(
    record_and_replay: RecordAndReplay, model: str
) -> None:
    runs = await record_and_replay_agent(record_and_replay, model, "run")
    output, responses = cast(tuple[City, list[ModelResponse]], runs.recorded)
    assert output == PARIS
    assert [part.part_kind for response in responses for part in response.parts] == ["tool-call"]
    request = sent_request(runs)
    assert request.path == MODELS[model][2]
    assert OUTPUT_TOOL in str(request.body["tools"])
    assert_same_parse(runs)


@pytest.mark.anyio
@pytest.mark.parametrize("model", MODELS)
async def test_run_stream_replays_every_partial_output(
    record_and_replay: RecordAndReplay, model: str
) -> None:
    runs = await record_and_replay_agent(record_and_replay, model, "run_stream")
    partial, output, _ = cast(tuple[list[City], City, object], runs.recorded)
    assert output == PARIS
    assert partial[-1] == PARIS
    request = sent_request(runs)
    assert request.body["stream"] is True
    assert_same_parse(runs)
