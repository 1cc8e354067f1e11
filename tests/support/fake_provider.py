"""A loopback HTTP server that speaks the providers' wire: OpenAI Chat Completions and Responses,
and Anthropic Messages, each as plain JSON and as chunked `text/event-stream`.

Tests record through it as they would through the real providers: real sockets, real headers,
plain JSON and server-sent events. Replies are scripted per test; every request is kept for
assertions.

The reply shapes are transcribed from the providers' API references, independently of the
harness's own renderers in `harness.llm`, so a test that records here checks the harness (and the
official SDKs parsing the replay) against the wire rather than against itself. `Answer` is what the
model says whatever the wire (text, tool calls, cut off by the token limit) and `ProviderError` a
refusal; `reply_for` puts either on the wire a request came in on, and `answer_by_prompt` is a
script that picks one by the request's last user prompt.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
MESSAGES_PATH = "/v1/messages"
CREATED = 1_700_000_000


@dataclass(frozen=True, kw_only=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One scripted answer: status, extra headers, and a JSON body or a list of SSE blocks.

    `pace`, for a stream, is called before event `index` is written and with `len(events)` once
    the last one is out, so a test can hold a stream between two events and know when it ended.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    events: list[str] | None = None
    pace: Callable[[int], None] | None = None


Script = Callable[[ReceivedRequest], Reply]


@dataclass
class FakeProvider:
    """A running fake provider: its base URL, every request it received, and the exact body bytes
    of every answer it finished (in the order of `received` when requests come one at a time)."""

    base_url: str
    received: list[ReceivedRequest]
    sent: list[bytes] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A function call the model makes; `arguments` is the JSON object it passes."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What the model says, whatever the wire: text, then tool calls.

    `cut_off` means the token limit stopped it (`finish_reason: length`, an `incomplete`
    response, `stop_reason: max_tokens`); the text is then what was produced before the stop.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    cut_off: bool = False
    input_tokens: int = 11
    output_tokens: int = 7


@dataclass(frozen=True, kw_only=True)
class ProviderError:
    """A refusal in the provider's own error shape; `kind` is Anthropic's error type and
    `code` OpenAI's error code.

    `mid_stream` makes a streamed Messages request fail after it started, as Anthropic does when
    it is overloaded: status 200, `message_start`, then an `error` event. Other requests get the
    error status.
    """

    status: int = 429
    kind: str = "rate_limit_error"
    code: str = "rate_limit_exceeded"
    message: str = "Rate limit reached for requests. Try again in 20s."
    mid_stream: bool = False


Outcome = Answer | ProviderError


def pieces(text: str, parts: int = 3) -> list[str]:
    """`text` split into up to `parts` consecutive non-empty pieces, as a stream delivers it."""
    if not text:
        return []
    size = -(-len(text) // parts)
    return [text[start : start + size] for start in range(0, len(text), size)]


def sse(data: Any, event: str | None = None) -> str:
    """One server-sent event block: an optional `event:` line, the data, the closing blank line."""
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


def event_stream(events: list[str]) -> Reply:
    return Reply(headers={"content-type": "text/event-stream"}, events=events)


# -- OpenAI Chat Completions -----------------------------------------------------------------------


def _chat_finish_reason(answer: Answer) -> str:
    if answer.cut_off:
        return "length"
    return "tool_calls" if answer.tool_calls else "stop"


def _chat_usage(answer: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": answer.output_tokens,
        "total_tokens": answer.input_tokens + answer.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_envelope(model: str, obj: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake1",
        "object": obj,
        "created": CREATED,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": "fp_fake",
        "choices": choices,
    }


def _chat_function(call: ToolCall) -> dict[str, str]:
    return {"name": call.name, "arguments": json.dumps(call.arguments)}


def openai_chat_reply(
    answer: Answer, *, model: str = "gpt-4o-mini", stream: bool = False, usage_chunk: bool = False
) -> Reply:
    """`answer` as a `chat.completion`, or as `chat.completion.chunk` events ending in
    `data: [DONE]`. When the request set `stream_options.include_usage`, every chunk carries
    `usage: null` and a last chunk with no choices carries the usage. The first chunk gives the
    role; a reply that starts with a tool call opens with it (`content: null`)."""
    finish = _chat_finish_reason(answer)
    if not stream:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": answer.text or None,
            "refusal": None,
        }
        if answer.tool_calls:
            message["tool_calls"] = [
                {"id": call.id, "type": "function", "function": _chat_function(call)}
                for call in answer.tool_calls
            ]
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        body = _chat_envelope(model, "chat.completion", [choice])
        return Reply(body={**body, "usage": _chat_usage(answer)})

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        envelope = _chat_envelope(model, "chat.completion.chunk", [choice])
        return sse({**envelope, "usage": None} if usage_chunk else envelope)

    deltas: list[dict[str, Any]] = [{"content": piece} for piece in pieces(answer.text)]
    for index, call in enumerate(answer.tool_calls):
        opening = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        deltas.append({"tool_calls": [{"index": index, **opening}]})
        deltas += [
            {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            for piece in pieces(_chat_function(call)["arguments"])
        ]
    if answer.tool_calls and not answer.text:
        first = {"role": "assistant", "content": None, **deltas.pop(0), "refusal": None}
    else:
        first = {"role": "assistant", "content": "", "refusal": None}
    events = [chunk(first), *(chunk(delta) for delta in deltas), chunk({}, finish)]
    if usage_chunk:
        usage = {**_chat_envelope(model, "chat.completion.chunk", []), "usage": _chat_usage(answer)}
        events.append(sse(usage))
    return event_stream([*events, sse("[DONE]")])


def openai_text_reply(text: str, *, model: str = "gpt-4o-mini") -> Reply:
    return openai_chat_reply(Answer(text=text, input_tokens=5, output_tokens=2), model=model)


def openai_stream_reply(text: str) -> Reply:
    return openai_chat_reply(Answer(text=text), stream=True)


def openai_error_reply(error: ProviderError) -> Reply:
    """OpenAI's error object: `{"error": {"message", "type", "param", "code"}}`."""
    kind = "requests" if error.status == 429 else "invalid_request_error"
    body = {"error": {"message": error.message, "type": kind, "param": None, "code": error.code}}
    return Reply(status=error.status, body=body)


