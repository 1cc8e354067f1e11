"""Scripted model replies, served as real provider wire responses.

A script is a list of replies (`ScriptedReply`): text, text cut off by the token limit, tool
calls (optionally with text), or a provider error. `ScriptTransport` is an `httpx2` transport
(answering `httpx` 0.28 clients too; `HttpxScriptTransport` is typed as one) that answers each
request with the next reply rendered in the wire of the endpoint it was sent to (a plain JSON
body, or an SSE stream when the request asked to stream): Chat Completions at
`/v1/chat/completions`, the Responses wire at `/v1/responses`, Messages at `/v1/messages`,
Gemini at `/v1beta/models/<model>:generateContent` (streamed at `:streamGenerateContent`, as
server-sent events with `?alt=sse`, else as one JSON array, as Gemini does). So a scripted run
parses the same bytes a recorded cassette would. It is not a second code path.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Final, overload
from urllib.parse import parse_qsl

import httpx2
from pydantic import Field, JsonValue, NonNegativeInt, model_validator

from harness.errors import HarnessError
from harness.http_clients import (
    AnyRequest,
    AnyResponse,
    ChunkStream,
    httpx_transport_class,
    library_of,
)
from harness.lazy import on_first_use
from harness.llm._wire import reasoning_token_estimate
from harness.llm.adapters import ReplyRenderer, RequestFormatError, adapter_for, reply_renderer
from harness.llm.models import LlmResponse, LlmToolCall, Usage
from harness.protocol._base import WireModel
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, OtherStop, ToolUse
from harness.providers import Endpoint, Provider, ProviderSpec, detect_spec, find_provider
from harness.sse import parse_sse

if TYPE_CHECKING:
    import httpx

DEFAULT_USAGE: Final = Usage(input_tokens=100, output_tokens=20, total_tokens=120)


class ScriptExhaustedError(HarnessError, AssertionError):
    """The code under test made more model calls than the script has replies."""

    code = "script_exhausted"


class ScriptProviderMismatchError(HarnessError, AssertionError):
    """The code under test called one provider's API with a script built for the other."""

    code = "script_provider_mismatch"


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
    """One model reply in a script.

    `thinking` is the reasoning the model shows before its text and calls, rendered as each
    wire carries it: an Anthropic `thinking` block with a signature, a Gemini
    `thoughtSignature` (the harness asks for no thought text), an OpenAI Responses `reasoning`
    item with its summary; Chat Completions shows no reasoning but counts it. Its tokens
    (`reasoning_token_estimate`, unless `usage` says) are part of the reply's output tokens and
    its `reasoning_tokens`. A reply of thinking alone, `truncated`, is a model that spent the
    whole `max_tokens` thinking: no text, stopped by the limit.
    """

    text: str | None = None
    truncated: bool = False
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    thinking: str | None = Field(default=None, min_length=1)
    stop: str | None = None
    error: ScriptedError | None = None
    usage: Usage | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ScriptedReply:
        if self.error is not None and (
            self.text is not None or self.tool_calls or self.thinking is not None
        ):
            raise ValueError("an error reply has no text, no tool calls and no thinking")
        if self.error is None and self.text is None and not self.tool_calls and not self.thinking:
            raise ValueError("a reply needs text, tool_calls, thinking, or error")
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
            thinking=self.thinking or "",
            stop=stop,
            usage=self.usage or self._default_usage(),
        )

    def _default_usage(self) -> Usage:
        if self.thinking is None:
            return DEFAULT_USAGE
        reasoning = reasoning_token_estimate(self.thinking)
        return DEFAULT_USAGE.model_copy(
            update={
                "output_tokens": DEFAULT_USAGE.output_tokens + reasoning,
                "total_tokens": DEFAULT_USAGE.total_tokens + reasoning,
                "reasoning_tokens": reasoning,
            }
        )


class ScriptTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """Answer requests with scripted replies rendered in `provider`'s wire format, in order.

    `requests` keeps every request received (of the client's own library). Each reply is
    rendered in the wire of the endpoint the request was sent to (`ProviderSpec.endpoint_at`;
    a path no provider is known by gets the provider's own wire). A request for the other
    provider's API (a Messages call to an OpenAI script) is a `ScriptProviderMismatchError`
    naming both, not a reply the client cannot parse; a request for an API of the provider that
    a script cannot answer (`/v1/embeddings`, `/v1/completions`, `/v1/messages/count_tokens`)
    is answered 404 `not_found_error` in the provider's error format, naming the path and the
    endpoints the script answers, and uses no reply.
    """

    def __init__(
        self, provider: Provider, replies: list[ScriptedReply], *, start: NonNegativeInt = 0
    ):
        self.provider = provider
        self.adapter = adapter_for(provider)
        spec = find_provider(provider)
        # a non-streamed reply cannot carry cut-off tool input where input is always an object,
        # nor a streamed one where calls stream whole
        self._objects_only = spec is not None and spec.tool_input_is_object
        self._whole_calls = spec is not None and spec.tool_input_streams_whole
        self.replies = list(replies)
        self.position = start
        self.requests: list[AnyRequest] = []
        self.answers_a_target = False
        """Set by a target run, whose script holds the replies the reference's calls use: a call
        beyond them is the target's one call more than the reference, not a reply missing."""
        self._lock = threading.Lock()

    @overload
    def handle_request(self, request: httpx2.Request) -> httpx2.Response: ...
    @overload
    def handle_request(self, request: httpx.Request) -> httpx.Response: ...
    def handle_request(self, request: AnyRequest) -> AnyResponse:
        request.read()
        return self._answer(request)

    @overload
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response: ...
    @overload
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response: ...
    async def handle_async_request(self, request: AnyRequest) -> AnyResponse:
        await request.aread()
        return self._answer(request)

    def _beyond_the_script(self, request: AnyRequest, position: int) -> str:
        """What a call after the last reply is: which call, work or forced, and what to do."""
        call = (
            f"call #{position + 1}, {self._call_kind(request)} "
            f"({request.method} {request.url.path})"
        )
        if self.answers_a_target:
            return (
                f"the target made one call more than the reference: {call}, after the "
                f"{len(self.replies)} repl(ies) of the script, which answer the calls the "
                "reference makes"
            )
        return (
            f"the script has {len(self.replies)} repl(ies) and the code under test made {call}; "
            "add a reply"
        )

    def _call_kind(self, request: AnyRequest) -> str:
        try:
            forced = self.adapter.forced_tool(json.loads(request.content))
        except (ValueError, HarnessError):
            return "a call whose body is not a request of this API"
        return f"a forced call of {forced}" if forced is not None else "a work call"

    def _answer(self, request: AnyRequest) -> AnyResponse:
        library = library_of(request)
        path = request.url.path
        spoken = detect_spec(path)
        if spoken is not None and spoken.name != self.provider:
            raise ScriptProviderMismatchError(
                f"the script renders {self.provider} replies but the code under test called the "
                f"{spoken.name} API ({request.method} {path}); build the script for "
                f"{spoken.name}, or point the client at the {self.provider} API"
            )
        renderer = self._renderer(spoken, path)
        if renderer is None:
            assert spoken is not None
            message = (
                f"the scripted {self.provider} API answers {_endpoint_list(spoken)}; it cannot "
                f"answer {request.method} {path}, which the code under test called"
            )
            return library.response(
                404,
                headers=[("content-type", "application/json")],
                content=json.dumps(
                    self.adapter.render_error(404, "not_found_error", message)
                ).encode("utf-8"),
            )
        with self._lock:
            self.requests.append(request)
            position = self.position
            if position >= len(self.replies):
                raise ScriptExhaustedError(self._beyond_the_script(request, position))
            self.position += 1
        reply = self.replies[position]
        body = _json_object(request.content, self.provider)
        endpoint = None if spoken is None else spoken.endpoint_at(path)
        # an API that names the model in its path, and streams by path (Gemini), says so there
        model = (endpoint.model_in(path) if endpoint is not None else None) or str(
            body.get("model", "scripted-model")
        )
        streamed = (endpoint is not None and endpoint.streams) or bool(body.get("stream"))
        if reply.error is not None:
            error = reply.error.body
            if error is None:
                error = renderer.render_error(
                    reply.error.status, reply.error.type, reply.error.message
                )
            return library.response(
                reply.error.status,
                headers=[("content-type", "application/json")],
                content=json.dumps(error).encode("utf-8"),
            )
        response = reply.to_response(position)
        response_id = f"scripted-{position + 1}"
        if self._objects_only and (not streamed or self._whole_calls):
            response = _objects_only(response)
        if streamed:
            events = renderer.render_stream(response, model=model, response_id=response_id)
            if endpoint is not None and not _asks_for(request, endpoint):
                return library.response(
                    200,
                    headers=[("content-type", "application/json")],
                    content=_json_array(events).encode("utf-8"),
                )
            return library.response(
                200,
                headers=[("content-type", "text/event-stream")],
                stream=library.stream_class(ChunkStream)(
                    [event.encode("utf-8") for event in events]
                ),
            )
        rendered = renderer.render_response(response, model=model, response_id=response_id)
        return library.response(
            200,
            headers=[("content-type", "application/json")],
            content=json.dumps(rendered).encode("utf-8"),
        )

    def _renderer(self, spoken: ProviderSpec | None, path: str) -> ReplyRenderer | None:
        """What renders the reply to a request at `path`: the renderer of the endpoint's wire;
        the provider's own adapter for a path no provider is known by; None for an API of the
        provider that no endpoint serves."""
        if spoken is None:
            return self.adapter
        endpoint = spoken.endpoint_at(path)
        return None if endpoint is None else reply_renderer(spoken, endpoint.wire)


