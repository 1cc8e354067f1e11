"""Request-hashed cassettes: canonical keys, O(1) replay, record modes, miss diagnosis,
scrubbing and tamper evidence, through an injected `httpx2` (or `httpx`) transport.

Names are imported on first use: a run that opens no cassette loads none of the cassette stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import imported, on_first_use

_EXPORTS: dict[str, str] = {
    "FORMAT": "harness.cassettes.cassette",
    "Cassette": "harness.cassettes.cassette",
    "CassetteDocument": "harness.cassettes.cassette",
    "Interaction": "harness.cassettes.cassette",
    "RecordedRequest": "harness.cassettes.cassette",
    "RecordedResponse": "harness.cassettes.cassette",
    "DEFAULT_VOLATILE_FIELDS": "harness.cassettes.key",
    "KEYED_HEADERS": "harness.cassettes.key",
    "canonical_request_key": "harness.cassettes.key",
    "RecordMode": "harness.cassettes.modes",
    "CassetteTransport": "harness.cassettes.transport",
    "HttpxCassetteTransport": "harness.cassettes.transport",
    "CassetteError": "harness.errors",
    "CassetteFormatError": "harness.errors",
    "CassetteMissError": "harness.errors",
    "CassetteMiss": "harness.errors",  # the earlier name, kept until 1.0
    "CassetteTamperedError": "harness.errors",
    "CassetteUnplayedError": "harness.errors",
    "CassetteWriteError": "harness.errors",
    "RecordModeError": "harness.errors",
    "RecordRunIdError": "harness.cassettes.recording_run",
    "PLACEHOLDER": "harness.scrub",
    "SIGNING_KEY_VARIABLE": "harness.scrub",
    "Scrubber": "harness.scrub",
    "SseEvent": "harness.sse",
}


__getattr__, __dir__ = on_first_use(__name__, imported(_EXPORTS))


if TYPE_CHECKING:
    from harness.cassettes.cassette import (
        FORMAT,
        Cassette,
        CassetteDocument,
        Interaction,
        RecordedRequest,
        RecordedResponse,
    )
    from harness.cassettes.key import (
        DEFAULT_VOLATILE_FIELDS,
        KEYED_HEADERS,
        canonical_request_key,
    )
    from harness.cassettes.modes import RecordMode
    from harness.cassettes.recording_run import RecordRunIdError
    from harness.cassettes.transport import CassetteTransport, HttpxCassetteTransport
    from harness.errors import (
        CassetteError,
        CassetteFormatError,
        CassetteMiss,
        CassetteMissError,
        CassetteTamperedError,
        CassetteUnplayedError,
        CassetteWriteError,
        RecordModeError,
    )
    from harness.scrub import PLACEHOLDER, SIGNING_KEY_VARIABLE, Scrubber
    from harness.sse import SseEvent

__all__ = [
    "DEFAULT_VOLATILE_FIELDS",
    "FORMAT",
    "KEYED_HEADERS",
    "PLACEHOLDER",
    "SIGNING_KEY_VARIABLE",
    "Cassette",
    "CassetteDocument",
    "CassetteError",
    "CassetteFormatError",
    "CassetteMiss",
    "CassetteMissError",
    "CassetteTamperedError",
    "CassetteTransport",
    "CassetteUnplayedError",
    "CassetteWriteError",
    "HttpxCassetteTransport",
    "Interaction",
    "RecordMode",
    "RecordModeError",
    "RecordRunIdError",
    "RecordedRequest",
    "RecordedResponse",
    "Scrubber",
    "SseEvent",
    "canonical_request_key",
]
