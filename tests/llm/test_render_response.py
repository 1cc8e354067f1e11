"""Scripted replies rendered as real provider replies, and read back by the real parsers.

A scripted model reply goes out as the bytes a recorded one would be, so it must survive its
own provider's parser: `parse_response(render_response(r))` and
`parse_stream(parse_sse(render_stream(r)))` give back the text, calls, stop and usage of `r`.
Arguments cut off mid-JSON survive every form that can carry them; Anthropic's plain `message`
cannot, and refuses them. Shapes are checked against real replies from the recorded corpus.
"""

from __future__ import annotations

import json
import string
from typing import Any, Literal

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import IllegalArgumentException
from harness.llm import anthropic, openai
from harness.llm._wire import STREAM_PIECES, stream_pieces
from harness.llm.adapters import ProviderAdapter, adapter_for
from harness.llm.models import LlmResponse, LlmToolCall, Usage
from harness.protocol.outcome import (
    AnyStopKind,
    Cancelled,
    EndTurn,
    ErrorStop,
    LimitReached,
    OtherStop,
    ToolUse,
)
from harness.sse import parse_sse
from tests.support.corpus import corpus_folder

Provider = Literal["openai", "anthropic"]
PROVIDERS: list[Provider] = ["openai", "anthropic"]
Form = Literal["plain", "stream"]
FORMS: list[Form] = ["plain", "stream"]

MODEL: dict[Provider, str] = {
    "openai": "gpt-4o-2024-08-06",
    "anthropic": "claude-sonnet-4-5-20250929",
}
REPLY_ID: dict[Provider, str] = {"openai": "chatcmpl-scripted1", "anthropic": "msg_scripted1"}
CALL_ID_PREFIX: dict[Provider, str] = {"openai": "call_", "anthropic": "toolu_"}
# The `Other` reasons each parser reads back as `Other`: the ones a round trip keeps.
OTHER_REASONS: dict[Provider, list[str]] = {
    "openai": ["content_filter"],
    "anthropic": ["refusal", "pause_turn"],
}

CASSETTES = corpus_folder() / "models" / "cassettes"
needs_corpus = pytest.mark.skipif(
    not CASSETTES.is_dir(),
    reason=f"the recorded corpus is not at {CASSETTES} (set HARNESS_CORPUS_DIR)",
)
# Fields of recent real replies the renderer leaves out on purpose: `obfuscation` is random
# padding (a rendered reply is deterministic), `inference_geo` a newer Anthropic usage field
# that older replies lack and the neutral usage cannot fill.
UNRENDERED_KEYS = frozenset({"obfuscation", "inference_geo"})


# --- strategies -------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**15), max_value=10**15)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@st.composite
def argument_texts(draw: st.DrawFn) -> str:
    """A JSON object as a model writes it: compact or spaced, escaped or raw Unicode."""
    separators = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    return json.dumps(draw(json_objects), separators=separators, ensure_ascii=draw(st.booleans()))


@st.composite
def truncated_argument_texts(draw: st.DrawFn) -> str:
    """A non-empty proper prefix of a JSON object's text: never valid JSON, as at max_tokens."""
    text = draw(argument_texts())
    return text[: draw(st.integers(min_value=1, max_value=len(text) - 1))]


def tool_call(
    provider: Provider, arguments: st.SearchStrategy[str]
) -> st.SearchStrategy[LlmToolCall]:
    return st.builds(
        LlmToolCall,
        id=st.text(string.ascii_letters + string.digits, min_size=1, max_size=24).map(
            CALL_ID_PREFIX[provider].__add__
        ),
        name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,30}", fullmatch=True),
        arguments=arguments,
    )


def tool_calls(
    provider: Provider, arguments: st.SearchStrategy[str]
) -> st.SearchStrategy[tuple[LlmToolCall, ...]]:
    calls = st.lists(tool_call(provider, arguments), max_size=3, unique_by=lambda c: c.id)
    return calls.map(tuple)


usages = st.builds(
    lambda input_tokens, output_tokens: Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    ),
    st.integers(min_value=0, max_value=2_000_000),
    st.integers(min_value=0, max_value=2_000_000),
)


