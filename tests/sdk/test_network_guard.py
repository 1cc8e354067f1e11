"""The replay tests' network guard refuses every connection, and a connection attempt fails the
guarded block even when the code under test swallows or wraps the refusal."""

from __future__ import annotations

import httpx2
import pytest

from tests.support.sdk_replay import NetworkGuard, NetworkUsed

CLOSED_PORT = "http://127.0.0.1:9/"


def connect_and_swallow_the_refusal(guard: NetworkGuard) -> None:
    with guard.blocked():
        with pytest.raises(NetworkUsed), httpx2.Client() as client:
            client.get(CLOSED_PORT)


async def connect_async_and_swallow_the_refusal(guard: NetworkGuard) -> None:
    with guard.blocked():
        with pytest.RaisesGroup(NetworkUsed, allow_unwrapped=True, flatten_subgroups=True):
            async with httpx2.AsyncClient() as client:
                await client.get(CLOSED_PORT)


def test_a_sync_connection_is_refused_and_fails_the_block(network_guard: NetworkGuard) -> None:
    with pytest.raises(AssertionError, match=r"reached for the network: \[\"\('127.0.0.1', 9\)"):
        connect_and_swallow_the_refusal(network_guard)


@pytest.mark.anyio
async def test_an_async_connection_is_refused_and_fails_the_block(
    network_guard: NetworkGuard,
) -> None:
    with pytest.raises(AssertionError, match=r"reached for the network: \[\"\('127.0.0.1', 9\)"):
        await connect_async_and_swallow_the_refusal(network_guard)
