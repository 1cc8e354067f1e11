"""Server-sent events as recorded data: split a stream into events, render them back.

A cassette stores a `text/event-stream` body as the list of its events, in order, each with its
fields, so a replay delivers the same events with the same boundaries, and a git diff shows
which event changed. Comment lines (`: OPENROUTER PROCESSING`) are kept as events of their own
when they stand alone in a block.
"""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

SseLine = Annotated[str, StringConstraints(strict=True, pattern=r"^[^\r\n]*$")]
"""A field value on one line: a line break would end the field early and change the stream."""
SseData = Annotated[str, StringConstraints(strict=True, pattern=r"^[^\r]*$")]
"""Event data: its lines joined by line feeds, the only line break it can hold."""


class SseEvent(BaseModel):
    """One event block: its fields as the SSE spec reads them, plus standalone comments."""

    # Only what `parse_sse` can produce validates (`SseLine`, `SseData`, text without lone
    # surrogates), so a replay delivers exactly the recorded events.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    event: SseLine | None = None
    data: SseData | None = None
    id: SseLine | None = None
    retry: Annotated[int, Field(strict=True, ge=0)] | None = None
    comments: tuple[SseLine, ...] = ()

    def render(self) -> bytes:
        """The block as wire bytes, ending with the blank line that closes it."""
        lines = [f":{comment}" for comment in self.comments]
        if self.event is not None:
            lines.append(f"event: {self.event}")
        if self.id is not None:
            lines.append(f"id: {self.id}")
        if self.retry is not None:
            lines.append(f"retry: {self.retry}")
        if self.data is not None:
            lines.extend(f"data: {line}" for line in self.data.split("\n"))
        return ("\n".join(lines) + "\n\n").encode("utf-8")


def parse_sse(text: str) -> list[SseEvent]:
    """Split an event stream into its events, in order; trailing partial blocks are kept."""
    events: list[SseEvent] = []
    block: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line:
            block.append(line)
        elif block:
            events.append(_parse_block(block))
            block = []
    if block:
        events.append(_parse_block(block))
    # A block of only unknown fields carries nothing a client could observe.
    return [event for event in events if _observable(event)]


_LINE_ENDS: Final = re.compile(rb"\r\n|\n|\r")


def event_ends(raw: bytes) -> list[int]:
    """Where each event `parse_sse` finds in `raw` ends, as a byte offset (the blank line after
    it included): the moment its last byte arrived is the moment a client could read it."""
    ends: list[int] = []
    block: list[str] = []
    start = 0
    for line_end in _LINE_ENDS.finditer(raw):
        line = raw[start : line_end.start()]
        start = line_end.end()
        if line:
            block.append(line.decode("utf-8", "replace"))
        elif block:
            if _observable(_parse_block(block)):
                ends.append(start)
            block = []
    if raw[start:]:
        block.append(raw[start:].decode("utf-8", "replace"))
    if block and _observable(_parse_block(block)):
        ends.append(len(raw))
    return ends


def _parse_block(lines: list[str]) -> SseEvent:
    fields: dict[str, str] = {}
    data: list[str] = []
    comments: list[str] = []
    retry: int | None = None
    for line in lines:
        if line.startswith(":"):
            comments.append(line[1:])
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "retry" and value.isdigit():
            retry = int(value)
        elif name in ("event", "id"):
            fields[name] = value
    return SseEvent(
        event=fields.get("event"),
        data="\n".join(data) if data else None,
        id=fields.get("id"),
        retry=retry,
        comments=tuple(comments),
    )


def _observable(event: SseEvent) -> bool:
    return any(
        (
            event.event is not None,
            event.data is not None,
            event.id is not None,
            event.retry is not None,
            event.comments,
        )
    )


def render_sse(events: list[SseEvent]) -> bytes:
    """The whole stream as bytes."""
    return b"".join(event.render() for event in events)
