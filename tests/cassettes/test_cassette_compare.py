"""`harness cassettes diff OLD NEW`: two recordings compared for a reviewer.

Interactions pair by request key, then by method, path and nearest request, so a re-recording
that changed one request field reads as one changed interaction; answers are summarised, never
dumped; text, Markdown and JSON say the same; exit 0 identical, 1 different, 2 bad input; and no
secret is shown, not even cut in half."""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner, Result

from harness.cassettes import Cassette, CassetteTransport, canonical_request_key
from harness.cassettes.cassette import (
    CassetteDocument,
    CassetteMetadata,
    Interaction,
    RecordedRequest,
    RecordedResponse,
)
from harness.cassettes.compare import (
    RENDERERS,
    TEXT_LIMIT,
    compare_files,
    describe_answer,
    summarise_answer,
)
from harness.cassettes.diff import MAX_DIFF_LINES
from harness.cli import main
from harness.sse import SseEvent
from tests.docs.fences import DOCS, fences
from tests.support.cassette_files import edit_cassette
from tests.support.cassette_traffic import CHAT, OPENAI, chat

Answer = dict[str, Any] | list[str]
"""A JSON answer, or the `data` of each event of a streamed one."""


def completion(text: str | None, *, tool: tuple[str, str] | None = None) -> dict[str, Any]:
    """A Chat Completions answer with `text`, and a tool call `(name, arguments)` if given."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool is not None:
        name, arguments = tool
        function = {"name": name, "arguments": arguments}
        message["tool_calls"] = [{"id": "call_1", "type": "function", "function": function}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


def chunks(*pieces: str) -> list[str]:
    """A streamed Chat Completions answer saying `pieces` one delta each, then `[DONE]`."""
    deltas = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces]
    return [json.dumps(delta) for delta in deltas] + ["[DONE]"]


def record(
    path: Path,
    exchanges: Sequence[tuple[dict[str, Any], Answer]],
    *,
    request_path: str = CHAT,
    identical_requests: str | None = None,
) -> Path:
    """Record `exchanges` (request body, answer) into `path` through `CassetteTransport`, each
    answer with a header no two recordings share (`x-trace`, which the recorder keeps)."""
    answers: dict[str, list[Answer]] = defaultdict(list)
    for body, reply in exchanges:
        answers[json.dumps(body, sort_keys=True)].append(reply)

    def answer(request: httpx2.Request) -> httpx2.Response:
        found = answers[json.dumps(json.loads(request.content), sort_keys=True)].pop(0)
        headers = {"x-trace": uuid.uuid4().hex}
        if isinstance(found, dict):
            return httpx2.Response(200, headers=headers, json=found)
        stream = "".join(f"data: {data}\n\n" for data in found)
        headers["content-type"] = "text/event-stream"
        return httpx2.Response(200, headers=headers, content=stream.encode())

    transport = CassetteTransport(
        path,
        mode="all",
        inner=httpx2.MockTransport(answer),
        run_id=uuid.uuid4().hex,
        identical_requests="separate" if identical_requests == "separate" else None,
    )
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        for body, _ in exchanges:
            client.post(request_path, json=body)
    return path


def diff(old: Path, new: Path, *options: str) -> Result:
    result = CliRunner().invoke(main, ["cassettes", "diff", str(old), str(new), *options])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def as_json(old: Path, new: Path) -> Any:
    return json.loads(diff(old, new, "--format", "json").output)


FRANCE = chat("What is the capital of France?", temperature=0.7)
SPAIN = chat("What is the capital of Spain?", temperature=0.7)


@pytest.fixture
def old(tmp_path: Path) -> Path:
    return record(
        tmp_path / "old.json", [(FRANCE, completion("Paris.")), (SPAIN, completion("Madrid."))]
    )


# -- identical -----------------------------------------------------------------------------------


def test_a_re_recording_of_the_same_traffic_is_identical(old: Path, tmp_path: Path) -> None:
    """Response headers and the recording time change on every recording; they are no
    change."""
    new = record(
        tmp_path / "new.json", [(FRANCE, completion("Paris.")), (SPAIN, completion("Madrid."))]
    )
    assert old.read_bytes() != new.read_bytes()
    expected = {
        "text": "no change: 2 interactions, all unchanged\n",
        "markdown": "No change: 2 interactions, all unchanged.\n",
        "json": '"identical": true',
    }
    assert set(expected) == set(RENDERERS)
    for output, said in expected.items():
        result = diff(old, new, "--format", output)
        assert result.exit_code == 0, result.output
        assert said in result.output


# -- changed, added, removed ---------------------------------------------------------------------


def test_a_changed_request_field_is_one_changed_interaction_with_its_path(
    old: Path, tmp_path: Path
) -> None:
    new = record(
        tmp_path / "new.json",
        [({**FRANCE, "temperature": 1.0}, completion("Paris.")), (SPAIN, completion("Madrid."))],
    )
    result = diff(old, new)
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == [
        f"cassette diff: {old} -> {new}",
        "~ POST /v1/chat/completions (occurrence 1, interaction 0): request changed (1 field), "
        "same answer",
        "    request:",
        "      $.temperature: 0.7 -> 1.0",
        '    answer (the same): 200, text "Paris.", 165 bytes',
        "1 changed, 0 added, 0 removed, 1 unchanged",
    ]
    [changed] = as_json(old, new)["changed"]
    assert changed["paired_by"] == "request"
    assert changed["request_changes"] == ["$.temperature: 0.7 -> 1.0"]
    assert changed["answer_changes"] == []
    assert changed["old"]["key"] != changed["new"]["key"]


def test_a_new_answer_to_the_same_request_says_both_answers_and_what_changed(
    old: Path, tmp_path: Path
) -> None:
    new = record(
        tmp_path / "new.json", [(FRANCE, completion("Lyon.")), (SPAIN, completion("Madrid."))]
    )
    result = diff(old, new)
    assert result.exit_code == 1
    assert "(occurrence 1, interaction 0): same request, answer changed" in result.output
    assert '    old answer: 200, text "Paris.", 165 bytes\n' in result.output
    assert '    new answer: 200, text "Lyon.", 164 bytes\n' in result.output
    assert '      $.body.choices[0].message.content: "Paris." -> "Lyon."\n' in result.output
    assert "request:" not in result.output


def test_unrelated_requests_are_added_and_removed_not_paired(old: Path, tmp_path: Path) -> None:
    unrelated = {"model": "o3", "messages": [{"role": "system", "content": "Be terse."}]}
    new = record(
        tmp_path / "new.json", [(FRANCE, completion("Paris.")), (unrelated, completion("OK"))]
    )
    result = diff(old, new)
    assert result.exit_code == 1
    assert result.output.splitlines()[1:] == [
        "+ POST /v1/chat/completions (occurrence 1, interaction 1)",
        '    request: model "o3", 1 message, last system: "Be terse."',
        '    answer: 200, text "OK", 161 bytes',
        "- POST /v1/chat/completions (occurrence 1, interaction 1)",
        '    request: model "gpt-4o-mini", 1 message, last user: "What is the capital of Spain?"',
        '    answer: 200, text "Madrid.", 166 bytes',
        "0 changed, 1 added, 1 removed, 1 unchanged",
    ]
    document = as_json(old, new)
    assert document["counts"] == {"changed": 0, "added": 1, "removed": 1, "unchanged": 1}
    assert document["added"][0]["recorded"]["answer"]["text"] == "OK"


def test_the_same_conversation_pairs_whatever_else_changed(tmp_path: Path) -> None:
    """A live re-recording makes up new tool call ids, and the tools may have changed too: the
    conversation still says which interaction it is."""

    def follow_up(call_id: str, tool: dict[str, Any]) -> dict[str, Any]:
        asked = chat("Weather in Paris?", tools=[tool])
        called = completion(None, tool=("weather", '{"city":"Paris"}'))["choices"][0]["message"]
        called["tool_calls"][0]["id"] = call_id
        answered = {"role": "tool", "tool_call_id": call_id, "content": "sunny"}
        return {**asked, "messages": [*asked["messages"], called, answered]}

    properties = {f"p{n}": {"type": "string"} for n in range(8)}
    before = {"type": "function", "function": {"name": "weather", "parameters": properties}}
    after = {"type": "function", "function": {"name": "forecast", "parameters": {}}}
    old = record(tmp_path / "old.json", [(follow_up("call_A", before), completion("Sunny."))])
    new = record(tmp_path / "new.json", [(follow_up("call_B", after), completion("Sunny."))])
    [changed] = as_json(old, new)["changed"]
    assert changed["paired_by"] == "request"
    assert changed["request_changes"][:2] == [
        '$.messages[1].tool_calls[0].id: "call_A" -> "call_B"',
        '$.messages[2].tool_call_id: "call_A" -> "call_B"',
    ]
    assert changed["more_request_changes"] + len(changed["request_changes"]) > 10


def test_a_request_recorded_fewer_times_loses_its_last_occurrence(tmp_path: Path) -> None:
    twice = [(FRANCE, completion("Paris.")), (FRANCE, completion("Paris, again."))]
    old = record(tmp_path / "old.json", twice, identical_requests="separate")
    new = record(tmp_path / "new.json", twice[:1], identical_requests="separate")
    document = as_json(old, new)
    assert document["counts"] == {"changed": 0, "added": 0, "removed": 1, "unchanged": 1}
    [removed] = document["removed"]
    assert (removed["recorded"]["occurrence"], removed["recorded"]["answer"]["text"]) == (
        2,
        "Paris, again.",
    )


def test_request_changes_are_capped(tmp_path: Path) -> None:
    changes = MAX_DIFF_LINES + 1
    options = {f"option_{n:02}": n for n in range(30)}
    more = {name: value + 1 if value < changes else value for name, value in options.items()}
    old = record(tmp_path / "old.json", [(chat("x", **options), completion("a"))])
    new = record(tmp_path / "new.json", [(chat("x", **more), completion("a"))])
    [changed] = as_json(old, new)["changed"]
    assert len(changed["request_changes"]) == MAX_DIFF_LINES
    assert changed["more_request_changes"] == 1
    assert changed["request_changes"][0] == "$.option_00: 0 -> 1"
    output = diff(old, new).output
    assert f"request changed ({changes} fields), same answer" in output
    assert "      ... and 1 more\n" in output


# -- answers summarised --------------------------------------------------------------------------


def test_a_long_answer_is_cut_and_a_tool_call_shown_by_name_and_arguments(tmp_path: Path) -> None:
    text = "Paris is the capital of France. " * 20
    arguments = json.dumps({"query": "capital of France " * 10, "limit": 3})
    old = record(tmp_path / "old.json", [(FRANCE, completion("Paris."))])
    new = record(tmp_path / "new.json", [(FRANCE, completion(text, tool=("search", arguments)))])
    answer = as_json(old, new)["changed"][0]["new"]["answer"]
    assert len(answer["text"]) == TEXT_LIMIT
    assert answer["text"].endswith("...")
    assert answer["tool_calls"] == ['search({"query":"capital of France capital o...)']
    output = diff(old, new).output
    assert text not in output
    assert f'new answer: 200, text "{answer["text"]}", tool call search(' in output
    assert max(len(line) for line in output.splitlines()) < 200


def test_an_event_stream_is_counted_and_its_text_put_together(tmp_path: Path) -> None:
    old = record(tmp_path / "old.json", [(FRANCE, chunks("Par", "is."))])
    new = record(tmp_path / "new.json", [(FRANCE, chunks("Ly", "on", "."))])
    output = diff(old, new).output
    assert 'old answer: 200, stream of 3 events, text "Paris.", ' in output
    assert 'new answer: 200, stream of 4 events, text "Lyon.", ' in output
    assert "$.events: 3 items -> 4 items" in output
    assert '$.events[0].data.choices[0].delta.content: "Par" -> "Ly"' in output


@pytest.mark.parametrize(
    ("response", "summary"),
    [
        pytest.param(
            RecordedResponse(
                status=200,
                body={
                    "type": "message",
                    "content": [
                        {"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "name": "weather", "input": {"city": "Paris"}},
                    ],
                },
            ),
            '200, text "Let me look.", tool call weather({"city":"Paris"}), 130 bytes',
            id="messages",
        ),
        pytest.param(
            RecordedResponse(
                status=200,
                events=[
                    SseEvent(
                        event="content_block_start",
                        data='{"type":"content_block_start","index":0,'
                        '"content_block":{"type":"tool_use","name":"weather","input":{}}}',
                    ),
                    SseEvent(
                        event="content_block_delta",
                        data='{"type":"content_block_delta","index":0,'
                        '"delta":{"type":"input_json_delta","partial_json":"{\\"city\\": "}}',
                    ),
                    SseEvent(
                        event="content_block_delta",
                        data='{"type":"content_block_delta","index":0,'
                        '"delta":{"type":"input_json_delta","partial_json":"\\"Paris\\"}"}}',
                    ),
                ],
            ),
            '200, stream of 3 events, tool call weather({"city":"Paris"}), 418 bytes',
            id="messages-stream",
        ),
        pytest.param(
            RecordedResponse(
                status=200,
                body={
                    "object": "response",
                    "output": [
                        {"type": "reasoning", "summary": []},
                        {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]},
                        {"type": "function_call", "name": "f", "arguments": "{}"},
                    ],
                },
            ),
            '200, text "Hi", tool call f({}), 185 bytes',
            id="responses",
        ),
        pytest.param(
            RecordedResponse(
                status=200,
                events=[
                    SseEvent(
                        event="response.output_text.delta",
                        data='{"type":"response.output_text.delta","delta":"Hel"}',
                    ),
                    SseEvent(
                        event="response.output_text.delta",
                        data='{"type":"response.output_text.delta","delta":"lo"}',
                    ),
                ],
            ),
            '200, stream of 2 events, text "Hello", 185 bytes',
            id="responses-stream",
        ),
        pytest.param(
            RecordedResponse(
                status=429,
                body={"error": {"type": "rate_limit_exceeded", "message": "Slow down."}},
            ),
            '429, error "rate_limit_exceeded: Slow down.", 63 bytes',
            id="error",
        ),
        pytest.param(
            RecordedResponse(status=201, body_text="plain"),
            '201, text body "plain", 5 bytes',
            id="text",
        ),
        pytest.param(
            RecordedResponse(status=200, body_base64="AP8="),
            "200, binary body, 2 bytes",
            id="binary",
        ),
        pytest.param(RecordedResponse(status=204), "204, empty body", id="empty"),
        pytest.param(RecordedResponse(status=200, body=[1, 2]), "200, 5 bytes", id="other-json"),
    ],
)
def test_every_answer_shape_is_summarised(response: RecordedResponse, summary: str) -> None:
    assert describe_answer(summarise_answer(response)) == summary


# -- Markdown ------------------------------------------------------------------------------------

HOSTILE = "</details><script>alert(1)</script> @octocat ``` **bold**"


def test_markdown_is_a_pull_request_comment_nothing_in_it_renders(
    old: Path, tmp_path: Path
) -> None:
    added = chat("Describe Paris.", model="o3")
    new = record(
        tmp_path / "new.json",
        [(FRANCE, completion(HOSTILE)), (added, completion(HOSTILE))],
    )
    result = diff(old, new, "--format", "markdown")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"### Cassette diff: `{old}` → `{new}`"
    table = lines[lines.index("| interactions | count |") :][:6]
    assert table == [
        "| interactions | count |",
        "| --- | ---: |",
        "| changed | 1 |",
        "| added | 1 |",
        "| removed | 1 |",
        "| unchanged | 0 |",
    ]
    assert "#### Changed" in lines
    assert "#### Added" in lines
    assert "#### Removed" in lines
    opened = lines.index("<details>")
    assert lines[opened + 1] == (
        "<summary><code>POST /v1/chat/completions</code> (occurrence 1, interaction 0): "
        "same request, answer changed</summary>"
    )
    assert lines[opened + 2 : opened + 4] == ["", "````text"]  # longer than the ``` it holds
    closed = lines.index("````", opened)
    assert lines[closed + 1 : closed + 3] == ["", "</details>"]
    outside = lines[:opened] + lines[closed + 1 :]
    for line in outside:
        if line.startswith("  - answer: "):  # an added or removed answer: one code span
            assert line.startswith("  - answer: `"), line
            assert line.endswith("`"), line
            continue
        assert "<script>" not in line, line
        assert "@octocat" not in line, line
    assert any("<script>" in line for line in lines[opened:closed])


def test_the_three_formats_say_the_same(old: Path, tmp_path: Path) -> None:
    new = record(tmp_path / "new.json", [(SPAIN, completion("Madrid, Spain."))])
    comparison = compare_files(old, new)
    text = RENDERERS["text"](comparison)
    markdown = RENDERERS["markdown"](comparison)
    document = json.loads(RENDERERS["json"](comparison))
    assert text.endswith("1 changed, 0 added, 1 removed, 0 unchanged\n")
    assert "| changed | 1 |" in markdown
    assert "| removed | 1 |" in markdown
    assert document["identical"] is False
    assert document["counts"] == {"changed": 1, "added": 0, "removed": 1, "unchanged": 0}
    for rendered in (text, markdown):
        assert 'text "Madrid, Spain."' in rendered
        assert 'last user: "What is the capital of France?"' in rendered
    assert document["changed"][0]["new"]["answer"]["text"] == "Madrid, Spain."


# -- both formats --------------------------------------------------------------------------------


def version_one(path: Path, body: dict[str, Any], answer: dict[str, Any]) -> Path:
    """A `harness-cassette/1` file as earlier releases wrote it: numbers keyed as spelt."""
    text = json.dumps(body, separators=(",", ":"))
    interaction = Interaction.build(
        canonical_request_key("POST", CHAT, {}, text, version=1),
        1,
        RecordedRequest(method="POST", path=CHAT, body=body),
        RecordedResponse(status=200, body=answer),
    )
    document = CassetteDocument(
        format="harness-cassette/1",
        metadata=CassetteMetadata(harness_version="0.1.0", recorded_at="2026-01-01T00:00:00"),
        interactions=[interaction],
    )
    path.write_bytes(Cassette.from_document(path, document).dumps())
    return path


def test_a_version_one_cassette_pairs_with_version_two_by_the_number_canonical_key(
    tmp_path: Path,
) -> None:
    """Python spells the temperature `1.0`, JavaScript `1`: two version-1 keys, one version-2
    key. The upgrade changes no interaction; the format line says what did change."""
    old = version_one(tmp_path / "old.json", chat("hi", temperature=1.0), completion("Hello."))
    new = tmp_path / "new.json"
    transport = CassetteTransport(
        new,
        mode="all",
        inner=httpx2.MockTransport(lambda _: httpx2.Response(200, json=completion("Hello."))),
        run_id=uuid.uuid4().hex,
    )
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        sent = json.dumps(chat("hi", temperature=1.0)).replace("1.0", "1")
        client.post(CHAT, content=sent, headers={"content-type": "application/json"})
    assert Cassette.load(old).interactions[0].key != Cassette.load(new).interactions[0].key
    result = diff(old, new)
    assert result.exit_code == 1, result.output
    assert '  format: "harness-cassette/1" -> "harness-cassette/2"\n' in result.output
    assert "requests were paired by their version-2 keys" in result.output
    assert result.output.endswith("0 changed, 0 added, 0 removed, 1 unchanged\n")
    assert as_json(old, new)["key_version"] == 2
    assert diff(old, old).exit_code == 0


# -- bad input -----------------------------------------------------------------------------------


def test_a_missing_file_is_invalid_input(old: Path, tmp_path: Path) -> None:
    result = diff(old, tmp_path / "nowhere.json")
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_a_tampered_file_is_invalid_input(old: Path, tmp_path: Path) -> None:
    new = record(tmp_path / "new.json", [(FRANCE, completion("Paris."))])
    edit_cassette(new, lambda d: d["interactions"][0]["response"]["body"].update(id="edited"))
    for arguments in ((old, new), (new, old)):
        result = diff(*arguments, "--format", "markdown")
        assert result.exit_code == 2, result.output
        assert f"error: cassette {new} failed verification: interaction #0 " in result.output
        assert "digest mismatch" in result.output
        assert "###" not in result.output


def test_a_file_that_is_no_cassette_is_invalid_input(old: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"interactions": []}')
    result = diff(old, other, "--format", "json")
    assert result.exit_code == 2
    assert f"error: {other}: unknown cassette format None" in result.output


def test_an_unknown_format_is_a_usage_error(old: Path) -> None:
    result = diff(old, old, "--format", "html")
    assert result.exit_code == 2
    assert "'html' is not one of 'text', 'markdown', 'json'" in result.output


# -- secrets -------------------------------------------------------------------------------------


def unscrubbed(path: Path, answers: Mapping[str, str]) -> Path:
    """A cassette written directly, not through a recorder, so nothing was scrubbed from it."""
    interactions = []
    for question, text in answers.items():
        body = chat(question)
        interactions.append(
            Interaction.build(
                canonical_request_key("POST", CHAT, {}, json.dumps(body)),
                1,
                RecordedRequest(method="POST", path=CHAT, body=body),
                RecordedResponse(status=200, body=completion(text)),
            )
        )
    document = CassetteDocument(
        metadata=CassetteMetadata(harness_version="0", recorded_at="2026-01-01T00:00:00"),
        interactions=interactions,
    )
    path.write_bytes(Cassette.from_document(path, document).dumps())
    return path


def test_no_secret_is_shown_not_even_cut_in_half(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = "canary-value-of-a-key-9f3b2c"
    shaped = "sk-proj-" + "A" * 40
    monkeypatch.setenv("CANARY_API_KEY", canary)
    padding = "x" * (TEXT_LIMIT - 10)  # the cut falls inside each secret
    old = unscrubbed(tmp_path / "old.json", {canary: "old", "q": "old"})
    new = unscrubbed(
        tmp_path / "new.json", {canary: f"{padding}{canary}", "q": f"{padding}{shaped}"}
    )
    for output in RENDERERS:
        result = diff(old, new, "--format", output)
        assert result.exit_code == 1, result.output
        assert "[SCRUBBED]" in result.output
        for secret in (canary, shaped):
            assert secret[:7] not in result.output, (output, secret)


# -- the documented sample -----------------------------------------------------------------------


def test_the_documented_sample_is_what_the_command_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/cassettes.md shows the text and Markdown of one comparison; this records it."""
    monkeypatch.chdir(tmp_path)
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    capital = chat("What is the capital of France?", temperature=0.7)
    asked = chat("What is the weather in Paris?", tools=[weather])
    call = completion(None, tool=("get_weather", '{"city": "Paris"}'))
    answered = {
        **asked,
        "messages": [
            *asked["messages"],
            call["choices"][0]["message"],
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 22 C"},
        ],
    }
    longer = "The capital of France is Paris, on the Seine; it has been the capital since 987."
    before = record(
        Path("before.json"),
        [
            (capital, completion("Paris.")),
            (asked, call),
            (chat("Say hello."), completion("Hello! How can I help you today?")),
        ],
    )
    Path("cassettes").mkdir()
    after = record(
        Path("cassettes/weather.json"),
        [
            ({**capital, "temperature": 1.0}, completion(longer)),
            (asked, call),
            (answered, completion("It is sunny in Paris, 22 C.")),
        ],
    )
    page = DOCS / "cassettes.md"
    section = page.read_text(encoding="utf-8").index("### Comparing two recordings")
    start = page.read_text(encoding="utf-8").count("\n", 0, section)
    shown = [fence.source for fence in fences(page) if fence.line > start][1:3]
    assert shown == [diff(before, after).output, diff(before, after, "--format", "markdown").output]
