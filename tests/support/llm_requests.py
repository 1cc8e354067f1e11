"""Generated neutral requests, and what a provider's request body keeps of them.

`llm_requests(provider)` builds `LlmRequest`s the provider's adapter can render: every field set
or unset, conversations with tool calls and their results, metadata and reasoning blocks that the
wire drops. `after_round_trip(request, provider)` is the request `parse_request` must read back
from `render_request(request)`: the documented losses of each adapter, written out here from the
adapters' docstrings rather than from their code.
"""

from __future__ import annotations

import json
from typing import Literal

from hypothesis import strategies as st
from pydantic import JsonValue

from harness.llm import anthropic, openai
from harness.llm._wire import compact_json
from harness.llm.adapters import FRAGMENT_WIRE
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmToolCall,
    Message,
    NamedToolChoice,
    Reasoning,
    ReasoningDisabled,
    ReasoningEffort,
    ResponseFormat,
    SystemFragment,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

Provider = Literal["openai", "anthropic"]

MODELS: dict[Provider, tuple[str, ...]] = {
    # o3-mini takes `max_completion_tokens`, gpt-4o-mini `max_tokens`
    "openai": ("gpt-4o-mini", "o3-mini"),
    "anthropic": ("claude-sonnet-4-5",),
}
TEXTS = st.sampled_from(["", "Paris", "What is the capital of France?", "é 😀", "a\nb"])
TOOL_NAMES = ("search", "lookup", "final_answer")
CALL_IDS = ("call_1", "call_2", "toolu_3")
THINKING_BLOCK: dict[str, JsonValue] = {"type": "thinking", "thinking": "Hm.", "signature": "s1"}
METADATA = st.sampled_from([{}, {"forcedCompletion": {"attempt": 1}}])


def _arguments(provider: Provider) -> st.SearchStrategy[str]:
    """Arguments as a model sends them: spaced JSON objects, and for OpenAI also cut-off text
    (Messages only carries objects)."""
    objects = st.dictionaries(st.sampled_from(["q", "city"]), TEXTS, max_size=2).map(json.dumps)
    return objects | st.just('{"q": "Pa') if provider == "openai" else objects


def _messages(provider: Provider) -> st.SearchStrategy[tuple[Message, ...]]:
    call = st.builds(
        LlmToolCall,
        id=st.sampled_from(CALL_IDS),
        name=st.sampled_from(TOOL_NAMES),
        arguments=_arguments(provider),
    )
    user = st.builds(UserMessage, content=TEXTS, metadata=METADATA)
    assistant = st.builds(
        AssistantMessage,
        text=st.none() | TEXTS,
        tool_calls=st.lists(call, max_size=2).map(tuple),
        reasoning_blocks=st.sampled_from([(), (THINKING_BLOCK,)]),
        metadata=METADATA,
    )
    result = st.builds(
        ToolResultMessage,
        tool_call_id=st.sampled_from(CALL_IDS),
        name=st.sampled_from(TOOL_NAMES),
        content=TEXTS,
        is_error=st.booleans(),
        metadata=METADATA,
    )
    message: st.SearchStrategy[Message] = st.one_of(user, assistant, result)
    return st.lists(message, max_size=5).map(tuple)


def _tool_choices() -> st.SearchStrategy[ToolChoice]:
    named = st.builds(NamedToolChoice, name=st.sampled_from(TOOL_NAMES))
    words: st.SearchStrategy[ToolChoice] = st.sampled_from(["auto", "none", "required"])
    return words | named


def _reasonings() -> st.SearchStrategy[Reasoning | None]:
    effort = st.builds(
        ReasoningEffort,
        effort=st.sampled_from(["minimal", "low", "medium", "high"]),
        budget_tokens=st.none() | st.integers(1_024, 20_000),
    )
    return st.none() | st.just(ReasoningDisabled()) | effort


