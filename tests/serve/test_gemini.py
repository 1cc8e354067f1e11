"""Gemini with the official `google-genai` SDK: recorded through `harness serve` against a loopback
server speaking Gemini's wire, replayed by the server and in process, with keys (the server's
and the client's, in the `x-goog-api-key` header or the `key` query parameter) in no cassette,
no upstream request but the server's own, and no request key; and every answer of the committed
Gemini cassettes parsed by google-genai exactly as recorded.

google-genai 3 calls the `v1` API, the harness's gateway and `@ai-sdk/google` `v1beta`: the
server takes both as one request, keyed and recorded at `v1beta`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest
from google import genai
from google.genai import types
from pydantic import JsonValue

from harness.cassettes import Cassette, CassetteTransport, Interaction
from harness.llm import gemini
from harness.llm.script import ScriptedReply, ScriptedToolCall, ScriptTransport
from harness.serve import ReplayServer
from harness.sse import parse_sse
from tests.support.fake_provider import FakeProvider, ReceivedRequest, Reply, serve
from tests.support.recordings import REPOSITORY, TRIGGERS, trigger_cassette

MODEL: Final = "gemini-2.5-flash"
PLAIN: Final = f"/v1beta/models/{MODEL}:generateContent"
STREAMED: Final = f"/v1beta/models/{MODEL}:streamGenerateContent"
SERVER_KEY: Final = "AIzaSyServerKEYcanary0000000000000000000"
CLIENT_KEY: Final = "AIzaSyClientKEYcanary0000000000000000000"
"""Keys in Google's shape: the server's may reach the provider alone, neither a file."""
QUESTION: Final = "Capital of France?"
CASSETTE: Final = "gemini/capital"

FINISH: Final = types.FunctionDeclaration(
    name="__finish__",
    description="Finish with the structured answer.",
    parameters_json_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
FORCED: Final = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=[FINISH])],
    tool_config=types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(
            mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=["__finish__"]
        )
    ),
    thinking_config=types.ThinkingConfig(thinking_budget=0),
    max_output_tokens=256,
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)
"""The forced call as a google-genai user writes it: ANY with the output function alone, no
thinking."""
PARIS: Final[dict[str, JsonValue]] = {"city": "Paris"}
REPLIES: Final = [
    ScriptedReply(text="It is Paris."),
    ScriptedReply(text="Streamed: it is Paris."),
    ScriptedReply(tool_calls=(ScriptedToolCall(name="__finish__", arguments=PARIS),)),
    ScriptedReply(tool_calls=(ScriptedToolCall(name="__finish__", arguments=PARIS),)),
]
ANSWERS: Final[list[Any]] = [
    "It is Paris.",
    "Streamed: it is Paris.",
    [("__finish__", PARIS)],
    [("__finish__", PARIS)],
]


def client(base_url: str, *, api_version: str | None = None, **options: Any) -> genai.Client:
    return genai.Client(
        api_key=CLIENT_KEY,
        http_options=types.HttpOptions(base_url=base_url, api_version=api_version, **options),
    )


def calls(response: types.GenerateContentResponse) -> list[tuple[str | None, Any]]:
    return [(call.name, call.args) for call in response.function_calls or []]


def ask(gemini_client: genai.Client) -> list[Any]:
    """A plain and a streamed text answer, then the forced call plain and streamed (the client
    closed after)."""
    with gemini_client:
        return _ask(gemini_client)


def _ask(gemini_client: genai.Client) -> list[Any]:
    models = gemini_client.models
    plain = models.generate_content(model=MODEL, contents=QUESTION)
    streamed = "".join(
        chunk.text or "" for chunk in models.generate_content_stream(model=MODEL, contents=QUESTION)
    )
    forced = models.generate_content(model=MODEL, contents=QUESTION, config=FORCED)
    forced_stream = [
        call
        for chunk in models.generate_content_stream(model=MODEL, contents=QUESTION, config=FORCED)
        for call in calls(chunk)
    ]
    return [plain.text, streamed, calls(forced), forced_stream]


async def ask_async(gemini_client: genai.Client) -> list[Any]:
    async with gemini_client.aio as aio:
        return await _ask_async(aio)


async def _ask_async(aio: Any) -> list[Any]:
    models = aio.models
    plain = await models.generate_content(model=MODEL, contents=QUESTION)
    streamed = "".join(
        [
            chunk.text or ""
            async for chunk in await models.generate_content_stream(model=MODEL, contents=QUESTION)
        ]
    )
    forced = await models.generate_content(model=MODEL, contents=QUESTION, config=FORCED)
    forced_stream = [
        call
        async for chunk in await models.generate_content_stream(
            model=MODEL, contents=QUESTION, config=FORCED
        )
        for call in calls(chunk)
    ]
    return [plain.text, streamed, calls(forced), forced_stream]


@contextmanager
def gemini_upstream(replies: list[ScriptedReply]) -> Iterator[FakeProvider]:
    """A loopback server speaking Gemini's wire: each request answered with the next reply,
    rendered at its path and query (`:streamGenerateContent?alt=sse` as events)."""
    script = ScriptTransport("gemini", replies)

    def answer(request: ReceivedRequest) -> Reply:
        response = script.handle_request(
            httpx2.Request("POST", f"http://loopback{request.path}", content=request.body)
        )
        content_type = response.headers["content-type"]
        if content_type == "text/event-stream":
            events = [chunk.decode() for chunk in response.iter_raw()]
            return Reply(headers={"content-type": content_type}, events=events)
        return Reply(status=response.status_code, body=response.json())

    with serve(answer) as provider:
        yield provider


def recording_environ(upstream: FakeProvider) -> dict[str, str]:
    return {"GEMINI_API_KEY": SERVER_KEY, "GOOGLE_GEMINI_BASE_URL": upstream.base_url}


def assert_no_key(path: Path) -> None:
    written = path.read_text(encoding="utf-8")
    assert CLIENT_KEY not in written
    assert SERVER_KEY not in written


# -- recorded through the server, replayed by it and in process -----------------------------------


def test_google_genai_records_through_serve_and_replays_by_server_and_in_process(
    tmp_path: Path,
) -> None:
    with (
        gemini_upstream(list(REPLIES)) as upstream,
        ReplayServer(tmp_path, record_mode="once", environ=recording_environ(upstream)) as server,
    ):
        assert ask(client(server.cassette_url(CASSETTE, "gemini"))) == ANSWERS

    # google-genai 3 called `v1`; the provider was asked at `v1beta`, with the server's key alone
    assert [request.path for request in upstream.received] == [
        PLAIN,
        f"{STREAMED}?alt=sse",
        PLAIN,
        f"{STREAMED}?alt=sse",
    ]
    for received in upstream.received:
        assert received.headers["x-goog-api-key"] == SERVER_KEY
        assert CLIENT_KEY not in json.dumps(received.headers)
    forced = json.loads(upstream.received[2].body)
    assert forced["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["__finish__"]}
    }
    path = tmp_path / f"{CASSETTE}.json"
    assert_no_key(path)
    cassette = Cassette.load(path)
    assert cassette.metadata.provider == "gemini"
    assert [(i.request.path, i.request.query) for i in cassette.interactions] == [
        (PLAIN, ""),
        (STREAMED, "alt=sse"),
        (PLAIN, ""),
        (STREAMED, "alt=sse"),
    ]
    assert all(i.request.headers["x-goog-api-key"] == "[SCRUBBED]" for i in cassette.interactions)

    # replayed by the server to google-genai at either version, sync and async
    with ReplayServer(tmp_path) as server:
        url = server.cassette_url(CASSETTE, "gemini")
        assert ask(client(url)) == ANSWERS
        assert ask(client(url, api_version="v1beta")) == ANSWERS
        assert asyncio.run(ask_async(client(url))) == ANSWERS
    assert len(upstream.received) == 4  # nothing more reached the provider

    # and in process, by the same cassette, at either version
    replaying = CassetteTransport(path, strict=True)
    with httpx2.Client(transport=replaying) as http:
        in_process = client("https://generativelanguage.googleapis.com", httpx_client=http)
        in_process_v1beta = client(
            "https://generativelanguage.googleapis.com", api_version="v1beta", httpx_client=http
        )
        assert ask(in_process_v1beta) == ANSWERS
        # keyed at the path it was sent to, and found at v1beta by its equivalent key
        with in_process:
            assert ask(in_process) == ANSWERS
    replaying.close()


def test_google_genai_records_in_process_and_its_key_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "in_process.json"
    recording = CassetteTransport(path, mode="once", inner=ScriptTransport("gemini", REPLIES))
    with httpx2.Client(transport=recording) as http:
        assert ask(client("https://generativelanguage.googleapis.com", httpx_client=http)) == (
            ANSWERS
        )
    recording.close()
    assert_no_key(path)
    assert Cassette.load(path).metadata.provider == "gemini"

    replaying = CassetteTransport(path, strict=True)
    with httpx2.Client(transport=replaying) as http:
        assert ask(client("https://generativelanguage.googleapis.com", httpx_client=http)) == (
            ANSWERS
        )
    replaying.close()


# -- the key in the query ---------------------------------------------------------------------------


def test_a_key_in_the_query_is_not_forwarded_recorded_nor_keyed(tmp_path: Path) -> None:
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": QUESTION}]}]})
    with (
        gemini_upstream([ScriptedReply(text="Paris.")]) as upstream,
        ReplayServer(tmp_path, record_mode="once", environ=recording_environ(upstream)) as server,
    ):
        recorded = httpx2.post(
            f"{server.url}/c/keyed{STREAMED}?alt=sse&key={CLIENT_KEY}", content=body
        )
    assert recorded.status_code == 200
    (received,) = upstream.received
    assert received.path == f"{STREAMED}?alt=sse"
    assert received.headers["x-goog-api-key"] == SERVER_KEY
    path = tmp_path / "keyed.json"
    assert_no_key(path)
    (interaction,) = Cassette.load(path).interactions
    assert interaction.request.query == "alt=sse"

    # another key, or none, is the same request; `alt=sse` is part of it
    with ReplayServer(tmp_path) as server:
        again = httpx2.post(
            f"{server.url}/c/keyed/models/{MODEL}:streamGenerateContent?key=AIzaOther&alt=sse",
            content=body,
        )
        plain = httpx2.post(f"{server.url}/c/keyed{STREAMED}", content=body)
    assert again.status_code == 200
    assert events_of(again) == events_of(recorded)
    assert plain.status_code == 404  # without alt=sse: another request
    assert plain.json()["error"]["status"] == "NOT_FOUND"
    assert CLIENT_KEY not in plain.text


def test_a_gemini_api_the_server_does_not_speak_is_a_404_in_googles_format(
    tmp_path: Path,
) -> None:
    body = json.dumps({"contents": [{"parts": [{"text": QUESTION}]}]})
    with (
        ReplayServer(tmp_path) as server,
        server.session(script=[{"text": "Paris."}], provider="gemini") as session,
    ):
        counted = httpx2.post(f"{session.url}/v1beta/models/{MODEL}:countTokens", content=body)
        with (
            client(session.url) as gemini_client,
            pytest.raises(genai.errors.ClientError) as refused,
        ):
            gemini_client.models.count_tokens(model=MODEL, contents=QUESTION)
        assert session.requests() == []  # no reply used
    assert counted.status_code == 404
    error = counted.json()["error"]
    assert (error["code"], error["status"]) == (404, "NOT_FOUND")
    assert f"no provider endpoint at the end of '/s/{session.id}/v1beta/models/" in error["message"]
    assert refused.value.code == 404


def events_of(response: httpx2.Response) -> list[Any]:
    return [json.loads(event.data or "") for event in parse_sse(response.text)]


# -- a session --------------------------------------------------------------------------------------


def test_a_session_reads_google_genais_requests_as_work_and_forced(tmp_path: Path) -> None:
    with (
        ReplayServer(tmp_path) as server,
        server.session(script=list(REPLIES), provider="gemini") as session,
    ):
        assert session.base_url("gemini") == session.url
        assert ask(client(session.base_url("gemini"))) == ANSWERS
        requests = session.requests()
    assert [(r["kind"], r["request"]["stream"]) for r in requests] == [
        ("work", False),
        ("work", True),
        ("forced", False),
        ("forced", True),
    ]
    forced = requests[2]["request"]
    assert forced["model"] == MODEL
    assert forced["tool_choice"] == {"kind": "tool", "name": "__finish__"}
    # google-genai writes `thinking_budget`: read like `thinkingBudget`
    assert forced["reasoning"] == {"kind": "disabled"}
    assert [tool["name"] for tool in forced["tools"]] == ["__finish__"]


# -- the committed cassettes, parsed by google-genai ----------------------------------------------

GEMINI_CASSETTES: Final = [trigger_cassette(trigger, "gemini") for trigger in TRIGGERS]


def recorded_answer(interaction: Interaction) -> httpx2.Response:
    response = interaction.response
    if response.events is not None:
        content = b"".join(event.render() for event in response.events)
        return httpx2.Response(
            response.status, headers={"content-type": "text/event-stream"}, content=content
        )
    return httpx2.Response(
        response.status,
        headers={"content-type": "application/json"},
        content=response.body_bytes(),
    )


def as_call(body: dict[str, Any]) -> tuple[list[types.Content], types.GenerateContentConfig]:
    """A recorded request body as the google-genai call that sends it."""
    config = {
        **{
            key: value for key, value in body.items() if key not in ("contents", "generationConfig")
        },
        **body.get("generationConfig", {}),
        "automaticFunctionCalling": {"disable": True},
    }
    contents = [types.Content.model_validate(content) for content in body["contents"]]
    return contents, types.GenerateContentConfig.model_validate(config)


def replayed_by_google_genai(interaction: Interaction) -> tuple[list[Any], httpx2.Request]:
    """What google-genai parses, chunk by chunk, when its call of `interaction`'s recorded
    request is answered with the recorded answer; and the request it sent."""
    sent: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return recorded_answer(interaction)

    assert isinstance(interaction.request.body, dict)
    contents, config = as_call(interaction.request.body)
    with (
        httpx2.Client(transport=httpx2.MockTransport(answer)) as http,
        client(
            "https://generativelanguage.googleapis.com", api_version="v1beta", httpx_client=http
        ) as sdk,
    ):
        chunks = [
            chunk.model_dump(
                mode="json",
                by_alias=True,
                exclude_none=True,
                exclude={"sdk_http_response", "automatic_function_calling_history"},
            )
            for chunk in sdk.models.generate_content_stream(
                model=MODEL, contents=contents, config=config
            )
        ]
    (wire,) = sent
    return chunks, wire


@pytest.mark.parametrize("path", GEMINI_CASSETTES, ids=[p.stem for p in GEMINI_CASSETTES])
def test_google_genai_parses_every_answer_of_the_gemini_cassettes_as_recorded(path: Path) -> None:
    """Each recorded request, sent again with google-genai, is the same request to the harness,
    and what google-genai parses from the recorded answer is the recorded JSON, chunk by
    chunk."""
    cassette = Cassette.load(path)
    assert cassette.metadata.provider == "gemini"
    for index, interaction in enumerate(cassette.interactions):
        request = interaction.request
        assert request.path == STREAMED  # the agent streams
        chunks, wire = replayed_by_google_genai(interaction)
        events = interaction.response.events or []
        recorded = [json.loads(event.data) for event in events if event.data]
        assert chunks == recorded, f"{path.name} interaction #{index}"
        assert (wire.url.path, wire.url.query) == (STREAMED, b"alt=sse")
        assert gemini.parse_request(json.loads(wire.content), path=wire.url.path) == (
            gemini.parse_request(request.body, path=request.path)
        ), f"{path.name} interaction #{index}: google-genai sends another request"


def test_the_gemini_cassettes_are_found() -> None:
    assert [path.parent for path in GEMINI_CASSETTES] == [REPOSITORY / "cassettes" / "agent"] * 3
    assert all(path.is_file() for path in GEMINI_CASSETTES)


@pytest.mark.parametrize("path", GEMINI_CASSETTES, ids=[p.stem for p in GEMINI_CASSETTES])
def test_google_genai_replays_the_reference_s_gemini_cassettes(path: Path) -> None:
    """google-genai writes member names in snake_case and gives the system instruction a role,
    where the reference's gateway writes lowerCamelCase: the same request to Gemini, which reads
    protobuf JSON, so the cassette answers it (by its equivalent key), in process."""
    for index, interaction in enumerate(Cassette.load(path).interactions):
        _, wire = replayed_by_google_genai(interaction)
        transport = CassetteTransport(path, allow_repeats=True)
        request = httpx2.Request(
            wire.method, str(wire.url), headers=wire.headers, content=wire.content
        )
        with httpx2.Client(transport=transport) as http:
            replayed = http.send(request)
            replayed.read()
        assert replayed.status_code == interaction.response.status, f"#{index}"
        assert replayed.content == interaction.response.body_bytes(), f"#{index}"


def test_google_genai_at_its_default_api_version_replays_a_v1beta_cassette_in_process(
    tmp_path: Path,
) -> None:
    """google-genai 3 sends to `v1` by default; the reference records at `v1beta`, whose API holds
    all of `v1`'s: in process too, the cassette answers the `v1` request."""
    (path,) = [p for p in GEMINI_CASSETTES if "terminal-text" in p.stem]
    interaction = Cassette.load(path).interactions[0]
    _, wire = replayed_by_google_genai(interaction)
    at_v1 = str(wire.url).replace("/v1beta/", "/v1/")
    with httpx2.Client(transport=CassetteTransport(path)) as http:
        replayed = http.send(
            httpx2.Request("POST", at_v1, headers=wire.headers, content=wire.content)
        )
        replayed.read()
    assert replayed.content == interaction.response.body_bytes()
