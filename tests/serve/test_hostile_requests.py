"""Misses and bad requests get the provider's own error, never a crash, never a file outside.

Each SDK must raise its own typed error with a message that says what to do: a cassette miss is
a 404 carrying the miss diagnosis (nearest recorded request, structural diff) with every secret
scrubbed; an unknown cassette or endpoint a 404; a body that is not a JSON object a 400; another
method than POST a 405. A cassette name that would leave the cassettes folder (`..` in any
spelling, an absolute path, a backslash, a NUL, a symlink out) is refused with 400 before any
file is opened: a cassette placed outside the folder, which would answer the request, is never
played, and a recording server neither forwards nor writes anything. After every one of these
the server still answers a good request.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anthropic
import httpx2
import openai
import pytest

from harness.cassettes import Cassette, Interaction
from harness.serve import ReplayServer
from tests.support.fake_provider import (
    Answer,
    FakeProvider,
    ReceivedRequest,
    Reply,
    reply_for,
    serve,
)
from tests.support.recordings import REPOSITORY
from tests.support.serve_http import provider_environ, raw_request
from tests.support.serve_sdk import (
    CLIENT_KEYS,
    Provider,
    recorded_answer,
    sdk_call,
    send_sync,
    sync_client,
)

GOOD: dict[Provider, str] = {
    "openai": "trigger-max-tokens-openai",
    "anthropic": "trigger-max-tokens-anthropic",
}
ENDPOINT: dict[Provider, str] = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
BODY_KEY = "sk-proj-BODYkeyCANARY0123456789abcdef"


@dataclass(frozen=True)
class Site:
    """A cassettes folder with the good cassettes and an escape symlink to its parent, which
    holds `outside.json`: a cassette that would answer the request if a path reached it."""

    root: Path
    cassettes: Path

    def snapshot(self) -> dict[str, bytes]:
        return {
            path.relative_to(self.root).as_posix(): path.read_bytes()
            for path in sorted(self.root.rglob("*"))
            if path.is_file() and not path.is_symlink()
        }


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    root = tmp_path_factory.mktemp("site")
    cassettes = root / "cassettes"
    cassettes.mkdir()
    for name in GOOD.values():
        shutil.copyfile(
            REPOSITORY / "cassettes" / "agent" / f"{name}.json", cassettes / f"{name}.json"
        )
    shutil.copyfile(cassettes / f"{GOOD['openai']}.json", root / "outside.json")
    (cassettes / "escape").symlink_to(root, target_is_directory=True)
    return Site(root, cassettes)


def answer_anything(request: ReceivedRequest) -> Reply:
    return reply_for(request, Answer(text="recorded"))


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeProvider]:
    with serve(answer_anything) as running:
        yield running


@pytest.fixture(scope="module")
def replaying(site: Site) -> Iterator[ReplayServer]:
    with ReplayServer(site.cassettes) as server:
        yield server


@pytest.fixture(scope="module")
def recording(site: Site, provider: FakeProvider) -> Iterator[ReplayServer]:
    with ReplayServer(
        site.cassettes, record_mode="once", environ=provider_environ(provider.base_url)
    ) as server:
        yield server


def first_interaction(site: Site, provider: Provider) -> Interaction:
    return Cassette.load(site.cassettes / f"{GOOD[provider]}.json").interactions[0]


def assert_still_serves(server: ReplayServer, site: Site) -> None:
    """A good request, on a session of its own so it is not used up, gets its recorded answer."""
    interaction = first_interaction(site, "openai")
    with server.session(cassette=GOOD["openai"]) as session:
        with sync_client("openai", session.base_url("openai")) as client:
            assert send_sync(client, sdk_call(interaction)) == recorded_answer(interaction)


def openai_error(answer: Any) -> dict[str, Any]:
    assert set(answer) == {"error"}, answer
    error: dict[str, Any] = answer["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    return error


def anthropic_error(answer: Any) -> dict[str, Any]:
    assert set(answer) == {"type", "error"}, answer
    assert answer["type"] == "error"
    error: dict[str, Any] = answer["error"]
    assert set(error) == {"type", "message"}, error
    return error


def provider_error(provider: Provider, answer: Any) -> dict[str, Any]:
    """The error object of `answer`, checked to be in `provider`'s own error format."""
    return openai_error(answer) if provider == "openai" else anthropic_error(answer)


