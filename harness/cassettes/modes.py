"""`RecordMode`: when a `CassetteTransport` may reach the network.

Its own module, so that the command line and the scenario runner can name a mode without loading
the cassette stack (the transport, both HTTP client libraries, the file lock) for a run that opens
no cassette.
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Final, Literal, get_args

from harness.errors import RecordModeError


class RecordMode(StrEnum):
    """When a `CassetteTransport` may reach the network."""

    NONE = "none"
    ONCE = "once"
    NEW_EPISODES = "new_episodes"
    ALL = "all"

    @classmethod
    def parse(cls, value: str | RecordMode) -> RecordMode:
        """The mode named `value`; a misspelt one fails loudly, listing the allowed modes."""
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(mode.value for mode in cls)
            raise RecordModeError(
                f"expected one of {allowed} but got record_mode={value!r} "
                f"(type={type(value).__name__})"
            ) from None


Rerecord = Literal["cassette", "requests"]
"""What a re-recording (mode `all`) replaces: the whole `cassette` (a run of the whole suite), or
only the `requests` the run sends, keeping every other interaction (a part of the suite: `-k`,
a list of tests)."""
RERECORD_VARIABLE: Final = "HARNESS_RERECORD"
"""Where a transport made without `rerecord` reads it; the pytest plugin sets `requests` for a
session that runs a part of the suite."""


def checked_rerecord(value: str | None) -> Rerecord:
    """`value`, else `HARNESS_RERECORD`, else `cassette`; anything else is a `RecordModeError`
    naming where it came from and what is allowed."""
    given = value if value is not None else os.environ.get(RERECORD_VARIABLE) or "cassette"
    for allowed in get_args(Rerecord):
        if given == allowed:
            return allowed  # type: ignore[no-any-return]
    source = "rerecord" if value is not None else RERECORD_VARIABLE
    raise RecordModeError(
        f"expected 'cassette' (a re-recording replaces the whole cassette) or 'requests' (only "
        f"the requests the run sends) but got {source}={given!r}"
    )
