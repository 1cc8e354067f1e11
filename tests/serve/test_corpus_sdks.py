"""Real recordings replayed through `harness serve` to the official SDKs, sync and async.

Every cassette of the pydantic-ai corpus whose requests all go to an endpoint the server speaks
(Chat Completions, Responses, Messages) is imported with `import_vcr`, served under `/c/<name>`,
and each recorded request is sent again in order by `openai` or `anthropic`, rebuilt as the SDK
call that sends it (`tests.support.serve_sdk`): the high-level method with the recorded body as
its arguments, so the SDK both builds the request and parses the answer as an application would.
What the SDK parsed must be exactly what was recorded: the reply's JSON, the streamed events, or
the typed status error and its body.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from harness.cassettes import Cassette
from harness.cassettes.vcr import import_vcr
from harness.serve import ReplayServer
from tests.support.corpus import corpus_folder, missing_reason
from tests.support.serve_corpus import served_recordings
from tests.support.serve_sdk import (
    async_client,
    provider_of,
    recorded_answer,
    sdk_call,
    send_async,
    send_sync,
    served,
    sync_client,
)

CORPUS = corpus_folder()
SERVED = served_recordings(CORPUS)

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=missing_reason(CORPUS))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplayServer]:
    """A server over two imports of the corpus, `sync/` and `async/`: a replay plays each
    recorded interaction once, and the sync and async clients each play them all."""
    folder = tmp_path_factory.mktemp("corpus")
    import_vcr([CORPUS], folder / "sync")
    shutil.copytree(folder / "sync", folder / "async")
    with ReplayServer(folder) as running:
        yield running


def test_the_corpus_has_recordings_the_server_serves() -> None:
    assert len(SERVED) >= 40, SERVED


@pytest.mark.anyio
@pytest.mark.parametrize("name", SERVED)
async def test_the_sync_and_async_sdks_parse_every_served_recording_as_recorded(
    name: str, server: ReplayServer
) -> None:
    cassette = Cassette.load(server.config.cassettes / "sync" / f"{name}.json")
    assert served(cassette), f"{name}: an interaction goes to an endpoint the server does not speak"
    provider = provider_of(cassette.interactions[0].request.path)

    with sync_client(provider, server.cassette_url(f"sync/{name}", provider)) as client:
        for index, interaction in enumerate(cassette.interactions):
            parsed = send_sync(client, sdk_call(interaction))
            assert parsed == recorded_answer(interaction), f"sync, interaction #{index}"
    async with async_client(provider, server.cassette_url(f"async/{name}", provider)) as aclient:
        for index, interaction in enumerate(cassette.interactions):
            parsed = await send_async(aclient, sdk_call(interaction))
            assert parsed == recorded_answer(interaction), f"async, interaction #{index}"
