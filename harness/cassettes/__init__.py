"""Request-hashed cassettes: canonical keys, O(1) replay, record modes, miss diagnosis,
scrubbing and tamper evidence, through an injected `httpx2` (or `httpx`) transport."""

from harness.cassettes.cassette import (
    FORMAT,
    Cassette,
    CassetteDocument,
    Interaction,
    RecordedRequest,
    RecordedResponse,
)
from harness.cassettes.key import DEFAULT_VOLATILE_FIELDS, KEYED_HEADERS, canonical_request_key
from harness.cassettes.transport import CassetteTransport, HttpxCassetteTransport, RecordMode
from harness.errors import (
    CassetteError,
    CassetteFormatError,
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
    "CassetteMissError",
    "CassetteTamperedError",
    "CassetteTransport",
    "CassetteUnplayedError",
    "CassetteWriteError",
    "HttpxCassetteTransport",
    "Interaction",
    "RecordMode",
    "RecordModeError",
    "RecordedRequest",
    "RecordedResponse",
    "Scrubber",
    "SseEvent",
    "canonical_request_key",
]