def stops(provider: Provider) -> st.SearchStrategy[AnyStopKind]:
    others: list[AnyStopKind] = [OtherStop(reason=reason) for reason in OTHER_REASONS[provider]]
    return st.sampled_from([EndTurn(), ToolUse(), LimitReached(), *others])


def responses(
    provider: Provider, arguments: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[LlmResponse]:
    return st.builds(
        LlmResponse,
        text=st.text(max_size=80),
        tool_calls=tool_calls(provider, argument_texts() if arguments is None else arguments),
        stop=stops(provider),
        usage=usages,
    )


@st.composite
def truncated_responses(draw: st.DrawFn, provider: Provider) -> LlmResponse:
    """A reply cut off by the token limit in the middle of its last tool call's arguments."""
    complete = draw(tool_calls(provider, argument_texts()))
    cut_off = draw(tool_call(provider, truncated_argument_texts()))
    calls = (*(call for call in complete if call.id != cut_off.id), cut_off)
    return LlmResponse(
        text=draw(st.text(max_size=40)),
        tool_calls=calls,
        stop=LimitReached(),
        usage=draw(usages),
    )


# --- helpers ----------------------------------------------------------------------------------


def render_plain(provider: Provider, response: LlmResponse) -> dict[str, Any]:
    return adapter_for(provider).render_response(
        response, model=MODEL[provider], response_id=REPLY_ID[provider]
    )


def render_stream(provider: Provider, response: LlmResponse) -> list[str]:
    return adapter_for(provider).render_stream(
        response, model=MODEL[provider], response_id=REPLY_ID[provider]
    )


def round_trip(provider: Provider, form: Form, response: LlmResponse) -> LlmResponse:
    """The reply as the parser reads it after it went over the wire as bytes."""
    adapter: ProviderAdapter = adapter_for(provider)
    if form == "plain":
        wire = json.dumps(render_plain(provider, response)).encode("utf-8")
        return adapter.parse_response(json.loads(wire))
    wire = "".join(render_stream(provider, response)).encode("utf-8")
    return adapter.parse_stream(parse_sse(wire.decode("utf-8")))


def assert_same_reply(parsed: LlmResponse, scripted: LlmResponse, *, exact_arguments: bool) -> None:
    assert parsed.text == scripted.text
    assert [(c.id, c.name) for c in parsed.tool_calls] == [
        (c.id, c.name) for c in scripted.tool_calls
    ]
    for got, sent in zip(parsed.tool_calls, scripted.tool_calls, strict=True):
        if exact_arguments or not is_json(sent.arguments):
            assert got.arguments == sent.arguments
        else:  # the provider re-serialises complete arguments: compare them as JSON values
            assert got.parsed_arguments() == sent.parsed_arguments()
    assert parsed.stop == scripted.stop
    assert parsed.usage == scripted.usage


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def stream_data(block: str) -> tuple[str | None, Any]:
    [event] = parse_sse(block)
    assert event.data is not None
    return event.event, None if event.data == "[DONE]" else json.loads(event.data)


def key_shape(value: Any) -> Any:
    """Only the keys of a JSON value, recursively: what must match a real reply's shape."""
    if isinstance(value, dict):
        return {key: key_shape(item) for key, item in value.items() if key not in UNRENDERED_KEYS}
    if isinstance(value, list):
        return [key_shape(item) for item in value]
    return None


def load_interactions(relative: str) -> list[dict[str, Any]]:
    cassette = yaml.load(
        (CASSETTES / relative).read_text(encoding="utf-8"), Loader=yaml.CSafeLoader
    )
    interactions: list[dict[str, Any]] = cassette["interactions"]
    return interactions


# --- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
@given(response=responses("openai"))
def test_openai_replies_read_back_with_their_exact_arguments(
    form: Form, response: LlmResponse
) -> None:
    parsed = round_trip("openai", form, response)

    assert_same_reply(parsed, response, exact_arguments=True)
    assert parsed.model == MODEL["openai"]
    assert parsed.metadata == {}


@pytest.mark.parametrize("form", FORMS)
@given(response=responses("anthropic"))
def test_anthropic_replies_read_back_with_the_same_argument_values(
    form: Form, response: LlmResponse
) -> None:
    parsed = round_trip("anthropic", form, response)

    assert_same_reply(parsed, response, exact_arguments=False)
    assert parsed.model == MODEL["anthropic"]
    assert parsed.metadata == {}


def compact(text: str) -> str:
    return json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))