def llm_requests(provider: Provider) -> st.SearchStrategy[LlmRequest]:
    """Neutral requests for `provider`; Anthropic ones may still be refused by `render_request`
    (a thinking budget that does not fit below `max_tokens`)."""
    tool = st.builds(
        ToolDefinition,
        name=st.sampled_from(TOOL_NAMES),
        description=TEXTS,
        parameters=st.sampled_from(
            [{"type": "object", "properties": {}}, {"type": "object", "required": ["q"]}]
        ),
    )
    fragment = st.builds(SystemFragment, name=st.sampled_from(["base", "workspace"]), text=TEXTS)
    response_format = st.builds(
        lambda name, strict: ResponseFormat(name=name, schema_={"type": "object"}, strict=strict),
        st.sampled_from(["output", "answer"]),
        st.booleans(),
    )
    return st.builds(
        LlmRequest,
        model=st.sampled_from(MODELS[provider]),
        system=st.lists(fragment, max_size=2).map(tuple),
        messages=_messages(provider),
        tools=st.lists(tool, max_size=2).map(tuple),
        tool_choice=_tool_choices(),
        max_tokens=st.none() | st.integers(1, 40_000),
        temperature=st.none() | st.floats(0, 2),
        top_p=st.none() | st.floats(0, 1, exclude_min=True),
        stop_sequences=st.lists(st.sampled_from(["\n\n", "END"]), max_size=2).map(tuple),
        reasoning=_reasonings(),
        response_format=st.none() | response_format,
        stream=st.booleans(),
    )


def after_round_trip(request: LlmRequest, provider: Provider) -> LlmRequest:
    """What `parse_request(render_request(request))` reads back: `request` with the documented
    losses applied (see each adapter's `parse_request`)."""
    thinking = provider == "anthropic" and isinstance(request.reasoning, ReasoningEffort)
    system = request.system_text()
    return request.model_copy(
        update={
            "system": (SystemFragment(name=FRAGMENT_WIRE, text=system),) if system else (),
            "messages": _messages_after(request.messages, provider, thinking=thinking),
            "tool_choice": request.tool_choice if request.tools else "auto",
            **(_anthropic_after(request) if provider == "anthropic" else _openai_after(request)),
        }
    )


def _messages_after(
    messages: tuple[Message, ...], provider: Provider, *, thinking: bool
) -> tuple[Message, ...]:
    names: dict[str, str] = {}
    kept: list[Message] = []
    for message in messages:
        if isinstance(message, UserMessage):
            kept.append(UserMessage(content=message.content))
        elif isinstance(message, AssistantMessage):
            calls = message.tool_calls
            if provider == "anthropic":
                calls = tuple(
                    call.model_copy(update={"arguments": compact_json(json.loads(call.arguments))})
                    for call in calls
                )
            names.update((call.id, call.name) for call in calls)
            kept.append(
                AssistantMessage(
                    text=message.text or None,
                    tool_calls=calls,
                    reasoning_blocks=message.reasoning_blocks if thinking else (),
                )
            )
        else:
            kept.append(
                ToolResultMessage(
                    tool_call_id=message.tool_call_id,
                    name=names.get(message.tool_call_id, ""),
                    content=message.content,
                    is_error=message.is_error and provider == "anthropic",
                )
            )
    return tuple(kept)


def _openai_after(request: LlmRequest) -> dict[str, object]:
    """Reasoning as sent: an effort as itself unless it is what disabled reasoning sends the
    model (`reasoning_off`), disabled reasoning as disabled where it is said at all."""
    effort = request.reasoning
    off = openai.model_capabilities("openai", request.model).reasoning_off
    if isinstance(effort, ReasoningEffort) and effort.effort != off:
        return {"reasoning": ReasoningEffort(effort=effort.effort)}
    if effort is not None and off is not None:
        return {"reasoning": ReasoningDisabled()}
    return {"reasoning": None}


def _anthropic_after(request: LlmRequest) -> dict[str, object]:
    effort = request.reasoning
    if not isinstance(effort, ReasoningEffort):
        return {
            "reasoning": None,
            "response_format": None,
            "max_tokens": request.max_tokens or anthropic.DEFAULT_MAX_TOKENS,
        }
    budget = anthropic.thinking_budget(effort, request.max_tokens)
    read_as = anthropic.effort_for_budget(budget)
    default = anthropic.THINKING_BUDGETS[read_as] == budget
    return {
        "reasoning": ReasoningEffort(effort=read_as, budget_tokens=None if default else budget),
        "response_format": None,
        "max_tokens": request.max_tokens or anthropic.DEFAULT_MAX_TOKENS + budget,
    }
