"""Send a cassette's recorded requests through `harness serve` with the official SDKs, and read
back what each SDK parsed in the form the cassette records it, for comparison.

`sdk_call` rebuilds a recorded request as the SDK call that sends it: the endpoint picks the
method (`chat.completions.create`, `responses.create`, `messages.create`, and
`beta.messages.create` for a recorded `?beta=true`), the recorded JSON body becomes its keyword
arguments, and the recorded query and key headers (`anthropic-version`, ...) go as
`extra_query` / `extra_headers`, a key header the recording lacks being left out (`omit`). The
high-level method rather than the low-level `client.post(...)`: the SDK then builds the request
itself and parses the answer into its typed objects, exactly as an application sees them, and
it can express every request the server serves.

`send_sync` / `send_async` make the call and return what the SDK parsed as JSON (`Parsed`): a
reply's `model_dump` (only the members the wire carried, by their wire names), a stream's events
(and the error that ended it, if any), or the typed status error with the body it exposes.
`recorded_answer` reads the same off the recording, from the providers' wire rules: the JSON
body; the events an SDK yields (OpenAI: every data event before `data: [DONE]`; Anthropic: every
named event with data but `ping`, an `error` event ending the stream as an error); or, for an
error status, the status, the error type both SDKs raise for it and the body they expose
(OpenAI: the `error` member; Anthropic: the whole body).
"""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import parse_qsl

import anthropic
import openai
from pydantic import BaseModel

from harness.cassettes import KEYED_HEADERS, Cassette, Interaction, RecordedResponse

Provider = Literal["openai", "anthropic"]
CLIENT_KEYS: Final[dict[Provider, str]] = {
    "openai": "sk-proj-CLIENTkeyCANARY0123456789abcdef",
    "anthropic": "sk-ant-CLIENTkeyCANARY0123456789abcdef",
}
"""The key each SDK client is built with: a canary the server must never forward or write."""

STATUS_ERRORS: Final[dict[int, str]] = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}
"""The typed error both SDKs raise for each status (`InternalServerError` for 500 and above)."""


@dataclass(frozen=True)
class SdkError:
    """A status error as an SDK raised it: its status, the typed error it is, its parsed body."""

    status: int
    typed: str
    body: Any


@dataclass(frozen=True)
class Parsed:
    """What an SDK parsed from one answer: a reply, or a stream's events (possibly ended by an
    error), or an error, each as JSON."""

    reply: Any = None
    events: list[Any] | None = None
    error: SdkError | None = None


Method = Literal["chat", "responses", "messages", "beta_messages"]


@dataclass(frozen=True)
class SdkCall:
    """A request as an SDK call: the provider, the method, its keyword arguments."""

    provider: Provider
    method: Method
    body: dict[str, Any]
    headers: dict[str, Any] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)

    @property
    def streamed(self) -> bool:
        return bool(self.body.get("stream"))


_METHODS: Final[dict[tuple[str, str], Method]] = {
    ("/v1/chat/completions", ""): "chat",
    ("/v1/responses", ""): "responses",
    ("/v1/messages", ""): "messages",
    ("/v1/messages", "beta=true"): "beta_messages",
}


def provider_of(path: str) -> Provider:
    return "anthropic" if path == "/v1/messages" else "openai"


def served(cassette: Cassette) -> bool:
    """Whether every request of `cassette` is one the server and an SDK method can send."""
    return bool(cassette.interactions) and all(
        (i.request.path, i.request.query) in _METHODS and isinstance(i.request.body, dict)
        for i in cassette.interactions
    )


def sdk_call(interaction: Interaction) -> SdkCall:
    """The SDK call that sends `interaction`'s recorded request again."""
    request = interaction.request
    assert isinstance(request.body, dict), f"{request.path}: the recorded body is not JSON"
    provider = provider_of(request.path)
    absent = anthropic.omit if provider == "anthropic" else openai.omit
    keyed = {name: request.headers.get(name, absent) for name in sorted(KEYED_HEADERS)}
    return SdkCall(
        provider=provider,
        method=_METHODS[(request.path, request.query)],
        body=request.body,
        headers=keyed,
        query=dict(parse_qsl(request.query)),
    )


# -- what the recording says the SDK must parse ----------------------------------------------------


def typed_error(status: int) -> str:
    return STATUS_ERRORS.get(status, "InternalServerError" if status >= 500 else "APIStatusError")


def recorded_answer(interaction: Interaction) -> Parsed:
    """What an SDK must parse from `interaction`'s recorded response."""
    response = interaction.response
    provider = provider_of(interaction.request.path)
    if response.status >= 400:
        body = json.loads(response.body_bytes())
        exposed = body.get("error", body) if provider == "openai" else body
        return Parsed(error=SdkError(response.status, typed_error(response.status), exposed))
    if response.events is None:
        return Parsed(reply=json.loads(response.body_bytes()))
    return _recorded_stream(provider, response)