# -- OpenAI Responses ------------------------------------------------------------------------------


def _response_items(answer: Answer) -> list[dict[str, Any]]:
    """The output items, keys in the order OpenAI sends them; when cut off, the last item is
    the one the token limit stopped."""
    items: list[dict[str, Any]] = []
    if answer.text:
        text = {"type": "output_text", "annotations": [], "logprobs": [], "text": answer.text}
        items.append(
            {
                "id": "msg_fake1",
                "type": "message",
                "status": "completed",
                "content": [text],
                "role": "assistant",
            }
        )
    items += [
        {
            "id": f"fc_fake{number}",
            "type": "function_call",
            "status": "completed",
            "arguments": json.dumps(call.arguments),
            "call_id": call.id,
            "name": call.name,
        }
        for number, call in enumerate(answer.tool_calls, start=1)
    ]
    if answer.cut_off and items:
        items[-1]["status"] = "incomplete"
    return items


def _response_object(answer: Answer, model: str, *, done: bool) -> dict[str, Any]:
    """A `response` with the fields of recorded ones, in their order; the request's parameters
    are not echoed (they keep their defaults)."""
    status = "incomplete" if answer.cut_off else "completed"
    return {
        "id": "resp_fake1",
        "object": "response",
        "created_at": CREATED,
        "status": status if done else "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if done and answer.cut_off else None,
        "instructions": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "model": model,
        "output": _response_items(answer) if done else [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": answer.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": answer.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": answer.input_tokens + answer.output_tokens,
        }
        if done
        else None,
        "user": None,
        "metadata": {},
    }


Event = Callable[..., str]
"""Builds one event block of a stream from its type and fields."""


def _output_item_events(event: Event, index: int, item: dict[str, Any]) -> list[str]:
    """The events that stream one Responses output item, in the order they are numbered: added,
    its deltas, done."""
    place = {"item_id": item["id"], "output_index": index}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        events = [
            event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            ),
            event("response.content_part.added", **place, content_index=0, part=empty),
        ]
        events += [
            event("response.output_text.delta", **place, content_index=0, delta=piece, logprobs=[])
            for piece in pieces(text)
        ]
        events += [
            event("response.output_text.done", **place, content_index=0, text=text, logprobs=[]),
            event("response.content_part.done", **place, content_index=0, part=item["content"][0]),
        ]
    else:
        events = [
            event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
        ]
        events += [
            event("response.function_call_arguments.delta", **place, delta=piece)
            for piece in pieces(item["arguments"])
        ]
        events.append(
            event("response.function_call_arguments.done", **place, arguments=item["arguments"])
        )
    events.append(event("response.output_item.done", output_index=index, item=item))
    return events


