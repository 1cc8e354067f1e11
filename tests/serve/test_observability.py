"""A server you can read: what `harness serve` says about what it does.

Each request is one line on stderr (`--log-format text` or `json`) naming its cassette or session,
the provider endpoint, the request key's first 12 hex characters, the outcome (replayed, recorded,
missed, used up, scripted, refused, ...), the status and the milliseconds, and never a
credential or a server path. `GET /_harness/cassettes` lists the cassettes served with what was
played of each. At shutdown the server prints, per cassette, the interactions no client played.
No answer a client receives names where the cassettes folder is, and messages name the server's
command-line options, not the cassette library's Python arguments.
"""

from __future__ import annotations

import json
import re
import signal
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.cassettes import Cassette, CassetteTransport
from harness.serve import ReplayServer
from harness.serve.limits import ServeLimits
from harness.serve.request_log import RequestLogLine
from tests.support.fake_provider import (
    Answer,
    FakeProvider,
    ReceivedRequest,
    Reply,
    last_user_prompt,
    reply_for,
    serve,
)
from tests.support.serve_http import SERVER_KEYS, RawAnswer, provider_environ, raw_request
from tests.support.serve_process import harness_serve

CHAT = "/v1/chat/completions"
CLIENT_KEY = "sk-proj-CLIENTkeyCANARY0123456789abcdef"
LOG_FIELDS = frozenset(
    [
        "time",
        "session",
        "cassette",
        "provider",
        "endpoint",
        "key",
        "outcome",
        "status",
        "ms",
        "path",
    ]
)
SHOWN = ("cassette", "provider", "endpoint", "key", "outcome", "status", "session")


def chat(prompt: str, model: str = "gpt-4o-mini") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}]}


def body(prompt: str, model: str = "gpt-4o-mini") -> bytes:
    return json.dumps(chat(prompt, model)).encode()


def answer_the_prompt(request: ReceivedRequest) -> Reply:
    return reply_for(request, Answer(text=f"answer to {last_user_prompt(request.json())}"))


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with serve(answer_the_prompt) as running:
        yield running


