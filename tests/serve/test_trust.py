"""The server's clients get no more than its operator allowed.

A session records at most as the server does (`--record-mode`), unless the server was started
with `--allow-session-record`; a refused session is a 403 naming the flag, and nothing reaches the
provider or the cassettes folder. A session in mode `all` never empties a cassette it did not
fill. The cassette listing never shows a client another session's id. Of a client's headers only what the request is (content type, accept, user agent, the
providers' version and beta headers) goes upstream: no credential of any spelling. With a control
token, every request but the health check must carry it; beyond loopback one is required.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cassettes import Cassette
from harness.serve import ReplayServer
from harness.serve.server import ServeError
from tests.support.fake_provider import (
    Answer,
    FakeProvider,
    ReceivedRequest,
    Reply,
    last_user_prompt,
    reply_for,
    serve,
)
from tests.support.serve_http import SERVER_KEYS, provider_environ, raw_request

CHAT = "/v1/chat/completions"


def chat_body(prompt: str) -> bytes:
    return json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}
    ).encode()


def answer_the_prompt(request: ReceivedRequest) -> Reply:
    return reply_for(request, Answer(text=f"answer to {last_user_prompt(request.json())}"))


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with serve(answer_the_prompt) as running:
        yield running


def open_session(server: ReplayServer, body: dict[str, object]) -> tuple[int, dict[str, object]]:
    answer = raw_request(server.url, "POST", "/_harness/sessions", json.dumps(body).encode())
    return answer.status, answer.json()


# -- record rights ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["once", "new_episodes", "all"])
def test_a_replay_only_server_refuses_a_recording_session_with_a_403_naming_the_flags(
    mode: str, provider: FakeProvider, tmp_path: Path
) -> None:
    with ReplayServer(tmp_path, environ=provider_environ(provider.base_url)) as server:
        status, answer = open_session(server, {"cassette": "pwned/new", "record_mode": mode})

    assert status == 403
    message = answer["error"]["message"]  # type: ignore[index]
    assert f"record_mode '{mode}' is refused" in message
    assert "--record-mode none" in message
    assert "--allow-session-record" in message
    assert provider.received == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("server_mode", "refused", "allowed"),
    [
        ("once", ["new_episodes", "all"], ["none", "once"]),
        ("new_episodes", ["all"], ["none", "once", "new_episodes"]),
        ("all", [], ["none", "once", "new_episodes", "all"]),
    ],
)
def test_a_session_records_at_most_as_the_server_does(
    server_mode: str, refused: list[str], allowed: list[str], tmp_path: Path
) -> None:
    with ReplayServer(tmp_path, record_mode=server_mode) as server:
        for mode in refused:
            status, _ = open_session(server, {"cassette": f"c-{mode}", "record_mode": mode})
            assert status == 403, mode
        for mode in allowed:
            (tmp_path / f"c-{mode}.json").write_bytes(_empty_cassette())
            status, _ = open_session(server, {"cassette": f"c-{mode}", "record_mode": mode})
            assert status == 201, mode


def test_allow_session_record_lets_a_session_choose_any_mode(
    provider: FakeProvider, tmp_path: Path
) -> None:
    with ReplayServer(
        tmp_path, allow_session_record=True, environ=provider_environ(provider.base_url)
    ) as server:
        with server.session(cassette="new", record_mode="all") as session:
            base = session.base_url("openai").removeprefix(server.url)
            answer = raw_request(server.url, "POST", f"{base}/chat/completions", chat_body("hi"))
            assert answer.status == 200

    assert len(Cassette.load(tmp_path / "new.json").interactions) == 1


def test_a_session_in_mode_all_that_records_nothing_leaves_the_cassette_whole(
    provider: FakeProvider, tmp_path: Path
) -> None:
    environ = provider_environ(provider.base_url)
    with ReplayServer(tmp_path, record_mode="once", environ=environ) as recording:
        for prompt in ("one", "two", "three"):
            url = recording.cassette_url("kept", "openai").removeprefix(recording.url)
            assert (
                raw_request(
                    recording.url, "POST", f"{url}/chat/completions", chat_body(prompt)
                ).status
                == 200
            )
    before = (tmp_path / "kept.json").read_bytes()

    with ReplayServer(tmp_path, record_mode="all", environ=environ) as server:
        status, answer = open_session(server, {"cassette": "kept", "record_mode": "all"})
        assert status == 201
        deleted = raw_request(server.url, "DELETE", f"/_harness/sessions/{answer['id']}")
        assert deleted.status == 200

    assert (tmp_path / "kept.json").read_bytes() == before
    assert len(Cassette.load(tmp_path / "kept.json").interactions) == 3


def _empty_cassette() -> bytes:
    from harness.cassettes.cassette import CassetteDocument, new_metadata

    document = CassetteDocument(metadata=new_metadata("openai"), interactions=[])
    return Cassette.from_document(Path("x.json"), document).dumps()


# -- what the cassette listing shows ---------------------------------------------------------------


def listing(server: ReplayServer, query: str = "") -> tuple[int, str]:
    answer = raw_request(server.url, "GET", f"/_harness/cassettes{query}")
    return answer.status, answer.body.decode()


def test_the_cassette_listing_never_shows_a_client_another_sessions_id(tmp_path: Path) -> None:
    """A session's id is what lets a client play, read and delete it: a client sees a session's
    cassette only by naming the session, and without one only the `/c/` cassettes any client
    may use."""
    for name in ("shared", "alices", "bobs"):
        (tmp_path / f"{name}.json").write_bytes(_empty_cassette())
    with ReplayServer(tmp_path) as server:
        raw_request(server.url, "POST", f"/c/shared{CHAT}", chat_body("hi"))  # opens it
        _, alice = open_session(server, {"cassette": "alices"})
        _, bob = open_session(server, {"cassette": "bobs"})
        anonymous = listing(server)
        alices = listing(server, f"?session={alice['id']}")
        bobs = listing(server, f"?session={bob['id']}")

    assert anonymous[0] == 200
    assert [entry["name"] for entry in json.loads(anonymous[1])["cassettes"]] == ["shared"]
    assert str(alice["id"]) not in anonymous[1]
    assert str(bob["id"]) not in anonymous[1]
    assert alices[0] == 200
    assert [(entry["name"], entry["session"]) for entry in json.loads(alices[1])["cassettes"]] == [
        ("alices", alice["id"])
    ]
    assert str(bob["id"]) not in alices[1]
    assert "shared" not in alices[1]
    assert str(alice["id"]) not in bobs[1]


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("?session=no-such-session", 404, "no session 'no-such-session'"),
        ("?session=", 400, "session is empty; GET /_harness/cassettes takes session=<id>"),
        ("?session=a&session=b", 400, "session is given 2 times; "),
        ("?sesion=a", 400, "unknown query parameter 'sesion'; "),
    ],
)
def test_a_listing_naming_no_open_session_or_misspelt_is_refused(
    tmp_path: Path, query: str, status: int, message: str
) -> None:
    """A misspelt or unknown session never falls back to another listing."""
    (tmp_path / "shared.json").write_bytes(_empty_cassette())
    with ReplayServer(tmp_path) as server:
        raw_request(server.url, "POST", f"/c/shared{CHAT}", chat_body("hi"))
        _, session = open_session(server, {"cassette": "shared"})
        answered = listing(server, query)

    assert answered[0] == status
    assert message in json.loads(answered[1])["error"]["message"]
    assert str(session["id"]) not in answered[1]


# -- what goes upstream ----------------------------------------------------------------------------

CLIENT_HEADERS = {
    "authorization": "Bearer sk-client-CANARY-authorization",
    "x-api-key": "sk-ant-client-CANARY-x-api-key",
    "api-key": "client-CANARY-api-key",
    "cookie": "session=client-CANARY-cookie",
    "proxy-authorization": "Basic client-CANARY-proxy",
    "x-goog-api-key": "client-CANARY-goog",
    "openai-organization": "org-client-CANARY",
    "openai-project": "proj-client-CANARY",
    "x-auth-token": "client-CANARY-auth-token",
    "x-amz-security-token": "client-CANARY-amz",
    "anthropic-dangerous-direct-browser-access": "client-CANARY-browser",
    "x-stainless-helper": "client-CANARY-stainless",
    "forwarded": "for=client-CANARY",
    "x-forwarded-for": "client-CANARY",
}
KEPT_HEADERS = {
    "user-agent": "OpenAI/Python 3.57.0",
    "accept": "application/json",
    "openai-beta": "assistants=v2",
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "prompt-caching-2024-07-31",
}


def test_only_the_request_itself_goes_upstream_never_a_clients_credentials(
    provider: FakeProvider, tmp_path: Path
) -> None:
    with ReplayServer(
        tmp_path, record_mode="once", environ=provider_environ(provider.base_url)
    ) as server:
        answer = raw_request(
            server.url,
            "POST",
            f"/c/forwarded{CHAT}",
            chat_body("hello"),
            headers={**CLIENT_HEADERS, **KEPT_HEADERS},
        )

    assert answer.status == 200
    (received,) = provider.received
    for name, value in KEPT_HEADERS.items():
        assert received.headers[name] == value
    assert received.headers["authorization"] == f"Bearer {SERVER_KEYS['openai']}"
    assert received.headers["content-type"] == "application/json"
    assert not [
        name
        for name, value in received.headers.items()
        if "CANARY" in value and "SERVER" not in value
    ]
    assert b"client-CANARY" not in (tmp_path / "forwarded.json").read_bytes()


# -- the control token -----------------------------------------------------------------------------

TOKEN = "control-token-0123456789"


def test_with_a_control_token_every_request_but_health_must_carry_it(tmp_path: Path) -> None:
    with ReplayServer(tmp_path, control_token=TOKEN) as server:
        assert raw_request(server.url, "GET", "/_harness/health").status == 200
        refused = raw_request(server.url, "POST", "/_harness/sessions", b"{}")
        assert refused.status == 401
        assert "--control-token" in refused.json()["error"]["message"]
        provider_call = raw_request(server.url, "POST", f"/c/x{CHAT}", chat_body("hi"))
        assert provider_call.status == 401
        assert provider_call.json()["error"]["type"] == "authentication_error"
        wrong = raw_request(
            server.url, "POST", f"/c/x{CHAT}", chat_body("hi"), {"authorization": "Bearer nope"}
        )
        assert wrong.status == 401
        # the token as an SDK's key, or in its own header, is accepted
        script = json.dumps({"script": [{"text": "ok"}], "provider": "openai"}).encode()
        for headers in ({"authorization": f"Bearer {TOKEN}"}, {"x-harness-token": TOKEN}):
            opened = raw_request(server.url, "POST", "/_harness/sessions", script, headers)
            assert opened.status == 201
        with server.session(script=[{"text": "ok"}], provider="anthropic") as session:
            base = session.base_url("anthropic").removeprefix(server.url)
            body = json.dumps(
                {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
            ).encode()
            ok = raw_request(server.url, "POST", f"{base}/v1/messages", body, {"x-api-key": TOKEN})
            assert ok.status == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_listening_beyond_loopback_needs_a_control_token(host: str, tmp_path: Path) -> None:
    with pytest.raises(ServeError, match="--control-token"):
        ReplayServer(tmp_path, host=host)


def test_the_token_never_goes_upstream(provider: FakeProvider, tmp_path: Path) -> None:
    with ReplayServer(
        tmp_path,
        record_mode="once",
        control_token=TOKEN,
        environ=provider_environ(provider.base_url),
    ) as server:
        answer = raw_request(
            server.url, "POST", f"/c/t{CHAT}", chat_body("hi"), {"authorization": f"Bearer {TOKEN}"}
        )

    assert answer.status == 200
    (received,) = provider.received
    assert all(TOKEN not in value for value in received.headers.values())
    assert TOKEN.encode() not in (tmp_path / "t.json").read_bytes()


# -- what a client learns of the server ------------------------------------------------------------


def test_no_message_a_client_receives_names_where_the_cassettes_folder_is(
    tmp_path: Path,
) -> None:
    (tmp_path / "recorded.json").write_bytes(_empty_cassette())
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with ReplayServer(tmp_path) as server:
        answers = [
            raw_request(server.url, "POST", f"/c/missing{CHAT}", chat_body("hi")),
            raw_request(server.url, "POST", f"/c/recorded{CHAT}", chat_body("hi")),
            raw_request(server.url, "POST", f"/c/broken{CHAT}", chat_body("hi")),
            raw_request(
                server.url,
                "POST",
                "/_harness/sessions",
                json.dumps({"cassette": "missing"}).encode(),
            ),
        ]

    for answer in answers:
        assert answer.status >= 400
        assert str(tmp_path) not in answer.body.decode()
        assert str(tmp_path.resolve()) not in answer.body.decode()
    assert "missing.json" in answers[0].json()["error"]["message"]