def _asks_for(request: AnyRequest, endpoint: Endpoint) -> bool:
    """Whether `request` carries the query the endpoint streams events with (`alt=sse`)."""
    wanted = parse_qsl(endpoint.query)
    sent = list(request.url.params.multi_items())
    return all(pair in sent for pair in wanted)


def _json_array(events: list[str]) -> str:
    """A stream's chunks as the one JSON array an API that streams by path answers with when the
    query does not ask for events (Gemini without `alt=sse`)."""
    data = [event.data for event in parse_sse("".join(events)) if event.data is not None]
    return "[" + ",\r\n".join(data) + "]"


def _endpoint_list(spec: ProviderSpec) -> str:
    """`spec`'s endpoints as a message names them: `POST /v1/chat/completions and /v1/...`."""
    paths = [endpoint.path for endpoint in spec.endpoints]
    listed = paths[0] if len(paths) == 1 else f"{', '.join(paths[:-1])} and {paths[-1]}"
    return f"POST {listed}"


if TYPE_CHECKING:

    class HttpxScriptTransport(ScriptTransport, httpx.BaseTransport, httpx.AsyncBaseTransport):
        pass

else:  # made on first use: it imports `httpx` 0.28
    __getattr__, __dir__ = on_first_use(
        __name__,
        {
            "HttpxScriptTransport": lambda: httpx_transport_class(
                ScriptTransport,
                """`ScriptTransport`, typed as an `httpx` 0.28 transport too, for code that
                type-checks `httpx.Client(transport=...)`; it behaves exactly the same.""",
            )
        },
    )


def _json_object(content: bytes, provider: str) -> dict[str, Any]:
    """The request body as the JSON object every provider API takes, or `RequestFormatError`."""
    try:
        body = json.loads(content or b"{}")
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise RequestFormatError(
            f"the scripted {provider} API takes a JSON object as the request body; the code under "
            "test sent something else"
        )
    return body


def _objects_only(response: LlmResponse) -> LlmResponse:
    """A non-streamed reply whose tool input is always an object (`tool_input_is_object`, as in
    Messages) cannot carry a partial one: a cut-off call goes out with `input: {}` and
    `stop_reason: max_tokens`, which is still read as the cut-off it is."""
    calls = []
    for call in response.tool_calls:
        try:
            valid = isinstance(json.loads(call.arguments or "{}"), dict)
        except ValueError:
            valid = False
        calls.append(call if valid else call.model_copy(update={"arguments": "{}"}))
    return response.model_copy(update={"tool_calls": tuple(calls)})


ScriptExhausted = ScriptExhaustedError
"""The earlier name of `ScriptExhaustedError`, deprecated: kept until 1.0."""

ScriptProviderMismatch = ScriptProviderMismatchError
"""The earlier name of `ScriptProviderMismatchError`, deprecated: kept until 1.0."""
