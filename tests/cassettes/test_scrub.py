"""Scrubbing: a canary secret in every position never reaches a written file, a replay or a miss
message.

`POSITIONS` is the table: one row per place a canary can travel (how the request carries it, or
the environment variable that holds it, and where the provider echoes it). Adding a position is
one line. Canaries have shapes no known pattern matches, so only the exact-value rule (the values
the request sent, and the environment's `*_API_KEY`) can catch them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, quote_plus

import httpx2
import pytest

from harness.cassettes import (
    PLACEHOLDER,
    Cassette,
    CassetteMissError,
    CassetteTransport,
    Scrubber,
    canonical_request_key,
)
from harness.scrub import (
    DEFAULT_SCRUBBER,
    MAX_JSON_DEPTH,
    MIN_SECRET_LENGTH,
    SECRET_PATTERNS,
    JsonTooDeepError,
    environment_secrets,
    name_is_credential,
    redact,
    redact_json,
    secrets_sent,
)
from harness.sse import SseEvent, parse_sse
from tests.support.cassette_traffic import NoNetwork
from tests.support.fake_provider import (
    FakeProvider,
    ReceivedRequest,
    Reply,
    openai_text_reply,
    serve,
)

CHAT = "/v1/chat/completions"
FORM = "application/x-www-form-urlencoded"
CHAT_BODY: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "hi"}],
}


class Provider:
    """One loopback fake provider for the module (starting one costs half a second), answering
    with whatever script the running test sets."""

    def __init__(self, fake: FakeProvider) -> None:
        self.fake = fake
        self.script: Callable[[ReceivedRequest], Reply] = lambda request: openai_text_reply("ok")

    @property
    def last_request(self) -> ReceivedRequest:
        return self.fake.received[-1]

    def record(self, path: Path, reply: Reply, **request: Any) -> httpx2.Response:
        """Send one request through a recording transport; the provider answers `reply`."""
        self.script = lambda received: reply
        # Its own run: under xdist, saves of one run in mode `all` merge instead of replacing.
        transport = CassetteTransport(path, mode="all", run_id=uuid.uuid4().hex)
        with httpx2.Client(transport=transport, base_url=self.fake.base_url) as client:
            response = client.request("POST", CHAT, **request)
            response.read()
        return response


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    holder: list[Provider] = []
    with serve(lambda request: holder[0].script(request)) as fake:
        holder.append(Provider(fake))
        yield holder[0]


def replay(path: Path, **request: Any) -> httpx2.Response:
    """Send one request to a replay-only transport (a miss raises `CassetteMissError`)."""
    with httpx2.Client(
        transport=CassetteTransport(path, inner=NoNetwork()), base_url="https://api.openai.com"
    ) as client:
        response = client.request("POST", CHAT, **request)
        response.read()
    return response


# -- the canaries -------------------------------------------------------------------------------

Shape = Literal["hex", "gsk", "b64", "unicode"]


def make_canary(name: str, shape: Shape) -> str:
    """A per-position canary whose shape no known pattern matches."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    return {
        "hex": digest[:32],  # an Azure-style key: 32 lower-case hex digits
        "gsk": "gsk_" + digest[:40],  # a Groq key
        "b64": digest[:24] + "+/9=",  # changes when percent-encoded
        "unicode": digest[:24] + "é€",  # changes when JSON-escaped
    }[shape]


def spellings(canary: str) -> set[bytes]:
    """The canary and its halves, raw, percent-encoded and JSON-escaped: none may be written."""
    half = len(canary) // 2
    texts = {canary, canary[:half], canary[half:]}
    return {
        spelled.encode()
        for text in texts
        for spelled in (text, quote(text, safe=""), quote_plus(text), json.dumps(text)[1:-1])
    }


