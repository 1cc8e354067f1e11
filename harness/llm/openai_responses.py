"""Replies in the OpenAI Responses wire (`POST /v1/responses`): how a scripted reply answers a
client of the Responses API, plain or streamed, and the typed shapes it is rendered from.

`render_response` gives the `response` object a plain request is answered with; `render_stream`
the server-sent events of a streamed one: `response.created`, `response.in_progress`, then per
output item `response.output_item.added`, its content (`response.content_part.added`, text in a
few `response.output_text.delta`s, `response.output_text.done`, `response.content_part.done`) or
its arguments (a few `response.function_call_arguments.delta`s and `.done`),
`response.output_item.done`, and last `response.completed` (`response.incomplete` for a reply
cut off by the token limit or a content filter). Every event is named by an `event:` line and
carries its `sequence_number`, counted from 0. There is no `[DONE]`. `render_error` is OpenAI's
error object, the same as Chat Completions'.

The shapes follow recorded Responses traffic: keys in the order OpenAI sends them (an event's
`type` first, then its fields in alphabetical order), a message item before the function-call
items, text as one `output_text` part (a refusal as one `refusal` part instead), each call's
`arguments` its exact raw text (cut-off JSON included), usage with `input_tokens`,
`output_tokens` and their sum as `total_tokens`. Rendering is deterministic: `created_at` is
`RENDERED_CREATED`, item ids derive from the response id (`msg_<id>`, `fc_<id>_<n>`), text is cut
by length alone. The request's parameters (`instructions`, `tools`, `tool_choice`,
`temperature`, ...) are not echoed back: the response carries their defaults.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import count
from typing import Annotated, Final, Literal

from pydantic import Field, JsonValue, NonNegativeInt

from harness.llm import openai
from harness.llm._wire import compact_json, sse_block, stop_word, stream_pieces
from harness.llm.models import LlmResponse, LlmToolCall, Usage
from harness.protocol._base import WireModel
from harness.protocol.outcome import AnyStopKind, EndTurn, LimitReached, OtherStop

RENDERED_CREATED: Final = openai.RENDERED_CREATED
COMPLETED: Final = "completed"

ItemStatus = Literal["in_progress", "completed", "incomplete"]
IncompleteReason = Literal["max_output_tokens", "content_filter"]

STOP_WORDS: Final[Mapping[str, AnyStopKind]] = {
    COMPLETED: EndTurn(),
    "max_output_tokens": LimitReached(),
    "content_filter": OtherStop(reason="content_filter"),
}
"""How a response ends, as the neutral stop kind: `completed`, or the `incomplete_details`
reason of an incomplete one. A tool call and any other stop complete the response."""


# -- the response object ---------------------------------------------------------------------------


class OutputText(WireModel):
    type: Literal["output_text"] = "output_text"
    annotations: tuple[JsonValue, ...] = ()
    logprobs: tuple[JsonValue, ...] = ()
    text: str


class OutputRefusal(WireModel):
    type: Literal["refusal"] = "refusal"
    refusal: str


ContentPart = Annotated[OutputText | OutputRefusal, Field(discriminator="type")]


class MessageItem(WireModel):
    id: str
    type: Literal["message"] = "message"
    status: ItemStatus
    content: tuple[ContentPart, ...]
    role: Literal["assistant"] = "assistant"


class FunctionCallItem(WireModel):
    id: str
    type: Literal["function_call"] = "function_call"
    status: ItemStatus
    arguments: str
    call_id: str
    name: str


class SummaryText(WireModel):
    type: Literal["summary_text"] = "summary_text"
    text: str


class ReasoningItem(WireModel):
    """The reasoning that came before the reply's message and calls: its summary's words (the
    model's own reasoning stays hidden, as OpenAI keeps it)."""

    id: str
    type: Literal["reasoning"] = "reasoning"
    summary: tuple[SummaryText, ...]


OutputItem = Annotated[ReasoningItem | MessageItem | FunctionCallItem, Field(discriminator="type")]


class InputTokensDetails(WireModel):
    cached_tokens: NonNegativeInt = 0


class OutputTokensDetails(WireModel):
    reasoning_tokens: NonNegativeInt = 0


class ResponseUsage(WireModel):
    input_tokens: NonNegativeInt
    input_tokens_details: InputTokensDetails = InputTokensDetails()
    output_tokens: NonNegativeInt
    output_tokens_details: OutputTokensDetails = OutputTokensDetails()
    total_tokens: NonNegativeInt


class IncompleteDetails(WireModel):
    reason: IncompleteReason


class ReasoningSettings(WireModel):
    effort: str | None = None
    summary: str | None = None


class TextFormat(WireModel):
    type: Literal["text"] = "text"


class TextSettings(WireModel):
    format: TextFormat = TextFormat()
    verbosity: Literal["low", "medium", "high"] = "medium"


class ResponseObject(WireModel):
    """A `response`: whole in a plain answer and in the last event of a stream, `in_progress`
    with no output and no usage in the first two."""

    id: str
    object: Literal["response"] = "response"
    created_at: int = RENDERED_CREATED
    status: Literal["in_progress", "completed", "incomplete"]
    background: bool = False
    error: None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: None = None
    max_output_tokens: None = None
    max_tool_calls: None = None
    model: str
    output: tuple[OutputItem, ...] = ()
    parallel_tool_calls: bool = True
    previous_response_id: None = None
    reasoning: ReasoningSettings = ReasoningSettings()
    service_tier: str = "default"
    store: bool = True
    temperature: float = 1.0
    text: TextSettings = TextSettings()
    tool_choice: str = "auto"
    tools: tuple[JsonValue, ...] = ()
    top_logprobs: int = 0
    top_p: float = 1.0
    truncation: Literal["disabled", "auto"] = "disabled"
    usage: ResponseUsage | None = None
    user: None = None
    metadata: dict[str, str] = Field(default_factory=dict)


# -- the events of a stream ------------------------------------------------------------------------


class ResponseEvent(WireModel):
    type: Literal[
        "response.created", "response.in_progress", "response.completed", "response.incomplete"
    ]
    response: ResponseObject
    sequence_number: NonNegativeInt


class OutputItemEvent(WireModel):
    type: Literal["response.output_item.added", "response.output_item.done"]
    item: OutputItem
    output_index: NonNegativeInt
    sequence_number: NonNegativeInt


class ContentPartEvent(WireModel):
    type: Literal["response.content_part.added", "response.content_part.done"]
    content_index: NonNegativeInt
    item_id: str
    output_index: NonNegativeInt
    part: ContentPart
    sequence_number: NonNegativeInt


class OutputTextDelta(WireModel):
    type: Literal["response.output_text.delta"] = "response.output_text.delta"
    content_index: NonNegativeInt
    delta: str
    item_id: str
    logprobs: tuple[JsonValue, ...] = ()
    output_index: NonNegativeInt
    sequence_number: NonNegativeInt


class OutputTextDone(WireModel):
    type: Literal["response.output_text.done"] = "response.output_text.done"
    content_index: NonNegativeInt
    item_id: str
    logprobs: tuple[JsonValue, ...] = ()
    output_index: NonNegativeInt
    sequence_number: NonNegativeInt
    text: str


class RefusalDelta(WireModel):
    type: Literal["response.refusal.delta"] = "response.refusal.delta"
    content_index: NonNegativeInt
    delta: str
    item_id: str
    output_index: NonNegativeInt
    sequence_number: NonNegativeInt


class RefusalDone(WireModel):
    type: Literal["response.refusal.done"] = "response.refusal.done"
    content_index: NonNegativeInt
    item_id: str
    output_index: NonNegativeInt
    refusal: str
    sequence_number: NonNegativeInt


class FunctionCallArgumentsDelta(WireModel):
    type: Literal["response.function_call_arguments.delta"] = (
        "response.function_call_arguments.delta"
    )
    delta: str
    item_id: str
    output_index: NonNegativeInt
    sequence_number: NonNegativeInt


class FunctionCallArgumentsDone(WireModel):
    type: Literal["response.function_call_arguments.done"] = "response.function_call_arguments.done"
    arguments: str
    item_id: str
    output_index: NonNegativeInt
    sequence_number: NonNegativeInt


StreamEvent = Annotated[
    ResponseEvent
    | OutputItemEvent
    | ContentPartEvent
    | OutputTextDelta
    | OutputTextDone
    | RefusalDelta
    | RefusalDone
    | FunctionCallArgumentsDelta
    | FunctionCallArgumentsDone,
    Field(discriminator="type"),
]
"""One event of a streamed Responses answer, told by its `type`."""


# -- rendering -------------------------------------------------------------------------------------


def response_object(response: LlmResponse, *, model: str, response_id: str) -> ResponseObject:
    """`response` as the finished `response` object. Raises `IllegalArgumentException` for a
    `Cancelled` or `Error` stop, which no model reply carries."""
    incomplete = _incomplete(response)
    return ResponseObject(
        id=response_id,
        status=COMPLETED if incomplete is None else "incomplete",
        incomplete_details=incomplete,
        model=model,
        output=tuple(_items(response, response_id, incomplete=incomplete is not None)),
        usage=_usage(response.usage),
    )


def render_response(response: LlmResponse, *, model: str, response_id: str) -> dict[str, JsonValue]:
    """`response` as the `response` object OpenAI answers a plain Responses request with."""
    return response_object(response, model=model, response_id=response_id).model_dump(mode="json")


def stream_events(response: LlmResponse, *, model: str, response_id: str) -> list[StreamEvent]:
    """The events `render_stream` writes, in order, numbered from 0. Raises like
    `response_object`."""
    final = response_object(response, model=model, response_id=response_id)
    pending = final.model_copy(
        update={"status": "in_progress", "incomplete_details": None, "output": (), "usage": None}
    )
    numbers = count()
    events: list[StreamEvent] = [
        ResponseEvent(type="response.created", response=pending, sequence_number=next(numbers)),
        ResponseEvent(type="response.in_progress", response=pending, sequence_number=next(numbers)),
    ]
    for index, item in enumerate(final.output):
        events.extend(_item_events(index, item, numbers))
    ending = ResponseEvent(
        type="response.completed" if final.status == COMPLETED else "response.incomplete",
        response=final,
        sequence_number=next(numbers),
    )
    events.append(ending)
    return events


def render_stream(response: LlmResponse, *, model: str, response_id: str) -> list[str]:
    """`response` as the server-sent events OpenAI streams a Responses answer with, one block
    per string: `event: <type>`, its data as compact JSON, and the closing blank line."""
    return [
        sse_block(compact_json(event.model_dump(mode="json")), event=event.type)
        for event in stream_events(response, model=model, response_id=response_id)
    ]


def render_error(status: int, error_type: str, message: str) -> dict[str, JsonValue]:
    """The error body the Responses API answers a failed request with: OpenAI's error object
    (see `harness.llm.openai.render_error`)."""
    return openai.render_error(status, error_type, message)


def _incomplete(response: LlmResponse) -> IncompleteDetails | None:
    word = stop_word(
        response,
        STOP_WORDS,
        end_turn=COMPLETED,
        tool_use=COMPLETED,
        limit_reached="max_output_tokens",
    )
    return None if word == COMPLETED else IncompleteDetails.model_validate({"reason": word})


def _items(response: LlmResponse, response_id: str, *, incomplete: bool) -> Iterator[OutputItem]:
    """The output items: the reasoning when the reply shows `thinking`, a message unless the
    reply is tool calls or thinking alone, then one function call per tool call. An incomplete
    response's last message or call is the one that was cut off."""
    items: list[OutputItem] = []
    if response.thinking:
        items.append(
            ReasoningItem(id=f"rs_{response_id}", summary=(SummaryText(text=response.thinking),))
        )
    refusal = response.metadata.get("refusal")
    if isinstance(refusal, str) and refusal:
        items.append(_message(response_id, OutputRefusal(refusal=refusal)))
    elif response.text or not (response.tool_calls or response.thinking):
        items.append(_message(response_id, OutputText(text=response.text)))
    items.extend(
        _function_call(response_id, index, call) for index, call in enumerate(response.tool_calls)
    )
    for position, item in enumerate(items):
        cut_off = incomplete and position == len(items) - 1 and not isinstance(item, ReasoningItem)
        yield item.model_copy(update={"status": "incomplete"}) if cut_off else item


def _message(response_id: str, part: OutputText | OutputRefusal) -> MessageItem:
    return MessageItem(id=f"msg_{response_id}", status=COMPLETED, content=(part,))


def _function_call(response_id: str, index: int, call: LlmToolCall) -> FunctionCallItem:
    return FunctionCallItem(
        id=f"fc_{response_id}_{index}",
        status=COMPLETED,
        arguments=call.arguments,
        call_id=call.id,
        name=call.name,
    )


def _usage(usage: Usage) -> ResponseUsage:
    return ResponseUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=usage.reasoning_tokens),
        total_tokens=usage.input_tokens + usage.output_tokens,
    )