def record(path: Path, prompts: Sequence[str]) -> list[str]:
    """`path`, one recorded answer per prompt (a request sent again is not answered again);
    the interactions' request keys, in file order."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        prompt = last_user_prompt(json.loads(request.content))
        return httpx2.Response(200, json={"choices": [{"message": {"content": prompt}}]})

    path.parent.mkdir(parents=True, exist_ok=True)
    transport = CassetteTransport(
        path,
        mode="all",
        inner=httpx2.MockTransport(answer),
        identical_requests="separate",
        run_id=f"an-earlier-run-{uuid.uuid4().hex}",  # so mode once replays it, records nothing
    )
    with httpx2.Client(base_url="https://api.openai.com/v1", transport=transport) as client:
        for prompt in prompts:
            client.post("/chat/completions", json=chat(prompt)).raise_for_status()
    return [interaction.key for interaction in Cassette.load(path).interactions]


def prefix(key: str) -> str:
    return key.removeprefix("sha256:")[:12]


def message_of(answer: RawAnswer) -> str:
    message: str = answer.json()["error"]["message"]
    return message


# -- a real server process ------------------------------------------------------------------------


# -- the request log -------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_each_request_is_one_json_line_with_its_cassette_key_outcome_status_and_time(
    provider: FakeProvider, tmp_path: Path
) -> None:
    folder = tmp_path / "cassettes"
    capital, _ = record(folder / "agent" / "weather.json", ["capital?", "weather?"])
    started = datetime.now(UTC)
    with harness_serve(
        folder,
        "--log-format=json",
        "--record-mode=once",
        "--max-request-bytes=4096",
        environ=provider_environ(provider.base_url),
    ) as server:
        client_key = {"authorization": f"Bearer {CLIENT_KEY}"}
        weather = f"/c/agent/weather{CHAT}"
        hit = raw_request(server.url, "POST", weather, body("capital?"), client_key)
        used_up = raw_request(server.url, "POST", weather, body("capital?"), client_key)
        missed = raw_request(server.url, "POST", weather, body("capital?", "other-model"))
        recorded = raw_request(server.url, "POST", f"/c/fresh{CHAT}", body("new?"), client_key)
        too_large = raw_request(server.url, "POST", weather, body("x" * 5000))
        opened = raw_request(
            server.url,
            "POST",
            "/_harness/sessions",
            json.dumps({"script": [{"text": "Paris."}], "provider": "openai"}).encode(),
        )
        session = opened.json()["id"]
        scripted = raw_request(server.url, "POST", f"/s/{session}{CHAT}", body("capital?"))
    ended = datetime.now(UTC)

    assert server.process.returncode == 0, server.stderr
    statuses = [hit, used_up, missed, recorded, too_large, opened, scripted]
    assert [answer.status for answer in statuses] == [200, 404, 404, 200, 413, 201, 200]
    missed_key = re.search(r"\(key sha256:([0-9a-f]{64})\)", message_of(missed))
    assert missed_key is not None, message_of(missed)
    (fresh,) = Cassette.load(folder / "fresh.json").interactions
    lines = server.log_lines()
    for line in lines:  # every field, each of its type
        assert set(line) == LOG_FIELDS, line
        RequestLogLine.model_validate(line)
    # a recording's line is written once its answer is saved, which may be after the next
    # request's: the lines, in any order
    assert sorted(
        [tuple(line[name] for name in SHOWN) for line in lines],
        key=repr,
    ) == sorted(
        [
            ("agent/weather", "openai", CHAT, prefix(capital), "replayed", 200, None),
            ("agent/weather", "openai", CHAT, prefix(capital), "used up", 404, None),
            ("agent/weather", "openai", CHAT, missed_key.group(1)[:12], "missed", 404, None),
            ("fresh", "openai", CHAT, prefix(fresh.key), "recorded", 200, None),
            (None, "openai", CHAT, None, "refused", 413, None),
            (None, None, "POST /_harness/sessions", None, "control", 201, session),
            (None, "openai", CHAT, prefix(capital), "scripted", 200, session),  # same request
        ],
        key=repr,
    )
    for line in lines:
        arrived = datetime.strptime(line["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert started - timedelta(seconds=1) <= arrived <= ended, line["time"]
        assert isinstance(line["ms"], float)
        assert 0 <= line["ms"] < 10_000
    for secret in [CLIENT_KEY, *SERVER_KEYS.values(), str(tmp_path), str(tmp_path.resolve())]:
        assert secret not in server.stderr


@pytest.mark.subprocess
def test_the_text_log_is_one_line_per_request_and_sigterm_prints_the_unplayed_summary(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "cassettes"
    capital, _, _ = record(folder / "agent" / "weather.json", ["capital?", "rain?", "sun?"])
    record(folder / "agent" / "all-played.json", ["hello?"])
    with harness_serve(folder, stop=signal.SIGTERM) as server:
        replayed = raw_request(server.url, "POST", f"/c/agent/weather{CHAT}", body("capital?"))
        played = raw_request(server.url, "POST", f"/c/agent/all-played{CHAT}", body("hello?"))
        missed = raw_request(server.url, "POST", f"/c/agent/weather{CHAT}", body("snow?"))

    assert [replayed.status, played.status, missed.status] == [200, 200, 404]
    lines = server.stderr.splitlines()
    time_pattern = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
    expected = [
        rf"{time_pattern} cassette=agent/weather openai {CHAT} {prefix(capital)} replayed 200 "
        r"\d+\.\dms",
        rf"{time_pattern} cassette=agent/all-played openai {CHAT} [0-9a-f]{{12}} replayed 200 "
        r"\d+\.\dms",
        rf"{time_pattern} cassette=agent/weather openai {CHAT} [0-9a-f]{{12}} missed 404 "
        r"\d+\.\dms",
    ]
    assert len(lines) >= len(expected), server.stderr
    for pattern, line in zip(expected, lines, strict=False):
        assert re.fullmatch(pattern, line), (pattern, line)
    # all-played was played whole: it is not named
    assert lines[len(expected) :] == ["cassette agent/weather: 2 of 3 interactions never played"]
    assert str(tmp_path) not in server.stderr


def test_a_text_line_quotes_what_a_client_put_in_a_name_so_a_request_stays_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record(tmp_path / "a b\nfake line.json", ["hi"])
    with ReplayServer(tmp_path, log_format="text") as server:
        answer = raw_request(server.url, "POST", f"/c/a%20b%0Afake%20line{CHAT}", body("hi"))
    assert answer.status == 200
    (line,) = capsys.readouterr().err.splitlines()
    assert ' cassette="a b\\nfake line" openai ' in line


def test_without_a_log_format_the_server_writes_no_request_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record(tmp_path / "one.json", ["hi"])
    with ReplayServer(tmp_path) as server:
        answer = raw_request(server.url, "POST", f"/c/one{CHAT}", body("hi"))
    assert answer.status == 200
    assert capsys.readouterr().err == ""


def test_refusals_for_the_control_token_and_a_session_asking_too_much_are_logged_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ReplayServer(tmp_path, control_token="t0ken", log_format="json") as server:
        without_token = raw_request(server.url, "POST", f"/c/x{CHAT}", body("hi"))
        too_much = raw_request(
            server.url,
            "POST",
            "/_harness/sessions",
            json.dumps({"cassette": "x", "record_mode": "all"}).encode(),
            {"x-harness-token": "t0ken"},
        )
    assert [without_token.status, too_much.status] == [401, 403]
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(line["endpoint"], line["outcome"], line["status"]) for line in lines] == [
        (CHAT, "refused", 401),
        ("POST /_harness/sessions", "refused", 403),
    ]
    assert "t0ken" not in json.dumps(lines)


def test_script_sessions_bad_names_and_unknown_sessions_are_logged_with_their_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ReplayServer(tmp_path, log_format="json") as server:
        session = server.session(script=[{"text": "Paris."}], provider="openai")
        answers = [
            raw_request(server.url, "POST", f"/s/{session.id}{CHAT}", body("capital?")),
            raw_request(server.url, "POST", f"/s/{session.id}{CHAT}", body("capital?")),
            raw_request(server.url, "POST", f"/s/gone{CHAT}", body("capital?")),
            raw_request(server.url, "POST", f"/c/..%2Fup{CHAT}", body("capital?")),
            raw_request(server.url, "POST", f"/c/absent{CHAT}", body("capital?")),
            raw_request(server.url, "POST", f"/c/absent{CHAT}", b"[]"),
        ]
    assert [answer.status for answer in answers] == [200, 404, 404, 400, 404, 400]
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()][1:]
    assert [(line["session"], line["cassette"], line["outcome"]) for line in lines] == [
        (session.id, None, "scripted"),
        (session.id, None, "used up"),
        ("gone", None, "invalid"),
        (None, None, "refused"),  # a name leaving the folder is no cassette (its path is given)
        (None, "absent", "failed"),
        (None, None, "invalid"),
    ]


CONTROL_TOKEN = "harness-control-TOKEN-canary"


def test_a_refused_or_invalid_request_is_logged_with_its_path_and_nothing_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the rest of a refusal's line cannot say (no cassette, session or endpoint was
    recognised): where the request went. Never its query string (where some SDKs put their
    key), a credential in the path, the control token, nor a path on any other line."""
    record(tmp_path / "one.json", ["hi"])
    token = {"x-harness-token": CONTROL_TOKEN}
    with ReplayServer(tmp_path, control_token=CONTROL_TOKEN, log_format="json") as server:
        answers = [
            raw_request(server.url, "POST", f"/c/one{CHAT}", body("hi"), token),
            raw_request(server.url, "POST", f"/c/one{CHAT}", body("other?"), token),
            raw_request(server.url, "POST", f"{CHAT}?key=AIzaQUERYkeyCANARY", body("hi"), token),
            raw_request(server.url, "POST", f"/c/..%2Fup{CHAT}", body("hi"), token),
            raw_request(server.url, "POST", f"/c/{CLIENT_KEY}{CHAT}", body("hi")),
            raw_request(server.url, "GET", f"/_harness/{CONTROL_TOKEN}/x", b"", token),
            raw_request(server.url, "GET", "/_harness/sesions", b""),
        ]
    assert [answer.status for answer in answers] == [200, 404, 404, 400, 401, 404, 401]
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in err.splitlines()]
    for line in lines:
        RequestLogLine.model_validate(line)
    assert [(line["outcome"], line["status"], line["path"]) for line in lines] == [
        ("replayed", 200, None),
        ("missed", 404, None),  # its cassette, endpoint and key say where it went
        ("invalid", 404, CHAT),
        ("refused", 400, f"/c/../up{CHAT}"),
        ("refused", 401, f"/c/[SCRUBBED]{CHAT}"),
        ("invalid", 404, "/_harness/[SCRUBBED]/x"),
        ("refused", 401, "/_harness/sesions"),
    ]
    for secret in ["AIzaQUERYkeyCANARY", "key=", CLIENT_KEY, CONTROL_TOKEN, str(tmp_path)]:
        assert secret not in err


