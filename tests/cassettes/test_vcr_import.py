"""`import_vcr`: vcrpy YAML cassettes become harness cassettes that answer the original requests.

The corpus test converts every pydantic-ai cassette of the shared corpus and replays every
recorded request, byte for byte as the YAML holds it, through `CassetteTransport`. The corpus
folder (the one holding `pydantic-ai/`) is found next to the repository, or named by the
environment variable HARNESS_CORPUS_DIR.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
import yaml
from httpx_sse import EventSource

from harness.cassettes import (
    PLACEHOLDER,
    CassetteFormatError,
    CassetteTransport,
    canonical_request_key,
)
from harness.cassettes.vcr import VcrImportError, import_vcr
from harness.sse import parse_sse
from tests.support.corpus import CORPUS_VARIABLE, corpus_folder

SCRUBBED_HEADERS = frozenset({"cookie", "set-cookie", "openai-organization", "openai-project"})


PYDANTIC_AI = corpus_folder()


def corpus_cassettes() -> list[pytest.ParameterSet]:
    if not PYDANTIC_AI.is_dir():
        reason = (
            f"corpus folder {PYDANTIC_AI} is missing; set {CORPUS_VARIABLE} to the folder "
            "holding pydantic-ai/"
        )
        return [pytest.param(None, id="corpus-missing", marks=pytest.mark.skip(reason=reason))]
    found = sorted(p for p in PYDANTIC_AI.rglob("*") if p.suffix in (".yaml", ".yml"))
    if not found:  # an empty parameter set would be skipped silently
        return [pytest.param(None, id="corpus-empty")]
    return [pytest.param(path, id=path.relative_to(PYDANTIC_AI).as_posix()) for path in found]


# -- reading the YAML the way a vcrpy user's client sent it ----------------------------------------


def load_yaml(path: Path) -> Any:
    return yaml.load(
        path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    )


def header_pairs(headers: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (name, value)
        for name, values in headers.items()
        for value in ([values] if isinstance(values, str) else values)
    ]


def request_body(request: dict[str, Any]) -> bytes:
    """The body the recording client sent (pydantic-ai's loader: `json.dumps(parsed_body)`)."""
    if "parsed_body" in request:
        return json.dumps(request["parsed_body"]).encode("utf-8")
    body = request.get("body")
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body).encode("utf-8")


def original_request(request: dict[str, Any]) -> httpx2.Request:
    return httpx2.Request(
        request["method"],
        request["uri"],
        headers=header_pairs(request.get("headers") or {}),
        content=request_body(request),
    )


def is_event_stream(response: dict[str, Any]) -> bool:
    return any(
        name.lower() == "content-type" and "text/event-stream" in value
        for name, value in header_pairs(response["headers"])
    )


def sse_events(content: bytes) -> list[tuple[str, str, str, int | None]]:
    """The events as httpx-sse reads them: an oracle independent of our own SSE parser."""
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=content)
    return [(e.event, e.data, e.id, e.retry) for e in EventSource(response).iter_sse()]


def replay(client: httpx2.Client, request: httpx2.Request) -> tuple[httpx2.Response, list[bytes]]:
    response = client.send(request, stream=True)
    try:
        chunks = list(response.iter_raw())
    finally:
        response.close()
    return response, chunks


def assert_same_answer(
    expected: dict[str, Any], response: httpx2.Response, chunks: list[bytes], where: str
) -> None:
    assert response.status_code == expected["status"]["code"], where
    content = b"".join(chunks)
    if "parsed_body" in expected:
        assert json.loads(content) == expected["parsed_body"], where
        return
    raw = (expected.get("body") or {}).get("string") or b""
    text = raw.encode("utf-8") if isinstance(raw, str) else raw
    if is_event_stream(expected):
        assert len(chunks) > 1, f"{where}: a stream must arrive as several chunks"
        assert sse_events(content) == sse_events(text), where
        assert parse_sse(content.decode("utf-8")) == parse_sse(text.decode("utf-8")), where
        return
    try:
        assert json.loads(content) == json.loads(text), where
    except ValueError:
        assert content == text, where


