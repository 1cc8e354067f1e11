"""The model calls, made with the official SDKs: OpenAI Chat Completions and Anthropic Messages.

Each turns the agent's `Request` into the provider's request body and its answer into a `Reply`.
Neither SDK retries (`max_retries=0`): a failed call is the agent's to handle, as a failed
attempt or a failed run.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import openai
from agent import Model, ModelCallFailed, Reply, Request, ToolCall, ToolChoiceUnsupportedError

API_KEY = "example-target"  # `harness serve` takes any key and forwards none

# OpenAI models that take no tools at all, and those that take max_completion_tokens.
OPENAI_NO_TOOLS = re.compile(r"^o1-(mini|preview)")
OPENAI_COMPLETION_TOKENS = re.compile(r"^(o[134](-|$)|gpt-5)")
OPENAI_REFUSES_TOOLS = re.compile(
    r"\b(tools?|tool_choice|function calling)\b[^.]*\b(is|are) not supported"
    r"|unsupported (value|parameter): '(tools|tool_choice)'",
    re.I,
)
OPENAI_STOPS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "limit_reached"}
# A reasoning model reasons unless told not to: what turns its reasoning off, or as far down as
# it goes (a forced call disables reasoning). The first match wins.
OPENAI_REASONING_OFF = (
    (re.compile(r"o1-(mini|preview)"), None),  # takes no effort at all
    (re.compile(r"gpt-5[.\d]*-chat"), None),  # does not reason
    (re.compile(r"gpt-5\.[1-9]"), "none"),  # from GPT-5.1 on, reasoning turns off
    (re.compile(r"gpt-5"), "minimal"),  # GPT-5's least
    (re.compile(r"o[134](-|$)"), "low"),  # the o-series' least
)

ANTHROPIC_VERSION = "2023-06-01"  # the Messages API version this code is written against
ANTHROPIC_DEFAULT_MAX_TOKENS = 4096
ANTHROPIC_THINKING_BUDGETS = {"minimal": 1024, "low": 4096, "medium": 8192, "high": 16384}
ANTHROPIC_STOPS = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "limit_reached",
    "model_context_window_exceeded": "limit_reached",
}


def connect(provider: str, base_url: str) -> Model:
    """The model `provider` serves at `base_url`, as a function from request to reply."""
    if provider == "openai":
        return OpenAIChat(base_url).complete
    return AnthropicMessages(base_url).complete


class OpenAIChat:
    def __init__(self, base_url: str) -> None:
        self.client = openai.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)

    def complete(self, request: Request) -> Reply:
        if request.tools and OPENAI_NO_TOOLS.match(request.model):
            raise ToolChoiceUnsupportedError(f"{request.model} takes no tools")
        try:
            answer = self.client.chat.completions.create(**self.body(request))
            return self.streamed(answer) if request.stream else self.reply(answer)
        except openai.APIStatusError as error:
            if OPENAI_REFUSES_TOOLS.search(error.message):
                raise ToolChoiceUnsupportedError(error.message) from error
            raise ModelCallFailed(f"status {error.status_code}") from error
        except openai.APIError as error:
            raise ModelCallFailed(type(error).__name__) from error

    @staticmethod
    def body(request: Request) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        for message in request.messages:
            if message["role"] == "tool":
                message = {k: message[k] for k in ("role", "tool_call_id", "content")}
            elif message["role"] == "assistant":
                calls = message["tool_calls"]
                message = {"role": "assistant", "content": message["content"] or None}
                if calls:
                    message["tool_calls"] = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in calls
                    ]
            messages.append(message)
        body: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.tools:
            body["tools"] = [{"type": "function", "function": tool_spec(t)} for t in request.tools]
            choice = request.tool_choice
            body["tool_choice"] = (
                choice if choice == "auto" else {"type": "function", "function": {"name": choice}}
            )
        if request.max_tokens is not None:
            limit = (
                "max_completion_tokens"
                if OPENAI_COMPLETION_TOKENS.match(request.model)
                else "max_tokens"
            )
            body[limit] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.reasoning == "disabled":
            off = next(
                (off for rule, off in OPENAI_REASONING_OFF if rule.match(request.model)), None
            )
            if off is not None:
                body["reasoning_effort"] = off
        elif request.reasoning is not None:
            body["reasoning_effort"] = request.reasoning
        if request.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    @staticmethod
    def reply(completion: Any) -> Reply:
        choice = completion.choices[0]
        calls = [
            ToolCall(call.id, call.function.name, call.function.arguments or "")
            for call in choice.message.tool_calls or []
        ]
        stop = (
            "other" if choice.message.refusal else OPENAI_STOPS.get(choice.finish_reason, "other")
        )
        return Reply(choice.message.content or "", calls, stop)

    @staticmethod
    def streamed(chunks: Any) -> Reply:
        """Text deltas joined, tool-call fragments joined by index, the last finish reason."""
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish_reason = None
        for chunk in chunks:
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
                for part in choice.delta.tool_calls or []:
                    call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = call["id"] or part.id or ""
                    if part.function is not None:
                        call["name"] = call["name"] or part.function.name or ""
                        call["arguments"] += part.function.arguments or ""
                finish_reason = choice.finish_reason or finish_reason
        tool_calls = [ToolCall(**calls[index]) for index in sorted(calls)]
        return Reply("".join(text), tool_calls, OPENAI_STOPS.get(finish_reason or "", "other"))


class AnthropicMessages:
    def __init__(self, base_url: str) -> None:
        self.client = anthropic.Anthropic(
            base_url=base_url,
            api_key=API_KEY,
            max_retries=0,
            default_headers={"anthropic-version": ANTHROPIC_VERSION},
        )

    def complete(self, request: Request) -> Reply:
        body = self.body(request)
        try:
            if not request.stream:
                return self.reply(self.client.messages.create(**body), {})
            # Arguments are kept as the raw JSON text that arrived: when the token limit cuts a
            # call off, that text is incomplete and the SDK's parsed input is only a guess.
            with self.client.messages.stream(**body) as stream:
                partial: dict[int, str] = {}
                for event in stream:
                    if (
                        event.type == "content_block_delta"
                        and event.delta.type == "input_json_delta"
                    ):
                        partial[event.index] = (
                            partial.get(event.index, "") + event.delta.partial_json
                        )
                return self.reply(stream.get_final_message(), partial)
        except anthropic.APIStatusError as error:
            message = error.message.lower()
            if "tool_choice" in message and ("thinking" in message or "forces tool use" in message):
                raise ToolChoiceUnsupportedError(error.message) from error
            raise ModelCallFailed(f"status {error.status_code}") from error
        except anthropic.APIError as error:
            raise ModelCallFailed(type(error).__name__) from error

    @staticmethod
    def body(request: Request) -> dict[str, Any]:
        effort = request.reasoning if request.reasoning != "disabled" else None
        budget = ANTHROPIC_THINKING_BUDGETS[effort] if effort else 0
        max_tokens = request.max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS + budget
        if effort and request.max_tokens:
            budget = max(1024, min(budget, max_tokens - 1))  # thinking counts toward max_tokens
        body: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens}
        if request.system:
            body["system"] = request.system
        body["messages"] = anthropic_messages(request.messages, thinking=bool(effort))
        if request.tools:
            body["tools"] = [
                {
                    "name": t["name"],
                    "description": t["description"],
                    "input_schema": t["parameters"],
                }
                for t in request.tools
            ]
            choice = request.tool_choice
            body["tool_choice"] = (
                {"type": "auto"} if choice == "auto" else {"type": "tool", "name": choice}
            )
        if effort:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    @staticmethod
    def reply(message: Any, partial: dict[int, str]) -> Reply:
        text, calls, reasoning = [], [], []
        for index, block in enumerate(message.content):
            if block.type == "text":
                text.append(block.text)
            elif block.type == "tool_use":
                arguments = partial.get(index) or json.dumps(
                    block.input, separators=(",", ":"), ensure_ascii=False
                )
                calls.append(ToolCall(block.id, block.name, arguments))
            elif block.type in ("thinking", "redacted_thinking"):
                reasoning.append(block.model_dump())
        stop = ANTHROPIC_STOPS.get(message.stop_reason or "", "other")
        return Reply("".join(text), calls, stop, reasoning)


def anthropic_messages(messages: list[dict[str, Any]], *, thinking: bool) -> list[dict[str, Any]]:
    """Consecutive user text and tool results go into one `user` message, results first as the
    model left them; a turn's thinking is sent back before its tool calls while thinking is on."""
    rendered: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "assistant":
            blocks = list(message.get("reasoning_blocks", [])) if thinking else []
            if message["content"]:
                blocks.append({"type": "text", "text": message["content"]})
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": c.id,
                    "name": c.name,
                    "input": json.loads(c.arguments or "{}"),
                }
                for c in message["tool_calls"]
            )
            rendered.append({"role": "assistant", "content": blocks})
            continue
        if message["role"] == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message["content"],
            }
            if message["is_error"]:
                block["is_error"] = True
        else:
            block = {"type": "text", "text": message["content"]}
        if not rendered or rendered[-1]["role"] != "user":
            rendered.append({"role": "user", "content": []})
        rendered[-1]["content"].append(block)
    return rendered


def tool_spec(tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": tool["name"],
        "description": tool["description"],
        "parameters": tool["parameters"],
    }