# -- a miss ----------------------------------------------------------------------------------------


def with_key_in_the_prompt(interaction: Interaction) -> dict[str, Any]:
    """The recorded request with the user's text replaced by one starting with a key."""
    body: dict[str, Any] = json.loads(json.dumps(interaction.request.body))
    turn = next(message for message in body["messages"] if message["role"] == "user")
    said = f"{BODY_KEY} is my key, what is the capital of France?"
    if isinstance(turn["content"], str):
        turn["content"] = said
    else:
        turn["content"][0]["text"] = said
    return body


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_miss_is_the_sdks_not_found_error_with_the_diagnosis_and_no_key(
    provider: Provider, replaying: ReplayServer, site: Site
) -> None:
    interaction = first_interaction(site, provider)
    changed = replace(sdk_call(interaction), body=with_key_in_the_prompt(interaction))
    with sync_client(provider, replaying.cassette_url(GOOD[provider], provider)) as client:
        failed = send_sync(client, changed)

    assert failed.error is not None
    assert failed.error.typed == "NotFoundError"
    assert failed.error.status == 404
    message = (failed.error.body if provider == "openai" else failed.error.body["error"])["message"]
    assert f"{GOOD[provider]}.json has no interaction for POST {ENDPOINT[provider]}" in message
    assert "Nearest recorded requests (same method and path, each distinct request once;" in message
    assert "Differences from #0, recorded -> requested:" in message
    where = "$.messages[1].content" if provider == "openai" else "$.messages[0].content[0].text"
    assert f'{where}: "What is the capital of' in message
    assert '-> "[SCRUBBED]' in message
    assert "CANARY" not in json.dumps(failed.error.body)
    assert_still_serves(replaying, site)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_miss_answer_on_the_wire_holds_no_key_either(
    provider: Provider, replaying: ReplayServer, site: Site
) -> None:
    body = with_key_in_the_prompt(first_interaction(site, provider))
    credential = (
        {"authorization": f"Bearer {CLIENT_KEYS[provider]}"}
        if provider == "openai"
        else {"x-api-key": CLIENT_KEYS[provider], "anthropic-version": "2023-06-01"}
    )
    answer = raw_request(
        replaying.url,
        "POST",
        f"/c/{GOOD[provider]}{ENDPOINT[provider]}",
        json.dumps(body).encode(),
        credential,
    )

    assert answer.status == 404
    assert provider_error(provider, answer.json())["type"] == "not_found_error"
    assert b"CANARY" not in answer.body
    assert not any("CANARY" in value for value in answer.headers.values())


def test_a_request_sent_once_more_than_recorded_says_to_open_a_session_per_run(
    replaying: ReplayServer, site: Site
) -> None:
    interaction = first_interaction(site, "openai")
    with replaying.session(cassette=GOOD["openai"]) as session:
        with sync_client("openai", session.base_url("openai")) as client:
            played = send_sync(client, sdk_call(interaction))
            again = send_sync(client, sdk_call(interaction))

    assert played == recorded_answer(interaction)
    assert again.error is not None
    assert again.error.typed == "NotFoundError"
    message = again.error.body["message"]
    assert "was recorded 1 time(s) and every recorded occurrence has been played" in message
    assert message.endswith(
        "Through harness serve, each recorded answer is played once per /c/<cassette> URL (until "
        "the server restarts) and once per session: for repeated runs, open a session per run "
        'with POST /_harness/sessions {"cassette": "<name>"}, which plays the cassette from its '
        "start."
    )
    assert_still_serves(replaying, site)


def test_a_request_never_recorded_gets_no_such_advice(replaying: ReplayServer, site: Site) -> None:
    interaction = first_interaction(site, "openai")
    changed = replace(sdk_call(interaction), body={**sdk_call(interaction).body, "n": 2})
    with sync_client("openai", replaying.cassette_url(GOOD["openai"], "openai")) as client:
        failed = send_sync(client, changed)

    assert failed.error is not None
    assert "has no interaction for POST /v1/chat/completions" in failed.error.body["message"]
    assert "session" not in failed.error.body["message"]