def test_a_text_line_gives_a_refusal_s_path_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ReplayServer(tmp_path, log_format="text") as server:
        answer = raw_request(server.url, "POST", "/v1/messages?beta=true", body("hi"))
    assert answer.status == 404
    (line,) = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"\S+Z - - - - invalid 404 \d+\.\dms path=/v1/messages", line), line


# -- the listing ---------------------------------------------------------------------------------


def listing(
    server: ReplayServer, headers: dict[str, str] | None = None, *, query: str = ""
) -> RawAnswer:
    return raw_request(server.url, "GET", f"/_harness/cassettes{query}", headers=headers)


def test_the_listing_counts_what_each_cassette_and_sessions_cassette_played(
    provider: FakeProvider, tmp_path: Path
) -> None:
    """The `/c/` cassettes without a session; a session's cassette when the session is named."""
    record(tmp_path / "agent" / "weather.json", ["capital?", "rain?"])
    with ReplayServer(
        tmp_path, record_mode="once", environ=provider_environ(provider.base_url)
    ) as server:
        assert listing(server).json() == {"cassettes": []}
        raw_request(server.url, "POST", f"/c/agent/weather{CHAT}", body("capital?"))
        raw_request(server.url, "POST", f"/c/new/one{CHAT}", body("new?"))
        session = server.session(cassette="agent/weather")
        raw_request(server.url, "POST", f"/s/{session.id}{CHAT}", body("rain?"))
        script = server.session(script=[{"text": "Paris."}], provider="openai")
        listed = listing(server).json()
        of_the_session = listing(server, query=f"?session={session.id}").json()
        of_the_script = listing(server, query=f"?session={script.id}").json()

    assert listed == {
        "cassettes": [
            {
                "name": "agent/weather",
                "provider": "openai",
                "record_mode": "once",
                "session": None,
                "recorded": 2,
                "played": 1,
                "unplayed": 1,
            },
            {
                "name": "new/one",
                "provider": "openai",
                "record_mode": "once",
                "session": None,
                "recorded": 1,
                "played": 0,
                "unplayed": 0,
            },
        ]
    }
    assert of_the_session == {
        "cassettes": [
            {
                "name": "agent/weather",
                "provider": "openai",
                "record_mode": "once",
                "session": session.id,
                "recorded": 2,
                "played": 1,
                "unplayed": 1,
            }
        ]
    }
    assert of_the_script == {"cassettes": []}  # a script session plays no cassette