@given(response=responses("anthropic", argument_texts().map(compact)))
def test_anthropic_compact_arguments_read_back_exactly(response: LlmResponse) -> None:
    for form in FORMS:
        assert_same_reply(round_trip("anthropic", form, response), response, exact_arguments=True)


@pytest.mark.parametrize(
    ("provider", "form"),
    [("openai", "plain"), ("openai", "stream"), ("anthropic", "stream")],
)
@given(data=st.data())
def test_arguments_cut_off_by_the_token_limit_survive_exactly(
    provider: Provider, form: Form, data: st.DataObject
) -> None:
    response = data.draw(truncated_responses(provider))

    parsed = round_trip(provider, form, response)

    # Anthropic compacts the complete calls' arguments; the cut-off call stays raw in both.
    assert_same_reply(parsed, response, exact_arguments=provider == "openai")
    assert parsed.tool_calls[-1].arguments == response.tool_calls[-1].arguments
    assert parsed.truncated
    with pytest.raises(ValueError, match=r"Expecting|Unterminated|Invalid"):
        parsed.tool_calls[-1].parsed_arguments()


@given(response=truncated_responses("anthropic"))
def test_anthropic_plain_refuses_cut_off_arguments(response: LlmResponse) -> None:
    cut_off = response.tool_calls[-1]

    with pytest.raises(IllegalArgumentException, match="render_stream") as raised:
        render_plain("anthropic", response)

    assert isinstance(raised.value, ValueError)
    assert f"tool_calls[{len(response.tool_calls) - 1}]" in str(raised.value)
    assert repr(cut_off.id) in str(raised.value)


def test_anthropic_refusal_names_the_call_but_never_quotes_its_arguments() -> None:
    canary = "CANARY-4b1d-never-in-a-message"
    response = LlmResponse(
        tool_calls=(
            LlmToolCall(id="toolu_1", name="write_file", arguments=f'{{"token": "{canary}'),
        ),
        stop=LimitReached(),
    )

    with pytest.raises(IllegalArgumentException) as raised:
        render_plain("anthropic", response)

    assert "toolu_1" in str(raised.value)
    assert "write_file" in str(raised.value)
    assert canary not in str(raised.value)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("arguments", ["[1, 2]", '"text"', "3", "null"])
def test_anthropic_refuses_arguments_that_are_json_but_not_an_object(
    form: Form, arguments: str
) -> None:
    response = LlmResponse(
        tool_calls=(LlmToolCall(id="toolu_1", name="f", arguments=arguments),), stop=ToolUse()
    )

    with pytest.raises(IllegalArgumentException, match="not a JSON object"):
        round_trip("anthropic", form, response)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("form", FORMS)
def test_empty_arguments_read_back_as_an_empty_object(provider: Provider, form: Form) -> None:
    response = LlmResponse(
        tool_calls=(LlmToolCall(id="call_1", name="ping", arguments=""),), stop=ToolUse()
    )

    [call] = round_trip(provider, form, response).tool_calls

    assert call.parsed_arguments() == {}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("form", FORMS)
def test_the_rendered_total_is_input_plus_output(provider: Provider, form: Form) -> None:
    response = LlmResponse(text="hi", stop=EndTurn(), usage=Usage(input_tokens=3, output_tokens=4))

    assert round_trip(provider, form, response).usage == Usage(
        input_tokens=3, output_tokens=4, total_tokens=7
    )


# --- determinism ------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@given(data=st.data())
def test_rendering_is_deterministic(provider: Provider, data: st.DataObject) -> None:
    response = data.draw(responses(provider))
    twin = LlmResponse.model_validate_json(response.model_dump_json())

    assert json.dumps(render_plain(provider, response)) == json.dumps(render_plain(provider, twin))
    assert render_stream(provider, response) == render_stream(provider, twin)


# --- stop words -------------------------------------------------------------------------------

