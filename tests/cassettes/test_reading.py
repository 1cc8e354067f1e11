"""Reading cassette files that are not what they should be: every refusal is a
`CassetteFormatError` naming the file, and `verify` reports exactly what `load` refuses."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.cassettes import Cassette, CassetteFormatError, CassetteTransport
from harness.cassettes.cassette import (
    MAX_BYTES_VARIABLE,
    MAX_NESTING_DEPTH,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    new_metadata,
    raw_interaction_digest,
)
from harness.cassettes.review import verify
from harness.cassettes.store import save_recording
from harness.json_body import MAX_BODY_DEPTH
from tests.support.cassette_files import (
    BASE_URL,
    edit_cassette,
    nested,
    record_every_shape,
    send_every_shape,
)


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    return record_every_shape(tmp_path / "every.json")


def refused_everywhere(path: Path, match: str) -> None:
    """`load` (also when inspecting) and replay refuse `path`; `verify` reports it."""
    for allow_tampered in (False, True):
        with pytest.raises(CassetteFormatError, match=match):
            Cassette.load(path, allow_tampered=allow_tampered)
    with pytest.raises(CassetteFormatError, match=match):
        CassetteTransport(path)
    problems = verify([path])
    assert len(problems) == 1
    assert re.search(match, problems[0].problem), problems[0].problem


# -- only regular files are read ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["none", "once", "new_episodes", "all"])
def test_a_folder_is_not_a_cassette_in_any_mode(tmp_path: Path, mode: str) -> None:
    with pytest.raises(CassetteFormatError, match=rf"cassette {tmp_path} is a folder"):
        CassetteTransport(tmp_path, mode=mode)
    with pytest.raises(CassetteFormatError, match="is a folder, not a cassette file"):
        Cassette.load(tmp_path)


def test_an_empty_path_names_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CassetteFormatError, match=r"cassette \. is a folder"):
        CassetteTransport("")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            Cassette.load(fifo)
            outcome.append(None)
        except BaseException as error:  # handed to the test thread
            outcome.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=30)  # a hang guard only: without a writer, a blocking open never returns
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], CassetteFormatError)
    assert "is a FIFO (named pipe), not a cassette file" in str(outcome[0])
    with pytest.raises(CassetteFormatError, match="FIFO"):
        CassetteTransport(fifo, mode="all")


def test_sockets_devices_and_impossible_paths_are_refused(tmp_path: Path) -> None:
    sock_path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock_path))
        with pytest.raises(CassetteFormatError, match="is a socket"):
            CassetteTransport(sock_path, mode="all")
        with pytest.raises(CassetteFormatError, match=f"cassette {sock_path} is a socket"):
            Cassette.load(sock_path)
    with pytest.raises(CassetteFormatError, match="is a character device"):
        Cassette.load(Path("/dev/null"))
    with pytest.raises(CassetteFormatError, match="No such file or directory"):
        Cassette.load(tmp_path / "absent.json")
    (tmp_path / "file").write_text("{}")
    with pytest.raises(CassetteFormatError, match="Not a directory"):
        CassetteTransport(tmp_path / "file" / "c.json", mode="all")
    with pytest.raises(CassetteFormatError, match="null"):
        CassetteTransport(tmp_path / "nul\0.json", mode="all")


# -- size -----------------------------------------------------------------------------------------


def test_a_cassette_over_the_size_limit_is_refused_naming_the_variable(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = recorded.stat().st_size
    monkeypatch.setenv(MAX_BYTES_VARIABLE, str(size))
    assert len(Cassette.load(recorded).interactions) == 5
    monkeypatch.setenv(MAX_BYTES_VARIABLE, str(size - 1))
    with pytest.raises(CassetteFormatError) as caught:
        Cassette.load(recorded)
    assert f"is {size:,} bytes, over the {size - 1:,}-byte limit" in str(caught.value)
    assert f"{MAX_BYTES_VARIABLE}=<bytes>" in str(caught.value)


@pytest.mark.parametrize("value", ["0", "-1", "1e6", "lots", "²", "1" * 20])
def test_an_invalid_size_limit_says_what_is_expected(
    recorded: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(MAX_BYTES_VARIABLE, value)
    with pytest.raises(
        CassetteFormatError,
        match=rf"expected a whole number of bytes above 0 but got {MAX_BYTES_VARIABLE}=",
    ):
        Cassette.load(recorded)


# -- nesting --------------------------------------------------------------------------------------


def cassette_with_body(path: Path, body: Any) -> Path:
    """A valid cassette whose one response body is `body`, digest and all."""
    interaction = Interaction.build(
        "sha256:" + "0" * 64,
        1,
        RecordedRequest(method="POST", path="/v1/x"),
        RecordedResponse(status=200),
    )
    raw = interaction.model_dump(mode="json", exclude_none=True)
    raw["response"]["body"] = body
    raw["digest"] = raw_interaction_digest(raw)
    document = {
        "format": "harness-cassette/1",
        "metadata": new_metadata("openai").model_dump(mode="json", exclude_none=True),
        "interactions": [raw],
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_the_deepest_allowed_body_loads_and_replays(tmp_path: Path) -> None:
    path = cassette_with_body(tmp_path / "deep.json", nested(MAX_BODY_DEPTH))
    assert verify([path]) == []
    cassette = Cassette.load(path)
    assert cassette.interactions[0].response.body == nested(MAX_BODY_DEPTH)
    transport = CassetteTransport(path)
    with httpx2.Client(transport=transport, base_url=BASE_URL) as client:
        assert client.post("/v1/x").json() == nested(MAX_BODY_DEPTH)


@pytest.mark.parametrize(
    "method",
    [
        pytest.param('"POST"', id="fast-parser"),
        # orjson refuses a lone surrogate escape, so the standard library parser reads this one.
        pytest.param('"\\ud800"', id="exact-parser"),
    ],
)
@pytest.mark.parametrize("levels", [MAX_BODY_DEPTH + 1, 1_000, 5_000])
def test_nesting_past_the_limit_is_refused_naming_it(
    tmp_path: Path, levels: int, method: str
) -> None:
    path = cassette_with_body(tmp_path / "deep.json", "BODY")
    # Spelt out as text: json.dumps itself recurses.
    text = path.read_text().replace('"BODY"', "[" * levels + "]" * levels)
    path.write_text(text.replace('"POST"', method))
    refused_everywhere(path, rf"nested deeper than {MAX_NESTING_DEPTH} levels")


def test_an_unterminated_deep_document_is_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "open.json"
    path.write_text('{"format": "harness-cassette/1", "x": ' + "[" * 3_000)
    refused_everywhere(path, rf"{path}: the cassette JSON is nested deeper than 256 levels")


def test_recording_a_body_too_deep_to_read_back_is_refused() -> None:
    content = {"request": {"body": nested(MAX_BODY_DEPTH + 1)}}
    with pytest.raises(CassetteFormatError, match="nested deeper than 256 levels"):
        raw_interaction_digest(content)
    assert raw_interaction_digest({"request": {"body": nested(MAX_BODY_DEPTH)}}).startswith(
        "sha256:"
    )


# -- shapes ---------------------------------------------------------------------------------------

Edit = Callable[[dict[str, Any]], object]


def at(index: int, *path: str | int, value: Any = None, delete: bool = False) -> Edit:
    """An edit setting (or deleting) one member of interaction `index`."""

    def change(data: dict[str, Any]) -> None:
        target: Any = data["interactions"][index]
        for part in path[:-1]:
            target = target[part]
        if delete:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return change


SHAPES = [
    pytest.param(
        at(0, "request", value="POST /"),
        r"#0 at request: Input should be a valid dict",
        id="request-string",
    ),
    pytest.param(
        at(0, "request", "headers", value=7),
        r"#0 at request\.headers: Input should be a valid dict",
        id="headers-number",
    ),
    pytest.param(
        at(0, "response", "headers", "content-type", value=1),
        r"#0 at response\.headers\.content-type: Input should be a valid string",
        id="header-number",
    ),
    pytest.param(
        at(2, "response", "body_text", value=12),
        r"#2 at response\.body_text: Input should be a valid string",
        id="body-text-number",
    ),
    pytest.param(
        at(3, "response", "body_base64", value="not base64!"),
        r"#3 at response\.body_base64: Value error, expected standard base64",
        id="bad-base64",
    ),
    pytest.param(
        at(3, "response", "body_base64", value="AP8"),
        r"#3 at response\.body_base64",
        id="unpadded-base64",
    ),
    pytest.param(
        at(3, "request", "body_base64", value="é"),
        r"#3 at request\.body_base64",
        id="non-ascii-base64",
    ),
    pytest.param(
        at(0, "response", "status", value=99),
        r"#0 at response\.status: Input should be greater than or equal to 100",
        id="status-99",
    ),
    pytest.param(
        at(0, "response", "status", value=600),
        r"#0 at response\.status: Input should be less than or equal to 599",
        id="status-600",
    ),
    pytest.param(
        at(0, "response", "status", value="200"),
        r"#0 at response\.status: Input should be a valid integer",
        id="status-string",
    ),
    pytest.param(
        at(0, "response", "status", value=True),
        r"#0 at response\.status: Input should be a valid integer",
        id="status-bool",
    ),
    pytest.param(
        at(0, "response", "status", value=200.0),
        r"#0 at response\.status: Input should be a valid integer",
        id="status-float",
    ),
    pytest.param(
        at(0, "response", "status", delete=True),
        r"#0 at response\.status: Field required",
        id="no-status",
    ),
    pytest.param(
        at(0, "response", delete=True), r"#0 at response: Field required", id="no-response"
    ),
    pytest.param(
        at(0, "occurrence", value="1"),
        r"#0 at occurrence: Input should be a valid integer",
        id="occurrence-string",
    ),
    pytest.param(at(0, "key", value="md5:1"), r"#0 at key: String should match pattern", id="key"),
    pytest.param(
        at(0, "request", "method", value=None),
        r"#0 at request\.method: Input should be a valid string",
        id="method-null",
    ),
    pytest.param(at(4, "request", "query", value=["q"]), r"#4 at request\.query", id="query-list"),
    pytest.param(
        at(1, "response", "events", value={"data": "x"}),
        r"#1 at response\.events: Input should be a valid list",
        id="events-object",
    ),
    pytest.param(
        at(1, "response", "events", 1, "data", value=5),
        r"#1 at response\.events\.1\.data: Input should be a valid string",
        id="event-data-number",
    ),
    pytest.param(
        at(1, "response", "events", 1, "id", value="1\ninjected: yes"),
        r"#1 at response\.events\.1\.id: String should match pattern",
        id="event-id-newline",
    ),
    pytest.param(
        at(1, "response", "events", 1, "data", value="a\rb"),
        r"#1 at response\.events\.1\.data: String should match pattern",
        id="event-data-cr",
    ),
    pytest.param(
        at(1, "response", "events", 1, "retry", value=-1),
        r"#1 at response\.events\.1\.retry: Input should be greater than or equal to 0",
        id="event-retry-negative",
    ),
    pytest.param(
        at(1, "response", "events", 1, "retry", value="5"),
        r"#1 at response\.events\.1\.retry: Input should be a valid integer",
        id="event-retry-string",
    ),
    pytest.param(
        at(1, "response", "events", 0, "comments", value="x"),
        r"#1 at response\.events\.0\.comments: Input should be a valid tuple",
        id="comments-string",
    ),
    pytest.param(
        at(1, "response", "events", 1, "name", value="x"),
        r"#1 at response\.events\.1\.name: Extra inputs are not permitted",
        id="event-extra",
    ),
    pytest.param(
        at(1, "response", "events", 1, "data", value="\ud800"),
        r"#1 at response\.events\.1\.data: Input should be a valid string",
        id="event-lone-surrogate",
    ),
    pytest.param(
        at(0, "response", "headers", "content-encoding", value="gzip"),
        r"#0 at response\.headers: Value error, a content-encoding header cannot be stored",
        id="content-encoding",
    ),
    pytest.param(
        at(0, "extra", value=1), r"#0 at extra: Extra inputs are not permitted", id="extra-member"
    ),
]


@pytest.mark.parametrize(("change", "complaint"), SHAPES)
def test_every_shape_a_replay_would_trip_on_is_refused_by_name(
    recorded: Path, change: Edit, complaint: str
) -> None:
    path = edit_cassette(recorded, change)
    refused_everywhere(path, rf"{path}: invalid interaction {complaint}")


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        pytest.param(
            lambda d: d.update(interactions=[1]),
            r"invalid interaction #0: Input should be a valid dictionary",
            id="interaction-number",
        ),
        pytest.param(
            lambda d: d.update(interactions={}),
            "'interactions' must be a list",
            id="interactions-object",
        ),
        pytest.param(
            lambda d: d.update(signature=5), "'signature' a string", id="signature-number"
        ),
        pytest.param(
            lambda d: d.update(format=["harness-cassette/1"]),
            "unknown cassette format of type list",
            id="format-list",
        ),
        pytest.param(
            lambda d: d["metadata"].update(recorded_at=5),
            r"invalid cassette at metadata\.recorded_at",
            id="metadata",
        ),
    ],
)
def test_document_shapes_are_refused_by_name(recorded: Path, change: Edit, complaint: str) -> None:
    refused_everywhere(edit_cassette(recorded, change), complaint)


def test_messages_name_the_field_never_the_value(recorded: Path) -> None:
    canary = "sk-CANARY-" + "x" * 40
    path = edit_cassette(recorded, at(0, "response", "headers", "authorization", value=[canary]))
    with pytest.raises(CassetteFormatError) as caught:
        Cassette.load(path)
    assert "response.headers.authorization" in str(caught.value)
    assert "CANARY" not in str(caught.value)
    assert all("CANARY" not in problem.problem for problem in verify([path]))


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        pytest.param(b"\xff\xfe{}", "not UTF-8 text", id="not-utf8"),
        pytest.param(b'{"format": NaN}', "NaN is not a JSON number", id="nan"),
        pytest.param(b'{"format": 1e999}', "too large for a 64-bit float", id="infinite"),
        pytest.param(b'{"format": ' + b"9" * 5_000 + b"}", "not valid JSON", id="huge-integer"),
        pytest.param(b"\xef\xbb\xbf{}", "not valid JSON", id="bom"),
    ],
)
def test_bytes_that_are_not_json_are_refused(tmp_path: Path, text: bytes, complaint: str) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(text)
    refused_everywhere(path, complaint)


# -- numbers --------------------------------------------------------------------------------------


def test_integers_past_64_bits_verify_load_and_replay_exactly(recorded: Path) -> None:
    assert verify([recorded]) == []
    cassette = Cassette.load(recorded)
    assert cassette.interactions[0].response.body == {
        "echo": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        "huge": 2**70,
    }
    assert cassette.interactions[1].request.body == {"model": "m", "stream": True, "seed": 2**65}
    with httpx2.Client(transport=CassetteTransport(recorded), base_url=BASE_URL) as client:
        first, *_ = send_every_shape(client)
    assert first.json()["huge"] == 2**70


def test_a_valid_edit_of_a_huge_integer_is_still_tampering(recorded: Path) -> None:
    path = edit_cassette(recorded, at(0, "response", "body", "huge", value=2**70 + 1))
    problems = verify([path])
    assert [p.problem.split(": ")[-1] for p in problems] == ["digest mismatch"]


# -- replay ---------------------------------------------------------------------------------------


def test_every_stored_shape_replays_with_its_headers(recorded: Path) -> None:
    with httpx2.Client(transport=CassetteTransport(recorded), base_url=BASE_URL) as client:
        chat, stream, text, binary, empty = send_every_shape(client)
    assert chat.headers["x-served-by"] == "café"  # recorded from the wire, sent back as UTF-8
    assert stream.text.startswith(": keep-alive\n\nevent: delta\nid: 1\nretry: 3000\n")
    assert (text.status_code, text.text) == (201, "plain words")
    assert binary.content == b"\x00\xff\x10"
    assert (empty.status_code, empty.content) == (204, b"")


def test_saving_into_an_invalid_cassette_names_it_and_writes_nothing(recorded: Path) -> None:
    path = edit_cassette(recorded, at(0, "response", "status", value=1000))
    before = path.read_bytes()
    extra = Interaction.build(
        "sha256:" + "1" * 64,
        1,
        RecordedRequest(method="GET", path="/"),
        RecordedResponse(status=200),
    )
    with pytest.raises(CassetteFormatError, match=r"invalid interaction #0 at response\.status"):
        save_recording(path, [extra], replace=False, provider=None, run_token="r")
    assert path.read_bytes() == before


def test_a_file_growing_while_it_is_read_is_still_bounded(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = recorded.stat().st_size
    real_fstat = os.fstat

    def stale_fstat(descriptor: int) -> os.stat_result:
        # What fstat said before a writer appended: everything but the last 100 bytes.
        info = real_fstat(descriptor)
        return os.stat_result((info.st_mode, *info[1:6], info.st_size - 100, *info[7:]))

    monkeypatch.setattr(os, "fstat", stale_fstat)
    assert len(Cassette.load(recorded).interactions) == 5, "the whole file is read"
    monkeypatch.setenv(MAX_BYTES_VARIABLE, str(size - 50))
    with pytest.raises(CassetteFormatError, match=f"over the {size - 50:,}-byte limit"):
        Cassette.load(recorded)


def test_verify_of_a_missing_path_names_it(tmp_path: Path) -> None:
    with pytest.raises(CassetteFormatError, match=f"cassette {tmp_path / 'absent.json'} does not"):
        verify([tmp_path / "absent.json"])


def test_a_non_ascii_digest_or_signature_is_a_mismatch(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = edit_cassette(recorded, at(0, "digest", value="sha256:é"))
    assert [p.problem.split(": ")[-1] for p in verify([path])] == ["digest mismatch"]
    monkeypatch.setenv("HARNESS_CASSETTE_KEY", "team-secret")
    path = edit_cassette(recorded, lambda d: d.update(signature="hmac-sha256:é"))
    assert [p.problem.split(":")[0] for p in verify([path])] == [
        "interaction #0 (POST /v1/chat/completions, key sha256",
        "signature mismatch",
    ]
