"""How the committed cassettes under `cassettes/` were recorded, so tests can prove they still are.

Live providers are not reachable from CI, so these recordings go through the loopback server in
`fake_provider`, which speaks the provider wire protocol; the harness sends exactly the request
it would send to the real provider. A test re-records each into a temporary folder and compares
it with the committed file: a change in what the harness sends shows up as a failing test that
says to re-record, never as a silent fixture drift.

The cassettes under `cassettes/wire/` are recorded through `harness serve` itself (a
`ReplayServer` recording in mode `all`, its upstream the fake provider): the Responses API asked
by the official `openai` SDK, plain and streamed, and streamed Chat Completions runs of the
harness's own agent. `python -m tests.support.recordings` re-records every one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import httpx2
import openai
from pydantic import JsonValue

from harness.agent.definition import AgentDefinition, AgentTool
from harness.agent.result import RunResult
from harness.cassettes import CassetteTransport
from harness.llm.gateway import GatewayConfig, LlmGateway, parse_provider
from harness.llm.models import ReasoningEffort
from harness.llm.script import ScriptedReply, ScriptedToolCall, ScriptTransport
from harness.modules.decision import AgentDecisionModule
from harness.modules.models_acl import AuthenticatedSession, LlmDetails, LlmDetailsService
from harness.providers import OPENAI
from harness.runtimes.run import run_agent
from harness.serve import ReplayServer
from tests.support.fake_provider import (
    Answer,
    Outcome,
    ReceivedRequest,
    Reply,
    Script,
    ToolCall,
    answer_by_prompt,
    reply_for,
    serve,
)
from tests.support.serve_http import provider_environ

REPOSITORY = Path(__file__).resolve().parents[2]
DECISION_SEED_CASSETTE = REPOSITORY / "cassettes" / "decision" / "contract-example.json"

VALOR = LlmDetails(
    id=uuid.UUID("5d1c8f8e-4a59-4f6b-9e0a-7f2f2b1c0a01"),
    name="valor",
    provider="openai",
    model="gpt-4o-mini",
)
SESSION = AuthenticatedSession(
    principal="alice", groups=frozenset({"release-team"}), default_llm_details_id=VALOR.id
)
SEED_CONFIG: dict[str, object] = {
    "modelSelection": "session-default-valor",
    "taskField": "agentTask",
    "sessionField": "sessionId",
}
SEED_STATE: dict[str, object] = {
    "agentTask": "Inspect the release evidence and continue until deployment is verified",
    "sessionId": "session-42",
    "agentStep": 3,
    "agentArtifactRefs": ["deployment:release-42"],
    "agentApprovalGranted": False,
}


def inspect_release(request: ReceivedRequest) -> Reply:
    """The provider's answer in the example of the module's contract: one call to
    workflow.execution.inspect."""
    return Reply(
        body={
            "id": "chatcmpl-seed42",
            "object": "chat.completion",
            "created": 1_764_489_600,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_inspect_release42",
                                "type": "function",
                                "function": {
                                    "name": "workflow_execution_inspect",
                                    "arguments": '{"executionId":"release-42"}',
                                },
                            }
                        ],
                        "refusal": None,
                    },
                    "logprobs": None,
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 109, "completion_tokens": 19, "total_tokens": 128},
            "system_fingerprint": "fp_seed",
        }
    )


def decision_module(transport: CassetteTransport, base_url: str) -> AgentDecisionModule:
    config = GatewayConfig(provider="openai", base_url=base_url, api_key="sk-test-recording-key")
    return AgentDecisionModule(
        SEED_CONFIG,
        models=LlmDetailsService.of([VALOR]),
        session=SESSION,
        completer_for=lambda record: LlmGateway(config, transport=transport),
    )


def record_decision_seed(path: Path) -> dict[str, object]:
    """Record the contract example's one gateway call into `path`; return the module's outputs."""
    with serve(inspect_release) as provider:
        transport = CassetteTransport(path, mode="all", run_id=uuid.uuid4().hex)
        try:
            return decision_module(transport, provider.base_url).execute(SEED_STATE)
        finally:
            transport.close()


# -- agent runs, one cassette per forced-completion trigger ---------------------------------------

TRIGGER_AGENT_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["city", "confidence"],
    "additionalProperties": False,
}
TRIGGER_OUTPUT: dict[str, JsonValue] = {"city": "Paris", "confidence": 0.9}


TRIGGER_MODELS: Final = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
}
"""The model of each provider's trigger agent; Anthropic's and Gemini's stream."""


def trigger_agent(provider: str) -> AgentDefinition:
    return AgentDefinition(
        name="capital-finder",
        system_prompt="You find capitals. Use search, then finish with the structured answer.",
        model=TRIGGER_MODELS[provider],
        tools=(AgentTool(name="search", description="Search the web", result={"hits": ["Paris"]}),),
        output_schema=TRIGGER_AGENT_SCHEMA,
        max_steps=3,
        max_tokens=256,
        stream=provider != "openai",
    )


