"""SSE streams as recorded data: split into events and rendered back."""

from __future__ import annotations

from harness.sse import SseEvent, parse_sse, render_sse

OPENROUTER = (
    ": OPENROUTER PROCESSING\n\n"
    ": OPENROUTER PROCESSING\n\n"
    'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
    "data: [DONE]\n\n"
)
ANTHROPIC = (
    "event: message_start\n"
    'data: {"type":"message_start","index":0        }\n\n'
    "event: ping\ndata: {}\n\n"
)


def test_comment_blocks_are_events_of_their_own() -> None:
    events = parse_sse(OPENROUTER)
    assert [e.comments for e in events[:2]] == [(" OPENROUTER PROCESSING",)] * 2
    assert events[-1].data == "[DONE]"
    assert render_sse(events) == OPENROUTER.encode()


def test_event_names_and_padded_json_survive() -> None:
    events = parse_sse(ANTHROPIC)
    assert [e.event for e in events] == ["message_start", "ping"]
    assert events[0].data == '{"type":"message_start","index":0        }'
    assert render_sse(events) == ANTHROPIC.encode()


def test_fields_multiline_data_crlf_and_a_trailing_partial_block() -> None:
    text = "id: 7\r\nretry: 3000\r\ndata: one\r\ndata:two\r\nignored: x\r\n\r\ndata: tail"
    events = parse_sse(text)
    assert events == [
        SseEvent(id="7", retry=3000, data="one\ntwo"),
        SseEvent(data="tail"),
    ]
    assert events[0].render() == b"id: 7\nretry: 3000\ndata: one\ndata: two\n\n"


def test_blocks_of_only_unknown_fields_are_dropped() -> None:
    assert parse_sse("foo: bar\n\ndata: x\n\n") == [SseEvent(data="x")]
    kept = parse_sse("id: 1\n\nretry: 5\n\nevent: e\n\n: note\n\nfoo: bar\n\n")
    assert kept == [
        SseEvent(id="1"),
        SseEvent(retry=5),
        SseEvent(event="e"),
        SseEvent(comments=(" note",)),
    ], "any one field a client sees keeps its block"
