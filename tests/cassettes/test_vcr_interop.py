"""vcrpy with our matcher and persister: record against a real loopback server, replay without it.

vcrpy intercepts by patching httpx's transports, so recording needs a server to talk to: a
`http.server` on 127.0.0.1, stopped before every replay to prove nothing reaches it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from vcr import VCR  # type: ignore[import-untyped]
from vcr.errors import CannotOverwriteExistingCassetteException  # type: ignore[import-untyped]
from vcr.matchers import requests_match  # type: ignore[import-untyped]
from vcr.persisters.filesystem import CassetteNotFoundError  # type: ignore[import-untyped]
from vcr.request import Request  # type: ignore[import-untyped]

from harness.cassettes import CassetteFormatError, HttpxCassetteTransport
from harness.cassettes.vcr import (
    MATCH_ON,
    MATCHER_NAME,
    HarnessPersister,
    RequestHashMismatchError,
    import_vcr,
    register,
    request_hash,
)

CHAT = "/v1/chat/completions"
STREAM_BODY = b'data: {"n":1}\n\nevent: delta\ndata: {"n":2}\n\ndata: [DONE]\n\n'
CANARY_KEY = "sk-proj-CANARYcanary0123456789abcdef"


@dataclass
class LoopbackServer:
    """A provider stand-in: numbered JSON answers to POST, an SSE stream to GET /events."""

    server: ThreadingHTTPServer
    thread: threading.Thread
    bodies: list[bytes] = field(default_factory=list)

    @classmethod
    def start(cls) -> LoopbackServer:
        bodies: list[bytes] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                bodies.append(body)
                self._answer("application/json", json.dumps({"n": len(bodies)}).encode())

            def do_GET(self) -> None:
                self._answer("text/event-stream", STREAM_BODY)

            def _answer(self, content_type: str, payload: bytes) -> None:
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.send_header("openai-organization", "org-CANARYorganisation")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        return cls(server=server, thread=thread, bodies=bodies)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
            self.thread.join()
            self.server.server_close()


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    running = LoopbackServer.start()
    try:
        yield running
    finally:
        running.stop()


def harness_vcr(**config: Any) -> Any:
    return register(VCR(match_on=[MATCHER_NAME], **config))


def post_chat(url: str, body: bytes, **headers: str) -> httpx.Response:
    with httpx.Client() as client:
        return client.post(
            url + CHAT, content=body, headers={"content-type": "application/json", **headers}
        )


@pytest.mark.server
def test_vcrpy_records_into_our_format_and_replays_with_the_server_stopped(
    server: LoopbackServer, tmp_path: Path
) -> None:
    path = tmp_path / "chat.json"
    vcr = harness_vcr()
    with vcr.use_cassette(str(path)):
        recorded = post_chat(
            server.url,
            b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
            authorization=f"Bearer {CANARY_KEY}",
        )
    server.stop()

    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["format"] == "harness-cassette/2"
    assert [i["occurrence"] for i in document["interactions"]] == [1]
    assert "CANARY" not in path.read_text(encoding="utf-8")
    with vcr.use_cassette(str(path), record_mode="none"):
        replayed = post_chat(
            server.url,
            b'{"messages":[{"content":"hi","role":"user"}],"model":"m"}',
            authorization="Bearer another-key",
        )
        with pytest.raises(CannotOverwriteExistingCassetteException, match="request_hash"):
            post_chat(server.url, b'{"model": "m", "messages": []}')
    assert (replayed.status_code, replayed.json()) == (recorded.status_code, {"n": 1})
    assert len(server.bodies) == 1


@pytest.mark.server
def test_a_miss_reported_by_vcrpy_names_the_differences_of_the_closest_request(
    server: LoopbackServer, tmp_path: Path
) -> None:
    path = tmp_path / "miss.json"
    vcr = register(VCR())  # vcrpy's default match_on becomes MATCH_ON
    with vcr.use_cassette(str(path)):
        post_chat(server.url, b'{"model": "m", "messages": [{"content": "hi"}]}')
    server.stop()

    with (
        vcr.use_cassette(str(path), record_mode="none"),
        pytest.raises(CannotOverwriteExistingCassetteException) as caught,
    ):
        post_chat(server.url, b'{"model": "m", "messages": [{"content": "hello"}]}')

    assert "request_hash differs" in str(caught.value)
    assert '$.body.messages[0].content: "hi" -> "hello"' in str(caught.value)


@pytest.mark.server
def test_a_cassette_vcrpy_wrote_replays_through_our_transport_and_back(
    server: LoopbackServer, tmp_path: Path
) -> None:
    path = tmp_path / "twice.json"
    body = b'{"model": "m", "messages": []}'
    vcr = harness_vcr()
    with vcr.use_cassette(str(path)):
        answers = [post_chat(server.url, body).json() for _ in range(2)]
        with httpx.Client() as client:
            streamed = client.get(server.url + "/events").content
    server.stop()

    document = json.loads(path.read_text(encoding="utf-8"))
    assert [i["occurrence"] for i in document["interactions"]] == [1, 2, 1]
    assert len(document["interactions"][2]["response"]["events"]) == 3
    with httpx.Client(transport=HttpxCassetteTransport(path, strict=True)) as client:
        ours = [client.post(server.url + CHAT, content=body).json() for _ in range(2)]
        with client.stream("GET", server.url + "/events") as response:
            chunks = list(response.iter_raw())
    assert ours == answers == [{"n": 1}, {"n": 2}]
    assert (len(chunks), b"".join(chunks)) == (3, STREAM_BODY)
    with vcr.use_cassette(str(path), record_mode="none"):
        again = [post_chat(server.url, body).json() for _ in range(2)]
        with httpx.Client() as client:
            assert client.get(server.url + "/events").content == streamed == STREAM_BODY
    assert again == answers


@pytest.mark.server
def test_a_secret_scrubbed_from_the_body_still_matches_the_request_it_came_from(
    server: LoopbackServer, tmp_path: Path
) -> None:
    path = tmp_path / "secret.json"
    body = json.dumps({"model": "m", "messages": [{"content": f"my key {CANARY_KEY}"}]})
    vcr = harness_vcr()
    with vcr.use_cassette(str(path)):
        post_chat(server.url, body.encode())
    server.stop()

    assert "CANARY" not in path.read_text(encoding="utf-8")
    with vcr.use_cassette(str(path), record_mode="none"):
        assert post_chat(server.url, body.encode()).json() == {"n": 1}


def test_request_hash_ignores_host_and_key_order_but_not_the_body_or_keyed_headers() -> None:
    recorded = Request(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        b'{"model": "m", "temperature": 0}',
        {"Content-Type": "application/json"},
    )
    same = Request(
        "POST",
        "http://127.0.0.1:8080/v1/chat/completions",
        b'{"temperature":0,"model":"m"}',
        {"content-type": "application/json", "authorization": "Bearer x"},
    )
    other = Request("POST", recorded.uri, b'{"model": "m", "temperature": 1}', recorded.headers)
    beta = Request("POST", recorded.uri, recorded.body, {"openai-beta": "assistants=v2"})

    request_hash(same, recorded)
    assert requests_match(same, recorded, [request_hash])
    assert not requests_match(other, recorded, [request_hash])
    with pytest.raises(RequestHashMismatchError) as caught:
        request_hash(other, recorded)
    assert "$.body.temperature: 0 -> 1" in str(caught.value)
    assert caught.value.code == "cassette_request_hash_mismatch"
    with pytest.raises(AssertionError, match=r"\$\.headers"):
        request_hash(beta, recorded)


def test_register_installs_both_and_makes_request_hash_the_default_only_over_vcrpys() -> None:
    default = VCR()
    chosen = VCR(match_on=["method", "path"])

    assert register(default) is default
    assert register(chosen) is chosen

    assert default.persister is HarnessPersister
    assert default.matchers[MATCHER_NAME] is request_hash
    assert tuple(default.match_on) == MATCH_ON == ("method", "path", "request_hash")
    assert list(chosen.match_on) == ["method", "path"]


def test_the_persister_treats_absent_and_empty_files_as_unrecorded_and_refuses_others(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("\n", encoding="utf-8")
    yaml_cassette = tmp_path / "old.yaml"
    yaml_cassette.write_text("interactions: []\nversion: 1\n", encoding="utf-8")

    with pytest.raises(CassetteNotFoundError):
        HarnessPersister.load_cassette(tmp_path / "absent.json", serializer=None)
    with pytest.raises(CassetteNotFoundError):
        HarnessPersister.load_cassette(empty, serializer=None)
    with pytest.raises(CassetteFormatError, match="import_vcr"):
        HarnessPersister.load_cassette(yaml_cassette, serializer=None)
    with pytest.raises(CassetteFormatError, match="get_metadata keys: cursor"):
        HarnessPersister.save_cassette(
            tmp_path / "meta.json",
            {"requests": [], "responses": [], "metadata": {"cursor": 3}},
            serializer=None,
        )


def test_an_imported_cassette_loads_for_vcrpy(tmp_path: Path) -> None:
    source = tmp_path / "old.yaml"
    source.write_text(
        "interactions:\n"
        "- request:\n"
        "    method: POST\n"
        "    uri: https://api.openai.com/v1/chat/completions\n"
        "    headers: {content-type: [application/json]}\n"
        "    parsed_body: {model: m}\n"
        "  response:\n"
        "    status: {code: 200, message: OK}\n"
        "    headers: {content-type: [application/json]}\n"
        "    parsed_body: {n: 1}\n"
        "version: 1\n",
        encoding="utf-8",
    )
    import_vcr([source], tmp_path)

    requests, responses = HarnessPersister.load_cassette(tmp_path / "old.json", serializer=None)

    live = Request("POST", "https://api.openai.com/v1/chat/completions", b'{"model": "m"}', {})
    assert requests_match(live, requests[0], [request_hash])
    assert responses == [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": b'{"n":1}'},
        }
    ]
