"""The loop over the real wire: scripted replies rendered by the provider adapters, and the
committed per-trigger cassettes replayed through the gateway."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cassettes import Cassette, CassetteTransport
from harness.llm.gateway import LlmGateway
from harness.llm.script import (
    ScriptedReply,
    ScriptedToolCall,
    ScriptExhaustedError,
    ScriptTransport,
)
from harness.runtimes.run import run_agent
from tests.support.recordings import (
    PROVIDERS,
    THINKING_TRIGGERS,
    TRIGGER_OUTPUT,
    TRIGGERS,
    provider_gateway,
    record_thinking,
    record_trigger,
    thinking_agent,
    thinking_cassette,
    trigger_agent,
    trigger_cassette,
    trigger_script,
)


def scripted_run(
    provider: str, stream: bool, replies: list[ScriptedReply], **changes: Any
) -> tuple[Any, ScriptTransport]:
    transport = ScriptTransport(provider, replies)  # type: ignore[arg-type]
    gateway = provider_gateway(provider, "https://provider.test", transport)
    agent = trigger_agent(provider).model_copy(update={"stream": stream, **changes})
    return run_agent(agent, gateway, user_message="Capital of France?"), transport


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("stream", [False, True])
def test_each_trigger_over_each_wire(trigger: str, provider: str, stream: bool) -> None:
    result, transport = scripted_run(provider, stream, trigger_script(trigger))
    assert result.status == "completed"
    assert result.output == TRIGGER_OUTPUT
    assert {c.trigger for c in result.forced_chunks()} == {trigger}
    forced_body = json.loads(transport.requests[-1].content)
    work_body = json.loads(transport.requests[0].content)
    if provider == "openai":
        assert forced_body["tool_choice"] == {
            "type": "function",
            "function": {"name": "__finish__"},
        }
        assert [t["function"]["name"] for t in forced_body["tools"]] == ["__finish__"]
        assert forced_body["messages"][0] == {
            "role": "system",
            "content": result.agent.system_prompt,
        }
        assert work_body["tool_choice"] == "auto"
        assert "reasoning_effort" not in forced_body
        assert forced_body.get("stream", False) is stream
    elif provider == "anthropic":
        assert forced_body["tool_choice"] == {"type": "tool", "name": "__finish__"}
        assert [t["name"] for t in forced_body["tools"]] == ["__finish__"]
        assert forced_body["system"] == result.agent.system_prompt
        assert "thinking" not in forced_body
        assert work_body["tool_choice"] == {"type": "auto"}
        assert forced_body.get("stream", False) is stream
    else:
        # Gemini: the forced function call, and streaming and the model in the path
        assert forced_body["toolConfig"] == {
            "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["__finish__"]}
        }
        declarations = forced_body["tools"][0]["functionDeclarations"]
        assert [t["name"] for t in declarations] == ["__finish__"]
        assert forced_body["systemInstruction"] == {"parts": [{"text": result.agent.system_prompt}]}
        assert work_body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
        assert "stream" not in forced_body
        method = "streamGenerateContent" if stream else "generateContent"
        assert transport.requests[-1].url.path == f"/v1beta/models/gemini-2.5-flash:{method}"
        assert transport.requests[-1].url.query == (b"alt=sse" if stream else b"")
    assert "[SYSTEM] You must call" not in transport.requests[-1].content.decode()
    assert "[completion]" in transport.requests[-1].content.decode()


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("stream", [False, True])
def test_a_truncated_finish_over_the_wire_is_invalid_output(provider: str, stream: bool) -> None:
    cut = ScriptedReply(
        tool_calls=(ScriptedToolCall(name="__finish__", arguments='{"city": "Par'),), truncated=True
    )
    result, _ = scripted_run(
        provider, stream, [ScriptedReply(text="Paris."), cut], max_completion_retries=1
    )
    assert result.error_code == "framework_forced_completion_exhausted"
    assert result.state.forced_completion is not None
    assert result.state.forced_completion.last_failure_code == "framework_completion_invalid_output"


def test_a_provider_error_reply_is_rendered_and_parsed() -> None:
    error = ScriptedReply.model_validate({"error": {"status": 529, "type": "overloaded_error"}})
    result, _ = scripted_run("anthropic", False, [error])
    assert result.error_code == "framework_llm_call_failed"


def test_a_script_that_runs_out_says_so() -> None:
    with pytest.raises(ScriptExhaustedError, match="the script has 1 repl"):
        scripted_run("openai", False, [ScriptedReply(text="Paris.")])


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_trigger_cassettes_replay_and_are_current(
    trigger: str, provider: str, tmp_path: Path
) -> None:
    path = trigger_cassette(trigger, provider)
    transport = CassetteTransport(path, strict=True)
    gateway: LlmGateway = provider_gateway(provider, "https://api.example.test", transport)
    try:
        result = run_agent(
            trigger_agent(provider),
            gateway,
            user_message="What is the capital of France?",
            run_id=f"trigger-{trigger}",
            session_id="session-capital",
        )
    finally:
        transport.close()
    assert result.status == "completed"
    assert result.output == TRIGGER_OUTPUT
    assert {c.trigger for c in result.forced_chunks()} == {trigger}
    fresh = tmp_path / path.name
    record_trigger(trigger, provider, fresh)
    assert [i.digest for i in Cassette.load(fresh).interactions] == [
        i.digest for i in Cassette.load(path).interactions
    ], "the agent's requests changed: re-record with `python -m tests.support.recordings`"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_thinking_cassettes_replay_and_are_current(provider: str, tmp_path: Path) -> None:
    """Each provider's recorded run of a reasoning model: the requests that send thinking back
    (or, on the forced call, turn it off) replay exactly, and recording again gives the same."""
    path = thinking_cassette(provider)
    transport = CassetteTransport(path, strict=True)
    try:
        result = run_agent(
            thinking_agent(provider),
            provider_gateway(provider, "https://api.example.test", transport),
            user_message="What is the capital of France?",
            run_id=f"thinking-{provider}",
            session_id="session-capital",
        )
    finally:
        transport.close()
    assert result.status == "completed"
    assert result.output == TRIGGER_OUTPUT
    assert {c.trigger for c in result.forced_chunks()} == {THINKING_TRIGGERS[provider]}
    fresh = tmp_path / path.name
    record_thinking(provider, fresh)
    assert [i.digest for i in Cassette.load(fresh).interactions] == [
        i.digest for i in Cassette.load(path).interactions
    ], "the agent's requests changed: re-record with `python -m tests.support.recordings`"