def trigger_script(trigger: str) -> list[ScriptedReply]:
    search = ScriptedReply(
        tool_calls=(ScriptedToolCall(name="search", arguments={"q": "capital of France"}),)
    )
    finish = ScriptedReply(
        tool_calls=(ScriptedToolCall(name="__finish__", arguments=TRIGGER_OUTPUT),)
    )
    if trigger == "terminal_text":
        return [search, ScriptedReply(text="The capital of France is Paris."), finish]
    if trigger == "max_tokens":
        return [search, ScriptedReply(text="The capital of France is Pa", truncated=True), finish]
    return [search, search, search, finish]


def trigger_cassette(trigger: str, provider: str) -> Path:
    return (
        REPOSITORY / "cassettes" / "agent" / f"trigger-{trigger.replace('_', '-')}-{provider}.json"
    )


def provider_gateway(provider: str, base_url: str, transport: httpx2.BaseTransport) -> LlmGateway:
    config = GatewayConfig(
        provider=parse_provider(provider), base_url=base_url, api_key="sk-test-recording-key"
    )
    return LlmGateway(config, transport=transport)


@contextmanager
def scripted_provider(provider: str, replies: list[ScriptedReply]) -> Iterator[str]:
    """A loopback server answering with the scripted replies in `provider`'s wire format."""
    script = ScriptTransport(parse_provider(provider), replies)

    def answer(request: ReceivedRequest) -> Reply:
        response = script.handle_request(
            httpx2.Request("POST", f"http://loopback{request.path}", content=request.body)
        )
        content_type = response.headers.get("content-type", "")
        if "text/event-stream" in content_type:
            events = [chunk.decode() for chunk in response.iter_raw()]
            return Reply(
                status=response.status_code, headers={"content-type": content_type}, events=events
            )
        return Reply(status=response.status_code, body=response.json())

    with serve(answer) as server:
        yield server.base_url


def record_trigger(trigger: str, provider: str, path: Path) -> RunResult:
    """Record one agent run that enters forced completion through `trigger`."""
    with scripted_provider(provider, trigger_script(trigger)) as base_url:
        transport = CassetteTransport(path, mode="all", run_id=uuid.uuid4().hex)
        try:
            gateway = provider_gateway(provider, base_url, transport)
            return run_agent(
                trigger_agent(provider),
                gateway,
                user_message="What is the capital of France?",
                run_id=f"trigger-{trigger}",
                session_id="session-capital",
            )
        finally:
            transport.close()


TRIGGERS = ("terminal_text", "max_tokens", "max_steps")
PROVIDERS = ("openai", "anthropic", "gemini")


# -- agent runs that reason, one cassette per provider -----------------------------------------------

THINKING_MODELS: Final = {
    "openai": "gpt-5-mini",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
}
"""The reasoning model of each provider's thinking agent."""
THINKING_TRIGGERS: Final = {"openai": "max_tokens", "anthropic": "max_steps", "gemini": "max_steps"}
"""How each provider's thinking run enters forced completion: OpenAI's reasoning uses up
`max_completion_tokens`; Claude and Gemini think before each call until the steps run out."""


def thinking_agent(provider: str) -> AgentDefinition:
    """`trigger_agent(provider)` on a reasoning model that reasons: two steps, an explicit token
    cap (OpenAI's `max_completion_tokens` holds its reasoning, Anthropic's its thinking budget)."""
    return trigger_agent(provider).evolve(
        model=THINKING_MODELS[provider],
        max_steps=2,
        max_tokens=512 if provider == "openai" else 16_000,
        reasoning=ReasoningEffort(effort="medium" if provider == "openai" else "low"),
    )


def thinking_script(provider: str) -> list[ScriptedReply]:
    finish = ScriptedReply(
        tool_calls=(ScriptedToolCall(name="__finish__", arguments=TRIGGER_OUTPUT),)
    )
    if THINKING_TRIGGERS[provider] == "max_tokens":
        spent = ScriptedReply(thinking="Reasoning about every capital in Europe.", truncated=True)
        return [spent, finish]
    searches = [("I should search for the capital.", "capital of France")]
    searches.append(("Let me check a second source.", "France capital city"))
    return [
        *(
            ScriptedReply(
                thinking=thought,
                tool_calls=(ScriptedToolCall(name="search", arguments={"q": query}),),
            )
            for thought, query in searches
        ),
        finish,
    ]


def thinking_cassette(provider: str) -> Path:
    return REPOSITORY / "cassettes" / "agent" / f"thinking-{provider}.json"


def record_thinking(provider: str, path: Path) -> RunResult:
    """Record one run of `thinking_agent(provider)` answered by `thinking_script(provider)`."""
    with scripted_provider(provider, thinking_script(provider)) as base_url:
        transport = CassetteTransport(path, mode="all", run_id=uuid.uuid4().hex)
        try:
            return run_agent(
                thinking_agent(provider),
                provider_gateway(provider, base_url, transport),
                user_message="What is the capital of France?",
                run_id=f"thinking-{provider}",
                session_id="session-capital",
            )
        finally:
            transport.close()


# -- the wire cassettes, recorded through `harness serve` -----------------------------------------

