"""Scrubbing: a canary secret in every position never reaches any byte of a written file."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from harness.cassettes import PLACEHOLDER, Cassette, CassetteTransport, Scrubber
from harness.cassettes.scrub import SECRET_PATTERNS
from tests.support.fake_provider import ReceivedRequest, Reply, serve

CANARY = "CANARYc4n4ry9x7Qw3rTy8Zp"
OPENAI_KEY = f"sk-proj-{CANARY}"
ANTHROPIC_KEY = f"sk-ant-api03-{CANARY}"
AWS_KEY = "AKIA" + "CANARYX7Q9W3RT2Y"  # AKIA + 16 upper-case alphanumerics


def canary_reply(request: ReceivedRequest) -> Reply:
    secrets = {
        "openai": OPENAI_KEY,
        "anthropic": ANTHROPIC_KEY,
        "aws": AWS_KEY,
        "bearer": f"Bearer {CANARY}",
    }
    headers = {
        "set-cookie": f"session={CANARY}",
        "openai-organization": f"org-{CANARY}",
        "openai-project": f"proj_{CANARY}",
        "x-session-token": CANARY,
        "x-client-secret": CANARY,
    }
    if request.json().get("stream"):
        events = [
            f'data: {{"delta": "{OPENAI_KEY}"}}\n\n',
            f"event: note\ndata: {ANTHROPIC_KEY} and {AWS_KEY}\n\n",
            f": comment Bearer {CANARY}\n\n",
            "data: [DONE]\n\n",
        ]
        return Reply(headers={**headers, "content-type": "text/event-stream"}, events=events)
    return Reply(headers=headers, body={"echo": secrets, "api_key": CANARY, "nested": [secrets]})


@pytest.mark.parametrize("stream", [False, True])
def test_a_canary_in_every_position_never_reaches_the_file(tmp_path: Path, stream: bool) -> None:
    path = tmp_path / "cassettes" / "canary.json"
    request_headers = {
        "authorization": f"Bearer {CANARY}",
        "proxy-authorization": f"Basic {CANARY}",
        "x-api-key": CANARY,
        "api-key": CANARY,
        "cookie": f"a={CANARY}",
        "openai-organization": CANARY,
        "openai-project": CANARY,
        "x-refresh-token": CANARY,
        "x-my-secret": CANARY,
        "x-stainless-key": CANARY,
    }
    body = {
        "model": "gpt-4o-mini",
        "stream": stream,
        "messages": [{"role": "user", "content": f"my key is {OPENAI_KEY} and {ANTHROPIC_KEY}"}],
        "metadata": {"aws": AWS_KEY, "auth": f"bearer {CANARY}", "password": CANARY},
    }
    with serve(canary_reply) as provider:
        transport = CassetteTransport(path, mode="all")
        with httpx.Client(transport=transport, base_url=provider.base_url) as client:
            response = client.post(
                f"/v1/chat/completions?key={CANARY}&api_key={CANARY}&access_token={CANARY}&ok=1",
                json=body,
                headers=request_headers,
            )
            live = response.read()
        assert CANARY in live.decode(), "the client itself still sees the real answer"
        assert provider.received[0].headers["x-api-key"] == CANARY
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written == [path]
    for file in written:
        assert CANARY.encode() not in file.read_bytes()
        assert b"c4n4ry" not in file.read_bytes()
    interaction = Cassette.load(path).interactions[0]
    assert interaction.request.headers["authorization"] == PLACEHOLDER
    assert "ok=1" in interaction.request.query
    assert interaction.response.headers["set-cookie"] == PLACEHOLDER


def test_replay_with_scrubbed_credentials_still_hits(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with serve(lambda request: Reply(body={"ok": True})) as provider:
        transport = CassetteTransport(path, mode="once")
        with httpx.Client(transport=transport, base_url=provider.base_url) as client:
            client.post("/v1/chat/completions?key=live", json={"a": 1}, headers={"x-api-key": "k1"})
    transport = CassetteTransport(path)
    with httpx.Client(transport=transport, base_url="https://api.openai.com") as client:
        response = client.post(
            "/v1/chat/completions?key=other", json={"a": 1}, headers={"x-api-key": "k2"}
        )
        assert response.json() == {"ok": True}


def test_users_add_patterns_and_callables() -> None:
    scrubber = Scrubber.with_extras(
        patterns=[r"tenant-\d+"], callables=[lambda text: text.replace("Acme", "<org>")]
    )
    assert scrubber.text("Acme tenant-42 ok") == f"<org> {PLACEHOLDER} ok"
    assert scrubber.json({"a": ["tenant-7"], "client_secret": "x", "n": 1}) == {
        "a": [PLACEHOLDER],
        "client_secret": PLACEHOLDER,
        "n": 1,
    }


@pytest.mark.parametrize(
    ("name", "sample"),
    [
        ("openai-key", "sk-proj-abcdefghijklmnopqrstuv"),
        ("openai-key", "sk-abcdefghijklmnopqrstuvwxyz012345"),
        ("anthropic-key", "sk-ant-api03-abcdefghijklmnopqrstuv"),
        ("bearer-token", "Bearer abc.def-ghi_jkl"),
        ("aws-access-key", "AKIAABCDEFGHIJKLMNOP"),
    ],
)
def test_known_secret_shapes(name: str, sample: str) -> None:
    assert SECRET_PATTERNS[name].search(sample)
    assert re.search(re.escape(PLACEHOLDER), Scrubber().text(f"x {sample} y"))


@pytest.mark.parametrize(
    "header", ["authorization", "X-Api-Key", "idempotency-key", "x-auth-token", "client-secret"]
)
def test_credential_headers(header: str) -> None:
    assert Scrubber().headers([(header, "v")]) == {header.lower(): PLACEHOLDER}


def test_ordinary_headers_are_kept() -> None:
    assert Scrubber().headers([("Content-Type", "application/json"), ("accept", "*/*")]) == {
        "accept": "*/*",
        "content-type": "application/json",
    }
