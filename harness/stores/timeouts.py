"""How long a network store may take: to connect, and to answer one statement.

A PostgreSQL or Redis server that accepts connections and then never answers must not hang a
run or `harness stores check`. Both limits come from the environment, with defaults a CI job can
live with; a URL that sets its own (`connect_timeout=` or `options=-c statement_timeout=` for
PostgreSQL, `socket_connect_timeout=` or `socket_timeout=` for Redis) keeps its values.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from harness.errors import HarnessError

CONNECT_TIMEOUT_VARIABLE: Final = "HARNESS_STORE_CONNECT_TIMEOUT"
STATEMENT_TIMEOUT_VARIABLE: Final = "HARNESS_STORE_STATEMENT_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT_SECONDS: Final = 5.0
DEFAULT_STATEMENT_TIMEOUT_SECONDS: Final = 10.0


class StoreTimeoutError(HarnessError, ValueError):
    """Raised when `HARNESS_STORE_CONNECT_TIMEOUT` or `HARNESS_STORE_STATEMENT_TIMEOUT` does not
    hold a positive number of seconds."""

    code = "store_timeout_invalid"


@dataclass(frozen=True, kw_only=True)
class StoreTimeouts:
    """Seconds to connect, and seconds one statement (or Redis command) may take."""

    connect_seconds: float = DEFAULT_CONNECT_TIMEOUT_SECONDS
    statement_seconds: float = DEFAULT_STATEMENT_TIMEOUT_SECONDS

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> StoreTimeouts:
        """`HARNESS_STORE_CONNECT_TIMEOUT` and `HARNESS_STORE_STATEMENT_TIMEOUT`, in seconds.

        Raises `StoreTimeoutError` naming the variable when a value is not a positive number.
        """
        env = os.environ if environ is None else environ
        return cls(
            connect_seconds=_seconds(
                env, CONNECT_TIMEOUT_VARIABLE, DEFAULT_CONNECT_TIMEOUT_SECONDS
            ),
            statement_seconds=_seconds(
                env, STATEMENT_TIMEOUT_VARIABLE, DEFAULT_STATEMENT_TIMEOUT_SECONDS
            ),
        )

    @property
    def connect_whole_seconds(self) -> int:
        """libpq counts `connect_timeout` in whole seconds, and 1 means 2; round up to >= 2."""
        return max(2, math.ceil(self.connect_seconds))


def _seconds(env: Mapping[str, str], variable: str, default: float) -> float:
    text = env.get(variable)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise StoreTimeoutError(
            f"expected a positive number of seconds but got {variable}={text!r} (type=str); "
            f"unset it for the default of {default:g}"
        )
    return value