def openai_responses_reply(
    answer: Answer, *, model: str = "gpt-4o-mini", stream: bool = False
) -> Reply:
    """`answer` as a `response` object, or as the Responses event stream: `response.created`,
    `response.in_progress`, per output item `output_item.added`, its text or argument deltas and
    `.done` events, `output_item.done`, then `response.completed` (`response.incomplete` when
    cut off). Every event carries its `sequence_number`; its keys come as OpenAI sends them,
    `type` first and the others in alphabetical order."""
    if not stream:
        return Reply(body=_response_object(answer, model, done=True))
    numbers = count()

    def event(name: str, **fields: Any) -> str:
        fields["sequence_number"] = next(numbers)
        return sse({"type": name, **dict(sorted(fields.items()))}, event=name)

    pending = _response_object(answer, model, done=False)
    events = [
        event("response.created", response=pending),
        event("response.in_progress", response=pending),
    ]
    for index, item in enumerate(_response_items(answer)):
        events += _output_item_events(event, index, item)
    final = "response.incomplete" if answer.cut_off else "response.completed"
    events.append(event(final, response=_response_object(answer, model, done=True)))
    return event_stream(events)


# -- Anthropic Messages ----------------------------------------------------------------------------


def _anthropic_stop_reason(answer: Answer) -> str:
    if answer.cut_off:
        return "max_tokens"
    return "tool_use" if answer.tool_calls else "end_turn"


def _anthropic_blocks(answer: Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in answer.tool_calls
    ]
    return blocks


def _anthropic_message(answer: Answer, model: str, *, done: bool) -> dict[str, Any]:
    return {
        "id": "msg_fake1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(answer) if done else [],
        "stop_reason": _anthropic_stop_reason(answer) if done else None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": answer.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": answer.output_tokens if done else 1,
        },
    }


def anthropic_messages_reply(
    answer: Answer, *, model: str = "claude-sonnet-4-5", stream: bool = False
) -> Reply:
    """`answer` as a `message`, or as the full Messages event stream: `message_start`, `ping`,
    per content block `content_block_start`, its `text_delta` / `input_json_delta` deltas and
    `content_block_stop`, then `message_delta` (stop reason, usage) and `message_stop`."""
    if not stream:
        return Reply(body=_anthropic_message(answer, model, done=True))

    def event(name: str, **fields: Any) -> str:
        return sse({"type": name, **fields}, event=name)

    events = [event("message_start", message=_anthropic_message(answer, model, done=False))]
    events.append(event("ping"))
    for index, block in enumerate(_anthropic_blocks(answer)):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
        else:
            opening = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in ["", *pieces(json.dumps(block["input"]))]
            ]
        events.append(event("content_block_start", index=index, content_block=opening))
        events += [event("content_block_delta", index=index, delta=delta) for delta in deltas]
        events.append(event("content_block_stop", index=index))
    stop = {"stop_reason": _anthropic_stop_reason(answer), "stop_sequence": None}
    events.append(event("message_delta", delta=stop, usage={"output_tokens": answer.output_tokens}))
    events.append(event("message_stop"))
    return event_stream(events)


def anthropic_stream_reply(text: str) -> Reply:
    return anthropic_messages_reply(Answer(text=text), stream=True)


def anthropic_error_reply(
    error: ProviderError, *, model: str = "claude-sonnet-4-5", stream: bool = False
) -> Reply:
    """Anthropic's error object, `{"type": "error", "error": {"type", "message"}}`: as the body
    of an error status, or for a streamed request with `mid_stream`, as an `error` event after
    `message_start`."""
    body = {"type": "error", "error": {"type": error.kind, "message": error.message}}
    if not (stream and error.mid_stream):
        return Reply(status=error.status, body=body)
    start = {"type": "message_start", "message": _anthropic_message(Answer(), model, done=False)}
    return event_stream([sse(start, event="message_start"), sse(body, event="error")])


# -- routing ---------------------------------------------------------------------------------------