def test_the_listing_needs_the_control_token_like_every_control_call(tmp_path: Path) -> None:
    with ReplayServer(tmp_path, control_token="t0ken") as server:
        refused = listing(server)
        allowed = listing(server, {"x-harness-token": "t0ken"})
    assert refused.status == 401
    assert "--control-token" in message_of(refused)
    assert (allowed.status, allowed.json()) == (200, {"cassettes": []})


# -- the shutdown summary ----------------------------------------------------------------------------


def test_an_interaction_counts_as_played_when_any_client_played_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record(tmp_path / "agent" / "weather.json", ["a?", "b?", "c?", "d?"])
    record(tmp_path / "other.json", ["x?"])
    with ReplayServer(tmp_path, limits=ServeLimits(max_cassettes=1)) as server:
        raw_request(server.url, "POST", f"/c/agent/weather{CHAT}", body("a?"))
        raw_request(server.url, "POST", f"/c/other{CHAT}", body("x?"))  # closes agent/weather
        raw_request(server.url, "POST", f"/c/agent/weather{CHAT}", body("b?"))  # from its start
        with server.session(cassette="agent/weather") as session:
            raw_request(server.url, "POST", f"/s/{session.id}{CHAT}", body("c?"))
    assert capsys.readouterr().err == "cassette agent/weather: 1 of 4 interactions never played\n"


def test_nothing_is_printed_at_shutdown_when_every_interaction_was_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record(tmp_path / "one.json", ["a?", "b?"])
    with ReplayServer(tmp_path) as server:
        for prompt in ["a?", "b?"]:
            raw_request(server.url, "POST", f"/c/one{CHAT}", body(prompt))
    assert capsys.readouterr().err == ""


# -- what a client receives ----------------------------------------------------------------------------