def _item_events(index: int, item: OutputItem, numbers: Iterator[int]) -> Iterator[StreamEvent]:
    """The events that stream one output item: added (in progress, empty), its content or its
    arguments in pieces, done."""
    opening: OutputItem
    if isinstance(item, ReasoningItem):
        opening = item.model_copy(update={"summary": ()})
    elif isinstance(item, MessageItem):
        opening = item.model_copy(update={"status": "in_progress", "content": ()})
    else:
        opening = item.model_copy(update={"status": "in_progress", "arguments": ""})
    yield OutputItemEvent(
        type="response.output_item.added",
        item=opening,
        output_index=index,
        sequence_number=next(numbers),
    )
    if isinstance(item, ReasoningItem):
        pass  # its summary comes whole in `response.output_item.done`
    elif isinstance(item, MessageItem):
        for content_index, part in enumerate(item.content):
            yield from _part_events(index, content_index, item.id, part, numbers)
    else:
        for piece in stream_pieces(item.arguments):
            yield FunctionCallArgumentsDelta(
                delta=piece, item_id=item.id, output_index=index, sequence_number=next(numbers)
            )
        yield FunctionCallArgumentsDone(
            arguments=item.arguments,
            item_id=item.id,
            output_index=index,
            sequence_number=next(numbers),
        )
    yield OutputItemEvent(
        type="response.output_item.done",
        item=item,
        output_index=index,
        sequence_number=next(numbers),
    )