OPENAI_STOP_WORDS: list[tuple[AnyStopKind, str | None, str]] = [
    (EndTurn(), None, "stop"),
    (ToolUse(), None, "tool_calls"),
    (LimitReached(), None, "length"),
    (OtherStop(reason="content_filter"), None, "content_filter"),
    (OtherStop(reason="eos"), None, "stop"),
    (OtherStop(reason="refusal"), None, "stop"),
    (ToolUse(), "function_call", "function_call"),
    (EndTurn(), "length", "stop"),
    (EndTurn(), "end_turn", "stop"),
]
ANTHROPIC_STOP_WORDS: list[tuple[AnyStopKind, str | None, str]] = [
    (EndTurn(), None, "end_turn"),
    (ToolUse(), None, "tool_use"),
    (LimitReached(), None, "max_tokens"),
    (OtherStop(reason="refusal"), None, "refusal"),
    (OtherStop(reason="pause_turn"), None, "pause_turn"),
    (OtherStop(reason="stop_sequence"), None, "stop_sequence"),
    (OtherStop(reason="content_filter"), None, "end_turn"),
    (EndTurn(), "stop_sequence", "stop_sequence"),
    (LimitReached(), "model_context_window_exceeded", "model_context_window_exceeded"),
    (EndTurn(), "max_tokens", "end_turn"),
    (EndTurn(), "stop", "end_turn"),
]


@pytest.mark.parametrize(("stop", "provider_stop_reason", "word"), OPENAI_STOP_WORDS)
def test_openai_finish_reason_comes_from_the_neutral_stop(
    stop: AnyStopKind, provider_stop_reason: str | None, word: str
) -> None:
    response = LlmResponse(text="x", stop=stop, provider_stop_reason=provider_stop_reason)

    body = render_plain("openai", response)
    streamed = round_trip("openai", "stream", response)

    assert body["choices"][0]["finish_reason"] == word
    assert openai.finish_reason_for(response) == word
    assert streamed.provider_stop_reason == word
    assert streamed.stop == openai.stop_kind(word)


@pytest.mark.parametrize(("stop", "provider_stop_reason", "word"), ANTHROPIC_STOP_WORDS)
def test_anthropic_stop_reason_comes_from_the_neutral_stop(
    stop: AnyStopKind, provider_stop_reason: str | None, word: str
) -> None:
    response = LlmResponse(text="x", stop=stop, provider_stop_reason=provider_stop_reason)

    body = render_plain("anthropic", response)
    streamed = round_trip("anthropic", "stream", response)

    assert body["stop_reason"] == word
    assert anthropic.stop_reason_for(response) == word
    assert streamed.provider_stop_reason == word
    assert streamed.stop == anthropic.stop_kind(word)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("stop", [Cancelled(), ErrorStop(message="CANARY-e41c stack trace")])
def test_stops_no_model_reply_carries_are_refused(
    provider: Provider, form: Form, stop: AnyStopKind
) -> None:
    response = LlmResponse(text="x", stop=stop)

    with pytest.raises(IllegalArgumentException, match=f"stop.kind='{stop.kind}'") as raised:
        round_trip(provider, form, response)

    assert "CANARY" not in str(raised.value)


@pytest.mark.parametrize("form", FORMS)
def test_anthropic_stop_sequence_survives(form: Form) -> None:
    response = LlmResponse(
        text="1, 2, 3",
        stop=EndTurn(),
        provider_stop_reason="stop_sequence",
        metadata={"stop_sequence": "###"},
    )

    parsed = round_trip("anthropic", form, response)

    assert (parsed.stop, parsed.provider_stop_reason) == (EndTurn(), "stop_sequence")
    assert parsed.metadata == {"stop_sequence": "###"}


@pytest.mark.parametrize("form", FORMS)
def test_openai_refusal_survives(form: Form) -> None:
    response = LlmResponse(stop=EndTurn(), metadata={"refusal": "I can't help with that."})

    parsed = round_trip("openai", form, response)

    assert parsed.metadata == {"refusal": "I can't help with that."}
    assert parsed.text == ""


# --- wire shapes ------------------------------------------------------------------------------


def test_openai_content_is_null_only_when_the_reply_is_only_tool_calls() -> None:
    call = LlmToolCall(id="call_1", name="f", arguments="{}")

    def content(response: LlmResponse) -> Any:
        return render_plain("openai", response)["choices"][0]["message"]["content"]

    assert content(LlmResponse(tool_calls=(call,), stop=ToolUse())) is None
    assert content(LlmResponse(stop=LimitReached())) == ""
    assert content(LlmResponse(text="Hi", tool_calls=(call,), stop=ToolUse())) == "Hi"