def every_error_answer(server: ReplayServer, folder: Path) -> list[RawAnswer]:
    """An answer for each way a request can fail, and the control calls' answers."""
    record(folder / "good.json", ["capital?"])
    record(folder / "tampered.json", ["capital?"])
    document = json.loads((folder / "tampered.json").read_text())
    document["interactions"][0]["response"]["status"] = 201
    (folder / "tampered.json").write_text(json.dumps(document))
    (folder / "corrupt.json").write_text("{not json")

    def post(path: str, content: bytes = body("capital?")) -> RawAnswer:
        return raw_request(server.url, "POST", path, content)

    def open_session(spec: dict[str, Any]) -> RawAnswer:
        return post("/_harness/sessions", json.dumps(spec).encode())

    script = open_session({"script": [{"text": "Paris."}], "provider": "openai"}).json()["id"]
    cassette_session = open_session({"cassette": "good"}).json()["id"]
    return [
        post(f"/c/good{CHAT}"),
        post(f"/c/good{CHAT}"),  # used up
        post(f"/c/good{CHAT}", body("other?")),  # missed
        post(f"/c/absent{CHAT}"),
        post(f"/c/tampered{CHAT}"),
        post(f"/c/corrupt{CHAT}"),
        post(f"/c/..%2F..%2Fetc{CHAT}"),
        post(f"/c/good{CHAT}", b"[1, 2"),
        post(f"/c/good{CHAT}", b"x" * 5000),
        raw_request(server.url, "GET", f"/c/good{CHAT}"),
        post("/c/good/v1/embeddings"),
        post(f"/s/{script}{CHAT}"),
        post(f"/s/{script}{CHAT}"),  # the script used up
        post(f"/s/{cassette_session}{CHAT}"),
        post(f"/s/{cassette_session}{CHAT}"),  # used up
        post(f"/s/no-such-session{CHAT}"),
        open_session({"cassette": "absent"}),
        open_session({"cassette": "tampered"}),
        open_session({"cassette": "corrupt"}),
        open_session({"cassette": "../outside"}),
        open_session({"cassette": "good", "record_mode": "all"}),
        open_session({"script": "not a list"}),
        raw_request(server.url, "GET", "/_harness/sessions/no-such-session"),
        raw_request(server.url, "DELETE", "/_harness/sessions/no-such-session"),
        raw_request(server.url, "GET", f"/_harness/sessions/{cassette_session}"),
        raw_request(server.url, "GET", "/_harness/cassettes"),
        raw_request(server.url, "GET", "/_harness/nothing"),
    ]


def test_no_answer_a_client_receives_holds_the_servers_cassettes_folder(tmp_path: Path) -> None:
    real = tmp_path / "real-folder-PATHCANARY"
    real.mkdir()
    (tmp_path / "linked-folder-PATHCANARY").symlink_to(real)
    folder = tmp_path / "linked-folder-PATHCANARY"  # served through a symlink: both are hidden
    with ReplayServer(folder, limits=ServeLimits(max_request_bytes=4096)) as server:
        answers = every_error_answer(server, real)

    assert {answer.status for answer in answers} >= {200, 400, 403, 404, 405, 413}
    for answer in answers:
        received = answer.body.decode() + json.dumps(answer.headers)
        assert "PATHCANARY" not in received, received
        assert str(tmp_path) not in received, received


def test_messages_name_the_servers_options_not_the_librarys_python_arguments(
    tmp_path: Path,
) -> None:
    with ReplayServer(tmp_path, limits=ServeLimits(max_request_bytes=4096)) as server:
        answers = every_error_answer(server, tmp_path)

    messages = [answer.json()["error"]["message"] for answer in answers if "error" in answer.json()]
    for message in messages:
        assert not re.search(r"\b[a-z_]+=(True|False)\b", message), message
        assert "record mode '" not in message, message
    used_up, missed, absent, tampered = messages[:4]
    assert "Start harness serve with --allow-repeats to replay the last answer again" in used_up
    assert "or re-record (--record-mode all)" in used_up
    assert "with --record-mode none." in missed
    assert (
        "re-record: --record-mode new_episodes appends the new interaction, --record-mode all "
        "rewrites the cassette" in missed
    )
    assert "absent.json does not exist and --record-mode is none" in absent
    assert "record it with --record-mode once, new_episodes or all" in absent
    assert "list its problems with harness cassettes verify" in tampered
