"""Scripted completers: deterministic stand-ins for the LLM gateway in unit tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.llm.models import LlmRequest, LlmResponse, LlmToolCall, Usage
from harness.protocol.outcome import AnyStopKind, EndTurn, ToolUse

Script = Callable[[LlmRequest], LlmResponse]


@dataclass
class TestCompleter:
    """Answers requests from a list of replies, in order, and keeps every request it got."""

    __test__ = False

    replies: Sequence[LlmResponse | Exception]
    requests: list[LlmRequest] = field(default_factory=list)

    def complete(self, request: LlmRequest) -> LlmResponse:
        self.requests.append(request)
        reply = self.replies[len(self.requests) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply

    @property
    def last_request(self) -> LlmRequest:
        return self.requests[-1]


def text_reply(text: str, stop: AnyStopKind | None = None, **extra: object) -> LlmResponse:
    return LlmResponse.model_validate(
        {"text": text, "stop": stop or EndTurn(), "usage": Usage(total_tokens=10), **extra}
    )


def tool_reply(*calls: tuple[str, str], total_tokens: int = 128, **extra: object) -> LlmResponse:
    return LlmResponse.model_validate(
        {
            "tool_calls": [
                LlmToolCall(id=f"call_{index}", name=name, arguments=arguments)
                for index, (name, arguments) in enumerate(calls)
            ],
            "stop": ToolUse(),
            "usage": Usage(total_tokens=total_tokens),
            **extra,
        }
    )
