"""`RecordMode`: when a `CassetteTransport` may reach the network.

Its own module, so that the command line and the scenario runner can name a mode without loading
the cassette stack (the transport, both HTTP client libraries, the file lock) for a run that opens
no cassette.
"""

from __future__ import annotations

from enum import StrEnum

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