# -- unknown cassettes and endpoints, bad bodies, wrong methods -----------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_unknown_cassette_is_the_sdks_not_found_error_saying_how_to_record_it(
    provider: Provider, replaying: ReplayServer, site: Site
) -> None:
    call = sdk_call(first_interaction(site, provider))
    with sync_client(provider, replaying.cassette_url("no/such-cassette", provider)) as client:
        failed = send_sync(client, call)

    assert failed.error is not None
    assert failed.error.typed == "NotFoundError"
    message = (failed.error.body if provider == "openai" else failed.error.body["error"])["message"]
    assert "no/such-cassette.json does not exist and --record-mode is none" in message
    assert "record it with --record-mode once, new_episodes or all" in message
    assert_still_serves(replaying, site)


def test_an_endpoint_the_server_does_not_speak_is_the_sdks_not_found_error(
    replaying: ReplayServer, site: Site
) -> None:
    base_url = replaying.cassette_url(GOOD["openai"], "openai")
    with openai.OpenAI(base_url=base_url, api_key=CLIENT_KEYS["openai"], max_retries=0) as client:
        with pytest.raises(openai.NotFoundError) as embeddings:
            client.embeddings.create(model="text-embedding-3-small", input="Paris")
        with pytest.raises(openai.NotFoundError):
            client.models.list()
    base_url = replaying.cassette_url(GOOD["anthropic"], "anthropic")
    with anthropic.Anthropic(
        base_url=base_url, api_key=CLIENT_KEYS["anthropic"], max_retries=0
    ) as messages:
        with pytest.raises(anthropic.NotFoundError):
            messages.models.list()

    assert "no provider endpoint at the end of" in str(embeddings.value)
    assert "/v1/chat/completions, /v1/responses, /v1/messages" in str(embeddings.value)
    assert_still_serves(replaying, site)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_an_unknown_control_path_is_a_json_404_listing_the_control_api(
    method: str, replaying: ReplayServer, site: Site
) -> None:
    answer = raw_request(replaying.url, method, "/_harness/session", b"{}")

    assert answer.status == 404
    message = answer.json()["error"]["message"]
    assert f"no control endpoint {method} /_harness/session:" in message
    assert "POST /_harness/sessions" in message
    assert_still_serves(replaying, site)


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("/v1/chat/completions", "requests go to /c/<cassette>/v1/..."),
        ("/c/x/v1/completions", "no provider endpoint at the end of"),
        ("/s/x/v1/chat/completions", "no session 'x': open one with POST /_harness/sessions"),
        ("/favicon.ico", "requests go to /c/<cassette>/v1/..."),
    ],
)
def test_a_path_the_server_does_not_serve_is_a_provider_shaped_404(
    target: str, says: str, replaying: ReplayServer, site: Site
) -> None:
    answer = raw_request(replaying.url, "POST", target, b"{}")

    assert answer.status == 404
    error = openai_error(answer.json())
    assert error["type"] == "not_found_error"
    assert says in error["message"]
    assert_still_serves(replaying, site)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "Expecting property name enclosed in double quotes at line 1 column 2"),
        (b"", "it is empty"),
        (b'["a", "list"]', "it is an array"),
        (b'"text"', "it is a string"),
        (b'{"temperature": NaN}', "it holds NaN or Infinity, which are not JSON numbers"),
        (b"[" * 5_000 + b"]" * 5_000, "it nests deeper than 252 levels"),
    ],
    ids=["malformed", "empty", "array", "string", "nan", "deep"],
)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_body_that_is_not_a_json_object_is_a_provider_shaped_400(
    provider: Provider, body: bytes, says: str, replaying: ReplayServer, site: Site
) -> None:
    answer = raw_request(replaying.url, "POST", f"/c/{GOOD[provider]}{ENDPOINT[provider]}", body)

    assert answer.status == 400
    error = provider_error(provider, answer.json())
    assert error["type"] == "invalid_request_error"
    assert error["message"] == (
        f"the request body is not a JSON object: {says}; send the request as a JSON object"
    )
    assert_still_serves(replaying, site)