RESPONSES_CASSETTE: Final = "wire/responses"
RESPONSES_OUTCOMES: Final[dict[str, Outcome]] = {
    "What is the capital of France?": Answer(text="The capital of France is Paris."),
    "What is the weather in Paris?": Answer(
        text="Let me look.",
        tool_calls=(ToolCall(id="call_weather1", name="get_weather", arguments={"city": "Paris"}),),
    ),
    "Describe Paris at length.": Answer(text="Paris is the capital of France and", cut_off=True),
}
"""Each prompt of the Responses cassette, and what the model answers it with: text, text with a
function call, and text cut off by `max_output_tokens`."""
WEATHER_TOOL: Final[dict[str, Any]] = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
CHAT_STREAM_TRIGGERS: Final = ("terminal_text", "max_tokens")


def responses_calls() -> list[dict[str, Any]]:
    """The `client.responses.create(...)` arguments of the Responses cassette, in order: each
    prompt plain, then each streamed."""
    return [
        {
            "model": "gpt-4o-mini",
            "input": prompt,
            "tools": [WEATHER_TOOL],
            "max_output_tokens": 64,
            "stream": stream,
        }
        for stream in (False, True)
        for prompt in RESPONSES_OUTCOMES
    ]


def chat_stream_cassette(trigger: str) -> str:
    return f"wire/chat-stream-{trigger.replace('_', '-')}"


def chat_stream_agent() -> AgentDefinition:
    """The agent of the streamed Chat Completions cassettes: `trigger_agent("openai")`,
    streaming."""
    return trigger_agent("openai").evolve(stream=True)


def capital_run(trigger: str) -> Script:
    """The fake provider's answers to a run of `chat_stream_agent()`: a search call, then prose
    (cut off by the token limit for `max_tokens`), then, asked for the output tool alone, the
    structured answer."""

    def script(request: ReceivedRequest) -> Reply:
        body = request.json()
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("function", {}).get("name") == "__finish__":
            finish = ToolCall(id="call_finish1", name="__finish__", arguments=TRIGGER_OUTPUT)
            return reply_for(request, Answer(tool_calls=(finish,)))
        if not any(message.get("role") == "tool" for message in body["messages"]):
            search = ToolCall(
                id="call_search1", name="search", arguments={"q": "capital of France"}
            )
            return reply_for(request, Answer(tool_calls=(search,)))
        if trigger == "max_tokens":
            return reply_for(request, Answer(text="The capital of France is Pa", cut_off=True))
        return reply_for(request, Answer(text="The capital of France is Paris."))

    return script


def record_responses(folder: Path) -> Path:
    """Record `responses_calls()`, made with the official `openai` SDK through `harness serve`,
    into `<folder>/wire/responses.json`."""
    with (
        serve(answer_by_prompt(RESPONSES_OUTCOMES)) as provider,
        ReplayServer(
            folder, record_mode="all", environ=provider_environ(provider.base_url)
        ) as server,
        openai.OpenAI(
            base_url=server.cassette_url(RESPONSES_CASSETTE, "openai"),
            api_key="sk-test-recording-key",
            max_retries=0,
        ) as client,
    ):
        for call in responses_calls():
            answer = client.responses.create(**call)
            if call["stream"]:
                for _ in answer:
                    pass
    return folder / f"{RESPONSES_CASSETTE}.json"


def record_chat_stream(trigger: str, folder: Path) -> RunResult:
    """Record one streamed run of `chat_stream_agent()` that enters forced completion through
    `trigger`, the harness's gateway calling `harness serve`, into
    `<folder>/wire/chat-stream-<trigger>.json`."""
    name = chat_stream_cassette(trigger)
    with (
        serve(capital_run(trigger)) as provider,
        ReplayServer(
            folder, record_mode="all", environ=provider_environ(provider.base_url)
        ) as server,
    ):
        config = GatewayConfig(
            provider="openai",
            base_url=OPENAI.server_root(server.cassette_url(name, "openai")),
            api_key="sk-test-recording-key",
        )
        return run_agent(
            chat_stream_agent(),
            LlmGateway(config),
            user_message="What is the capital of France?",
            run_id=f"chat-stream-{trigger}",
            session_id="session-capital",
        )


def record_wire_cassettes(folder: Path) -> list[Path]:
    """Record every cassette of `cassettes/wire/` into `<folder>/wire/`."""
    written = [record_responses(folder)]
    for trigger in CHAT_STREAM_TRIGGERS:
        record_chat_stream(trigger, folder)
        written.append(folder / f"{chat_stream_cassette(trigger)}.json")
    return written


def record_all() -> list[Path]:
    record_decision_seed(DECISION_SEED_CASSETTE)
    written = [DECISION_SEED_CASSETTE]
    for trigger in TRIGGERS:
        for provider in PROVIDERS:
            path = trigger_cassette(trigger, provider)
            record_trigger(trigger, provider, path)
            written.append(path)
    for provider in PROVIDERS:
        path = thinking_cassette(provider)
        record_thinking(provider, path)
        written.append(path)
    written.extend(record_wire_cassettes(REPOSITORY / "cassettes"))
    return written


if __name__ == "__main__":
    for written in record_all():
        print(f"recorded {written.relative_to(REPOSITORY)}")
