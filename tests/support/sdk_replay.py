"""Record through the official SDKs against the loopback fake provider, then replay offline.

`RecordAndReplay` runs one SDK call twice: first recording through `CassetteTransport` in mode
`once` against a fake provider started for it, then, with that provider stopped and every socket
connection refused (`NetworkGuard`), replaying it in mode `none`. Both runs' parsed results come
back (`Runs`) for the test to compare: SDK objects as they are, and the SDK's typed status errors
as `Failure`s (an exception does not compare by value).
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import anthropic
import openai
import pytest
from pydantic import BaseModel

from harness.cassettes import Cassette, CassetteTransport
from tests.support.fake_provider import Script, serve

SyncCall = Callable[[str, CassetteTransport], object]
"""One SDK call: given the provider's base URL and the transport, its parsed result."""
AsyncCall = Callable[[str, CassetteTransport], Awaitable[object]]


class NetworkUsed(AssertionError):
    """Something opened a connection while the network was blocked for a replay."""


@dataclass(frozen=True)
class Failure:
    """An SDK's typed status error, by value: its class, HTTP status, parsed body and message."""

    error_type: type[Exception]
    status_code: int
    body: object
    message: str


@dataclass(frozen=True)
class Runs:
    """The parsed results of the recording run and of the offline replay, and the cassette."""

    recorded: object
    replayed: object
    cassette: Cassette


def dumped(value: object) -> object:
    """`value` with every pydantic model (SDK objects) replaced by its `model_dump()`."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [dumped(item) for item in value]
    return value


def assert_same_parse(runs: Runs) -> None:
    """The replay parsed to what the recording parsed: the SDK objects compare equal (fields,
    private attributes, types) and so do their `model_dump()`s."""
    assert type(runs.replayed) is type(runs.recorded)
    assert dumped(runs.replayed) == dumped(runs.recorded)
    assert runs.replayed == runs.recorded


@dataclass
class NetworkGuard:
    """Blocks every socket connection inside `blocked()`; any attempt fails the test."""

    monkeypatch: pytest.MonkeyPatch
    attempts: list[str] = field(default_factory=list)

    @contextmanager
    def blocked(self) -> Iterator[None]:
        def refuse(sock: socket.socket, address: object) -> NoReturn:
            self.attempts.append(repr(address))
            sock.close()  # callers only close it on an OSError
            raise NetworkUsed(f"a replay tried to connect to {address!r}")

        with self.monkeypatch.context() as patch:
            patch.setattr(socket.socket, "connect", refuse)
            patch.setattr(socket.socket, "connect_ex", refuse)
            yield
        assert not self.attempts, f"the replay reached for the network: {self.attempts}"


@dataclass
class RecordAndReplay:
    """Record a call through a fresh fake provider, stop it, then replay the call offline.

    `call` builds its SDK client on the transport it is given and closes it (closing saves the
    cassette). Every request the provider received must have been recorded.
    """

    folder: Path
    guard: NetworkGuard
    runs: int = 0

    def _next_cassette(self) -> Path:
        self.runs += 1
        return self.folder / f"run-{self.runs}.json"

    def sync(self, script: Script, call: SyncCall) -> Runs:
        path = self._next_cassette()
        with serve(script) as provider:
            recorded = outcome(lambda: call(provider.base_url, CassetteTransport(path, "once")))
        cassette = Cassette.load(path)
        assert len(cassette.interactions) == len(provider.received) > 0
        with self.guard.blocked():
            replayed = outcome(lambda: call(provider.base_url, CassetteTransport(path, "none")))
        return Runs(recorded=recorded, replayed=replayed, cassette=cassette)

    async def asynchronous(self, script: Script, call: AsyncCall) -> Runs:
        path = self._next_cassette()
        with serve(script) as provider:
            recorded = await async_outcome(call(provider.base_url, CassetteTransport(path, "once")))
        cassette = Cassette.load(path)
        assert len(cassette.interactions) == len(provider.received) > 0
        with self.guard.blocked():
            replayed = await async_outcome(call(provider.base_url, CassetteTransport(path, "none")))
        return Runs(recorded=recorded, replayed=replayed, cassette=cassette)


STATUS_ERRORS = (openai.APIStatusError, anthropic.APIStatusError)


def failure(error: openai.APIStatusError | anthropic.APIStatusError) -> Failure:
    return Failure(type(error), error.status_code, error.body, str(error))


def outcome(call: Callable[[], object]) -> object:
    try:
        return call()
    except STATUS_ERRORS as error:
        return failure(error)


async def async_outcome(call: Awaitable[object]) -> object:
    try:
        return await call
    except STATUS_ERRORS as error:
        return failure(error)


# -- the skeleton both providers' SDK tests are written on -----------------------------------------


@dataclass(frozen=True)
class Said:
    """What a parsed reply says, whatever the surface: its text, its tool calls, and why it
    stopped, in the provider's own words."""

    text: str
    calls: list[tuple[str, Any]]
    stop: str | None


SyncSurface = Callable[[str, CassetteTransport, str], object]
"""One SDK surface: given the provider's base URL, the transport and the prompt, it builds its
client on the transport, makes the call, closes the client and returns the parsed result."""
AsyncSurface = Callable[[str, CassetteTransport, str], Awaitable[object]]


@dataclass(frozen=True, kw_only=True)
class SdkSuite:
    """One provider's official SDK, recorded and replayed the same way as every other's: each
    surface (sync and async) is called once per scripted outcome, and the replay must parse to
    exactly what the recording parsed, which must say what the provider was scripted to say.

    A provider's test module builds its suite and takes the two tests it makes:
    `test_sync_client_replays_what_it_recorded = SUITE.sync_test()`.
    """

    script: Script
    expectations: dict[str, Callable[[str, object], None]]
    """Per scripted case (the prompt the script answers by): a check of what the recording
    parsed to on a surface (given the surface's name and the parsed result or `Failure`)."""
    sync_surfaces: dict[str, SyncSurface]
    async_surfaces: dict[str, AsyncSurface]

    def cases(self) -> list[tuple[str, str]]:
        return [(surface, case) for surface in self.sync_surfaces for case in self.expectations]

    def check(self, surface: str, case: str, runs: Runs) -> None:
        self.expectations[case](surface, runs.recorded)
        assert_same_parse(runs)

    def sync_test(self) -> Callable[[RecordAndReplay, str, str], None]:
        @pytest.mark.parametrize(("surface", "case"), self.cases())
        def test(record_and_replay: RecordAndReplay, surface: str, case: str) -> None:
            runs = record_and_replay.sync(
                self.script,
                lambda base_url, transport: self.sync_surfaces[surface](base_url, transport, case),
            )
            self.check(surface, case, runs)

        return test

    def async_test(self) -> Callable[[RecordAndReplay, str, str], Awaitable[None]]:
        @pytest.mark.anyio
        @pytest.mark.parametrize(("surface", "case"), self.cases())
        async def test(record_and_replay: RecordAndReplay, surface: str, case: str) -> None:
            runs = await record_and_replay.asynchronous(
                self.script,
                lambda base_url, transport: self.async_surfaces[surface](base_url, transport, case),
            )
            self.check(surface, case, runs)

        return test