def reply_for(request: ReceivedRequest, outcome: Outcome) -> Reply:
    """`outcome` on the wire `request` came in on: the endpoint by its path, plain or streamed by
    its body's `stream` flag, in the model it asked for."""
    body = request.json() if request.body else {}
    model, stream = body.get("model", "model-fake"), bool(body.get("stream"))
    path = request.path.split("?")[0]
    if path == MESSAGES_PATH:
        if isinstance(outcome, ProviderError):
            return anthropic_error_reply(outcome, model=model, stream=stream)
        return anthropic_messages_reply(outcome, model=model, stream=stream)
    if isinstance(outcome, ProviderError):
        return openai_error_reply(outcome)
    if path == RESPONSES_PATH:
        return openai_responses_reply(outcome, model=model, stream=stream)
    if path == CHAT_PATH:
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return openai_chat_reply(outcome, model=model, stream=stream, usage_chunk=usage)
    return Reply(status=404, body={"error": {"message": f"no such endpoint {path}"}})


def last_user_prompt(body: Any) -> str:
    """The text of the last user turn of a Chat Completions, Responses or Messages request body.

    Content may be a string or a list of text parts (`text`, `input_text`); other parts (tool
    results, images) are skipped.
    """
    turns = body.get("messages") or body.get("input") or []
    if isinstance(turns, str):
        return turns
    for turn in reversed(turns):
        if turn.get("role") != "user":
            continue
        content = turn.get("content")
        if isinstance(content, str):
            return content
        texts = [
            part.get("text", "")
            for part in content or []
            if part.get("type") in ("text", "input_text")
        ]
        if any(texts):
            return "".join(texts)
    return ""


def answer_by_prompt(outcomes: Mapping[str, Outcome]) -> Script:
    """A script that answers each request with the outcome named by its last user prompt; an
    unknown prompt gets a 404 naming it and the prompts the script knows."""

    def script(request: ReceivedRequest) -> Reply:
        prompt = last_user_prompt(request.json() if request.body else {})
        outcome = outcomes.get(prompt) or ProviderError(
            status=404,
            kind="not_found_error",
            code="not_found",
            message=f"no scripted answer for prompt {prompt!r}; scripted: {sorted(outcomes)}",
        )
        return reply_for(request, outcome)

    return script


class HeldStream:
    """A script answering every request with `outcome` (`reply_for`), whose streams hold their
    last event until `release` is set (or `HOLD_SECONDS` pass) and set `last_sent` once it is
    out: a test sees what a client received while the provider had not finished."""

    HOLD_SECONDS = 10.0

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.release = threading.Event()
        self.last_sent = threading.Event()

    def _pace(self, events: int) -> Callable[[int], None]:
        def pace(index: int) -> None:
            if index == events - 1:
                self.release.wait(self.HOLD_SECONDS)
            elif index == events:
                self.last_sent.set()

        return pace

    def __call__(self, request: ReceivedRequest) -> Reply:
        reply = reply_for(request, self.outcome)
        if reply.events is None:
            return reply
        return replace(reply, pace=self._pace(len(reply.events)))


@contextmanager
def serve(script: Script) -> Iterator[FakeProvider]:
    """Run the fake provider on 127.0.0.1 (a free port) until the block ends."""
    received: list[ReceivedRequest] = []
    sent: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            request = ReceivedRequest(
                method=self.command,
                path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=self.rfile.read(length),
            )
            received.append(request)
            reply = script(request)
            self.send_response(reply.status)
            headers = {"content-type": "application/json", **reply.headers}
            if reply.events is not None:
                self.send_header("transfer-encoding", "chunked")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for index, event in enumerate(reply.events):
                    if reply.pace is not None:
                        reply.pace(index)
                    data = event.encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                sent.append("".join(reply.events).encode())
                if reply.pace is not None:
                    reply.pace(len(reply.events))
                return
            payload = json.dumps(reply.body).encode()
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            sent.append(payload)

        do_GET = do_POST  # a schema or file fetch, for tests that nothing is fetched

        def log_message(self, format: str, *args: Any) -> None:
            return

    class Server(ThreadingHTTPServer):
        # As a provider's front end does, take many connections at once: the default backlog
        # of 5 resets some of twenty clients connecting together.
        request_queue_size = 128

    server = Server(("127.0.0.1", 0), Handler)
    # A short poll so stopping the server (every test that records does) takes milliseconds.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield FakeProvider(
            base_url=f"http://127.0.0.1:{server.server_address[1]}", received=received, sent=sent
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