def assert_no_canary(data: bytes | str, canary: str, where: str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    leaked = sorted(spelled for spelled in spellings(canary) if spelled in raw)
    assert not leaked, f"{where} contains {leaked}"


# -- where the provider echoes it -----------------------------------------------------------------


def sse_delta(text: str) -> str:
    chunk = {"choices": [{"index": 0, "delta": {"content": text}}]}
    return f"data: {json.dumps(chunk)}\n\n"


def stream(*events: str) -> Reply:
    return Reply(
        headers={"content-type": "text/event-stream"}, events=[*events, "data: [DONE]\n\n"]
    )


def split(canary: str, *cuts: int) -> list[str]:
    bounds = [0, *cuts, len(canary)]
    return [canary[start:end] for start, end in itertools.pairwise(bounds)]


def halves(canary: str) -> list[str]:
    return split(canary, len(canary) // 2)


ECHOES: Mapping[str, Callable[[str], Reply]] = {
    "none": lambda c: openai_text_reply("ok"),
    "json": lambda c: Reply(body={"echo": f"you sent {c}", "items": [{"note": c}]}),
    "json-percent": lambda c: Reply(body={"next": f"https://example.test/?k={quote(c, safe='')}"}),
    "error": lambda c: Reply(
        status=401,
        body={
            "error": {
                "message": f"Incorrect API key provided: {c}.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        },
    ),
    "header": lambda c: Reply(headers={"x-echo": f"seen {c}"}, body={"ok": True}),
    "text": lambda c: Reply(headers={"content-type": "text/plain"}, body=f"you sent {c}"),
    "sse-data": lambda c: stream(sse_delta(f"you sent {c}")),
    "sse-raw": lambda c: stream(f"data: you sent {c}\n\n"),
    "sse-id": lambda c: stream(f"id: {c}\ndata: {{}}\n\n"),
    "sse-event": lambda c: stream(f"event: {c}\ndata: {{}}\n\n"),
    "sse-comment": lambda c: stream(f": seen {c}\n\n"),
    "sse-split": lambda c: stream(*(sse_delta(p) for p in ["my key is ", *halves(c), " ok"])),
    "sse-split-3": lambda c: stream(*(sse_delta(p) for p in split(c, 3, 20))),
    "sse-split-raw": lambda c: stream(*(f"data: {p}\n\n" for p in halves(c))),
}


# -- the positions ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Position:
    """One row: how the request carries the canary (`{c}` in any template), and its echo."""

    name: str
    shape: Shape = "hex"
    headers: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    json: Mapping[str, Any] = field(default_factory=dict)
    content: str | None = None
    content_type: str = "text/plain"
    binary: bool = False
    env: str | None = None
    echo: str = "none"

    @property
    def canary(self) -> str:
        return make_canary(self.name, self.shape)

    def request(self) -> dict[str, Any]:
        """`client.request` keyword arguments carrying the canary."""
        headers = fill(dict(self.headers), self.canary)
        if self.content is None:
            body = json.dumps({**CHAT_BODY, **fill(dict(self.json), self.canary)}).encode()
            headers.setdefault("content-type", "application/json")
        else:
            body = (b"\xff\xfe" if self.binary else b"") + fill(self.content, self.canary).encode()
            headers.setdefault("content-type", self.content_type)
        return {"params": fill(dict(self.params), self.canary), "headers": headers, "content": body}


def fill(template: Any, canary: str) -> Any:
    if isinstance(template, str):
        return template.replace("{c}", canary).replace("{q}", quote_plus(canary))
    if isinstance(template, dict):
        return {name: fill(value, canary) for name, value in template.items()}
    if isinstance(template, list):
        return [fill(value, canary) for value in template]
    return template


P = Position
BEARER = {"authorization": "Bearer {c}"}
API_KEY = {"x-api-key": "{c}"}
POSITIONS = [
    P(name="authorization Bearer, echoed bare", headers=BEARER, echo="json"),
    P(name="proxy-authorization Basic, echoed bare", headers={"proxy-authorization": "Basic {c}"}, echo="json"),
    P(name="x-api-key (Groq)", shape="gsk", headers=API_KEY, echo="json"),
    P(name="api-key (Azure 32 hex) in an error body", headers={"api-key": "{c}"}, echo="error"),
    P(name="a header named as a credential", headers={"x-session-token": "{c}"}, echo="json"),
    P(name="cookie value", headers={"cookie": "theme=dark; session={c}"}, echo="json"),
    P(name="query api_key", shape="gsk", params={"api_key": "{c}"}, echo="json"),
    P(name="query key, echoed percent-encoded", shape="b64", params={"key": "{c}"}, echo="json-percent"),
    P(name="query code (OAuth)", params={"code": "{c}"}, echo="json"),
    P(name="query page_token", params={"page_token": "{c}"}, echo="json"),
    P(name="JSON token", json={"token": "{c}"}, echo="json"),
    P(name="JSON private_key", json={"private_key": "{c}"}, echo="json"),
    P(name="JSON api_key as a list", json={"api_key": ["{c}"]}, echo="json"),
    P(name="JSON api_key as an object", json={"api_key": {"value": "{c}"}}, echo="json"),
    P(name="JSON camelCase clientSecret, nested", json={"auth": {"clientSecret": "{c}"}}, echo="json"),
    P(name="JSON password, echoed JSON-escaped", shape="unicode", json={"password": "{c}"}, echo="text"),
    P(name="JSON prompt text", headers=API_KEY, json={"messages": [{"role": "user", "content": "key {c}"}]}),
    P(name="form client_secret", content="grant_type=x&client_secret={c}", content_type=FORM, echo="json"),
    P(name="form code (OAuth)", content="grant_type=authorization_code&code={c}", content_type=FORM),
    P(name="form password percent-encoded", shape="b64", content="user=a&password={q}", content_type=FORM),
    P(name="plain-text body", headers=API_KEY, content="my key is {c}"),
    P(name="binary body", headers=API_KEY, content="my key is {c}", binary=True),
    P(name="response JSON echo, neutral name", headers=BEARER, echo="json"),
    P(name="response header", headers=API_KEY, echo="header"),
    P(name="response text body", headers=API_KEY, echo="text"),
    P(name="SSE data", headers=BEARER, echo="sse-data"),
    P(name="SSE data, not JSON", headers=BEARER, echo="sse-raw"),
    P(name="SSE id", headers=BEARER, echo="sse-id"),
    P(name="SSE event", headers=BEARER, echo="sse-event"),
    P(name="SSE comment", headers=BEARER, echo="sse-comment"),
    P(name="SSE split across two deltas", headers=BEARER, echo="sse-split"),
    P(name="SSE split across three deltas", shape="gsk", headers=API_KEY, echo="sse-split-3"),
    P(name="SSE raw data split across events", headers=BEARER, echo="sse-split-raw"),
    P(name="env GROQ_API_KEY", shape="gsk", env="GROQ_API_KEY", echo="json"),
    P(name="env AZURE_OPENAI_API_KEY in an error", env="AZURE_OPENAI_API_KEY", echo="error"),
    P(name="env ANTHROPIC_API_KEY streamed split", env="ANTHROPIC_API_KEY", echo="sse-split"),
    P(name="env HARNESS_CASSETTE_KEY", env="HARNESS_CASSETTE_KEY", echo="header"),
]  # fmt: skip


def client_view(response: httpx2.Response) -> str:
    """Everything a client can see of a replayed response, streamed deltas joined in order."""
    seen = [response.text, *(f"{name}: {value}" for name, value in response.headers.items())]
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        events = list(httpx2.EventSource(response))
        seen.append("".join(delta_text(event.data) for event in events))
        seen.append("".join(event.id for event in events))
        seen.append("".join(event.event for event in events))
    return "\n".join(seen)


def delta_text(data: str) -> str:
    try:
        return str(json.loads(data)["choices"][0]["delta"]["content"])
    except (ValueError, KeyError, IndexError, TypeError):
        return data


def traffic_shows(canary: str, received: ReceivedRequest, live: httpx2.Response) -> bool:
    """Whether the canary really travelled (so the assertions below can fail)."""
    seen = [received.path, *received.headers.values(), client_view(live)]
    text = "\n".join(seen).encode() + received.body
    return any(spelled in text for spelled in spellings(canary))


@pytest.mark.parametrize("position", POSITIONS, ids=lambda position: position.name)
def test_a_canary_reaches_no_file_no_replay_and_no_miss_message(
    position: Position, provider: Provider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = position.canary
    assert DEFAULT_SCRUBBER.text(canary) == canary, "a known pattern would hide a missed value"
    if position.env:
        monkeypatch.setenv(position.env, canary)
    request = position.request()
    recorded, baseline = tmp_path / "recorded.json", tmp_path / "baseline.json"
    live = provider.record(recorded, ECHOES[position.echo](canary), **request)
    assert traffic_shows(canary, provider.last_request, live)
    provider.record(baseline, openai_text_reply("ok"), json={**CHAT_BODY, "n": 2})

    for file in tmp_path.rglob("*"):
        assert_no_canary(file.read_bytes(), canary, f"written file {file.name}")
    # Scrubbing never changes the key the live request is replayed by.
    replayed = replay(recorded, **request)
    assert replayed.status_code == live.status_code
    assert_no_canary(client_view(replayed), canary, "the replayed response")
    with pytest.raises(CassetteMissError) as miss:
        replay(baseline, **request)
    assert "has no interaction" in str(miss.value)
    assert_no_canary(str(miss.value), canary, "the miss message")


def test_the_table_covers_every_echo() -> None:
    assert {position.echo for position in POSITIONS} == set(ECHOES)


# -- known shapes, in every position at once -------------------------------------------------------

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
def test_known_shapes_in_every_position_never_reach_the_file(
    provider: Provider, tmp_path: Path, stream: bool
) -> None:
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
    provider.script = canary_reply
    with httpx2.Client(
        transport=CassetteTransport(path, mode="all"), base_url=provider.fake.base_url
    ) as client:
        live = client.post(
            f"{CHAT}?key={CANARY}&api_key={CANARY}&access_token={CANARY}&ok=1",
            json=body,
            headers=request_headers,
        ).read()
    assert CANARY in live.decode(), "the client itself still sees the real answer"
    assert provider.last_request.headers["x-api-key"] == CANARY
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written == [path]
    assert CANARY.encode() not in path.read_bytes()
    assert b"c4n4ry" not in path.read_bytes()
    interaction = Cassette.load(path).interactions[0]
    assert interaction.request.headers["authorization"] == PLACEHOLDER
    assert "ok=1" in interaction.request.query
    assert interaction.response.headers["set-cookie"] == PLACEHOLDER


# -- replay keys -----------------------------------------------------------------------------------


def test_replay_with_scrubbed_credentials_still_hits(provider: Provider, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    provider.record(
        path,
        Reply(body={"ok": True}),
        params={"key": "live"},
        json={"a": 1},
        headers={"x-api-key": "k1"},
    )
    response = replay(path, params={"key": "other"}, json={"a": 1}, headers={"x-api-key": "k2"})
    assert response.json() == {"ok": True}


@pytest.mark.parametrize("mode", ["all", "new_episodes"])
def test_a_re_recorded_cassette_keeps_the_live_key_and_still_replays(
    provider: Provider, tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "c.json"
    secret = make_canary("re-record", "hex")
    body = {**CHAT_BODY, "token": secret, "api_key": [secret], "properties": {"token": {}}}
    request: dict[str, Any] = {"params": {"code": secret}, "json": body}
    provider.record(path, Reply(body={"n": 1}), **request)
    provider.script = lambda received: Reply(body={"n": 2})
    transport = CassetteTransport(path, mode=mode, run_id=uuid.uuid4().hex)
    with httpx2.Client(transport=transport, base_url=provider.fake.base_url) as client:
        client.post(CHAT, **request)
    stored = Cassette.load(path).interactions
    live_key = canonical_request_key("POST", f"{CHAT}?code={secret}", {}, json.dumps(body).encode())
    assert {interaction.key for interaction in stored} == {live_key}
    stored_body = stored[-1].request.body
    assert isinstance(stored_body, dict)
    assert stored_body["token"] == PLACEHOLDER
    assert replay(path, **request).json() == {"n": 1 if mode == "new_episodes" else 2}


# -- the rules, one by one -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "token",
        "api_key",
        "apiKey",
        "APIKey",
        "x-api-key",
        "apikey",
        "private_key",
        "privateKey",
        "access_token",
        "accesstoken",
        "client_secret",
        "clientsecret",
        "password",
        "db_passwd",
        "authorization",
        "credentials",
        "gcpCredential",
        "secret",
    ],
)
def test_names_that_say_credential(name: str) -> None:
    assert name_is_credential(name)
    assert Scrubber().json({name: 12345678}) == {name: PLACEHOLDER}


@pytest.mark.parametrize(
    "name",
    [
        "tokens",
        "max_tokens",
        "maxTokens",
        "input_tokens",
        "output_tokens",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "cache_creation_input_tokens",
        "max_completion_tokens",
        "budget_tokens",
        "keyword",
        "tokenizer",
        "model",
        # Gemini's usage counts: a name whose last word is `count` counts
        "promptTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "cachedContentTokenCount",
        "toolUsePromptTokenCount",
        "totalTokenCount",
        "maxOutputTokens",
        "thinkingBudget",
        "token_count",
    ],
)
def test_names_that_do_not(name: str) -> None:
    assert not name_is_credential(name)
    assert Scrubber().json({name: 12}) == {name: 12}


def test_credential_members_are_scrubbed_whatever_their_value_type() -> None:
    value = {
        "api_key": ["a", {"b": 1}],
        "token": {"value": "x"},
        "secret": 42,
        "password": "",
        "has_api_key": True,
        "refresh_token": None,
    }
    assert Scrubber().json(value) == {
        "api_key": PLACEHOLDER,
        "token": PLACEHOLDER,
        "secret": PLACEHOLDER,
        "password": PLACEHOLDER,
        "has_api_key": True,
        "refresh_token": None,
    }


def test_schema_parameter_names_survive_but_their_values_are_scanned() -> None:
    secret = make_canary("schema", "hex")
    tool = {
        "name": "login",
        "parameters": {
            "type": "object",
            "properties": {
                "token": {"type": "string", "description": f"for example {secret}"},
                "api_key": {"type": "string", "default": "sk-proj-abcdefghijklmnopqrstuv"},
            },
            "required": ["token"],
        },
    }
    scrubbed = Scrubber().with_secrets([secret]).json(tool)
    properties = scrubbed["parameters"]["properties"]
    assert properties["token"] == {"type": "string", "description": f"for example {PLACEHOLDER}"}
    assert properties["api_key"] == {"type": "string", "default": PLACEHOLDER}
    assert scrubbed["parameters"]["required"] == ["token"]
    # A `properties` member holding data, not schemas, gets the credential rule.
    assert Scrubber().json({"properties": {"token": "x"}}) == {"properties": {"token": PLACEHOLDER}}


def test_log_probability_tokens_are_model_output() -> None:
    logprobs = {"content": [{"token": "Hi", "logprob": -0.1, "top_logprobs": []}]}
    assert Scrubber().json({"logprobs": logprobs}) == {"logprobs": logprobs}


def test_form_fields_and_query_parameters() -> None:
    secret = make_canary("form", "hex")
    scrubber = Scrubber().with_secrets([secret])
    form = f"grant_type=authorization_code&code=abc&client_secret=x&state={secret}&q=a+b%2Fc"
    assert scrubber.form(form) == (
        f"grant_type=authorization_code&code={PLACEHOLDER}&client_secret={PLACEHOLDER}"
        f"&state={PLACEHOLDER}&q=a+b%2Fc"
    )
    assert scrubber.query("page_token=1&key=2&ok=1") == (
        f"page_token={PLACEHOLDER}&key={PLACEHOLDER}&ok=1"
    )
    # A text body that is all name=value pairs is read as a form whatever its content type.
    assert scrubber.body_text("code=abc&x=1") == f"code={PLACEHOLDER}&x=1"
    assert scrubber.body_text("code is abc", "text/plain") == "code is abc"


def test_what_a_request_sent_as_credentials() -> None:
    sent = secrets_sent(
        [
            ("Authorization", "Bearer bearer-value-1"),
            ("cookie", "a=1; session=cookie-value-1"),
            ("x-trace", "not-a-credential"),
        ],
        "api_key=query-value-1&ok=plain-value-1",
        json.dumps({"token": ["json-value-1"], "properties": {"token": {}}}).encode(),
    )
    assert {
        "Bearer bearer-value-1",
        "bearer-value-1",
        "cookie-value-1",
        "query-value-1",
        "json-value-1",
    } <= sent
    assert "not-a-credential" not in sent
    assert "plain-value-1" not in sent
    form = secrets_sent([], "", b"client_secret=form-value-1&code=code-value-1", "")
    assert {"form-value-1", "code-value-1"} <= form


def test_short_values_are_not_secrets() -> None:
    short = "x" * (MIN_SECRET_LENGTH - 1)
    scrubber = Scrubber().with_secrets([short, "y" * MIN_SECRET_LENGTH])
    assert scrubber.secrets == {"y" * MIN_SECRET_LENGTH}
    assert scrubber.text(f"{short} {'y' * MIN_SECRET_LENGTH}") == f"{short} {PLACEHOLDER}"


def test_exact_values_are_scrubbed_in_every_spelling_and_type() -> None:
    secret = 'k3y/with+special="chars"é'
    scrubber = Scrubber().with_secrets([secret, "1234567890"])
    for spelled in (
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    ):
        assert scrubber.text(f"<{spelled}>") == f"<{PLACEHOLDER}>"
    assert scrubber.json({"n": 1234567890, "m": 7, "s": {"1234567890": 1}}) == {
        "n": PLACEHOLDER,
        "m": 7,
        "s": {PLACEHOLDER: 1},
    }


def test_every_sse_field_is_scrubbed() -> None:
    secret = make_canary("sse fields", "hex")
    event = SseEvent(
        event=f"e-{secret}", data=f"d-{secret}", id=f"i-{secret}", retry=5, comments=(secret,)
    )
    assert Scrubber().with_secrets([secret]).events([event]) == [
        SseEvent(
            event=f"e-{PLACEHOLDER}",
            data=f"d-{PLACEHOLDER}",
            id=f"i-{PLACEHOLDER}",
            retry=5,
            comments=(PLACEHOLDER,),
        )
    ]


def test_a_retry_holding_a_secret_is_dropped() -> None:
    scrubber = Scrubber().with_secrets(secrets_sent([], "", b'{"api_key": 123456789}'))
    assert scrubber.events([SseEvent(retry=123456789, data="x")]) == [SseEvent(data="x")]
    assert scrubber.events([SseEvent(retry=3000, data="x")]) == [SseEvent(retry=3000, data="x")]
    huge = 10**5000  # more digits than Python prints: no key, kept as it is
    assert scrubber.json({"n": huge, "token": huge}) == {"n": huge, "token": PLACEHOLDER}


def test_a_secret_split_across_deltas_is_blanked_where_it_starts() -> None:
    text = "".join(
        sse_delta(part) for part in ["my key is sk-ab", "cdef0123456789abcdef0123", " ok", "!"]
    )
    events = Scrubber().events(parse_sse(text))
    contents = [json.loads(event.data or "")["choices"][0]["delta"]["content"] for event in events]
    assert contents == [f"my key is {PLACEHOLDER}", "", " ok", "!"]
    unchanged = parse_sse(sse_delta("fine") + "data: [DONE]\n\n")
    assert Scrubber().events(unchanged) == unchanged


def test_json_nested_too_deep_is_refused_with_a_typed_error() -> None:
    deep: list[Any] = []
    for _ in range(MAX_JSON_DEPTH):
        deep = [deep]
    with pytest.raises(JsonTooDeepError) as caught:
        Scrubber().json(deep)
    assert caught.value.code == "cassette_json_too_deep"
    assert Scrubber().json(deep[0]) == deep[0]
    # text that deep is no JSON body the harness reads: it is scrubbed as text
    assert Scrubber().events([SseEvent(data="[" * 100_000)]) == [SseEvent(data="[" * 100_000)]


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
        ("google-api-key", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
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


# -- redact: the same rules for reports ------------------------------------------------------------


def test_redact_removes_shapes_environment_secrets_and_given_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    groq = make_canary("redact groq", "gsk")
    given = make_canary("redact given", "hex")
    monkeypatch.setenv("GROQ_API_KEY", groq)
    monkeypatch.setenv("HARNESS_CASSETTE_KEY", "signing-key-value")
    assert {groq, "signing-key-value"} <= environment_secrets()
    text = f"{groq} / signing-key-value / {given} / sk-proj-abcdefghijklmnopqrstuv / short"
    assert redact(text, secrets=[given, "short"]) == " / ".join([PLACEHOLDER] * 4 + ["short"])
    assert redact_json({"note": given, "token": "t", "max_tokens": 3}, secrets=[given]) == {
        "note": PLACEHOLDER,
        "token": PLACEHOLDER,
        "max_tokens": 3,
    }


def test_a_miss_message_shows_no_token_member_nor_code_parameter(
    provider: Provider, tmp_path: Path
) -> None:
    path = tmp_path / "c.json"
    provider.record(path, openai_text_reply("ok"), json=CHAT_BODY)
    with pytest.raises(CassetteMissError) as miss:
        replay(path, params={"code": "oauth-code-1"}, json={**CHAT_BODY, "token": "tok-1"})
    message = str(miss.value)
    assert "tok-1" not in message
    assert "oauth-code-1" not in message
    assert f'$.token: (absent) -> "{PLACEHOLDER}"' in message
    assert f"query: '' -> 'code={PLACEHOLDER}'" in message
