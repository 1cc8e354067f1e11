"""The recorded provider traffic of the pydantic-ai corpus (`../shared/corpus`, or the folder
`HARNESS_CORPUS_DIR` names): where it is, each recorded interaction, and each recorded request the
neutral `LlmRequest` can express, rebuilt as one (by small walkers written for reading, not by
the adapters)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmToolCall,
    Message,
    NamedToolChoice,
    ReasoningEffort,
    ResponseFormat,
    SystemFragment,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

Provider = Literal["openai", "anthropic"]
CORPUS_VARIABLE: Final = "HARNESS_CORPUS_DIR"


def corpus_folder() -> Path:
    """The corpus's `pydantic-ai/` folder: under `HARNESS_CORPUS_DIR` when it is set, else
    `../shared/corpus` beside the repository."""
    override = os.environ.get(CORPUS_VARIABLE)
    root = Path(override) if override else Path(__file__).resolve().parents[3] / "shared" / "corpus"
    return root / "pydantic-ai"


def missing_reason(folder: Path) -> str:
    return (
        f"corpus folder {folder} is missing; set {CORPUS_VARIABLE} to the folder holding "
        "pydantic-ai/"
    )


RECORDINGS = corpus_folder()


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """One recorded interaction, as the cassette stores it."""

    name: str
    provider: Provider
    status: int
    request_body: Any
    json_body: Any
    stream_text: str | None


def _interactions() -> Iterator[Recorded]:
    if not RECORDINGS.is_dir():
        return
    for path in sorted(RECORDINGS.rglob("*.yaml")):
        cassette = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        for index, interaction in enumerate(cassette["interactions"]):
            request, response = interaction["request"], interaction["response"]
            uri: str = request["uri"]
            if "/v1/responses" in uri or "count_tokens" in uri:
                continue
            provider: Provider = "anthropic" if "/v1/messages" in uri else "openai"
            assert "/v1/messages" in uri or "chat/completions" in uri, uri
            body = request.get("parsed_body", request.get("body"))
            stream_text = None if "parsed_body" in response else response["body"]["string"]
            yield Recorded(
                name=f"{path.stem}#{index}",
                provider=provider,
                status=response["status"]["code"],
                request_body=json.loads(body) if isinstance(body, str) else body,
                json_body=response.get("parsed_body"),
                stream_text=stream_text,
            )


ALL = list(_interactions())
ERRORS = [case for case in ALL if case.status >= 400]
JSON_REPLIES = [case for case in ALL if case.status < 400 and case.stream_text is None]
STREAMS = [case for case in ALL if case.status < 400 and case.stream_text is not None]


def _tool_choice(value: Any, provider: Provider) -> ToolChoice | None:
    if provider == "openai":
        if value in ("auto", "none", "required"):
            return value  # type: ignore[no-any-return]
        if isinstance(value, dict) and value.get("type") == "function":
            return NamedToolChoice(name=value["function"]["name"])
        return None
    if not isinstance(value, dict) or set(value) - {"type", "name"}:
        return None
    kinds: dict[str, ToolChoice] = {"auto": "auto", "none": "none", "any": "required"}
    if value["type"] == "tool":
        return NamedToolChoice(name=value["name"])
    return kinds.get(value["type"])


def _openai_request(body: dict[str, Any]) -> LlmRequest | None:
    """The neutral request for a recorded Chat Completions body, if it can express it."""
    expressible = {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "stop",
        "reasoning_effort",
        "response_format",
        "stream",
        "stream_options",
        "n",
    }
    if set(body) - expressible or body.get("n", 1) != 1:
        return None
    system: list[SystemFragment] = []
    messages: list[Message] = []
    names: dict[str, str] = {}
    for position, message in enumerate(body["messages"]):
        role, content = message["role"], message.get("content")
        if role == "system" and position == 0 and isinstance(content, str):
            system.append(SystemFragment(name="base", text=content))
        elif role == "user" and isinstance(content, str):
            messages.append(UserMessage(content=content))
        elif role == "assistant" and (content is None or isinstance(content, str)):
            calls = tuple(
                LlmToolCall(
                    id=call["id"],
                    name=call["function"]["name"],
                    arguments=call["function"]["arguments"],
                )
                for call in message.get("tool_calls") or []
            )
            names.update({call.id: call.name for call in calls})
            messages.append(AssistantMessage(text=content, tool_calls=calls))
        elif role == "tool" and isinstance(content, str):
            tool_call_id = message["tool_call_id"]
            messages.append(
                ToolResultMessage(
                    tool_call_id=tool_call_id, name=names[tool_call_id], content=content
                )
            )
        else:
            return None
    tools = []
    for tool in body.get("tools") or []:
        function = tool["function"]
        tools.append(
            ToolDefinition(
                name=function["name"],
                description=function.get("description", ""),
                parameters=function["parameters"],
            )
        )
    response_format = body.get("response_format")
    if response_format is not None and (
        response_format["type"] != "json_schema"
        or set(response_format["json_schema"]) - {"name", "schema", "strict"}
    ):
        return None
    # The adapter sends `max_completion_tokens` only to OpenAI reasoning models.
    if "max_completion_tokens" in body and not re.match(r"o[134]|gpt-5", body["model"]):
        return None
    tool_choice = _tool_choice(body.get("tool_choice", "auto"), "openai")
    if tool_choice is None:
        return None
    effort = body.get("reasoning_effort")
    return LlmRequest(
        model=body["model"],
        system=tuple(system),
        messages=tuple(messages),
        tools=tuple(tools),
        tool_choice=tool_choice,
        max_tokens=body.get("max_tokens") or body.get("max_completion_tokens"),
        temperature=body.get("temperature"),
        top_p=body.get("top_p"),
        stop_sequences=tuple(body.get("stop") or ()),
        reasoning=ReasoningEffort(effort=effort) if effort else None,
        response_format=ResponseFormat(
            name=response_format["json_schema"]["name"],
            schema_=response_format["json_schema"]["schema"],
            strict=response_format["json_schema"].get("strict", False),
        )
        if response_format
        else None,
        stream=body.get("stream", False),
    )


def _anthropic_request(body: dict[str, Any]) -> LlmRequest | None:
    """The neutral request for a recorded Messages body, if it can express it."""
    expressible = {
        "model",
        "max_tokens",
        "system",
        "messages",
        "tools",
        "tool_choice",
        "thinking",
        "temperature",
        "top_p",
        "stop_sequences",
        "stream",
    }
    if set(body) - expressible or not isinstance(body.get("system", ""), str):
        return None
    messages: list[Message] = []
    names: dict[str, str] = {}
    for message in body["messages"]:
        content = message["content"]
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        if message["role"] == "user":
            for block in blocks:
                if block["type"] == "text":
                    messages.append(UserMessage(content=block["text"]))
                elif block["type"] == "tool_result" and isinstance(block["content"], str):
                    messages.append(
                        ToolResultMessage(
                            tool_call_id=block["tool_use_id"],
                            name=names[block["tool_use_id"]],
                            content=block["content"],
                            is_error=block.get("is_error", False),
                        )
                    )
                else:
                    return None
            continue
        reasoning = tuple(b for b in blocks if b["type"] in ("thinking", "redacted_thinking"))
        if list(reasoning) != blocks[: len(reasoning)]:
            return None  # reasoning blocks come first, or the neutral request cannot say it
        blocks = blocks[len(reasoning) :]
        texts = [block["text"] for block in blocks if block["type"] == "text"]
        calls = tuple(
            LlmToolCall(id=block["id"], name=block["name"], arguments=json.dumps(block["input"]))
            for block in blocks
            if block["type"] == "tool_use"
        )
        if (
            len(texts) + len(calls) != len(blocks)
            or len(texts) > 1
            or blocks[: len(texts)] != [b for b in blocks if b["type"] == "text"]
        ):
            return None
        names.update({call.id: call.name for call in calls})
        messages.append(
            AssistantMessage(
                text=texts[0] if texts else None, tool_calls=calls, reasoning_blocks=reasoning
            )
        )
    tools = []
    for tool in body.get("tools") or []:
        if (
            set(tool) - {"name", "description", "input_schema", "strict"}
            or "description" not in tool
        ):
            return None
        tools.append(
            ToolDefinition(
                name=tool["name"], description=tool["description"], parameters=tool["input_schema"]
            )
        )
    tool_choice = _tool_choice(body.get("tool_choice", {"type": "auto"}), "anthropic")
    thinking = body.get("thinking")
    if tool_choice is None or (thinking is not None and thinking.get("type") != "enabled"):
        return None
    return LlmRequest(
        model=body["model"],
        system=(SystemFragment(name="base", text=body["system"]),) if "system" in body else (),
        messages=tuple(messages),
        tools=tuple(tools),
        tool_choice=tool_choice,
        max_tokens=body["max_tokens"],
        temperature=body.get("temperature"),
        top_p=body.get("top_p"),
        stop_sequences=tuple(body.get("stop_sequences") or ()),
        reasoning=ReasoningEffort(effort="medium", budget_tokens=thinking["budget_tokens"])
        if thinking
        else None,
        stream=body.get("stream", False),
    )


def normalized(body: dict[str, Any], provider: Provider) -> dict[str, Any]:
    """The recorded body without what the neutral request deliberately leaves out.

    Dropped: `stream: false` and `n: 1` (defaults), each tool's `strict` flag, and Anthropic's
    `is_error: false`; an OpenAI assistant message without `content` has `content: null`.
    """
    normalized = {
        key: value
        for key, value in body.items()
        if not (key == "stream" and value is False) and not (key == "n" and value == 1)
    }
    if provider == "openai":
        normalized["tools"] = [
            {**tool, "function": {k: v for k, v in tool["function"].items() if k != "strict"}}
            for tool in body.get("tools", [])
        ]
        normalized["messages"] = [
            {"content": None, **message} if message["role"] == "assistant" else message
            for message in body["messages"]
        ]
    else:
        normalized["tools"] = [
            {k: v for k, v in tool.items() if k != "strict"} for tool in body.get("tools", [])
        ]
        normalized["messages"] = [
            {
                **message,
                "content": [
                    {k: v for k, v in block.items() if not (k == "is_error" and v is False)}
                    for block in message["content"]
                ],
            }
            if isinstance(message["content"], list)
            else message
            for message in body["messages"]
        ]
    if not normalized["tools"]:
        del normalized["tools"]
    return normalized


def _expressible() -> list[tuple[Recorded, LlmRequest]]:
    cases = []
    for case in ALL:
        convert = _openai_request if case.provider == "openai" else _anthropic_request
        request = convert(case.request_body)
        if request is not None:
            cases.append((case, request))
    return cases


EXPRESSIBLE = _expressible()
