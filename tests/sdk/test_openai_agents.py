"""OpenAI Agents SDK agents recorded and replayed through `CassetteTransport`.

An `Agent` with a pydantic `output_type`, on the SDK's default model class (the Responses API,
`OpenAIResponsesModel`) and on `OpenAIChatCompletionsModel`, run with `Runner.run` and
`Runner.run_streamed`: recorded against the loopback fake provider, then replayed with it stopped
and sockets blocked. The replay gives the same final output and the same model responses. The
setup is the one the cassette guide gives: the SDK's `AsyncOpenAI` client on an `httpx2` client
whose transport is the cassette, and tracing off for the run (the SDK would otherwise export
traces to OpenAI, which is not the model call under test).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import httpx2
import pytest
from agents import Agent, ModelResponse, RunConfig, Runner
from agents.models.interface import Model
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI
from pydantic import BaseModel

from harness.cassettes import CassetteTransport
from tests.support.fake_provider import Answer, answer_by_prompt
from tests.support.sdk_replay import RecordAndReplay, Runs

PROMPT = "What is the capital of France?"


class City(BaseModel):
    name: str
    country: str


PARIS = City(name="Paris", country="France")

ModelFactory = Callable[[AsyncOpenAI], Model]
MODELS: dict[str, tuple[ModelFactory, str]] = {
    "responses": (
        lambda client: OpenAIResponsesModel("gpt-4o-mini", openai_client=client),
        "/v1/responses",
    ),
    "chat-completions": (
        lambda client: OpenAIChatCompletionsModel("gpt-4o-mini", openai_client=client),
        "/v1/chat/completions",
    ),
}
CONFIG = RunConfig(tracing_disabled=True)


def texts(responses: list[ModelResponse]) -> list[Any]:
    """What the model said, without the ids and usage timings that differ per run by design."""
    return [item.model_dump(mode="json", exclude={"id"}) for r in responses for item in r.output]


async def run(agent: Agent[None]) -> object:
    result = await Runner.run(agent, PROMPT, run_config=CONFIG)
    return result.final_output, texts(result.raw_responses)


async def run_streamed(agent: Agent[None]) -> object:
    result = Runner.run_streamed(agent, PROMPT, run_config=CONFIG)
    kinds = [event.type async for event in result.stream_events()]
    return result.final_output, texts(result.raw_responses), "raw_response_event" in kinds


RUNS = {"run": run, "run_streamed": run_streamed}


@pytest.mark.anyio
@pytest.mark.parametrize("how", RUNS)
@pytest.mark.parametrize("model", MODELS)
async def test_an_agent_with_an_output_type_replays_its_output(
    record_and_replay: RecordAndReplay, model: str, how: str
) -> None:
    factory, path = MODELS[model]

    async def call(base_url: str, transport: CassetteTransport) -> object:
        async with httpx2.AsyncClient(transport=transport) as http_client:
            client = AsyncOpenAI(
                base_url=f"{base_url}/v1", api_key="sk-test", http_client=http_client
            )
            agent = Agent(name="capitals", model=factory(client), output_type=City)
            return await RUNS[how](agent)

    answer = Answer(text=PARIS.model_dump_json())
    runs: Runs = await record_and_replay.asynchronous(answer_by_prompt({PROMPT: answer}), call)
    recorded = cast(tuple[Any, ...], runs.recorded)
    assert recorded[0] == PARIS
    assert runs.replayed == runs.recorded
    (interaction,) = runs.cassette.interactions
    assert interaction.request.path == path
    assert "City" in str(interaction.request.body)  # the output type's schema was sent