def scrubbed_header_values(interactions: list[dict[str, Any]]) -> set[str]:
    """Every organisation, project and cookie value in the YAML, and each cookie's own value."""
    values: set[str] = set()
    for interaction in interactions:
        for part in ("request", "response"):
            for name, value in header_pairs(interaction[part]["headers"]):
                if name.lower() not in SCRUBBED_HEADERS:
                    continue
                values.add(value)
                if "cookie" in name.lower():
                    values.update(
                        piece.partition("=")[2]
                        for piece in value.split(";")
                        if len(piece.partition("=")[2]) >= 8
                    )
    return values


# -- the corpus ------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", corpus_cassettes())
def test_every_corpus_interaction_replays_from_its_imported_cassette(
    source: Path | None, tmp_path: Path
) -> None:
    assert source is not None, f"no vcrpy cassettes (*.yaml, *.yml) under {PYDANTIC_AI}"
    recorded: list[dict[str, Any]] = load_yaml(source)["interactions"]

    report = import_vcr([source], tmp_path)

    output = tmp_path / source.with_suffix(".json").name
    assert [cassette.output for cassette in report.cassettes] == [output]
    assert (report.file_count, report.interaction_count) == (1, len(recorded))
    written = output.read_text(encoding="utf-8")
    document = json.loads(written)
    assert document["format"] == "harness-cassette/2"
    assert len(document["interactions"]) == len(recorded)
    for value in scrubbed_header_values(recorded):
        assert value not in written
    for index, interaction in enumerate(recorded):
        for part in ("request", "response"):
            stored = document["interactions"][index][part]["headers"]
            for name in interaction[part]["headers"]:
                if name.lower() in SCRUBBED_HEADERS:
                    assert stored[name.lower()] == PLACEHOLDER
            assert "content-length" not in stored

    # strict: closing fails if any imported interaction was never asked for
    with httpx2.Client(transport=CassetteTransport(output, strict=True)) as client:
        for index, interaction in enumerate(recorded):
            response, chunks = replay(client, original_request(interaction["request"]))
            assert_same_answer(interaction["response"], response, chunks, f"interaction #{index}")


# -- the forms vcrpy and its users write -----------------------------------------------------------


def write_yaml(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def interaction(request: dict[str, Any], response: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "request": {"headers": {}, **request},
        "response": response
        or {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": '{"ok": true}'},
        },
    }


CHAT = "https://api.openai.com/v1/chat/completions"
ANTHROPIC = "https://api.anthropic.com/v1/messages"
USER_TEXT = "Capital of France?"
USER = {"role": "user", "content": USER_TEXT}
STREAM = (
    ': OPENROUTER PROCESSING\n\ndata: {"n":1}\n\nevent: delta\ndata: {"n":2        }\n\n'
    "data: [DONE]\n\n"
)


def test_every_body_form_is_keyed_like_the_request_the_client_sent(tmp_path: Path) -> None:
    forms = [
        interaction(
            {
                "method": "POST",
                "uri": CHAT,
                "headers": {"content-type": ["application/json"], "content-length": ["999"]},
                "body": '{"model": "m", "messages": []}',
            }
        ),
        interaction(
            {"method": "GET", "uri": "https://api.openai.com/v1/models?limit=2", "body": None},
            {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": "application/json", "content-length": ["1"]},
                "parsed_body": {"data": [{"id": "m"}]},
            },
        ),
        interaction(
            {
                "method": "POST",
                "uri": "https://example.test/upload",
                "headers": {"content-type": ["application/octet-stream"]},
                "body": b"\xff\x00binary",
            },
            {
                "status": {"code": 201, "message": "Created"},
                "headers": {
                    "content-type": ["text/plain"],
                    "content-encoding": ["gzip"],
                    "content-length": ["3"],
                },
                "body": {"string": gzip.compress(b"stored, compressed")},
            },
        ),
        interaction(
            {
                "method": "POST",
                "uri": CHAT,
                "headers": {"content-type": ["application/json"]},
                "body": {"model": "m", "tool_choice": {"function": {"name": "f"}}},
            }
        ),
        interaction(
            {
                "method": "POST",
                "uri": "https://api.anthropic.com/v1/messages?beta=true",
                "headers": {"anthropic-version": ["2023-06-01"]},
                "parsed_body": {"model": "claude", "stream": True},
            },
            {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["text/event-stream; charset=utf-8"]},
                "body": {"string": STREAM},
            },
        ),
    ]
    source = write_yaml(tmp_path / "forms.yaml", {"interactions": forms, "version": 1})

    report = import_vcr([source], tmp_path / "out")

    output = tmp_path / "out" / "forms.json"
    assert report.interaction_count == len(forms)
    document = json.loads(output.read_text(encoding="utf-8"))
    for stored, form in zip(document["interactions"], forms, strict=True):
        sent = original_request(form["request"])
        assert stored["key"] == canonical_request_key(
            sent.method, str(sent.url), sent.headers.multi_items(), sent.content
        )
        assert stored["occurrence"] == 1
        assert "content-length" not in stored["request"]["headers"]
        assert "content-length" not in stored["response"]["headers"]
    assert document["interactions"][2]["response"]["body_text"] == "stored, compressed"
    assert "content-encoding" not in document["interactions"][2]["response"]["headers"]
    assert len(document["interactions"][4]["response"]["events"]) == 4

    with httpx2.Client(transport=CassetteTransport(output, strict=True)) as client:
        for index, form in enumerate(forms):
            response, chunks = replay(client, original_request(form["request"]))
            expected = dict(form["response"])
            if index == 2:  # the cassette stores the body decoded
                expected["body"] = {"string": b"stored, compressed"}
            assert_same_answer(expected, response, chunks, f"form #{index}")


