"""Each SDK reaches `harness serve` with its base URL set exactly as docs/serve.md says.

`SETTINGS` is the page's table of each SDK's exact setting, row for row (a test checks the page
against it). Every row is run with its SDK, once through the SDK's own setting and once through
the environment variable it reads, each sending one plain and one streamed request to a script
session: the Python `openai` (and its `AzureOpenAI`) and `anthropic` in this process, the Node
ones in one Node process (tests/node_sdks/base_urls.mjs, its packages pinned in that folder's
lock file and installed on first use). The server answers every endpoint with and without its
`/v1` and at Azure OpenAI's deployment paths, and keys a request at the same path whichever
spelling came (`/v1/messages`), or at its Azure path, as a client's transport does in process.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, get_args

import anthropic
import openai
import pytest
from anthropic.types import MessageParam
from google import genai
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionMessageParam

from harness.cassettes import Cassette, CassetteTransport
from harness.cassettes.vcr import import_vcr
from harness.llm.script import ScriptedReply, ScriptTransport
from harness.providers import OPENAI, Endpoint, ProviderSpec, register_provider, registered
from harness.serve import ReplayServer
from harness.serve.routing import Route, RouteError, route
from harness.serve.server import ServerSession
from tests.support.corpus import corpus_folder, missing_reason
from tests.support.fake_provider import (
    Answer,
    ReceivedRequest,
    Reply,
    anthropic_messages_reply,
    openai_chat_reply,
    serve,
)
from tests.support.node import installed_node
from tests.support.serve_http import provider_environ, raw_request

ROOT: Final = Path(__file__).resolve().parents[2]
DOCS: Final = ROOT / "docs" / "serve.md"
NODE_SDKS: Final = ROOT / "tests" / "node_sdks"
NODE_SECONDS: Final = 60.0
"""How long the Node process may take for every run before the test fails instead of hanging."""

CHAT: Final = "/v1/chat/completions"
RESPONSES: Final = "/v1/responses"
MESSAGES: Final = "/v1/messages"
GENERATE: Final = "/v1beta/models/{model}:generateContent"
STREAM_GENERATE: Final = "/v1beta/models/{model}:streamGenerateContent"
GEMINI_MODEL: Final = "gemini-2.5-flash"
QUESTION: Final = "Capital of France?"
OPENAI_QUESTION: Final[list[ChatCompletionMessageParam]] = [{"role": "user", "content": QUESTION}]
ANTHROPIC_QUESTION: Final[list[MessageParam]] = [{"role": "user", "content": QUESTION}]
AZURE_API_VERSION: Final = "2024-10-21"
DEPLOYMENT: Final = "my-gpt-4o-deployment"
AZURE_CHAT: Final = f"/openai/deployments/{DEPLOYMENT}/chat/completions"
CLIENT_KEY: Final = "sk-client-unused"

Via = Literal["option", "variable"]


@dataclass(frozen=True, kw_only=True)
class SdkSetting:
    """One row of docs/serve.md's table: an SDK, its setting (and the variable it reads, if
    any), the value with `<url>` for the cassette's or session's URL, and the endpoint its calls
    here reach (`stream_endpoint` its streamed calls, where the API streams at a path of its
    own; `id` names it to the Node runner)."""

    id: str
    sdk: str
    language: Literal["Python", "Node"]
    option: str
    variable: str | None
    value: str
    provider: Literal["openai", "anthropic", "gemini"]
    endpoint: str
    stream_endpoint: str | None = None

    def row(self) -> str:
        read = f", or `{self.variable}`" if self.variable is not None else ""
        return f"| {self.sdk} | {self.language} | `{self.option}`{read} | `{self.value}` |"

    def base_url(self, url: str, via: Via) -> str:
        """The value given to the SDK for `url`: the row's through its option, the one value
        every SDK reading the variable takes through the variable (`SHARED_VALUES`)."""
        if via == "option" or self.variable is None:
            value = self.value
        else:
            value = SHARED_VALUES[self.variable]
        return value.replace("<url>", url)


SETTINGS: Final = (
    SdkSetting(
        id="openai-python",
        sdk="`openai`",
        language="Python",
        option="OpenAI(base_url=...)",
        variable="OPENAI_BASE_URL",
        value="<url>/v1",
        provider="openai",
        endpoint=CHAT,
    ),
    SdkSetting(
        id="azure-python",
        sdk="`openai` for Azure OpenAI",
        language="Python",
        option="AzureOpenAI(azure_endpoint=...)",
        variable="AZURE_OPENAI_ENDPOINT",
        value="<url>",
        provider="openai",
        endpoint=CHAT,
    ),
    SdkSetting(
        id="anthropic-python",
        sdk="`anthropic`",
        language="Python",
        option="Anthropic(base_url=...)",
        variable="ANTHROPIC_BASE_URL",
        value="<url>",
        provider="anthropic",
        endpoint=MESSAGES,
    ),
    SdkSetting(
        id="google-genai-python",
        sdk="`google-genai`",
        language="Python",
        option="genai.Client(http_options={'base_url': ...})",
        variable="GOOGLE_GEMINI_BASE_URL",
        value="<url>",
        provider="gemini",
        # google-genai 3 calls `v1`: the same requests as `v1beta`'s, keyed at `v1beta`
        endpoint=GENERATE,
        stream_endpoint=STREAM_GENERATE,
    ),
    SdkSetting(
        id="openai",
        sdk="`openai`",
        language="Node",
        option="new OpenAI({ baseURL })",
        variable="OPENAI_BASE_URL",
        value="<url>/v1",
        provider="openai",
        endpoint=CHAT,
    ),
    SdkSetting(
        id="@anthropic-ai/sdk",
        sdk="`@anthropic-ai/sdk`",
        language="Node",
        option="new Anthropic({ baseURL })",
        variable="ANTHROPIC_BASE_URL",
        value="<url>",
        provider="anthropic",
        endpoint=MESSAGES,
    ),
    SdkSetting(
        id="@ai-sdk/openai",
        sdk="`@ai-sdk/openai` (AI SDK)",
        language="Node",
        option="createOpenAI({ baseURL })",
        variable="OPENAI_BASE_URL",
        value="<url>/v1",
        provider="openai",
        endpoint=RESPONSES,  # the AI SDK's `openai(model)` calls the Responses API
    ),
    SdkSetting(
        id="@ai-sdk/anthropic",
        sdk="`@ai-sdk/anthropic` (AI SDK)",
        language="Node",
        option="createAnthropic({ baseURL })",
        variable="ANTHROPIC_BASE_URL",
        value="<url>/v1",
        provider="anthropic",
        endpoint=MESSAGES,
    ),
    SdkSetting(
        id="@ai-sdk/google",
        sdk="`@ai-sdk/google` (AI SDK)",
        language="Node",
        option="createGoogleGenerativeAI({ baseURL })",
        variable=None,  # the AI SDK's Google provider reads no base URL variable
        value="<url>/v1beta",
        provider="gemini",
        endpoint=GENERATE,
        stream_endpoint=STREAM_GENERATE,
    ),
    SdkSetting(
        id="@langchain/openai",
        sdk="`@langchain/openai` (LangChain)",
        language="Node",
        option="new ChatOpenAI({ configuration: { baseURL } })",
        variable="OPENAI_BASE_URL",
        value="<url>/v1",
        provider="openai",
        endpoint=CHAT,
    ),
    SdkSetting(
        id="@langchain/anthropic",
        sdk="`@langchain/anthropic` (LangChain)",
        language="Node",
        option="new ChatAnthropic({ anthropicApiUrl })",
        variable="ANTHROPIC_API_URL",
        value="<url>",
        provider="anthropic",
        endpoint=MESSAGES,
    ),
)
SHARED_VALUES: Final = {
    "OPENAI_BASE_URL": "<url>/v1",
    "ANTHROPIC_BASE_URL": "<url>",
    "ANTHROPIC_API_URL": "<url>",
    "AZURE_OPENAI_ENDPOINT": "<url>",
    "GOOGLE_GEMINI_BASE_URL": "<url>",
}
"""What the page says one variable holds for every SDK that reads it: for `ANTHROPIC_BASE_URL`
that is `<url>` (the official SDK's), which the AI SDK's Anthropic provider takes too."""
RUNS: Final[list[tuple[SdkSetting, Via]]] = [
    (setting, via)
    for setting in SETTINGS
    for via in get_args(Via)
    if via == "option" or setting.variable is not None
]


def run_id(run: tuple[SdkSetting, Via]) -> str:
    return f"{run[0].id}-{run[1]}"


def script(setting: SdkSetting, via: Via) -> list[dict[str, str]]:
    """A plain answer and a streamed one, each naming the run, so no run reads another's."""
    name = run_id((setting, via))
    return [{"text": f"{name}: plain."}, {"text": f"{name}: streamed."}]


def expected(setting: SdkSetting, via: Via) -> dict[str, str]:
    name = run_id((setting, via))
    return {"plain": f"{name}: plain.", "streamed": f"{name}: streamed."}


def assert_sent(session: ServerSession, setting: SdkSetting) -> None:
    """The session got the plain request, then the streamed one, at the endpoint's path."""
    requests = session.requests()
    assert [(request["endpoint"], request["request"]["stream"]) for request in requests] == [
        (setting.endpoint, False),
        (setting.stream_endpoint or setting.endpoint, True),
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplayServer]:
    with ReplayServer(tmp_path_factory.mktemp("cassettes")) as running:
        yield running


# -- the page ---------------------------------------------------------------------------------------


def documented_section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("## Each SDK's exact setting\n")
    return text[start : text.index("\n## ", start + 1)]


def test_the_page_gives_the_settings_tested_here() -> None:
    section = documented_section()
    rows = [line for line in section.splitlines() if line.startswith("| `")]

    assert rows == [setting.row() for setting in SETTINGS]
    for variable in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        assert f"`{variable}={SHARED_VALUES[variable]}`" in section


# -- the SDKs -----------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_each_node_sdk_gets_its_answers_with_the_documented_base_url(
    server: ReplayServer,
) -> None:
    node = installed_node(NODE_SDKS)
    runs = [(setting, via) for setting, via in RUNS if setting.language == "Node"]
    with ExitStack() as sessions:
        opened = [
            sessions.enter_context(
                server.session(script=script(setting, via), provider=setting.provider)
            )
            for setting, via in runs
        ]
        payload = [
            {
                "sdk": setting.id,
                "via": via,
                "variable": setting.variable,
                "baseURL": setting.base_url(session.url, via),
            }
            for (setting, via), session in zip(runs, opened, strict=True)
        ]
        completed = subprocess.run(
            [node, str(NODE_SDKS / "base_urls.mjs")],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=NODE_SDKS,
            timeout=NODE_SECONDS,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr
        results = [json.loads(line) for line in completed.stdout.splitlines()]

        assert dict(zip(map(run_id, runs), results, strict=True)) == {
            run_id(run): expected(*run) for run in runs
        }
        for (setting, _), session in zip(runs, opened, strict=True):
            assert_sent(session, setting)


def python_texts(setting: SdkSetting, base_url: str | None) -> dict[str, str]:
    """The plain answer's text and the streamed text of the row's Python SDK, given `base_url`
    (None: the SDK reads its variable)."""
    if setting.id == "google-genai-python":
        return google_genai_texts(base_url)
    if setting.id == "anthropic-python":
        with anthropic.Anthropic(base_url=base_url, api_key=CLIENT_KEY, max_retries=0) as claude:
            message = claude.messages.create(
                model="claude-sonnet-4-5", max_tokens=64, messages=ANTHROPIC_QUESTION
            )
            with claude.messages.stream(
                model="claude-sonnet-4-5", max_tokens=64, messages=ANTHROPIC_QUESTION
            ) as stream:
                streamed = "".join(stream.text_stream)
        assert message.content[0].type == "text"
        return {"plain": message.content[0].text, "streamed": streamed}
    client = (
        azure(base_url)
        if setting.id == "azure-python"
        else openai.OpenAI(base_url=base_url, api_key=CLIENT_KEY, max_retries=0)
    )
    model = DEPLOYMENT if setting.id == "azure-python" else "gpt-4o-mini"
    with client:
        reply = client.chat.completions.create(model=model, messages=OPENAI_QUESTION)
        chunks = client.chat.completions.create(model=model, messages=OPENAI_QUESTION, stream=True)
        streamed = "".join(
            chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices
        )
    return {"plain": reply.choices[0].message.content or "", "streamed": streamed}


def google_genai_texts(base_url: str | None) -> dict[str, str]:
    options = None if base_url is None else genai_types.HttpOptions(base_url=base_url)
    with genai.Client(api_key=CLIENT_KEY, http_options=options) as gemini:
        answer = gemini.models.generate_content(model=GEMINI_MODEL, contents=QUESTION)
        streamed = "".join(
            chunk.text or ""
            for chunk in gemini.models.generate_content_stream(
                model=GEMINI_MODEL, contents=QUESTION
            )
        )
    return {"plain": answer.text or "", "streamed": streamed}


@pytest.mark.parametrize(
    ("setting", "via"),
    [pytest.param(*run, id=run_id(run)) for run in RUNS if run[0].language == "Python"],
)
def test_each_python_sdk_gets_its_answers_with_the_documented_base_url(
    setting: SdkSetting, via: Via, server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in SHARED_VALUES:
        monkeypatch.delenv(variable, raising=False)
    with server.session(script=script(setting, via), provider=setting.provider) as session:
        base_url = setting.base_url(session.url, via)
        if via == "variable":
            assert setting.variable is not None  # RUNS has a variable run only for such a row
            monkeypatch.setenv(setting.variable, base_url)
        texts = python_texts(setting, base_url if via == "option" else None)

        assert texts == expected(setting, via)
        assert_sent(session, setting)


# -- Azure OpenAI ---------------------------------------------------------------------------------


def azure(endpoint: str | None, transport: CassetteTransport | None = None) -> openai.AzureOpenAI:
    """An `AzureOpenAI` client of `endpoint` (None: `AZURE_OPENAI_ENDPOINT`'s)."""
    http_client = None if transport is None else openai.DefaultHttpxClient(transport=transport)
    if endpoint is None:
        return openai.AzureOpenAI(
            api_version=AZURE_API_VERSION,
            api_key=CLIENT_KEY,
            max_retries=0,
            http_client=http_client,
        )
    return openai.AzureOpenAI(
        azure_endpoint=endpoint,
        api_version=AZURE_API_VERSION,
        api_key=CLIENT_KEY,
        max_retries=0,
        http_client=http_client,
    )


def ask_azure(client: openai.AzureOpenAI) -> str | None:
    with client:
        reply = client.chat.completions.create(model=DEPLOYMENT, messages=OPENAI_QUESTION)
    return reply.choices[0].message.content


def test_azure_responses_reach_a_session(server: ReplayServer) -> None:
    with server.session(script=[{"text": "Azure Paris."}], provider="openai") as session:
        with azure(session.url) as client:
            response = client.responses.create(model=DEPLOYMENT, input=QUESTION)

        assert response.output_text == "Azure Paris."
        assert [request["endpoint"] for request in session.requests()] == [RESPONSES]


def azure_provider(request: ReceivedRequest) -> Reply:
    """Azure OpenAI as the fake provider: Chat Completions at a deployment's path alone."""
    if request.path != f"{AZURE_CHAT}?api-version={AZURE_API_VERSION}":
        return Reply(status=404, body={"error": {"message": f"no such path {request.path}"}})
    return openai_chat_reply(Answer(text="Recorded Paris."), model=DEPLOYMENT)


def test_an_azure_cassette_has_one_key_in_process_and_through_serve(tmp_path: Path) -> None:
    """Recorded in process and through the server, an Azure request is keyed at its deployment
    path with its `api-version`, the same key: each cassette replays through the server."""
    in_process = CassetteTransport(
        tmp_path / "in_process.json",
        mode="all",
        inner=ScriptTransport("openai", [ScriptedReply(text="Scripted Paris.")]),
    )
    try:
        assert ask_azure(azure("https://example.openai.azure.com", in_process)) == "Scripted Paris."
    finally:
        in_process.close()
    with serve(azure_provider) as provider:
        environ = provider_environ(provider.base_url)
        with ReplayServer(tmp_path, record_mode="once", environ=environ) as recording:
            assert ask_azure(azure(recording.cassette_url("served"))) == "Recorded Paris."

    with ReplayServer(tmp_path) as replaying:
        replayed = [
            ask_azure(azure(replaying.cassette_url(name))) for name in ("in_process", "served")
        ]

    assert replayed == ["Scripted Paris.", "Recorded Paris."]
    (kept,) = Cassette.load(tmp_path / "in_process.json").interactions
    (served,) = Cassette.load(tmp_path / "served.json").interactions
    assert (served.request.path, served.request.query) == (
        AZURE_CHAT,
        f"api-version={AZURE_API_VERSION}",
    )
    assert served.key == kept.key


CORPUS: Final = corpus_folder()
AZURE_RECORDING: Final = CORPUS / "providers" / "cassettes" / "test_azure"


@pytest.mark.skipif(not CORPUS.is_dir(), reason=missing_reason(CORPUS))
def test_the_real_azure_recording_replays_through_serve(tmp_path: Path) -> None:
    import_vcr([AZURE_RECORDING / "test_azure_provider_call.yaml"], tmp_path)
    with ReplayServer(tmp_path) as replaying:
        with openai.AzureOpenAI(
            azure_endpoint=replaying.cassette_url("test_azure_provider_call"),
            api_version="2024-12-01-preview",
            api_key=CLIENT_KEY,
            max_retries=0,
        ) as client:
            reply = client.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": "What is the capital of France?"}],
                n=1,
                stream=False,
            )

    assert reply.choices[0].message.content == "The capital of France is **Paris**."


# -- one request key, whichever spelling ------------------------------------------------------------


def prompt_provider(request: ReceivedRequest) -> Reply:
    body = request.json()
    answer = Answer(text="Recorded Paris.")
    if request.path == MESSAGES:
        return anthropic_messages_reply(answer, model=body["model"], stream=False)
    assert request.path == CHAT, request.path
    return openai_chat_reply(answer, model=body["model"])


SPELLINGS: Final = {
    "anthropic": (
        "/messages",
        MESSAGES,
        {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": ANTHROPIC_QUESTION},
        {"anthropic-version": "2023-06-01"},
    ),
    "openai": (
        "/chat/completions",
        CHAT,
        {"model": "gpt-4o-mini", "messages": OPENAI_QUESTION},
        {},
    ),
}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_with_or_without_v1_is_one_request_recorded_at_the_endpoints_path(
    provider: Literal["anthropic", "openai"], tmp_path: Path
) -> None:
    """Recorded through `<url>/messages` (the AI SDK's spelling), the request reaches the
    provider and the cassette at `/v1/messages`, and `<url>/v1/messages` replays it."""
    unversioned, versioned, body, headers = SPELLINGS[provider]
    sent = json.dumps(body).encode()
    with serve(prompt_provider) as upstream:
        environ = provider_environ(upstream.base_url)
        with ReplayServer(tmp_path, record_mode="once", environ=environ) as recording:
            recorded = raw_request(recording.url, "POST", f"/c/spelt{unversioned}", sent, headers)
        assert [request.path for request in upstream.received] == [versioned]
    with ReplayServer(tmp_path) as replaying:
        replayed = raw_request(replaying.url, "POST", f"/c/spelt{versioned}", sent, headers)

    assert (recorded.status, replayed.status) == (200, 200)
    assert replayed.json() == recorded.json()
    (interaction,) = Cassette.load(tmp_path / "spelt.json").interactions
    assert interaction.request.path == versioned


# -- an extra /v1 ---------------------------------------------------------------------------------


def test_an_extra_v1_for_an_sdk_that_adds_it_is_a_404_naming_the_url_to_give(
    server: ReplayServer,
) -> None:
    with server.session(script=[{"text": "Paris."}], provider="anthropic") as session:
        with anthropic.Anthropic(
            base_url=f"{session.url}/v1", api_key=CLIENT_KEY, max_retries=0
        ) as claude:
            with pytest.raises(anthropic.NotFoundError) as refused:
                claude.messages.create(
                    model="claude-sonnet-4-5", max_tokens=64, messages=ANTHROPIC_QUESTION
                )

    assert (
        f"no session '{session.id}/v1': the SDK's base URL ends in /v1 and the SDK adds /v1 "
        f"itself (the official Anthropic SDKs do); give it the session's URL, /s/{session.id}, "
        "without /v1"
    ) in str(refused.value)


def test_an_extra_v1_after_a_cassette_names_the_cassette_meant(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    recorder = CassetteTransport(
        tmp_path / "agent" / "weather.json",
        mode="all",
        inner=ScriptTransport("anthropic", [ScriptedReply(text="Paris.")]),
    )
    try:
        with anthropic.Anthropic(
            api_key=CLIENT_KEY,
            max_retries=0,
            http_client=anthropic.DefaultHttpxClient(transport=recorder),
        ) as claude:
            claude.messages.create(
                model="claude-sonnet-4-5", max_tokens=64, messages=ANTHROPIC_QUESTION
            )
    finally:
        recorder.close()
    with ReplayServer(tmp_path) as replaying:
        base_url = replaying.cassette_url("agent/weather", "anthropic") + "/v1"
        with anthropic.Anthropic(base_url=base_url, api_key=CLIENT_KEY, max_retries=0) as claude:
            with pytest.raises(anthropic.NotFoundError) as refused:
                claude.messages.create(
                    model="claude-sonnet-4-5", max_tokens=64, messages=ANTHROPIC_QUESTION
                )

    message = str(refused.value)
    assert "cassette agent/weather/v1.json does not exist" in message
    assert (
        "cassette 'agent/weather' exists: the SDK's base URL ends in /v1 and the SDK adds /v1 "
        "itself (the official Anthropic SDKs do), so give it /c/agent/weather without /v1"
    ) in message


# -- routing --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/c/agent/weather/v1/messages", Route("cassette", "agent/weather", MESSAGES)),
        ("/c/agent/weather/messages", Route("cassette", "agent/weather", MESSAGES)),
        ("/c/agent/chat/completions", Route("cassette", "agent", CHAT)),
        ("/s/abc/responses", Route("session", "abc", RESPONSES)),
        # a path ending in /v1/<endpoint> is read with its version, never as a name ending in v1
        ("/c/agent/v1/v1/messages", Route("cassette", "agent/v1", MESSAGES)),
        ("/c/v1/old/messages", Route("cassette", "v1/old", MESSAGES)),
        (f"/c/agent{AZURE_CHAT}", Route("cassette", "agent", CHAT, AZURE_CHAT)),
        (f"/s/abc{AZURE_CHAT}", Route("session", "abc", CHAT, AZURE_CHAT)),
        ("/c/agent/openai/responses", Route("cassette", "agent", RESPONSES, "/openai/responses")),
        # a deployment named like a version is still a deployment
        (
            "/c/agent/openai/deployments/v1/chat/completions",
            Route("cassette", "agent", CHAT, "/openai/deployments/v1/chat/completions"),
        ),
        # Gemini names the model in the path, at v1beta, v1 (the same request) or no version
        (
            f"/c/agent/v1beta/models/{GEMINI_MODEL}:generateContent",
            Route("cassette", "agent", GENERATE, model=GEMINI_MODEL),
        ),
        (
            f"/c/agent/v1/models/{GEMINI_MODEL}:streamGenerateContent",
            Route("cassette", "agent", STREAM_GENERATE, model=GEMINI_MODEL),
        ),
        (
            f"/s/abc/models/{GEMINI_MODEL}:streamGenerateContent",
            Route("session", "abc", STREAM_GENERATE, model=GEMINI_MODEL),
        ),
        (
            "/c/agent/v1/v1beta/models/m:generateContent",
            Route("cassette", "agent/v1", GENERATE, model="m"),
        ),
    ],
)
def test_each_spelling_names_its_endpoint(path: str, expected: Route) -> None:
    assert route(path) == expected


def test_the_request_is_keyed_at_the_endpoints_path_or_the_deployments() -> None:
    assert route("/c/agent/messages").provider_path == MESSAGES
    assert route(f"/c/agent{AZURE_CHAT}").provider_path == AZURE_CHAT
    keyed = f"/v1beta/models/{GEMINI_MODEL}:generateContent"
    for version in ("/v1beta", "/v1", ""):
        path = f"/c/agent{version}/models/{GEMINI_MODEL}:generateContent"
        assert route(path).provider_path == keyed


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/c/v1/messages", 404),  # /v1/messages without a cassette name
        ("/c/agent/embeddings", 404),
        ("/c/agent/messages/count_tokens", 404),
        (f"/c/agent/openai/deployments/{DEPLOYMENT}/embeddings", 404),
        ("/c/agent/openai/deployments/../chat/completions", 400),
        ("/s/abc/openai/deployments/./chat/completions", 400),
        ("/c/agent/v1beta/models/gemini-2.5-flash:countTokens", 404),
        ("/c/agent/v1beta/models/..:generateContent", 400),
    ],
)
def test_a_path_in_no_spelling_is_refused_naming_what_is_served(path: str, status: int) -> None:
    with pytest.raises(RouteError) as refused:
        route(path)

    assert refused.value.status == status
    if status == 404:
        assert (
            "the server speaks /v1/chat/completions, /v1/responses, /v1/messages, "
            "/v1beta/models/<model>:generateContent (also at /v1), "
            "/v1beta/models/<model>:streamGenerateContent (also at /v1), each also without its "
            "version, and the deployment paths "
            "/openai/deployments/<deployment>/chat/completions, /openai/responses,"
        ) in str(refused.value)