def test_anthropic_content_has_a_text_block_only_for_text() -> None:
    call = LlmToolCall(id="toolu_1", name="f", arguments='{"a": [1]}')

    empty = render_plain("anthropic", LlmResponse(stop=LimitReached()))
    calls_only = render_plain("anthropic", LlmResponse(tool_calls=(call,), stop=ToolUse()))

    assert empty["content"] == []
    assert calls_only["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": [1]}}
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
@given(data=st.data())
def test_stream_blocks_are_single_events_closed_by_a_blank_line(
    provider: Provider, data: st.DataObject
) -> None:
    blocks = render_stream(provider, data.draw(responses(provider)))

    for block in blocks:
        assert block.endswith("\n\n")
        assert "\n\n" not in block[:-2]
        assert len(parse_sse(block)) == 1
    events = [stream_data(block) for block in blocks]
    if provider == "openai":
        assert all(block.startswith("data: ") for block in blocks)
        assert blocks[-1] == "data: [DONE]\n\n"
        assert events[-2][1]["choices"] == []
        assert events[-2][1]["usage"] is not None
        assert events[-3][1]["choices"][0]["finish_reason"] is not None
        assert events[0][1]["choices"][0]["delta"]["role"] == "assistant"
    else:
        assert all(name == payload["type"] for name, payload in events)
        names = [name for name, _ in events]
        assert names[:2] == ["message_start", "ping"]
        assert names[-2:] == ["message_delta", "message_stop"]


def test_openai_stream_splits_text_and_arguments_into_a_few_deltas() -> None:
    response = LlmResponse(
        text="The weather in Paris",
        tool_calls=(LlmToolCall(id="call_9", name="get_weather", arguments='{"city":"Paris"}'),),
        stop=ToolUse(),
    )

    deltas = [
        payload["choices"][0]["delta"]
        for _, payload in map(stream_data, render_stream("openai", response)[:-2])
    ]

    assert deltas[0] == {"role": "assistant", "content": "", "refusal": None}
    assert [d["content"] for d in deltas if "content" in d][1:] == stream_pieces(response.text)
    assert len(stream_pieces(response.text)) == STREAM_PIECES
    fragments = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert fragments[0] == {
        "index": 0,
        "id": "call_9",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    assert [f["function"]["arguments"] for f in fragments[1:]] == stream_pieces('{"city":"Paris"}')
    assert deltas[-1] == {}


def test_openai_stream_opens_with_the_first_call_when_there_is_no_text() -> None:
    response = LlmResponse(
        tool_calls=(LlmToolCall(id="call_9", name="get_weather", arguments='{"city":"Paris"}'),),
        stop=ToolUse(),
    )

    _, opening = stream_data(render_stream("openai", response)[0])

    assert opening["choices"][0]["delta"] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "index": 0,
                "id": "call_9",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""},
            }
        ],
        "refusal": None,
    }


def test_anthropic_stream_sends_input_as_raw_fragments_after_an_empty_one() -> None:
    arguments = '{"path": "notes.md", "content": "The quick'
    response = LlmResponse(
        text="Writing.",
        tool_calls=(LlmToolCall(id="toolu_7", name="write_file", arguments=arguments),),
        stop=LimitReached(),
        usage=Usage(input_tokens=12, output_tokens=40),
    )

    events = [stream_data(block) for block in render_stream("anthropic", response)]

    starts = [payload for name, payload in events if name == "content_block_start"]
    assert [start["content_block"] for start in starts] == [
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "toolu_7", "name": "write_file", "input": {}},
    ]
    fragments = [
        payload["delta"]["partial_json"]
        for name, payload in events
        if name == "content_block_delta" and payload["index"] == 1
    ]
    assert fragments == ["", *stream_pieces(arguments)]
    [message_delta] = [payload for name, payload in events if name == "message_delta"]
    assert message_delta["delta"] == {"stop_reason": "max_tokens", "stop_sequence": None}
    assert message_delta["usage"]["output_tokens"] == 40
    assert events[0][1]["message"]["usage"]["output_tokens"] == 1


