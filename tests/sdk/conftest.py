"""Fixtures for the SDK tests: a network guard and the record-then-replay driver."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.sdk_replay import NetworkGuard, RecordAndReplay


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def network_guard(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    return NetworkGuard(monkeypatch)


@pytest.fixture
def record_and_replay(tmp_path: Path, network_guard: NetworkGuard) -> RecordAndReplay:
    return RecordAndReplay(tmp_path, network_guard)
