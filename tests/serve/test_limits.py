"""The server stays bounded whatever its clients do.

A request body is read up to `max_request_bytes` (413 beyond, whether its length is declared or
not); sessions and `/c/` cassettes beyond their caps close the longest idle first, their
recordings saved; a connection that sends no complete headers in `header_timeout` is closed,
however slowly it trickles bytes; connections beyond `max_connections` are closed as they arrive;
a client leaving mid-body leaves no traceback in the server's log. A server process's memory
stays flat over thousands of sessions and cassette names.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from harness.cassettes import Cassette
from harness.serve import ReplayServer
from harness.serve.limits import ServeLimitError, ServeLimits
from tests.support.fake_provider import (
    Answer,
    FakeProvider,
    ReceivedRequest,
    Reply,
    last_user_prompt,
    reply_for,
    serve,
)
from tests.support.serve_http import provider_environ, raw_request

CHAT = "/v1/chat/completions"
WAIT = 30.0
"""The longest a test waits for the server to act; it acts well within, or the test fails."""


def chat_body(prompt: str, padding: int = 0) -> bytes:
    return json.dumps(
        {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": prompt + " " * padding}],
        }
    ).encode()


def answer_the_prompt(request: ReceivedRequest) -> Reply:
    return reply_for(request, Answer(text=f"answer to {last_user_prompt(request.json())}"))


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with serve(answer_the_prompt) as running:
        yield running


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = socket.create_connection((host, int(port)), timeout=WAIT)
    return connection


def closed_by_server(connection: socket.socket) -> bool:
    """Whether the server closes `connection` (reads until it does, within `WAIT`)."""
    try:
        while connection.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


# -- request bodies --------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_a_413_naming_the_limit_and_the_option(tmp_path: Path) -> None:
    limits = ServeLimits(max_request_bytes=1024)
    with ReplayServer(tmp_path, limits=limits) as server:
        with server.session(script=[{"text": "ok"}, {"text": "ok"}], provider="openai") as session:
            path = session.base_url("openai").removeprefix(server.url) + "/chat/completions"
            refused = raw_request(server.url, "POST", path, chat_body("hi", padding=2000))
            accepted = raw_request(server.url, "POST", path, chat_body("hi"))

    assert refused.status == 413
    assert refused.json()["error"]["type"] == "invalid_request_error"
    assert "1,024 bytes" in refused.json()["error"]["message"]
    assert "--max-request-bytes" in refused.json()["error"]["message"]
    assert accepted.status == 200


def test_a_chunked_body_is_refused_once_it_passes_the_limit_without_being_read_whole(
    tmp_path: Path,
) -> None:
    limits = ServeLimits(max_request_bytes=4096)
    with ReplayServer(tmp_path, limits=limits) as server, connect(server.url) as connection:
        connection.sendall(
            f"POST /c/x{CHAT} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            "transfer-encoding: chunked\r\n\r\n".encode()
        )
        answer = b""
        for _ in range(64):  # 64 KiB offered in all, far past the limit
            chunk = b"a" * 1024
            try:
                connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:  # the server answered and closed: it read no further
                break
        connection.settimeout(WAIT)
        while b"\r\n\r\n" not in answer:
            part = connection.recv(65536)
            if not part:
                break
            answer += part

    assert answer.startswith(b"HTTP/1.1 413"), answer[:80]


def test_a_client_leaving_mid_body_leaves_no_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with ReplayServer(tmp_path) as server:
        with caplog.at_level(logging.WARNING):
            with connect(server.url) as connection:
                connection.sendall(
                    f"POST /c/x{CHAT} HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n".encode()
                    + b'{"model": '
                )
            # the server is still well and answers the next client
            assert raw_request(server.url, "GET", "/_harness/health").status == 200

    assert not [record for record in caplog.records if record.exc_info]
    assert "Traceback" not in caplog.text


# -- sessions and cassettes ------------------------------------------------------------------------


def test_over_max_sessions_the_longest_idle_session_closes_and_its_recording_is_saved(
    provider: FakeProvider, tmp_path: Path
) -> None:
    limits = ServeLimits(max_sessions=3)
    with ReplayServer(
        tmp_path, record_mode="once", limits=limits, environ=provider_environ(provider.base_url)
    ) as server:
        recording = server.session(cassette="by-session")
        path = recording.base_url("openai").removeprefix(server.url) + "/chat/completions"
        assert raw_request(server.url, "POST", path, chat_body("kept")).status == 200
        scripts = [server.session(script=[{"text": "ok"}], provider="openai") for _ in range(3)]

        gone = raw_request(server.url, "GET", f"/_harness/sessions/{recording.id}")
        assert gone.status == 404
        again = raw_request(server.url, "POST", path, chat_body("kept"))
        assert again.status == 404
        assert "--max-sessions" in again.json()["error"]["message"]
        for session in scripts:
            assert raw_request(server.url, "GET", f"/_harness/sessions/{session.id}").status == 200

    (interaction,) = Cassette.load(tmp_path / "by-session.json").interactions
    assert last_user_prompt(interaction.request.body) == "kept"


def test_over_max_cassettes_the_longest_idle_closes_saved_and_reopens_on_its_next_request(
    provider: FakeProvider, tmp_path: Path
) -> None:
    limits = ServeLimits(max_cassettes=2)
    names = [f"name-{index}" for index in range(6)]
    with ReplayServer(
        tmp_path, record_mode="once", limits=limits, environ=provider_environ(provider.base_url)
    ) as server:
        for name in names:
            answer = raw_request(server.url, "POST", f"/c/{name}{CHAT}", chat_body(name))
            assert answer.status == 200
        # a cassette this server began keeps recording after it was closed and reopened
        assert raw_request(server.url, "POST", f"/c/name-0{CHAT}", chat_body("more")).status == 200
        # and replays what it recorded
        replayed = raw_request(server.url, "POST", f"/c/name-1{CHAT}", chat_body("name-1"))
        assert replayed.status == 200

    assert len(provider.received) == len(names) + 1
    for name in names:
        prompts = [
            last_user_prompt(i.request.body)
            for i in Cassette.load(tmp_path / f"{name}.json").interactions
        ]
        assert prompts == ([name, "more"] if name == "name-0" else [name])


@pytest.mark.parametrize(
    "limits",
    [
        {"max_sessions": 0},
        {"max_request_bytes": -1},
        {"max_cassettes": True},
        {"header_timeout": 0},
        {"body_timeout": float("nan")},
    ],
)
def test_a_limit_that_is_not_positive_is_refused_by_name(limits: dict[str, object]) -> None:
    (name,) = limits
    with pytest.raises(ServeLimitError, match=name):
        ServeLimits(**limits)  # type: ignore[arg-type]


# -- connections -----------------------------------------------------------------------------------


def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(
    tmp_path: Path,
) -> None:
    with ReplayServer(tmp_path, limits=ServeLimits(header_timeout=0.2)) as server:
        with connect(server.url) as silent:
            assert closed_by_server(silent)


def test_a_connection_trickling_its_headers_is_closed_after_the_header_timeout(
    tmp_path: Path,
) -> None:
    request = f"GET /_harness/health HTTP/1.1\r\nhost: x\r\nx-padding: {'a' * 200}\r\n\r\n"
    with ReplayServer(tmp_path, limits=ServeLimits(header_timeout=0.5)) as server:
        with connect(server.url) as slow:
            answered = b""
            for byte in request.encode():
                try:
                    slow.sendall(bytes([byte]))
                except OSError:
                    break
                time.sleep(0.02)  # the whole request would take 4 s at this pace
            slow.settimeout(WAIT)
            with contextlib.suppress(OSError):
                answered = slow.recv(65536)

    assert not answered.startswith(b"HTTP/1.1 200")


def test_a_kept_alive_connection_is_closed_after_the_idle_timeout(tmp_path: Path) -> None:
    limits = ServeLimits(idle_timeout=0.2, header_timeout=60)
    with ReplayServer(tmp_path, limits=limits) as server, connect(server.url) as connection:
        connection.sendall(b"GET /_harness/health HTTP/1.1\r\nhost: x\r\n\r\n")
        assert connection.recv(65536).startswith(b"HTTP/1.1 200")
        assert closed_by_server(connection)


def test_over_the_connection_cap_a_new_connection_takes_the_place_of_the_longest_idle(
    tmp_path: Path,
) -> None:
    limits = ServeLimits(max_connections=4, header_timeout=60)
    with ReplayServer(tmp_path, limits=limits) as server:
        held = []
        try:
            for _ in range(4):
                held.append(connect(server.url))
                time.sleep(0.05)  # each idle longer than the next
            # a flood of idle connections never keeps a real client out
            assert raw_request(server.url, "GET", "/_harness/health").status == 200
            assert closed_by_server(held[0])
            held[1].settimeout(0.5)
            with pytest.raises(TimeoutError):
                held[1].recv(1)  # still open: only the longest idle went
        finally:
            for connection in held:
                connection.close()


def test_over_the_connection_cap_with_every_connection_busy_a_new_one_is_closed(
    tmp_path: Path,
) -> None:
    limits = ServeLimits(max_connections=2, header_timeout=60)
    with ReplayServer(tmp_path, limits=limits) as server:
        busy = [connect(server.url) for _ in range(2)]
        try:
            for connection in busy:  # headers in, the body never comes: busy with a request
                connection.sendall(
                    f"POST /c/x{CHAT} HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n".encode()
                )
            time.sleep(0.2)
            with connect(server.url) as extra:
                assert closed_by_server(extra)
        finally:
            for connection in busy:
                connection.close()


# -- memory over thousands of clients --------------------------------------------------------------


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def server_process(provider: FakeProvider, tmp_path: Path) -> Iterator[tuple[str, int]]:
    if not Path("/proc/self/status").exists():
        pytest.skip("reads the server's memory from /proc (Linux)")
    ready = tmp_path / "url.txt"
    log = (tmp_path / "serve.log").open("w")  # read when an answer is not the one expected
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from harness.cli import main; main()",
            "serve",
            "--cassettes",
            str(tmp_path / "cassettes"),
            "--record-mode",
            "once",
            "--max-sessions",
            "50",
            "--max-cassettes",
            "10",
            "--ready-file",
            str(ready),
        ],
        env={**os.environ, **provider_environ(provider.base_url)},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        for _ in range(600):
            if ready.exists() or process.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), f"harness serve did not start (exit code {process.poll()})"
        url = ready.read_text().strip()
        SERVER_LOGS[url] = tmp_path / "serve.log"
        yield url, process.pid
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


SERVER_LOGS: dict[str, Path] = {}


def server_log(url: str) -> str:
    """The end of what the server at `url` wrote to stderr, for a failure's message."""
    return SERVER_LOGS[url].read_text(encoding="utf-8", errors="replace")[-3000:]


@pytest.mark.subprocess
def test_memory_stays_flat_over_thousands_of_sessions_and_a_hundred_cassette_names(
    server_process: tuple[str, int],
) -> None:
    url, pid = server_process
    with httpx2.Client(base_url=url, timeout=WAIT) as client:

        def names(start: int, count: int) -> None:
            for index in range(start, start + count):
                answer = client.post(f"/c/names/n{index}{CHAT}", content=chat_body(f"n{index}"))
                assert answer.status_code == 200, server_log(url)

        def sessions(count: int) -> None:
            for index in range(count):  # each holds a cassette loaded for replay
                body = {"cassette": f"names/n{index % 20}"}
                opened = client.post("/_harness/sessions", json=body)
                assert opened.status_code == 201, server_log(url)

        names(0, 20)
        sessions(200)
        before = rss(pid)
        names(20, 100)
        sessions(2_000)
        grown = rss(pid) - before

    # Without the caps the same traffic grew the server by about 10 MiB, and each session and
    # cassette held more the larger its recordings.
    assert grown < 4 * 1024 * 1024, f"the server grew by {grown / 2**20:.1f} MiB"