def _part_events(
    index: int,
    content_index: int,
    item_id: str,
    part: OutputText | OutputRefusal,
    numbers: Iterator[int],
) -> Iterator[StreamEvent]:
    def part_event(
        kind: Literal["response.content_part.added", "response.content_part.done"],
        shown: OutputText | OutputRefusal,
    ) -> ContentPartEvent:
        return ContentPartEvent(
            type=kind,
            content_index=content_index,
            item_id=item_id,
            output_index=index,
            part=shown,
            sequence_number=next(numbers),
        )

    if isinstance(part, OutputText):
        yield part_event("response.content_part.added", OutputText(text=""))
        for piece in stream_pieces(part.text):
            yield OutputTextDelta(
                content_index=content_index,
                delta=piece,
                item_id=item_id,
                output_index=index,
                sequence_number=next(numbers),
            )
        yield OutputTextDone(
            content_index=content_index,
            item_id=item_id,
            output_index=index,
            sequence_number=next(numbers),
            text=part.text,
        )
    else:
        yield part_event("response.content_part.added", OutputRefusal(refusal=""))
        for piece in stream_pieces(part.refusal):
            yield RefusalDelta(
                content_index=content_index,
                delta=piece,
                item_id=item_id,
                output_index=index,
                sequence_number=next(numbers),
            )
        yield RefusalDone(
            content_index=content_index,
            item_id=item_id,
            output_index=index,
            refusal=part.refusal,
            sequence_number=next(numbers),
        )
    yield part_event("response.content_part.done", part)