def ask(client: anthropic.Anthropic) -> str:
    message = client.messages.create(
        model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": USER_TEXT}]
    )
    block = message.content[0]
    assert isinstance(block, anthropic.types.TextBlock)
    return block.text


def test_an_anthropic_request_recorded_without_its_version_replays_to_the_sdk(
    tmp_path: Path,
) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [USER]}
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Paris."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 2},
    }
    reply = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"content-type": ["application/json"]},
        "body": {"string": json.dumps(answer)},
    }
    filtered = interaction(
        {"method": "POST", "uri": ANTHROPIC, "parsed_body": body}, reply
    )  # as pydantic-ai records: every anthropic-* header filtered out
    pinned = interaction(
        {
            "method": "POST",
            "uri": ANTHROPIC,
            "headers": {"anthropic-version": ["2023-01-01"]},
            "parsed_body": {**body, "max_tokens": 32},
        },
        reply,
    )
    source = write_yaml(
        tmp_path / "claude.yaml", {"interactions": [filtered, pinned], "version": 1}
    )

    sdk = anthropic.Anthropic(api_key="sk-ant-test", max_retries=0)
    version = sdk.default_headers["anthropic-version"]
    assert isinstance(version, str)

    as_recorded = import_vcr([source], tmp_path / "as-recorded")
    keyed = import_vcr([source], tmp_path / "keyed", anthropic_version=version)

    assert [c.without_version for c in (*as_recorded.cassettes, *keyed.cassettes)] == [1, 1]
    assert "warning: 1 Anthropic request(s) were recorded without an anthropic-version header" in (
        as_recorded.summary()
    )
    assert f"are keyed with anthropic-version {version}" in keyed.summary()
    stored = json.loads((tmp_path / "keyed" / "claude.json").read_text(encoding="utf-8"))
    versions = [i["request"]["headers"]["anthropic-version"] for i in stored["interactions"]]
    assert versions == [version, "2023-01-01"], "a recorded version is kept as it is"
    transport = CassetteTransport(tmp_path / "as-recorded" / "claude.json")
    with sdk.with_options(http_client=httpx2.Client(transport=transport)) as client:
        with pytest.raises(anthropic.APIConnectionError) as missed:
            ask(client)
    assert f"header anthropic-version: (absent) -> '{version}'" in str(missed.value.__cause__)
    transport = CassetteTransport(tmp_path / "keyed" / "claude.json")
    with sdk.with_options(http_client=httpx2.Client(transport=transport)) as client:
        assert ask(client) == "Paris."  # the SDK's own headers: nothing left out
    with pytest.raises(VcrImportError, match="expected an anthropic-version such as"):
        import_vcr([source], tmp_path / "bad", anthropic_version="2023-06-01\r\nx: y")