def test_the_sdk_raises_its_bad_request_error_for_a_body_that_is_not_an_object(
    replaying: ReplayServer,
) -> None:
    base_url = replaying.cassette_url(GOOD["openai"], "openai")
    with openai.OpenAI(base_url=base_url, api_key=CLIENT_KEYS["openai"], max_retries=0) as client:
        with pytest.raises(openai.BadRequestError, match="it is an array"):
            client.post("/chat/completions", body=["not", "an", "object"], cast_to=object)


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_another_method_than_post_is_a_provider_shaped_405(
    provider: Provider, method: str, replaying: ReplayServer, site: Site
) -> None:
    answer = raw_request(replaying.url, method, f"/c/{GOOD[provider]}{ENDPOINT[provider]}")

    assert answer.status == 405
    error = provider_error(provider, answer.json())
    assert error["type"] == "invalid_request_error"
    assert error["message"] == (
        f"{method} is not allowed on {ENDPOINT[provider]}; the API takes POST"
    )
    assert_still_serves(replaying, site)


# -- names that would leave the cassettes folder ---------------------------------------------------


def assert_refused(message: str) -> None:
    """`message` refuses a cassette name for leaving the folder, and says what to give."""
    assert message.startswith("cassette "), message
    assert message.endswith(
        (
            "is refused: give a relative path inside the cassettes folder, without '..'",
            "resolves outside the cassettes folder",
        )
    ), message


ESCAPES = {
    "dot-dot": "/c/../outside",
    "escaped-dot-dot": "/c/%2e%2e/outside",
    "escaped-dot-dot-upper": "/c/%2E%2E/outside",
    "half-escaped-dot-dot": "/c/.%2e/outside",
    "dot-dot-after-a-name": "/c/{good}/../../outside",
    "escaped-slash": "/c/..%2Foutside",
    "absolute": "/c/{outside}",
    "absolute-escaped": "/c/{outside_escaped}",
    "backslash": "/c/..\\outside",
    "escaped-backslash": "/c/..%5Coutside",
    "symlink-out": "/c/escape/outside",
    "nul": "/c/outside%00",
}
"""Request paths (before the endpoint) whose cassette name would reach `outside.json`."""


@pytest.mark.parametrize("escape", ESCAPES.values(), ids=ESCAPES.keys())
@pytest.mark.parametrize("server", ["replaying", "recording"])
def test_a_cassette_name_that_leaves_the_folder_is_refused_with_400_and_nothing_is_touched(
    server: str, escape: str, request: pytest.FixtureRequest, site: Site, provider: FakeProvider
) -> None:
    running: ReplayServer = request.getfixturevalue(server)
    outside = (site.root / "outside").as_posix()
    target = escape.format(
        good=GOOD["openai"], outside=outside, outside_escaped=quote(outside, safe="")
    )
    interaction = Cassette.load(site.root / "outside.json").interactions[0]
    before, forwarded = site.snapshot(), len(provider.received)

    answer = raw_request(
        running.url,
        "POST",
        target + "/v1/chat/completions",
        json.dumps(interaction.request.body).encode(),
    )

    assert answer.status == 400, answer.body
    error = openai_error(answer.json())
    assert error["type"] == "invalid_request_error"
    assert_refused(error["message"])
    assert site.snapshot() == before
    assert len(provider.received) == forwarded
    assert_still_serves(running, site)


def test_an_anthropic_request_is_refused_in_anthropics_format(
    replaying: ReplayServer, site: Site
) -> None:
    answer = raw_request(replaying.url, "POST", "/c/../outside/v1/messages", b"{}")

    assert answer.status == 400
    assert anthropic_error(answer.json())["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    "name", ["../outside", "/outside", "escape/outside", "a\\..\\..\\outside", ""]
)
def test_a_session_on_a_cassette_outside_the_folder_is_refused(
    name: str, replaying: ReplayServer, site: Site
) -> None:
    answer = httpx2.post(f"{replaying.url}/_harness/sessions", json={"cassette": name})

    assert answer.status_code == 400
    assert_refused(answer.json()["error"]["message"])
    assert_still_serves(replaying, site)
