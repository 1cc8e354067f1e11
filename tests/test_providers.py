"""One home per provider: each built-in `ProviderSpec` (OpenAI, Anthropic, Gemini) holds the
facts the code used to spell out in tables, and a provider registered in one place (`ACME`, an
OpenAI-compatible API at its own path, with its own key header and variables) is accepted by the
cassettes, the gateway and the replay server alike.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Final

import httpx2
import openai
import pytest

from harness.cassettes import Cassette, CassetteMissError, CassetteTransport
from harness.cassettes.key import (
    DEFAULT_VOLATILE_FIELDS,
    KEYED_HEADERS,
    canonical_request_bytes,
    canonical_request_key,
)
from harness.llm import adapter_for, capabilities_for
from harness.llm.gateway import (
    API_KEY_VARIABLES,
    BASE_URL_VARIABLES,
    DEFAULT_BASE_URLS,
    GatewayConfig,
    GatewayConfigError,
    LlmGateway,
)
from harness.llm.models import LlmRequest, UserMessage
from harness.llm.script import ScriptedReply, ScriptProviderMismatchError, ScriptTransport
from harness.providers import (
    ANTHROPIC,
    ANTHROPIC_VERSION,
    BUILT_IN,
    GEMINI,
    OPENAI,
    PROVIDERS,
    Endpoint,
    ProviderSpec,
    detect_provider,
    find_provider,
    keyed_header_names,
    provider_names,
    provider_of,
    register_provider,
    registered,
    served_endpoints,
    unregister_provider,
)
from harness.scenarios.build import default_model
from harness.serve import ENDPOINTS, ReplayServer
from harness.serve.app import FORWARDED_HEADERS
from harness.serve.routing import route
from harness.strategies import MODELS
from harness.targets.environment import PLACEHOLDER_KEYS, target_environment
from tests.support.fake_provider import FakeProvider, ReceivedRequest, Reply, openai_text_reply
from tests.support.fake_provider import serve as fake_upstream

ACME: Final = ProviderSpec(
    name="acme",
    adapter="harness.llm.openai",  # an OpenAI-compatible API: Chat Completions on the wire
    endpoints=(Endpoint("/acme/v1/chat/completions", "chat_completions"),),
    detected_paths=("/acme/v1/chat/completions",),
    sdk_base_suffix="/acme/v1",
    default_base_url="https://api.acme.test",
    api_key_variable="ACME_API_KEY",
    base_url_variable="ACME_BASE_URL",
    auth_header="x-acme-key",
    volatile_fields=("/acme_trace",),
    keyed_headers=frozenset({"acme-version"}),
    version_headers={"acme-version": "2025-01-01"},
    default_model="acme-1",
    tool_models=("acme-1",),
)
"""A provider registered at run time, for a test, by the `acme` fixture and nowhere else."""
ACME_KEY: Final = "acme-SERVERkeyCANARY-0123456789"
ACME_PATH: Final = "/acme/v1/chat/completions"


@pytest.fixture
def acme() -> Iterator[ProviderSpec]:
    with registered(ACME) as spec:
        yield spec


# -- the built-in specs hold what the code used to write out -------------------------------------


def test_the_built_in_specs_are_the_provider_literal_in_order() -> None:
    assert tuple(BUILT_IN) == PROVIDERS == ("openai", "anthropic", "gemini")
    assert [spec.name for spec in BUILT_IN.values()] == list(PROVIDERS)
    assert provider_names()[:3] == PROVIDERS


def test_openais_spec() -> None:
    assert OPENAI.adapter == "harness.llm.openai"
    assert OPENAI.endpoints == (
        Endpoint(
            "/v1/chat/completions",
            "chat_completions",
            deployment_paths=("/openai/deployments/{deployment}/chat/completions",),
        ),
        Endpoint("/v1/responses", "responses", deployment_paths=("/openai/responses",)),
    )
    assert OPENAI.request_path == "/v1/chat/completions"
    assert OPENAI.sdk_base_url("http://h/c/x") == "http://h/c/x/v1"
    assert OPENAI.auth_headers("k") == {"authorization": "Bearer k"}
    assert (OPENAI.api_key_variable, OPENAI.base_url_variable) == (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    )
    assert OPENAI.default_base_url == "https://api.openai.com"
    assert OPENAI.volatile_fields == (
        "/user",
        "/safety_identifier",
        "/prompt_cache_key",
        "/metadata",
    )
    assert OPENAI.keyed_headers == {"openai-beta", "openai-version", "api-version"}
    assert dict(OPENAI.version_headers) == {}
    assert (OPENAI.default_model, OPENAI.tool_models) == ("gpt-4o-mini", ("gpt-4o-mini", "gpt-4.1"))
    assert not OPENAI.tool_input_is_object
    assert not OPENAI.thinking_counts_toward_max_tokens


def test_anthropics_spec() -> None:
    assert ANTHROPIC.adapter == "harness.llm.anthropic"
    assert ANTHROPIC.endpoints == (Endpoint("/v1/messages", "messages"),)
    assert ANTHROPIC.sdk_base_url("http://h/c/x") == "http://h/c/x"
    assert ANTHROPIC.auth_headers("k") == {"x-api-key": "k"}
    assert (ANTHROPIC.api_key_variable, ANTHROPIC.base_url_variable) == (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    )
    assert ANTHROPIC.default_base_url == "https://api.anthropic.com"
    assert ANTHROPIC.volatile_fields == ("/metadata/user_id",)
    assert ANTHROPIC.keyed_headers == {"anthropic-version", "anthropic-beta"}
    assert dict(ANTHROPIC.version_headers) == {"anthropic-version": ANTHROPIC_VERSION}
    assert ANTHROPIC_VERSION == "2023-06-01"
    assert (ANTHROPIC.default_model, ANTHROPIC.tool_models) == (
        "claude-sonnet-4-5",
        ("claude-sonnet-4-5",),
    )
    assert ANTHROPIC.tool_input_is_object
    assert ANTHROPIC.thinking_counts_toward_max_tokens


def test_geminis_spec() -> None:
    assert GEMINI.adapter == "harness.llm.gemini"
    assert GEMINI.endpoints == (
        Endpoint(
            "/v1beta/models/{model}:generateContent", "generate_content", other_versions=("/v1",)
        ),
        Endpoint(
            "/v1beta/models/{model}:streamGenerateContent",
            "generate_content",
            streams=True,
            query="alt=sse",
            other_versions=("/v1",),
        ),
    )
    # the model is in the path; a streamed request goes to its own path, as events
    assert GEMINI.request_target("gemini-2.5-flash", stream=False) == (
        "/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert GEMINI.request_target("models/gemini-2.5-flash", stream=True) == (
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert GEMINI.sdk_base_url("http://h/c/x") == "http://h/c/x"  # google-genai adds the version
    assert GEMINI.auth_headers("k") == {"x-goog-api-key": "k"}
    assert (GEMINI.api_key_variable, GEMINI.base_url_variable) == (
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
    )
    assert GEMINI.default_base_url == "https://generativelanguage.googleapis.com"
    assert (GEMINI.volatile_fields, GEMINI.keyed_headers, dict(GEMINI.version_headers)) == (
        (),
        frozenset(),
        {},
    )
    assert (GEMINI.default_model, GEMINI.tool_models) == (
        "gemini-2.5-flash",
        ("gemini-2.5-flash", "gemini-2.5-flash-lite"),
    )
    assert GEMINI.tool_input_is_object
    assert GEMINI.tool_input_streams_whole
    assert GEMINI.thinking_counts_toward_max_tokens


@pytest.mark.parametrize(
    ("environ", "key"),
    [
        ({"GEMINI_API_KEY": "gemini-key"}, "gemini-key"),
        ({"GOOGLE_API_KEY": "google-key"}, "google-key"),
        # google-genai uses GOOGLE_API_KEY when both are set, and so does the harness
        ({"GEMINI_API_KEY": "gemini-key", "GOOGLE_API_KEY": "google-key"}, "google-key"),
        ({"GEMINI_API_KEY": "gemini-key", "GOOGLE_API_KEY": ""}, "gemini-key"),
        ({}, None),
    ],
)
def test_the_gemini_key_is_read_as_google_genai_reads_it(
    environ: dict[str, str], key: str | None
) -> None:
    assert GatewayConfig.from_environment("gemini", environ).api_key == key


@pytest.mark.parametrize(
    "base_url",
    [
        "https://proxy.test",
        "https://proxy.test/",
        "https://proxy.test/v1beta",
        "https://proxy.test/v1beta/",
        "https://proxy.test/v1",
    ],
)
def test_a_gemini_base_url_loses_its_version(base_url: str) -> None:
    config = GatewayConfig.from_environment("gemini", {"GOOGLE_GEMINI_BASE_URL": base_url})
    assert config.base_url == "https://proxy.test"


def test_the_tables_derived_from_the_specs_are_the_ones_written_out_before() -> None:
    assert DEFAULT_BASE_URLS == {
        "openai": "https://api.openai.com",
        "anthropic": "https://api.anthropic.com",
        "gemini": "https://generativelanguage.googleapis.com",
    }
    assert API_KEY_VARIABLES == {
        "openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "gemini": "GEMINI_API_KEY",
    }
    assert BASE_URL_VARIABLES == {
        "openai": "OPENAI_BASE_URL",
        "anthropic": "ANTHROPIC_BASE_URL",
        "gemini": "GOOGLE_GEMINI_BASE_URL",
    }
    assert ENDPOINTS == {
        "/v1/chat/completions": "openai",
        "/v1/responses": "openai",
        "/v1/messages": "anthropic",
        "/v1beta/models/{model}:generateContent": "gemini",
        "/v1beta/models/{model}:streamGenerateContent": "gemini",
    }
    assert list(ENDPOINTS)[:3] == ["/v1/chat/completions", "/v1/responses", "/v1/messages"]
    assert dict(DEFAULT_VOLATILE_FIELDS) == {
        "openai": ("/user", "/safety_identifier", "/prompt_cache_key", "/metadata"),
        "anthropic": ("/metadata/user_id",),
        "gemini": (),
    }
    keyed = {"anthropic-version", "anthropic-beta", "openai-beta", "openai-version", "api-version"}
    assert KEYED_HEADERS == keyed == keyed_header_names()
    assert {"content-type", "accept", "user-agent", *keyed} == FORWARDED_HEADERS
    assert PLACEHOLDER_KEYS == ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")
    assert MODELS == {
        "openai": ("gpt-4o-mini", "gpt-4.1"),
        "anthropic": ("claude-sonnet-4-5",),
        "gemini": ("gemini-2.5-flash", "gemini-2.5-flash-lite"),
    }
    assert (default_model("openai"), default_model("anthropic"), default_model("gemini")) == (
        "gpt-4o-mini",
        "claude-sonnet-4-5",
        "gemini-2.5-flash",
    )


@pytest.mark.parametrize(
    ("path", "provider"),
    [
        ("/v1/chat/completions", "openai"),
        ("/openai/v1/chat/completions", "openai"),
        ("/v1/completions", "openai"),
        ("/v1/responses", "openai"),
        ("/v1/embeddings", "openai"),
        ("/v1/messages", "anthropic"),
        ("/v1/messages/count_tokens", "anthropic"),
        ("/v1beta/models/gemini-2.5-flash:generateContent", "gemini"),
        ("/v1/models/gemini-2.5-flash:streamGenerateContent", "gemini"),
        ("/v1beta/models/gemini-2.5-flash:countTokens", "gemini"),
        ("/v1beta/models/text-embedding-004:embedContent", "gemini"),
        ("/v1/models", None),
        ("/", None),
    ],
)
def test_a_path_is_detected_as_before(path: str, provider: str | None) -> None:
    assert detect_provider(path) == provider


@pytest.mark.parametrize("stream", [False, True])
def test_each_spec_names_an_adapter_that_speaks_its_gateway_endpoint(stream: bool) -> None:
    request = LlmRequest(model="m", messages=(UserMessage(content="hi"),), stream=stream)
    for name, spec in BUILT_IN.items():
        adapter = adapter_for(name)
        assert adapter.__name__ == spec.adapter  # type: ignore[attr-defined]  # a module
        target = spec.request_target("m", stream=stream)
        assert sys.modules[spec.adapter].request_path(request) == target
        assert sys.modules[spec.adapter].request_headers() == dict(spec.version_headers)
        assert spec.endpoint_at(target.partition("?")[0]) is not None
    assert OPENAI.request_target("m", stream=True) == OPENAI.request_path  # the body says stream


@pytest.mark.parametrize("base_url", ["http://up", "http://up/", "http://up/v1", "http://up/v1/"])
def test_a_configured_base_url_loses_the_sdk_suffix_as_before(base_url: str) -> None:
    for name, spec in BUILT_IN.items():
        config = GatewayConfig.from_environment(name, {spec.base_url_variable: base_url})
        assert config.base_url == "http://up"


def test_a_spec_is_frozen_its_headers_too() -> None:
    with pytest.raises(AttributeError):
        OPENAI.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        ANTHROPIC.version_headers["anthropic-version"] = "x"  # type: ignore[index]


def test_a_spec_refuses_a_default_model_it_does_not_list_and_no_endpoint() -> None:
    with pytest.raises(ValueError, match="default_model among tool_models"):
        replace(ACME, default_model="other")
    with pytest.raises(ValueError, match="at least one endpoint"):
        replace(ACME, endpoints=())


# -- registering --------------------------------------------------------------------------------


def test_registering_refuses_a_taken_name_endpoint_or_path_and_keeps_the_built_ins() -> None:
    with pytest.raises(ValueError, match="no provider is registered under but got name='openai'"):
        register_provider(replace(ACME, name="openai"))
    with pytest.raises(ValueError, match="path='/v1/messages', served for anthropic"):
        register_provider(replace(ACME, endpoints=(Endpoint("/v1/messages", "messages"),)))
    with pytest.raises(ValueError, match="path='/responses', detected as openai"):
        register_provider(replace(ACME, detected_paths=("/responses",)))
    with pytest.raises(ValueError, match="name='openai', a built-in one"):
        unregister_provider("openai")
    with pytest.raises(
        ValueError, match="expected one of openai, anthropic, gemini but got provider='acme'"
    ):
        unregister_provider("acme")
    assert provider_names() == PROVIDERS


def test_a_registered_provider_is_gone_after_its_block() -> None:
    with registered(ACME):
        assert find_provider("acme") is ACME
        assert provider_names() == (*PROVIDERS, "acme")
        assert ACME_PATH in served_endpoints()
        assert "acme-version" in keyed_header_names()
    assert find_provider("acme") is None
    assert ACME_PATH not in served_endpoints()
    assert "acme-version" not in keyed_header_names()
    with pytest.raises(GatewayConfigError, match="expected one of openai, anthropic"):
        GatewayConfig.from_environment("acme", {})


# -- a third provider, everywhere ---------------------------------------------------------------


def _chat_body(**extra: object) -> bytes:
    return json.dumps(
        {"model": "acme-1", "messages": [{"role": "user", "content": "Capital?"}], **extra}
    ).encode()


def test_cassette_keys_know_the_registered_provider(acme: ProviderSpec) -> None:
    url = f"https://api.acme.test{ACME_PATH}"
    assert detect_provider(ACME_PATH) == provider_of(acme)
    assert detect_provider("/v1/chat/completions") == "openai"  # the longest ending wins
    # its volatile field is left out of the key; OpenAI's are not (it is not OpenAI's path)
    assert canonical_request_key("POST", url, None, _chat_body(acme_trace="a")) == (
        canonical_request_key("POST", url, None, _chat_body(acme_trace="b"))
    )
    assert canonical_request_key("POST", url, None, _chat_body(user="a")) != (
        canonical_request_key("POST", url, None, _chat_body(user="b"))
    )
    # its keyed header is part of the key
    keyed = canonical_request_bytes("POST", url, {"acme-version": "2", "x-other": "1"}, b"")
    assert json.loads(keyed)["headers"] == {"acme-version": "2"}


def test_a_cassette_records_and_replays_the_registered_provider(
    acme: ProviderSpec, tmp_path: Path
) -> None:
    path = tmp_path / "acme.json"
    upstream: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        upstream.append(request)
        return httpx2.Response(200, json=openai_text_reply("It is Paris.", model="acme-1").body)

    url = f"https://api.acme.test{ACME_PATH}"
    recorder = CassetteTransport(path, mode="once", inner=httpx2.MockTransport(answer))
    with httpx2.Client(transport=recorder) as client:
        client.post(url, content=_chat_body(acme_trace="first"))
    recorder.close()
    assert Cassette.load(path).metadata.provider == "acme"

    player = CassetteTransport(path, mode="none")
    with httpx2.Client(transport=player) as client:
        replayed = client.post(url, content=_chat_body(acme_trace="second"))  # volatile
        assert replayed.json()["choices"][0]["message"]["content"] == "It is Paris."
        with pytest.raises(CassetteMissError):
            client.post(url, content=_chat_body(), headers={"acme-version": "2"})
    assert len(upstream) == 1


def test_the_gateway_reaches_the_registered_provider_with_its_key_header(
    acme: ProviderSpec,
) -> None:
    environ = {"ACME_API_KEY": ACME_KEY, "ACME_BASE_URL": "http://up.test/acme/v1/"}
    config = GatewayConfig.from_environment("acme", environ)
    assert (config.provider, config.base_url, config.api_key) == (
        "acme",
        "http://up.test",
        ACME_KEY,
    )
    sent: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json=openai_text_reply("It is Paris.", model="acme-1").body)

    request = LlmRequest(model="acme-1", messages=(UserMessage(content="Capital?"),))
    with LlmGateway(config, transport=httpx2.MockTransport(answer)) as gateway:
        assert gateway.complete(request).text == "It is Paris."
    (wire,) = sent
    assert str(wire.url) == f"http://up.test{ACME_PATH}"
    assert wire.headers["x-acme-key"] == ACME_KEY
    assert wire.headers["acme-version"] == "2025-01-01"
    assert "authorization" not in wire.headers
    # capabilities follow the adapter's model table, for this provider
    gpt5 = capabilities_for(provider_of(acme), "gpt-5")
    assert (gpt5.provider, gpt5.max_tokens_parameter) == ("acme", "max_completion_tokens")

    with pytest.raises(GatewayConfigError, match="set ACME_API_KEY"):
        GatewayConfig.from_environment("acme", {}).require_api_key()
    assert GatewayConfig.from_environment("acme", {}).base_url == "https://api.acme.test"


def test_a_script_speaks_the_registered_providers_wire_at_its_path(acme: ProviderSpec) -> None:
    request = LlmRequest(model="acme-1", messages=(UserMessage(content="Capital?"),))
    with LlmGateway.scripted("acme", [{"text": "It is Paris."}]) as gateway:
        assert gateway.complete(request).text == "It is Paris."
    # an OpenAI script asked at Acme's path is a mismatch, named as such
    script = ScriptTransport("openai", [ScriptedReply(text="Hi")])
    with httpx2.Client(transport=script) as client, pytest.raises(ScriptProviderMismatchError):
        client.post(f"https://api.acme.test{ACME_PATH}", content=_chat_body())


def _answer_as_acme(request: ReceivedRequest) -> Reply:
    return openai_text_reply(f"seen at {request.path}", model="acme-1")


@pytest.fixture
def acme_upstream() -> Iterator[FakeProvider]:
    with fake_upstream(_answer_as_acme) as provider:
        yield provider


def test_the_server_routes_records_and_replays_the_registered_provider(
    acme: ProviderSpec, acme_upstream: FakeProvider, tmp_path: Path
) -> None:
    assert route(f"/c/weather{ACME_PATH}").provider == provider_of(acme)
    assert route("/c/weather/v1/chat/completions").provider == "openai"
    environ = {"ACME_API_KEY": ACME_KEY, "ACME_BASE_URL": f"{acme_upstream.base_url}/acme/v1"}
    messages = [{"role": "user", "content": "Capital?"}]
    with ReplayServer(tmp_path, record_mode="once", environ=environ) as server:
        base_url = server.cassette_url("weather", provider_of(acme))
        assert base_url == f"{server.url}/c/weather/acme/v1"
        with openai.OpenAI(base_url=base_url, api_key="client-key", max_retries=0) as client:
            recorded = client.chat.completions.create(model="acme-1", messages=messages)  # type: ignore[arg-type]
    assert recorded.choices[0].message.content == f"seen at {ACME_PATH}"
    (received,) = acme_upstream.received
    assert received.path == ACME_PATH
    assert received.headers["x-acme-key"] == ACME_KEY
    assert "authorization" not in received.headers  # the client's key stays with the client
    written = (tmp_path / "weather.json").read_bytes()
    assert b"CANARY" not in written
    assert json.loads(written)["metadata"]["provider"] == "acme"

    with ReplayServer(tmp_path) as server:  # replay only: the upstream is not asked again
        base_url = server.cassette_url("weather", provider_of(acme))
        with openai.OpenAI(base_url=base_url, api_key="client-key", max_retries=0) as client:
            replayed = client.chat.completions.create(model="acme-1", messages=messages)  # type: ignore[arg-type]
    assert replayed.choices[0].message.content == f"seen at {ACME_PATH}"
    assert len(acme_upstream.received) == 1


def test_a_server_session_scripts_the_registered_provider(
    acme: ProviderSpec, tmp_path: Path
) -> None:
    with ReplayServer(tmp_path) as server:
        with server.session(
            script=[{"text": "It is Paris."}], provider=provider_of(acme)
        ) as session:
            base_url = session.base_url(provider_of(acme))
            assert base_url.endswith(f"/s/{session.id}/acme/v1")
            with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0) as client:
                reply = client.chat.completions.create(
                    model="acme-1",
                    messages=[{"role": "user", "content": "Capital?"}],
                )
            assert reply.choices[0].message.content == "It is Paris."
            (request,) = session.requests()
            assert (request["endpoint"], request["provider"]) == (ACME_PATH, "acme")


def test_a_target_gets_a_placeholder_key_for_the_registered_provider(acme: ProviderSpec) -> None:
    assert target_environment(source={})["ACME_API_KEY"] == "harness-placeholder"


# -- start-up -----------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_reading_provider_facts_loads_no_adapter() -> None:
    """The registry is a leaf of pure data (standard library only), and the cassettes' request
    key reads it without loading `harness.llm`."""
    code = (
        "import sys; before = set(sys.modules); import harness.providers; "
        "print(sorted(m for m in set(sys.modules) - before "
        "if m.startswith('harness') or m.split('.')[0] not in sys.stdlib_module_names)); "
        "import harness.cassettes.key; "
        "print(sorted(m for m in sys.modules if m.startswith('harness.llm')))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert output.stdout.splitlines() == [
        "['harness', 'harness.lazy', 'harness.providers', 'harness.providers.anthropic', "
        "'harness.providers.gemini', 'harness.providers.openai', 'harness.providers.spec']",
        "[]",
    ]
