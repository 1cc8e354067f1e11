"""An agent of a user's own, built on the official `openai` SDK, checked with the property kit.

`find_capital` is written the way a user writes one: Chat Completions with a `search` tool and
its own output tool, `final_answer`; when the model answers in prose, is cut off, or gives an
answer that fails its schema, it forces `final_answer`, at most twice. The properties drive it
with generated scripts through `ScriptTransport` and check the `agent_call_*` invariants; two
broken variants of it show that the properties fail when the agent breaks a promise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import Phase, given, settings
from openai.types.chat import (
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionToolChoiceOptionParam,
    ChatCompletionToolParam,
)
from openai.types.chat.chat_completion import Choice
from pydantic import BaseModel, ConfigDict, ValidationError

from harness.invariants import (
    AgentCall,
    agent_call_bounded,
    agent_call_budget_respected,
    agent_call_ends_validly,
    agent_call_forced_requests_minimal,
)
from harness.llm.script import ScriptedReply, ScriptTransport
from harness.strategies import scripts

# -- the user's agent ----------------------------------------------------------------------------

FINAL_ANSWER = "final_answer"
BUDGET = 2
MAX_STEPS = 3


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    city: str


SCHEMA = Answer.model_json_schema()
SEARCH: ChatCompletionToolParam = {
    "type": "function",
    "function": {"name": "search", "parameters": {"type": "object"}},
}
ANSWER: ChatCompletionToolParam = {
    "type": "function",
    "function": {"name": FINAL_ANSWER, "parameters": SCHEMA},
}
FORCE_ANSWER: ChatCompletionToolChoiceOptionParam = {
    "type": "function",
    "function": {"name": FINAL_ANSWER},
}


class GaveUp(Exception):
    """The model gave no valid answer within the retry budget."""


def parse_answer(arguments: str) -> dict[str, Any] | None:
    try:
        return Answer.model_validate_json(arguments).model_dump()
    except ValidationError:  # cut off, not JSON, or not an Answer
        return None


def function_calls(choice: Choice) -> list[ChatCompletionMessageFunctionToolCall]:
    return [call for call in choice.message.tool_calls or () if call.type == "function"]


def find_capital(
    client: openai.OpenAI,
    country: str,
    *,
    retries: int = BUDGET,
    parse: Callable[[str], dict[str, Any] | None] = parse_answer,
) -> dict[str, Any]:
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "You find capitals."},
        {"role": "user", "content": f"What is the capital of {country}?"},
    ]

    def ask(
        tools: list[ChatCompletionToolParam], choice: ChatCompletionToolChoiceOptionParam = "auto"
    ) -> Choice:
        return client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=tools, tool_choice=choice
        ).choices[0]

    def answer_in(calls: list[ChatCompletionMessageFunctionToolCall]) -> dict[str, Any] | None:
        answers = (parse(c.function.arguments) for c in calls if c.function.name == FINAL_ANSWER)
        return next((answer for answer in answers if answer is not None), None)

    for _ in range(MAX_STEPS):
        choice = ask([SEARCH, ANSWER])
        calls = function_calls(choice)
        if (answer := answer_in(calls)) is not None:
            return answer
        if choice.finish_reason != "tool_calls" or not calls:
            break  # prose or cut off: force the answer
        if any(call.function.name == FINAL_ANSWER for call in calls):
            break  # an answer that fails the schema: force a new one
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ],
            }
        )
        messages += [{"role": "tool", "tool_call_id": c.id, "content": "Paris."} for c in calls]
    for _ in range(retries):
        forced = ask([ANSWER], FORCE_ANSWER)
        if (answer := answer_in(function_calls(forced))) is not None:
            return answer
    raise GaveUp(f"no valid {FINAL_ANSWER} after {retries} forced attempt(s)")


# -- the properties ------------------------------------------------------------------------------

SCRIPTS = scripts(
    schema=SCHEMA, tools=["search"], output_tool=FINAL_ANSWER, length=MAX_STEPS + BUDGET
)
Agent = Callable[[openai.OpenAI, str], dict[str, Any]]


def observe(agent: Agent, replies: list[ScriptedReply]) -> AgentCall:
    """One call of `agent` with the official SDK answered by `replies`."""
    transport = ScriptTransport("openai", replies)
    with openai.OpenAI(
        base_url="https://api.openai.com/v1",
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    ) as client:
        return AgentCall.observe(transport, lambda: agent(client, "France"))


def keeps_its_promises(agent: Agent, replies: list[ScriptedReply]) -> None:
    call = observe(agent, replies)
    # The budget first: an agent over budget may also run its script dry, and the budget is
    # the promise it broke.
    agent_call_budget_respected(call, budget=BUDGET, output_tool=FINAL_ANSWER)
    agent_call_forced_requests_minimal(call, output_tool=FINAL_ANSWER)
    agent_call_bounded(call)
    agent_call_ends_validly(call, SCHEMA, errors=(GaveUp, openai.APIStatusError))


@given(SCRIPTS)
def test_find_capital_keeps_its_promises(replies: list[ScriptedReply]) -> None:
    keeps_its_promises(find_capital, replies)


def careless_parse(arguments: str) -> dict[str, Any] | None:
    """Decodes the arguments unguarded: cut-off JSON raises `json.JSONDecodeError`."""
    try:
        return Answer.model_validate(json.loads(arguments)).model_dump()
    except ValidationError:
        return None


@pytest.mark.parametrize(
    ("broken", "promise"),
    [
        (partial(find_capital, parse=careless_parse), "the agent raised a bare JSONDecodeError"),
        (partial(find_capital, retries=3), "forced request.* its budget is 2"),
    ],
    ids=["unguarded-json-loads", "three-retries"],
)
def test_the_properties_catch_a_broken_agent(broken: Agent, promise: str) -> None:
    # Any failing example proves the point: no shrinking, and the same examples on every run.
    @settings(database=None, derandomize=True, phases=[Phase.generate])
    @given(SCRIPTS)
    def broken_keeps_its_promises(replies: list[ScriptedReply]) -> None:
        keeps_its_promises(broken, replies)

    with pytest.raises(AssertionError, match=promise):
        broken_keeps_its_promises()