def _recorded_stream(provider: Provider, response: RecordedResponse) -> Parsed:
    assert response.events is not None
    events: list[Any] = []
    for event in response.events:
        if event.data is None:
            continue
        if provider == "openai":
            if event.data.startswith("[DONE]"):
                break
            events.append(json.loads(event.data))
        elif event.event == "error":
            error = SdkError(response.status, typed_error(response.status), json.loads(event.data))
            return Parsed(events=events, error=error)
        elif event.event not in (None, "ping") and event.data:
            events.append(json.loads(event.data))
    return Parsed(events=events)


# -- what the SDK parsed ---------------------------------------------------------------------------


def as_json(value: object) -> Any:
    """An SDK object as the JSON it was parsed from: the members the wire carried, by their wire
    names (`exclude_unset`, `by_alias`)."""
    assert isinstance(value, BaseModel), f"expected an SDK model but got {type(value).__name__}"
    return value.model_dump(mode="json", exclude_unset=True, by_alias=True)


def sdk_error(error: openai.APIStatusError | anthropic.APIStatusError) -> SdkError:
    module = openai if isinstance(error, openai.APIStatusError) else anthropic
    typed = next(
        (
            name
            for name in (*STATUS_ERRORS.values(), "InternalServerError")
            if isinstance(error, getattr(module, name))
        ),
        "APIStatusError",
    )
    return SdkError(error.status_code, typed, error.body)


STATUS_ERROR_TYPES = (openai.APIStatusError, anthropic.APIStatusError)


SyncClient = openai.OpenAI | anthropic.Anthropic
AsyncClient = openai.AsyncOpenAI | anthropic.AsyncAnthropic

_TLS: Final = ssl.create_default_context()
"""One TLS context for every client: the server is plain HTTP on loopback, and loading the
certificate store for each new client would cost more than the calls it makes."""


def sync_client(provider: Provider, base_url: str) -> SyncClient:
    """The SDK client of `provider` on `base_url` (its own default HTTP client), holding its
    canary key. `max_retries=0`: by default the SDKs retry a 429 or 5xx answer after a pause,
    and the retry plays the next recorded answer instead of the recorded error."""
    key = CLIENT_KEYS[provider]
    if provider == "anthropic":
        http = anthropic.DefaultHttpxClient(verify=_TLS)
        return anthropic.Anthropic(base_url=base_url, api_key=key, max_retries=0, http_client=http)
    http = openai.DefaultHttpxClient(verify=_TLS)
    return openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, http_client=http)


def async_client(provider: Provider, base_url: str) -> AsyncClient:
    key = CLIENT_KEYS[provider]
    if provider == "anthropic":
        http = anthropic.DefaultAsyncHttpxClient(verify=_TLS)
        return anthropic.AsyncAnthropic(
            base_url=base_url, api_key=key, max_retries=0, http_client=http
        )
    http = openai.DefaultAsyncHttpxClient(verify=_TLS)
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, http_client=http)


def _options(call: SdkCall) -> dict[str, Any]:
    return {**call.body, "extra_headers": call.headers, "extra_query": call.query}


def make_call(client: SyncClient, call: SdkCall) -> Any:
    """What the SDK method returns for `call`: the parsed reply, or the open stream."""
    options = _options(call)
    if isinstance(client, anthropic.Anthropic):
        if call.method == "beta_messages":
            return client.beta.messages.create(**options)
        return client.messages.create(**options)
    if call.method == "responses":
        return client.responses.create(**options)
    return client.chat.completions.create(**options)


async def make_async_call(client: AsyncClient, call: SdkCall) -> Any:
    options = _options(call)
    if isinstance(client, anthropic.AsyncAnthropic):
        if call.method == "beta_messages":
            return await client.beta.messages.create(**options)
        return await client.messages.create(**options)
    if call.method == "responses":
        return await client.responses.create(**options)
    return await client.chat.completions.create(**options)


def send_sync(client: SyncClient, call: SdkCall) -> Parsed:
    """Make `call` with `client` and read back what it parsed."""
    try:
        answer = make_call(client, call)
    except STATUS_ERROR_TYPES as error:
        return Parsed(error=sdk_error(error))
    if not call.streamed:
        return Parsed(reply=as_json(answer))
    events: list[Any] = []
    try:
        with answer as stream:
            for event in stream:
                events.append(as_json(event))
    except STATUS_ERROR_TYPES as error:
        return Parsed(events=events, error=sdk_error(error))
    return Parsed(events=events)


async def send_async(client: AsyncClient, call: SdkCall) -> Parsed:
    """Make `call` with `client` and read back what it parsed."""
    try:
        answer = await make_async_call(client, call)
    except STATUS_ERROR_TYPES as error:
        return Parsed(error=sdk_error(error))
    if not call.streamed:
        return Parsed(reply=as_json(answer))
    events: list[Any] = []
    try:
        async with answer as stream:
            async for event in stream:
                events.append(as_json(event))
    except STATUS_ERROR_TYPES as error:
        return Parsed(events=events, error=sdk_error(error))
    return Parsed(events=events)