def test_identical_requests_keep_their_answers_in_order(tmp_path: Path) -> None:
    request = {"method": "POST", "uri": CHAT, "parsed_body": {"model": "m", "messages": []}}
    answers = [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "parsed_body": {"turn": turn},
        }
        for turn in (1, 2)
    ]
    source = write_yaml(
        tmp_path / "twice.yaml",
        {"interactions": [interaction(request, answer) for answer in answers]},
    )

    import_vcr([source], tmp_path)

    document = json.loads((tmp_path / "twice.json").read_text(encoding="utf-8"))
    keys = {stored["key"] for stored in document["interactions"]}
    assert len(keys) == 1
    assert [stored["occurrence"] for stored in document["interactions"]] == [1, 2]
    with httpx2.Client(transport=CassetteTransport(tmp_path / "twice.json")) as client:
        turns = [
            json.loads(b"".join(replay(client, original_request(request))[1]))["turn"]
            for _ in answers
        ]
    assert turns == [1, 2]


def test_folders_are_searched_recursively_and_outputs_keep_their_relative_paths(
    tmp_path: Path,
) -> None:
    cassette = {"interactions": [interaction({"method": "GET", "uri": "https://a.test/x"})]}
    write_yaml(tmp_path / "src" / "a" / "first.yaml", cassette)
    write_yaml(tmp_path / "src" / "b" / "c" / "second.yml", cassette)
    (tmp_path / "src" / "notes.txt").write_text("not a cassette", encoding="utf-8")
    out = tmp_path / "out"

    report = import_vcr([tmp_path / "src"], out)

    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json")) == [
        "a/first.json",
        "b/c/second.json",
    ]
    assert (report.file_count, report.interaction_count) == (2, 2)
    assert report.summary().startswith("converted 2 vcrpy cassette(s) with 2 interaction(s)")
    before = {p: p.read_bytes() for p in out.rglob("*.json")}

    again = import_vcr([tmp_path / "src"], out)

    assert not any(cassette.written for cassette in again.cassettes)
    assert {p: p.read_bytes() for p in out.rglob("*.json")} == before
    assert "(2 already up to date)" in again.summary()


