"""`harness serve` proven with the official Node.js SDKs: `openai` 6.x and `@anthropic-ai/sdk`,
pinned in tests/node and installed on first use (tests/support/node.py).

Node performs the calls (tests/node/driver.mjs, one process per batch of calls) against a server
replaying cassettes, and what each SDK parsed is compared with what the cassette holds: a plain
answer with the recorded body, a stream's events with the data of the recorded events, an error
with the recorded status and body, and the message `messages.stream()` accumulates with the one
its events build. The cassettes are the repository's own, ones recorded here with Python through
the fake provider, every cassette of the pydantic-ai corpus the server's routes reach, and ones
Node records itself through `harness serve --record-mode once`.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl

import httpx2
import pytest

from harness.cassettes import PLACEHOLDER, CassetteTransport
from harness.cassettes.key import keyed_headers
from harness.cassettes.vcr import import_vcr
from harness.serve.routing import ENDPOINTS
from harness.serve.server import ReplayServer
from tests.support.corpus import corpus_folder
from tests.support.fake_provider import (
    Answer,
    FakeProvider,
    Outcome,
    ProviderError,
    ToolCall,
    answer_by_prompt,
    serve,
)
from tests.support.node import NodeCall, NodeMethod, NodeResult, NodeSdks, install_packages
from tests.support.serve_process import harness_serve

pytestmark = pytest.mark.subprocess

ROOT: Final = Path(__file__).resolve().parents[2]
AGENT_CASSETTES: Final = ROOT / "cassettes" / "agent"
CORPUS: Final = corpus_folder()

ANTHROPIC_VERSION: Final = "2023-06-01"
"""The version our cassettes were recorded with; the Node SDK sends its own unless told."""
SERVER_KEYS: Final = {
    "openai": "sk-server-openai-CANARY0123456789",
    "anthropic": "sk-ant-server-CANARY0123456789",
}
CLIENT_KEY: Final = "sk-node-client-CANARY0123456789"
STARTUP_SECONDS: Final = 30.0

OUTCOMES: Final[dict[str, Outcome]] = {
    "text": Answer(text="The capital of France is Paris."),
    "tool": Answer(
        text="Let me look.",
        tool_calls=(ToolCall(id="call_weather1", name="get_weather", arguments={"city": "Paris"}),),
    ),
    "cut_off": Answer(text="The capital of France is", cut_off=True),
    "rate_limited": ProviderError(),
    "overloaded": ProviderError(
        status=529,
        kind="overloaded_error",
        code="overloaded",
        message="Overloaded",
        mid_stream=True,
    ),
}
OPENAI_PROMPTS: Final = ("text", "tool", "cut_off", "rate_limited")
ANTHROPIC_PROMPTS: Final = (*OPENAI_PROMPTS, "overloaded")
WEATHER: Final = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
METHODS: Final[dict[str, NodeMethod]] = {
    "/v1/chat/completions": "chat.completions.create",
    "/v1/responses": "responses.create",
    "/v1/messages": "messages.create",
}
SDK_KEYED_HEADERS: Final = {"openai": (), "anthropic": ("anthropic-version",)}
"""The keyed headers each Node SDK sends by default."""
ERROR_CLASSES: Final = {
    400: "BadRequestError",
    404: "NotFoundError",
    429: "RateLimitError",
    529: "OverloadedError",
}
"""The SDK error class each recorded status must raise (both SDKs use these names)."""


@pytest.fixture(scope="session")
def node() -> NodeSdks:
    return NodeSdks.installed()


# -- the request bodies recorded through the fake provider -----------------------------------------


def request_body(endpoint: str, prompt: str, *, stream: bool) -> dict[str, Any]:
    """A request asking `prompt` on `endpoint`, with a weather tool, as an SDK user writes it."""
    if endpoint == "/v1/chat/completions":
        extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if stream else {}
        return {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": prompt}],
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}
            ],
            "max_tokens": 64,
            "stream": stream,
            **extra,
        }
    if endpoint == "/v1/responses":
        return {
            "model": "gpt-4o-mini",
            "input": prompt,
            "tools": [
                {"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": True}
            ],
            "max_output_tokens": 64,
            "stream": stream,
        }
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": prompt}],
        "tools": [{"name": "get_weather", "input_schema": WEATHER}],
        "stream": stream,
    }


def every_request() -> list[tuple[str, dict[str, Any]]]:
    """Each endpoint x outcome x plain/streamed; each streamed Messages request twice, so its
    replay can answer `messages.create` and then `messages.stream`."""
    requests = [
        (endpoint, request_body(endpoint, prompt, stream=stream))
        for endpoint in ("/v1/chat/completions", "/v1/responses")
        for prompt in OPENAI_PROMPTS
        for stream in (False, True)
    ]
    requests += [
        ("/v1/messages", request_body("/v1/messages", prompt, stream=stream))
        for stream in (False, True, True)
        for prompt in ANTHROPIC_PROMPTS
    ]
    return requests


def record_with_python(folder: Path) -> None:
    """Record `every_request()` with httpx2 through `CassetteTransport` against the fake provider,
    into `fake-openai.json` and `fake-anthropic.json`."""
    with serve(answer_by_prompt(OUTCOMES)) as provider:
        for name in ("openai", "anthropic"):
            with httpx2.Client(
                transport=CassetteTransport(
                    folder / f"fake-{name}.json", mode="once", identical_requests="separate"
                ),
                base_url=provider.base_url,
            ) as client:
                for endpoint, body in every_request():
                    if ENDPOINTS[endpoint] == name:
                        client.post(endpoint, json=body, headers=version_header(endpoint)).read()


def version_header(endpoint: str) -> dict[str, str]:
    return {"anthropic-version": ANTHROPIC_VERSION} if ENDPOINTS[endpoint] == "anthropic" else {}


# -- from a cassette to Node calls, and back -------------------------------------------------------


def load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def replay_call(interaction: Mapping[str, Any], base_url: str, *, helper: bool = False) -> NodeCall:
    """The SDK call that sends `interaction`'s request again: its body as the parameters, its
    query, and exactly its behaviour-changing headers, which are part of the request key (the
    recorded `anthropic-version`, or none when the recording has none). A streamed Messages
    request goes to `messages.stream()` when `helper`."""
    request = interaction["request"]
    provider, method = ENDPOINTS[request["path"]], METHODS[request["path"]]
    if method == "messages.create" and helper and request["body"].get("stream"):
        method = "messages.stream"
    recorded = keyed_headers(request["headers"])
    return NodeCall(
        provider=provider,
        base_url=base_url,
        method=method,
        params=request["body"],
        headers={**dict.fromkeys(SDK_KEYED_HEADERS[provider]), **recorded},
        query=dict(parse_qsl(request["query"])),
        api_key=CLIENT_KEY,
    )


def sdk_events(
    provider: str, recorded: Sequence[Mapping[str, Any]]
) -> tuple[list[Any], Any | None]:
    """What the SDK yields from a recorded stream: each event's data parsed, up to OpenAI's
    `[DONE]`, without Anthropic's `ping` and unnamed events; and the data of an Anthropic `error`
    event, which the SDK raises (then nothing after it is read)."""
    events: list[Any] = []
    for event in recorded:
        if provider == "openai":
            if event["data"].startswith("[DONE]"):
                break
            events.append(json.loads(event["data"]))
        elif event["event"] == "error":
            return events, json.loads(event["data"])
        elif event["event"] not in (None, "ping") and event["data"]:
            events.append(json.loads(event["data"]))
    return events, None


def streamed_message(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The message Anthropic's stream builds: `message_start`'s message, each content block with
    its text (or thinking) deltas joined, its signature, and its `input_json_delta`s parsed as
    the tool input, then
    `message_delta`'s stop reason and usage."""
    message = copy.deepcopy(dict(events[0]["message"]))
    partial_json: dict[int, str] = {}
    for event in events[1:]:
        if event["type"] == "content_block_start":
            message["content"].append(copy.deepcopy(event["content_block"]))
        elif event["type"] == "content_block_delta":
            block, delta = message["content"][event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                partial_json[event["index"]] = (
                    partial_json.get(event["index"], "") + delta["partial_json"]
                )
        elif event["type"] == "content_block_stop" and partial_json.get(event["index"]):
            message["content"][event["index"]]["input"] = json.loads(partial_json[event["index"]])
        elif event["type"] == "message_delta":
            message.update(event["delta"])
            message["usage"].update(event["usage"])
    return message


def with_output_text(response: Mapping[str, Any]) -> dict[str, Any]:
    """A Responses `response` as the SDK returns it: with `output_text`, the message texts."""
    texts = [
        part["text"]
        for item in response["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    ]
    return {**response, "output_text": "".join(texts)}


def assert_parsed_as_recorded(
    result: NodeResult, call: NodeCall, response: Mapping[str, Any], where: str
) -> None:
    """What the Node SDK parsed is what the cassette's `response` says, read as that SDK reads
    the wire (the helpers above)."""
    if response["status"] >= 400:
        assert result.error is not None, f"{where}: expected an error, got {result}"
        body = response["body"]
        assert result.error.class_name == ERROR_CLASSES[response["status"]], where
        assert result.error.status == response["status"], where
        assert result.error.body == (body["error"] if call.provider == "openai" else body), where
        return
    if "events" in response:
        events, error = sdk_events(call.provider, response["events"])
        assert result.events == events, where
        if error is not None:
            assert result.error is not None, f"{where}: the error event was not raised"
            assert (result.error.class_name, result.error.status) == ("APIError", None), where
            assert result.error.body == error, where
        elif call.method == "messages.stream":
            assert result.error is None, f"{where}: {result.error}"
            assert result.final == {**streamed_message(events), "parsed_output": None}, where
        else:
            assert result.error is None, f"{where}: {result.error}"
        return
    assert result.error is None, f"{where}: {result.error}"
    body = response["body"]
    assert result.response == (
        with_output_text(body) if call.method == "responses.create" else body
    ), where


Replayed = list[tuple[NodeCall, NodeResult]]


def replay_folder(
    node: NodeSdks, folder: Path, cassettes: Sequence[str], *, helper: bool = False
) -> Replayed:
    """Replay every interaction of `cassettes` (names under `folder`) through Node, in one batch
    against one server in record mode `none`, and check each answer against its cassette. A
    repeated streamed Messages request goes to `messages.stream()`, as does every one when
    `helper`."""
    documents = {name: load(folder / f"{name}.json") for name in cassettes}
    with ReplayServer(cassettes=folder) as server:
        planned = [
            (
                f"{name} #{index}",
                interaction,
                replay_call(
                    interaction,
                    server.cassette_url(name, ENDPOINTS[interaction["request"]["path"]]),
                    helper=helper or interaction["occurrence"] > 1,
                ),
            )
            for name, document in documents.items()
            for index, interaction in enumerate(document["interactions"])
        ]
        results = node.run([call for _, _, call in planned])
    for (where, interaction, call), result in zip(planned, results, strict=True):
        assert_parsed_as_recorded(result, call, interaction["response"], where)
    return [(call, result) for (_, _, call), result in zip(planned, results, strict=True)]


def prompt_of(call: NodeCall) -> str:
    params = call.params
    return str(params["input"] if "input" in params else params["messages"][-1]["content"])


# -- the repository's cassettes, and ones recorded with Python -------------------------------------


def test_the_agent_cassettes_replay_through_the_node_sdks(node: NodeSdks, tmp_path: Path) -> None:
    """Every interaction of cassettes/agent the driver's SDKs speak (OpenAI Chat Completions;
    Anthropic streams read with `messages.stream()`) parses in Node to exactly what the cassette
    holds. (Gemini's reach `@ai-sdk/google` in tests/serve/test_sdk_base_urls.py.)"""
    folder = tmp_path / "cassettes"
    shutil.copytree(AGENT_CASSETTES, folder / "agent")
    names = sorted(
        f"agent/{path.stem}"
        for path in AGENT_CASSETTES.glob("*.json")
        if load(path)["metadata"]["provider"] in ("openai", "anthropic")
    )
    assert len(names) == 8  # a run per trigger, and a run that thinks, per provider

    replayed = replay_folder(node, folder, names, helper=True)

    assert len(replayed) == sum(len(load(folder / f"{n}.json")["interactions"]) for n in names)
    assert {call.method for call, _ in replayed} == {"chat.completions.create", "messages.stream"}
    assert [result.error for _, result in replayed if result.error] == []


def test_cassettes_recorded_with_python_replay_through_the_node_sdks(
    node: NodeSdks, tmp_path: Path
) -> None:
    """Chat Completions, Responses and Messages, plain and streamed, each answering text, a tool
    call, a reply cut off by the token limit and a rate-limit error (and for Anthropic an
    overload inside the stream), recorded with Python and replayed through Node."""
    record_with_python(tmp_path)

    replayed = replay_folder(node, tmp_path, ["fake-openai", "fake-anthropic"])

    assert len(replayed) == len(every_request())
    errors = sorted(result.error.class_name for _, result in replayed if result.error)
    assert errors == ["APIError"] * 2 + ["OverloadedError"] + ["RateLimitError"] * 7
    plain = {
        prompt_of(call): result.response
        for call, result in replayed
        if call.method == "messages.create" and not call.params["stream"]
    }
    finals = {
        prompt_of(call): result.final
        for call, result in replayed
        if call.method == "messages.stream" and result.error is None
    }
    assert sorted(finals) == sorted(p for p, o in OUTCOMES.items() if isinstance(o, Answer))
    for prompt, final in finals.items():  # a stream builds the message a plain request answers
        assert final == {**plain[prompt], "parsed_output": None}, prompt


# -- the pydantic-ai corpus ------------------------------------------------------------------------


def served_cassettes(folder: Path) -> list[str]:
    """The imported cassettes whose every request is one an SDK sends to the server: a POST to
    /v1/chat/completions, /v1/responses or /v1/messages. The others were recorded at another path
    (Groq's /openai/v1, OpenRouter's /api/v1, Azure's deployments, Anthropic's count_tokens),
    which keys them to a path no `/c/<cassette>/v1/...` request reaches."""
    return sorted(
        path.relative_to(folder).with_suffix("").as_posix()
        for path in folder.rglob("*.json")
        if all(
            interaction["request"]["method"] == "POST"
            and interaction["request"]["path"] in ENDPOINTS
            for interaction in load(path)["interactions"]
        )
    )


@pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason=f"the recorded corpus is not at {CORPUS} (set HARNESS_CORPUS_DIR to the folder "
    "holding pydantic-ai/)",
)
def test_every_corpus_cassette_the_server_covers_replays_through_the_node_sdks(
    node: NodeSdks, tmp_path: Path
) -> None:
    """Every pydantic-ai cassette of the OpenAI and Anthropic APIs, imported with import-vcr,
    answers the Node SDKs with what was recorded: plain, streamed and error answers of real
    traffic (Anthropic's through the beta endpoint, `?beta=true`, as pydantic-ai sent them)."""
    report = import_vcr([CORPUS], tmp_path)
    names = served_cassettes(tmp_path)
    assert report.file_count > len(names) > 0

    replayed = replay_folder(node, tmp_path, names)

    assert len(replayed) == sum(len(load(tmp_path / f"{n}.json")["interactions"]) for n in names)
    assert {call.method for call, _ in replayed} == set(METHODS.values())
    assert {call.provider for call, result in replayed if result.events} == {"openai", "anthropic"}
    assert any(result.error for _, result in replayed)


# -- recording through `harness serve` with Node ---------------------------------------------------


def server_environ(provider: FakeProvider) -> dict[str, str]:
    """This process's environment, with the providers pointed at the fake one and the server's own
    keys."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OPENAI_", "ANTHROPIC_"))
    }
    return {
        **environ,
        "OPENAI_BASE_URL": f"{provider.base_url}/v1",
        "OPENAI_API_KEY": SERVER_KEYS["openai"],
        "ANTHROPIC_BASE_URL": provider.base_url,
        "ANTHROPIC_API_KEY": SERVER_KEYS["anthropic"],
    }


RECORDED_CALLS: Final[list[tuple[str, NodeMethod, str, bool]]] = [
    ("/v1/chat/completions", "chat.completions.create", "text", False),
    ("/v1/chat/completions", "chat.completions.create", "tool", True),
    ("/v1/chat/completions", "chat.completions.create", "rate_limited", False),
    ("/v1/responses", "responses.create", "tool", False),
    ("/v1/responses", "responses.create", "cut_off", True),
    ("/v1/messages", "messages.create", "text", False),
    ("/v1/messages", "messages.stream", "tool", True),
    ("/v1/messages", "messages.create", "overloaded", True),
]
"""What Node asks while recording: (endpoint, SDK method, prompt, streamed)."""


def recording_calls(server_url: str) -> list[NodeCall]:
    """`RECORDED_CALLS` against cassette `node/<provider>`, as a Node user writes them: the SDK's
    own headers, a client key of its own."""
    calls = []
    for endpoint, method, prompt, stream in RECORDED_CALLS:
        provider = ENDPOINTS[endpoint]
        base = f"{server_url}/c/node/{provider}"
        calls.append(
            NodeCall(
                provider=provider,
                base_url=f"{base}/v1" if provider == "openai" else base,
                method=method,
                params=request_body(endpoint, prompt, stream=stream),
                api_key=CLIENT_KEY,
            )
        )
    return calls


def test_node_records_through_harness_serve_and_replays_what_it_recorded(
    node: NodeSdks, tmp_path: Path
) -> None:
    """`harness serve --record-mode once`, pointed at the fake provider by its environment, records
    what Node asks (the provider sees the server's keys, never the client's; the cassettes hold
    neither); then, the provider gone, a replaying server answers Node exactly as it was answered
    while recording, and as the cassettes say."""
    folder = tmp_path / "cassettes"
    with serve(answer_by_prompt(OUTCOMES)) as provider:
        with harness_serve(
            folder, "--record-mode=once", environ=server_environ(provider)
        ) as server:
            calls = recording_calls(server.url)
            recorded = node.run(calls)
    assert server.process.returncode == 0, server.stderr

    assert len(provider.received) == len(calls)
    for request in provider.received:
        sent = json.dumps(request.headers)
        assert CLIENT_KEY not in sent
        if request.path.startswith("/v1/messages"):
            assert request.headers["x-api-key"] == SERVER_KEYS["anthropic"]
            assert "authorization" not in request.headers
        else:
            assert request.headers["authorization"] == f"Bearer {SERVER_KEYS['openai']}"
    documents = {name: load(folder / f"node/{name}.json") for name in ("openai", "anthropic")}
    written = json.dumps(documents)
    for secret in (CLIENT_KEY, *SERVER_KEYS.values()):
        assert secret not in written
    for name, credential in (("openai", "authorization"), ("anthropic", "x-api-key")):
        for interaction in documents[name]["interactions"]:
            assert interaction["request"]["headers"][credential] == PLACEHOLDER
    assert [r.error.class_name for r in recorded if r.error] == ["RateLimitError", "APIError"]

    with ReplayServer(cassettes=folder) as replaying:
        replayed = node.run(recording_calls(replaying.url))

    assert replayed == recorded
    interactions = [
        interaction for document in documents.values() for interaction in document["interactions"]
    ]
    for index, (call, result, interaction) in enumerate(
        zip(calls, replayed, interactions, strict=True)
    ):
        assert_parsed_as_recorded(result, call, interaction["response"], f"call #{index}")


# -- known limits ----------------------------------------------------------------------------------


def test_a_whole_number_float_recorded_with_python_replays_to_node(
    node: NodeSdks, tmp_path: Path
) -> None:
    body = {**request_body("/v1/chat/completions", "text", stream=False), "temperature": 1.0}
    with serve(answer_by_prompt(OUTCOMES)) as provider:
        with httpx2.Client(
            transport=CassetteTransport(tmp_path / "float.json", mode="once"),
            base_url=provider.base_url,
        ) as client:
            client.post("/v1/chat/completions", json=body).read()
    (interaction,) = load(tmp_path / "float.json")["interactions"]

    with ReplayServer(cassettes=tmp_path) as server:
        call = replay_call(interaction, server.cassette_url("float", "openai"))
        (result,) = node.run([call])

    assert_parsed_as_recorded(result, call, interaction["response"], "float")


# -- installing the Node packages ------------------------------------------------------------------


def node_project(folder: Path, lock: str = '{"lockfileVersion": 3}') -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "package-lock.json").write_text(lock, encoding="utf-8")
    return folder


def fake_npm(folder: Path, script: str) -> str:
    """An `npm` that runs `script` (sh) in the project folder."""
    npm = folder / "fake-npm"
    npm.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    npm.chmod(0o755)
    return str(npm)


def test_packages_are_installed_once_until_the_lock_file_changes(tmp_path: Path) -> None:
    project = node_project(tmp_path / "project")
    npm = fake_npm(tmp_path, 'echo "$*" >> ../installs; mkdir -p node_modules')
    first = [threading.Thread(target=install_packages, args=(npm, project)) for _ in range(4)]
    for thread in first:
        thread.start()
    for thread in first:
        thread.join()
    install_packages(npm, project)

    assert (tmp_path / "installs").read_text().splitlines() == [
        "ci --no-audit --no-fund --prefer-offline --ignore-scripts"
    ]
    node_project(project, '{"lockfileVersion": 3, "packages": {}}')
    install_packages(npm, project)
    assert len((tmp_path / "installs").read_text().splitlines()) == 2


def test_a_failed_install_fails_the_test_with_npms_message(tmp_path: Path) -> None:
    npm = fake_npm(tmp_path, 'echo "npm error 404 Not Found - GET openai-canary" >&2; exit 1')

    with pytest.raises(pytest.fail.Exception) as failed:
        install_packages(npm, node_project(tmp_path / "project"))

    assert "failed (exit 1)" in str(failed.value)
    assert "npm error 404 Not Found - GET openai-canary" in str(failed.value)


def test_a_stuck_install_fails_the_test_instead_of_hanging(tmp_path: Path) -> None:
    npm = fake_npm(tmp_path, "exec sleep 60")

    with pytest.raises(pytest.fail.Exception, match=r"did not finish within 0\.2s"):
        install_packages(npm, node_project(tmp_path / "project"), timeout=0.2)


def test_without_node_the_tests_skip_and_under_ci_they_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="node is not on PATH"):
        NodeSdks.installed()

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"node is not on PATH.*under CI"):
        NodeSdks.installed()


# -- Node records, Python replays ------------------------------------------------------------------

CROSS_LANGUAGE: Final[list[tuple[str, bool]]] = [
    (endpoint, stream)
    for endpoint in ("/v1/chat/completions", "/v1/messages")
    for stream in (False, True)
]


def cross_language_body(endpoint: str, *, stream: bool) -> dict[str, Any]:
    """A request with `temperature` 1: JavaScript sends `1`, the Python SDKs `1.0`."""
    body: dict[str, Any] = {
        "model": "gpt-4o-mini" if endpoint == "/v1/chat/completions" else "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "text"}],
        "temperature": 1,
        "stream": stream,
    }
    return body


def node_text(endpoint: str, result: NodeResult) -> str:
    if endpoint == "/v1/chat/completions":
        if result.events is None:
            return str(result.response["choices"][0]["message"]["content"])
        return "".join(
            event["choices"][0]["delta"].get("content") or ""
            for event in result.events
            if event.get("choices")
        )
    if result.events is None:
        return "".join(block["text"] for block in result.response["content"])
    return "".join(
        event["delta"]["text"]
        for event in result.events
        if event.get("type") == "content_block_delta" and event["delta"].get("type") == "text_delta"
    )


def python_text(server: ReplayServer, endpoint: str, *, stream: bool) -> str:
    """The same request through the official Python SDK, `temperature=1.0` as Python sends it."""
    import anthropic
    import openai

    body = cross_language_body(endpoint, stream=stream)
    body["temperature"] = 1.0
    if endpoint == "/v1/chat/completions":
        chat = openai.OpenAI(
            base_url=server.cassette_url("node-python", "openai"), api_key="k", max_retries=0
        )
        if not stream:
            return chat.chat.completions.create(**body).choices[0].message.content or ""
        return "".join(
            chunk.choices[0].delta.content or ""
            for chunk in chat.chat.completions.create(**body)
            if chunk.choices
        )
    messages = anthropic.Anthropic(
        base_url=server.cassette_url("node-python", "anthropic"),
        api_key="k",
        max_retries=0,
        default_headers=version_header(endpoint),  # the version Node sent
    )
    # this SDK release takes no `temperature` argument: sent as the SDK sends any extra member
    body["extra_body"] = {"temperature": body.pop("temperature")}
    if not stream:
        reply = messages.messages.create(**body)
        return "".join(block.text for block in reply.content if block.type == "text")
    return "".join(
        event.delta.text
        for event in messages.messages.create(**body)
        if event.type == "content_block_delta" and event.delta.type == "text_delta"
    )


def test_what_node_records_replays_to_the_python_sdks(node: NodeSdks, tmp_path: Path) -> None:
    """Node records `temperature: 1`; the Python SDKs send `1.0`: one request key (numbers are
    keyed by value), plain and streamed, both providers."""
    with serve(answer_by_prompt(OUTCOMES)) as provider:
        environ = {
            "OPENAI_BASE_URL": f"{provider.base_url}/v1",
            "OPENAI_API_KEY": SERVER_KEYS["openai"],
            "ANTHROPIC_BASE_URL": provider.base_url,
            "ANTHROPIC_API_KEY": SERVER_KEYS["anthropic"],
        }
        with ReplayServer(cassettes=tmp_path, record_mode="once", environ=environ) as server:
            recorded = node.run(
                [
                    NodeCall(
                        provider=ENDPOINTS[endpoint],
                        base_url=server.cassette_url("node-python", ENDPOINTS[endpoint]),
                        method="chat.completions.create"
                        if endpoint == "/v1/chat/completions"
                        else "messages.create",
                        params=cross_language_body(endpoint, stream=stream),
                        headers={**version_header(endpoint)},
                    )
                    for endpoint, stream in CROSS_LANGUAGE
                ]
            )
    assert [result.error for result in recorded] == [None] * len(CROSS_LANGUAGE)
    written = (tmp_path / "node-python.json").read_text(encoding="utf-8")
    assert '"temperature": 1,' in written
    assert '"temperature": 1.0' not in written

    with ReplayServer(cassettes=tmp_path) as server:
        for (endpoint, stream), result in zip(CROSS_LANGUAGE, recorded, strict=True):
            expected = node_text(endpoint, result)
            assert expected
            assert python_text(server, endpoint, stream=stream) == expected, (endpoint, stream)
