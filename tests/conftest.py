"""Shared test configuration: hypothesis profiles.

`fast` (the default, used in CI: hypothesis's own 100 examples), `quick` (what `make test-fast`
runs while editing: 25), `thorough` (2,000, no deadline) and `fuzz` (what `make fuzz` runs over
tests/fuzz: many more inputs for the hostile-input properties), chosen with the environment
variable HARNESS_HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Final

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "fast", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "quick", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=2_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.register_profile(
    "fuzz", max_examples=5_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HARNESS_HYPOTHESIS_PROFILE", "fast"))


@pytest.fixture(autouse=True, scope="session")
def _no_session_cassette_usage() -> Iterator[None]:
    """The harness plugin has every transport of a pytest session log what it played, and
    re-record only the requests of a session that runs a part of the suite: right for a user's
    suite, but this suite's own transports are its subjects, so a test that wants either sets it
    itself, whatever selection the suite was run with."""
    from harness.cassettes.modes import RERECORD_VARIABLE
    from harness.cassettes.usage import USAGE_VARIABLE

    with pytest.MonkeyPatch.context() as environment:
        environment.delenv(USAGE_VARIABLE, raising=False)
        environment.delenv(RERECORD_VARIABLE, raising=False)
        yield


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on loopback, for this test session (or worker)."""
    from tests.support.servers import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real Redis server on loopback, for this test session (or worker)."""
    from tests.support.servers import redis_server

    with redis_server() as url:
        yield url


SLOW_FIRST: Final = ("browser", "engine", "subprocess")
"""The markers of the tests that wait on other processes (a browser, an engine, a server or a
command), which take seconds each: they run first."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Hypothesis properties run without coverage tracing (pytest-cov's `no_cover`): they run a
    body hundreds of times to find inputs that break it, and the tracer nearly doubled what they
    cost, while the example-based tests are what the coverage floor measures.

    The tests that wait on other processes go first (in their collection order, the same in
    every xdist worker): started last, one of a minute kept a worker busy after the others had
    finished, and `make test` waited for it."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.no_cover)
    items.sort(key=lambda item: not any(item.get_closest_marker(name) for name in SLOW_FIRST))
