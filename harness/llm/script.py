"""Scripted model replies, served as real provider wire responses.

A script is a list of replies (`ScriptedReply`): text, text cut off by the token limit, tool
calls (optionally with text), or a provider error. `ScriptTransport` is an httpx transport that
answers each request with the next reply rendered by the provider adapter (a plain JSON body, or
an SSE stream when the request asked to stream), so a scripted run parses the same bytes a
recorded cassette would. It is not a second code path.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Final

import httpx
from pydantic import Field, JsonValue, NonNegativeInt, model_validator

from harness.errors import HarnessError
from harness.llm.adapters import adapter_for
from harness.llm.capabilities import Provider
from harness.llm.models import LlmResponse, LlmToolCall, Usage
from harness.protocol._base import WireModel
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, OtherStop, ToolUse

DEFAULT_USAGE: Final = Usage(input_tokens=100, output_tokens=20, total_tokens=120)


class ScriptExhausted(HarnessError, AssertionError):
    """The code under test made more model calls than the script has replies."""

    code = "script_exhausted"


class ScriptedToolCall(WireModel):
    """A tool call; `arguments` as a JSON value, or as raw text (which may be cut-off JSON)."""

    name: str = Field(min_length=1)
    arguments: JsonValue = Field(default_factory=dict)
    id: str | None = None

    def raw_arguments(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


class ScriptedError(WireModel):
    """A provider error answer: HTTP status and either the raw error `body` or a type and message
    rendered in the provider's documented error format."""

    status: int = Field(ge=400, le=599)
    type: str = "api_error"
    message: str = "scripted provider error"
    body: JsonValue = None


class ScriptedReply(WireModel):
    """One model reply in a script."""

    text: str | None = None
    truncated: bool = False
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    stop: str | None = None
    error: ScriptedError | None = None
    usage: Usage | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ScriptedReply:
        if self.error is not None and (self.text is not None or self.tool_calls):
            raise ValueError("an error reply has no text and no tool calls")
        if self.error is None and self.text is None and not self.tool_calls:
            raise ValueError("a reply needs text, tool_calls, or error")
        return self

    def to_response(self, position: int) -> LlmResponse:
        """The neutral reply; tool-call ids are deterministic (`call_<position>_<n>`)."""
        stop: AnyStopKind
        if self.truncated:
            stop = LimitReached()
        elif self.stop is not None:
            stop = OtherStop(reason=self.stop)
        elif self.tool_calls:
            stop = ToolUse()
        else:
            stop = EndTurn()
        metadata: dict[str, JsonValue] = {}
        if self.stop == "refusal":
            # OpenAI carries a refusal's words in `message.refusal`; Anthropic in the text
            metadata["refusal"] = self.text or "I can't help with that."
        return LlmResponse(
            metadata=metadata,
            text=self.text or "",
            tool_calls=tuple(
                LlmToolCall(
                    id=call.id or f"call_{position}_{index}",
                    name=call.name,
                    arguments=call.raw_arguments(),
                )
                for index, call in enumerate(self.tool_calls)
            ),
            stop=stop,
            usage=self.usage or DEFAULT_USAGE,
        )


class ScriptTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Answer requests with scripted replies rendered in `provider`'s wire format, in order."""

    def __init__(
        self, provider: Provider, replies: list[ScriptedReply], *, start: NonNegativeInt = 0
    ):
        self.provider = provider
        self.adapter = adapter_for(provider)
        self.replies = list(replies)
        self.position = start
        self.requests: list[httpx.Request] = []
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        return self._answer(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        return self._answer(request)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.requests.append(request)
            position = self.position
            if position >= len(self.replies):
                raise ScriptExhausted(
                    f"the script has {len(self.replies)} repl(ies) and the code under test made "
                    f"call #{position + 1} ({request.method} {request.url.path}); add a reply"
                )
            self.position += 1
        reply = self.replies[position]
        body = json.loads(request.content or b"{}")
        model = str(body.get("model", "scripted-model"))
        if reply.error is not None:
            error = reply.error.body
            if error is None:
                error = self.adapter.render_error(
                    reply.error.status, reply.error.type, reply.error.message
                )
            return httpx.Response(reply.error.status, json=error)
        response = reply.to_response(position)
        response_id = f"scripted-{position + 1}"
        if self.provider == "anthropic" and not body.get("stream"):
            response = _anthropic_plain(response)
        if body.get("stream"):
            events = self.adapter.render_stream(response, model=model, response_id=response_id)
            return httpx.Response(
                200,
                headers={"content-type": "text/event-stream"},
                stream=_EventStream([event.encode("utf-8") for event in events]),
            )
        return httpx.Response(
            200, json=self.adapter.render_response(response, model=model, response_id=response_id)
        )


class _EventStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """One chunk per SSE event, as a provider delivers them."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


def _anthropic_plain(response: LlmResponse) -> LlmResponse:
    """A non-streamed Messages reply cannot carry a partial tool input: a cut-off call goes out
    with `input: {}` and `stop_reason: max_tokens`, which is still read as the cut-off it is."""
    calls = []
    for call in response.tool_calls:
        try:
            valid = isinstance(json.loads(call.arguments or "{}"), dict)
        except ValueError:
            valid = False
        calls.append(call if valid else call.model_copy(update={"arguments": "{}"}))
    return response.model_copy(update={"tool_calls": tuple(calls)})