def test_a_provider_may_not_take_another_ones_deployment_path() -> None:
    taken = OPENAI.endpoints[0].deployment_paths[0]
    spec = ProviderSpec(
        name="azure-copy",
        adapter=OPENAI.adapter,
        endpoints=(Endpoint("/v2/chat", "chat_completions", deployment_paths=(taken,)),),
        detected_paths=("/v2/chat",),
        sdk_base_suffix="",
        default_base_url="https://example.test",
        api_key_variable="COPY_API_KEY",
        base_url_variable="COPY_BASE_URL",
        auth_header="authorization",
        default_model="m",
        tool_models=("m",),
    )

    with pytest.raises(ValueError, match="expected deployment paths no other provider serves"):
        register_provider(spec)


def test_a_registered_providers_paths_are_served_in_every_spelling() -> None:
    spec = ProviderSpec(
        name="versioned-elsewhere",
        adapter=OPENAI.adapter,
        endpoints=(
            Endpoint(
                "/v1/generate",
                "chat_completions",
                deployment_paths=("/models/{deployment}/generate",),
            ),
        ),
        detected_paths=("/generate",),
        sdk_base_suffix="/v1",
        default_base_url="https://example.test",
        api_key_variable="GENERATE_API_KEY",
        base_url_variable="GENERATE_BASE_URL",
        auth_header="authorization",
        default_model="m",
        tool_models=("m",),
    )
    endings = ("/v1/generate", "/generate", "/models/m/generate")
    with registered(spec):
        assert [route(f"/c/x{ending}") for ending in endings] == [
            Route("cassette", "x", "/v1/generate"),
            Route("cassette", "x", "/v1/generate"),
            Route("cassette", "x", "/v1/generate", "/models/m/generate"),
        ]
    with pytest.raises(RouteError):
        route("/c/x/generate")
