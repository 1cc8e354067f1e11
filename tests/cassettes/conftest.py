"""Fixtures for cassette tests: a scripted provider and a cassette path per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cassette_traffic import ScriptedProvider


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
def cassette_path(tmp_path: Path) -> Path:
    return tmp_path / "cassettes" / "run.json"