def test_secrets_cookies_and_organisation_ids_never_reach_the_output(tmp_path: Path) -> None:
    canary = "sk-proj-CANARYcanary0123456789abcdef"
    source = write_yaml(
        tmp_path / "secret.yaml",
        {
            "interactions": [
                interaction(
                    {
                        "method": "POST",
                        "uri": CHAT,
                        "headers": {
                            "authorization": [f"Bearer {canary}"],
                            "cookie": ["__cf_bm=CANARYcookie0123456789"],
                        },
                        "parsed_body": {"messages": [{"content": f"my key is {canary}"}]},
                    },
                    {
                        "status": {"code": 200, "message": "OK"},
                        "headers": {
                            "openai-organization": ["org-CANARYorganisation"],
                            "openai-project": ["proj_CANARYproject"],
                            "set-cookie": ["_cfuvid=CANARYsetcookie0123; path=/"],
                            "content-type": ["application/json"],
                        },
                        "parsed_body": {"echo": canary},
                    },
                )
            ]
        },
    )

    import_vcr([source], tmp_path)

    written = (tmp_path / "secret.json").read_text(encoding="utf-8")
    assert "CANARY" not in written


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        pytest.param("just: a mapping\n", "expected a mapping with an 'interactions'", id="keys"),
        pytest.param("- 1\n- 2\n", "but got list", id="list"),
        pytest.param("interactions: [unclosed\n", "invalid YAML", id="yaml"),
        pytest.param("- request: {uri: x}\n  response: {}\n", "format before 1.0", id="old-format"),
        pytest.param(
            "interactions:\n- request: {uri: 'https://a.test/'}\n  response: {status: {code: 200}}\n",
            "interaction #0 request.method: Field required",
            id="no-method",
        ),
        pytest.param("interactions: []\nversion: 2\n", "invalid version", id="version"),
        pytest.param(
            "interactions:\n- request: {method: POST, uri: 'https://a.test/', body: '{}',"
            " parsed_body: {}}\n  response: {status: {code: 200}}\n",
            "interaction #0 request: a request has both 'body' and 'parsed_body'",
            id="two-bodies",
        ),
        pytest.param(
            "interactions:\n- request: {method: GET, uri: 'https://a.test/'}\n"
            "  response:\n    status: {code: 200}\n    headers: {content-encoding: [gzip]}\n"
            "    body: {string: not gzip}\n",
            "does not decode as content-encoding gzip",
            id="corrupt-gzip",
        ),
        pytest.param(
            "interactions:\n- request: {method: GET, uri: 'https://a.test/'}\n"
            "  response:\n    status: {code: 200}\n    headers: {content-encoding: [br]}\n"
            "    body: {string: not brotli}\n",
            "interaction #0 response: ",
            id="encoding",
        ),
    ],
)
def test_a_source_that_is_not_a_vcrpy_cassette_is_refused_naming_the_file(
    tmp_path: Path, content: str, complaint: str
) -> None:
    good = write_yaml(
        tmp_path / "good.yaml",
        {"interactions": [interaction({"method": "GET", "uri": "https://a.test/"})]},
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(content, encoding="utf-8")

    with pytest.raises(CassetteFormatError) as caught:
        import_vcr([good, bad], tmp_path / "out")

    assert str(bad) in str(caught.value)
    assert complaint in str(caught.value)
    assert caught.value.code == "cassette_format_invalid"
    assert not (tmp_path / "out").exists(), "nothing is written when one source is refused"


def test_an_invalid_line_is_located_without_quoting_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("interactions:\n\t- authorization: sk-ant-CANARY0123456789abcdef\n")

    with pytest.raises(CassetteFormatError) as caught:
        import_vcr([bad], tmp_path / "out")

    assert f"{bad}:2:" in str(caught.value)
    assert "CANARY" not in str(caught.value)


def test_missing_sources_empty_folders_and_colliding_outputs_are_refused(tmp_path: Path) -> None:
    cassette = {"interactions": [interaction({"method": "GET", "uri": "https://a.test/"})]}
    one = write_yaml(tmp_path / "one" / "same.yaml", cassette)
    other = write_yaml(tmp_path / "other" / "same.yml", cassette)
    (tmp_path / "empty").mkdir()

    with pytest.raises(VcrImportError, match="existing cassette file or folder"):
        import_vcr([tmp_path / "absent"], tmp_path / "out")
    with pytest.raises(VcrImportError, match=r"no such file under it"):
        import_vcr([tmp_path / "empty"], tmp_path / "out")
    with pytest.raises(VcrImportError, match="would both be written to"):
        import_vcr([one, other], tmp_path / "out")
    report = import_vcr([one, tmp_path / "one"], tmp_path / "out")
    assert report.file_count == 1, "a file named twice is converted once"


def test_the_import_vcr_command(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harness.cli import main

    source = write_yaml(
        tmp_path / "src" / "one.yaml",
        {
            "interactions": [interaction({"method": "GET", "uri": "https://x/v1/models"})],
            "version": 1,
        },
    )
    runner = CliRunner()
    result = runner.invoke(
        main, ["cassettes", "import-vcr", str(source), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    assert "converted 1 vcrpy cassette(s) with 1 interaction(s)" in result.output
    assert (tmp_path / "out" / "one.json").is_file()
    missing = runner.invoke(
        main, ["cassettes", "import-vcr", str(tmp_path / "nope.yaml"), "--out", "o"]
    )
    assert missing.exit_code == 2
    assert "Traceback" not in missing.output
    claude = write_yaml(
        tmp_path / "src" / "claude.yaml",
        {"interactions": [interaction({"method": "POST", "uri": ANTHROPIC, "body": "{}"})]},
    )
    command = ["cassettes", "import-vcr", str(claude), "--out", str(tmp_path / "claude")]
    warned = runner.invoke(main, command)
    assert warned.exit_code == 0, warned.output
    assert "import again with --anthropic-version" in warned.output
    keyed = runner.invoke(main, [*command, "--anthropic-version", "2026-10-21"])
    assert "are keyed with anthropic-version 2026-10-21" in keyed.output
    refused = runner.invoke(main, [*command, "--anthropic-version", "2026 10 21"])
    assert refused.exit_code == 2
    assert "expected an anthropic-version such as 2023-06-01" in refused.output


def vcr_file(path: Path, interactions: Any) -> Path:
    return write_yaml(path, {"interactions": interactions, "version": 1})


def with_member(part: str, name: str, value: Any) -> list[Any]:
    """One valid interaction with `part.name` (`request` or `response`) set to `value`."""
    item = interaction({"method": "POST", "uri": CHAT, "body": '{"a": 1}'})
    item[part][name] = value
    return [item]


def without(part: str) -> list[Any]:
    item = interaction({"method": "POST", "uri": CHAT})
    del item[part]
    return [item]


def deep_json(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize(
    ("interactions", "complaint"),
    [
        pytest.param(["GET /"], "invalid interaction #0: Input should be a valid dict", id="str"),
        pytest.param([{"request": "GET /", "response": {}}], "#0 request: Input", id="request"),
        pytest.param(with_member("request", "headers", 7), "#0 request.headers", id="headers"),
        pytest.param(with_member("response", "headers", [1]), "#0 response.headers", id="rh"),
        pytest.param(with_member("request", "method", 5), "#0 request.method", id="method"),
        pytest.param(with_member("request", "uri", None), "#0 request.uri", id="uri"),
        pytest.param(with_member("response", "body", 5), "#0 response.body", id="body"),
        pytest.param(
            with_member("response", "body", {"string": [1]}), "#0 response.body.string", id="bs"
        ),
        pytest.param(with_member("response", "status", 200), "#0 response.status", id="status"),
        pytest.param(
            with_member("response", "status", {"code": 99}),
            "#0 response.status.code: Input should be greater than or equal to 100",
            id="status-99",
        ),
        pytest.param(
            with_member("response", "status", {"code": True}),
            "#0 response.status.code",
            id="status-bool",
        ),
        pytest.param(without("response"), "#0 response: Field required", id="no-response"),
        pytest.param(without("request"), "#0 request: Field required", id="no-request"),
        pytest.param(
            with_member("request", "body", deep_json(5_000)),
            "interaction #0 request: the body nests deeper than 252 levels",
            id="deep-request",
        ),
        pytest.param(
            with_member("response", "body", {"string": deep_json(300)}),
            "interaction #0 response: the body nests deeper than 252 levels",
            id="deep-response",
        ),
        pytest.param(
            with_member("request", "headers", {"x-name": ["é"]}),
            "interaction #0 request: 'ascii' codec can't encode",
            id="non-ascii-request-header",
        ),
        pytest.param(
            with_member("request", "uri", "http://[::1"),
            "interaction #0 request: Invalid port",
            id="bad-uri",
        ),
    ],
)
def test_every_malformed_interaction_is_refused_naming_file_and_interaction(
    tmp_path: Path, interactions: Any, complaint: str
) -> None:
    source = vcr_file(tmp_path / "bad.yaml", interactions)
    with pytest.raises(CassetteFormatError) as caught:
        import_vcr([source], tmp_path / "out")
    assert str(caught.value).startswith(f"{source}: ")
    assert complaint in str(caught.value)
    assert not (tmp_path / "out").exists()

    from click.testing import CliRunner

    from harness.cli import main

    result = CliRunner().invoke(
        main, ["cassettes", "import-vcr", str(source), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {source}: ")
    assert "Traceback" not in result.output


def test_the_persister_refuses_a_malformed_vcrpy_response_by_interaction(tmp_path: Path) -> None:
    from vcr.request import Request as VcrRequest  # type: ignore[import-untyped]

    from harness.cassettes.vcr import HarnessPersister

    request = VcrRequest("GET", "https://api.openai.com/v1/models", None, {})
    good = {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": b"{}"}}
    bad = {**good, "status": {"code": 1_000, "message": "?"}}
    path = tmp_path / "c.json"
    with pytest.raises(
        CassetteFormatError,
        match=r"interaction #1 response status\.code: Input should be less than or equal to 599",
    ):
        HarnessPersister.save_cassette(
            path, {"requests": [request, request], "responses": [good, bad]}
        )
    assert not path.exists()