# --- error bodies -----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@given(
    status=st.integers(min_value=400, max_value=599),
    error_type=st.from_regex(r"[a-z][a-z_]{0,30}", fullmatch=True),
    message=st.text(max_size=100),
)
def test_error_bodies_parse_back_to_their_type_and_status(
    provider: Provider, status: int, error_type: str, message: str
) -> None:
    adapter = adapter_for(provider)
    body = adapter.render_error(status, error_type, message)

    for payload in (body, json.dumps(body)):
        error = adapter.parse_error(status, payload)
        assert (error.status, error.error_type, error.provider) == (status, error_type, provider)


def test_error_bodies_have_the_documented_shapes() -> None:
    assert openai.render_error(429, "rate_limit_exceeded", "Slow down.") == {
        "error": {
            "message": "Slow down.",
            "type": "rate_limit_exceeded",
            "param": None,
            "code": None,
        }
    }
    assert anthropic.render_error(529, "overloaded_error", "Overloaded") == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("status", "error_type"), [(200, "x"), (399, "x"), (600, "x"), (400, "")])
def test_error_bodies_refuse_what_no_provider_sends(
    provider: Provider, status: int, error_type: str
) -> None:
    with pytest.raises(IllegalArgumentException, match="expected"):
        adapter_for(provider).render_error(status, error_type, "message")


# --- against real replies ---------------------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_recorded_reply_renders_back_to_itself(provider: Provider) -> None:
    [interaction] = load_interactions(
        f"test_tool_choice_matrix/test_tool_choice_matrix[list_single-{provider}].yaml"
    )
    recorded = interaction["response"]["parsed_body"]
    adapter = adapter_for(provider)

    rendered = adapter.render_response(
        adapter.parse_response(recorded), model=recorded["model"], response_id=recorded["id"]
    )

    if provider == "openai":
        recorded = {**recorded, "created": openai.RENDERED_CREATED}
    assert rendered == recorded


@needs_corpus
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "text", ["", "Checking the weather."], ids=["tool-call-only", "text-and-tool-call"]
)
def test_scripted_replies_have_the_keys_of_a_real_reply(provider: Provider, text: str) -> None:
    [interaction] = load_interactions(
        f"test_tool_choice_matrix/test_tool_choice_matrix[list_single-{provider}].yaml"
    )
    recorded = interaction["response"]["parsed_body"]
    scripted = LlmResponse(
        text=text,
        tool_calls=(
            LlmToolCall(
                id=f"{CALL_ID_PREFIX[provider]}1", name="lookup", arguments='{"city": "Lyon"}'
            ),
        ),
        stop=ToolUse(),
        usage=Usage(input_tokens=10, output_tokens=5, total_tokens=15),
    )

    rendered = key_shape(render_plain(provider, scripted))
    expected = key_shape(recorded)

    if provider == "anthropic" and text:  # the recording has no text block; a text block is first
        expected["content"].insert(0, {"type": None, "text": None})
    assert rendered == expected


def _recorded_stream(relative: str, index: int) -> str:
    text: str = load_interactions(relative)[index]["response"]["body"]["string"]
    return text


@needs_corpus
@pytest.mark.parametrize(
    ("provider", "relative", "index"),
    [
        ("openai", "test_openai/test_run_stream_sync_streams_real_model.yaml", 0),
        ("openai", "test_openai/test_run_stream_sync_streams_real_model.yaml", 1),
        ("anthropic", "test_anthropic/test_request_stream_fallback_for_high_max_tokens.yaml", 0),
    ],
)
def test_scripted_streams_have_the_events_of_a_real_stream(
    provider: Provider, relative: str, index: int
) -> None:
    recorded_text = _recorded_stream(relative, index)
    adapter = adapter_for(provider)
    recorded = adapter.parse_stream(parse_sse(recorded_text))
    assert recorded.model is not None

    blocks = adapter.render_stream(recorded, model=recorded.model, response_id="scripted")
    parsed = adapter.parse_stream(parse_sse("".join(blocks)))

    def shapes(events: list[tuple[str | None, Any]]) -> set[str]:
        return {json.dumps([name, key_shape(payload)], sort_keys=True) for name, payload in events}

    recorded_events = [stream_data(event.render().decode()) for event in parse_sse(recorded_text)]
    assert shapes([stream_data(block) for block in blocks]) == shapes(recorded_events)
    assert_same_reply(parsed, recorded, exact_arguments=True)
