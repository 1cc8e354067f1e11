"""The cassette file: one JSON document of recorded interactions, verified on load.

```json
{
  "format": "harness-cassette/2",
  "metadata": {"harness_version": "...", "provider": "openai", "recorded_at": "...",
               "identical_requests": "shared"},
  "interactions": [
    {"key": "sha256:...", "occurrence": 1,
     "request": {"method": "POST", "path": "/v1/chat/completions", "query": "",
                 "headers": {...}, "body": {...}},
     "response": {"status": 200, "headers": {...}, "body": {...}},
     "digest": "sha256:..."}
  ],
  "signature": "hmac-sha256:..."
}
```

The format names the request key (`harness.cassettes.key.KEY_VERSIONS`): `harness-cassette/2`
keys numbers by value (RFC 8785), `harness-cassette/1` as the client spelt them. Both are read,
replayed and verified; a `harness-cassette/1` file keeps its format and its keys when interactions
are added to it, and is also found by the version-2 key of a request (see `CassetteTransport`).
`identical_requests` says how the cassette answers a request sent again: `shared`, one answer per
distinct request, played again for every identical request; `separate` (and a file that does not
say), one recorded answer per occurrence, in order.

A body is stored as `body` (a JSON value), `body_text` or `body_base64`; a `text/event-stream`
response as `events`, the list of its SSE events. Keys and headers are in a stable order and the
file is indented, so re-recording unchanged traffic writes the same bytes and a git diff shows
only what changed.

Every reader (`Cassette.load`, `harness cassettes verify|show|stats|diff`, a save that merges, the
vcrpy persister) goes through one path, `read_cassette` then `parse_cassette`, which refuses with a
`CassetteFormatError` naming the file (and interaction and field): anything but a regular file
(read without blocking, so a FIFO never hangs), a file over `HARNESS_MAX_CASSETTE_BYTES`
(default 256 MiB), JSON nested deeper than `MAX_NESTING_DEPTH` levels, and any interaction whose
shape a replay could not serve.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import hmac
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Final, Literal, NamedTuple, cast, get_args

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    WrapValidator,
)
from pydantic_core import PydanticCustomError

from harness import files
from harness.cassettes.key import (
    KEY_VERSIONS,
    canonical_request_key,
    equivalent_request_key,
    keyed_headers,
)
from harness.errors import CassetteFormatError, CassetteTamperedError, CassetteWriteError
from harness.files import (
    FileTooLargeError,
    NotARegularFileError,
    read_regular_file,
    regular_file_exists,
)
from harness.json_body import MAX_BODY_DEPTH, json_nesting_depth, strict_json
from harness.lazy import ReadOnDemand
from harness.scrub import SIGNING_KEY_VARIABLE
from harness.sse import SseEvent, render_sse

CassetteFormat = Literal["harness-cassette/1", "harness-cassette/2"]
FORMAT: Final[CassetteFormat] = "harness-cassette/2"
"""The format new cassettes are written in; its request key is `KEY_VERSION`."""
SUPPORTED_FORMATS: Final[tuple[CassetteFormat, ...]] = get_args(CassetteFormat)
IdenticalRequests = Literal["shared", "separate"]
"""How a cassette answers an identical request sent again (see the module docstring)."""
SIGNATURE_PREFIX: Final = "hmac-sha256:"

MAX_NESTING_DEPTH: Final = MAX_BODY_DEPTH + 4
"""The deepest JSON nesting a cassette file may have (the top-level object is level 1): a body of
`MAX_BODY_DEPTH` levels sits in a request or response, in an interaction, in the `interactions`
list, in the top-level object."""
MAX_BYTES_VARIABLE: Final = "HARNESS_MAX_CASSETTE_BYTES"
DEFAULT_MAX_BYTES: Final = 256 * 1024 * 1024
"""The largest cassette file read, unless `HARNESS_MAX_CASSETTE_BYTES` says otherwise."""


class _CassetteModel(BaseModel):
    # Strict: a stored value is used as stored (replay reads it, digests hash it), so "200" is
    # not a status and 1.0 is not an occurrence.
    # Built on first use: a scripted run imports the cassette package without reading a cassette.
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)


_FROM_FILE: Final = object()
"""Validation context for values parsed from a cassette file."""


def _json_from_file(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    # A body parsed from a cassette file is JSON by construction; walking it again would cost
    # more than the parse. Bodies built in code are checked.
    return value if info.context is _FROM_FILE else handler(value)


JsonBody = Annotated[JsonValue, WrapValidator(_json_from_file)]


def _base64_text(value: str) -> str:
    try:
        base64.b64decode(value, validate=True)
    except ValueError:
        raise ValueError(
            "expected standard base64 text (A-Z, a-z, 0-9, +, / and = padding)"
        ) from None
    return value


Base64Text = Annotated[str, AfterValidator(_base64_text)]


def _decoded_body_headers(headers: dict[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        if name.lower() == "content-encoding" and value.strip().lower() not in ("", "identity"):
            raise ValueError(
                "a content-encoding header cannot be stored: bodies are stored decoded, so a "
                "client would decode them again; remove the header"
            )
    return headers


class RecordedRequest(_CassetteModel):
    """A request as written: scrubbed headers and query, the body as JSON when it is JSON."""

    method: str
    path: str
    query: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    body: JsonBody = None
    body_text: str | None = None
    body_base64: Base64Text | None = None

    @property
    def url(self) -> str:
        return f"{self.path}?{self.query}" if self.query else self.path

    def body_bytes(self) -> bytes:
        """The body as it is sent again (JSON re-serialised compactly)."""
        return body_bytes(self.body, self.body_text, self.body_base64)


class RecordedResponse(_CassetteModel):
    """A response as written: status, scrubbed headers, and the body or the SSE events."""

    status: int = Field(ge=100, le=599)
    headers: Annotated[dict[str, str], AfterValidator(_decoded_body_headers)] = Field(
        default_factory=dict
    )
    body: JsonBody = None
    body_text: str | None = None
    body_base64: Base64Text | None = None
    events: list[SseEvent] | None = None

    def chunks(self) -> list[bytes]:
        """The body as the chunks a replay delivers: one per SSE event, else one."""
        if self.events is not None:
            return [event.render() for event in self.events]
        body = body_bytes(self.body, self.body_text, self.body_base64)
        return [body] if body else []

    def body_bytes(self) -> bytes:
        if self.events is not None:
            return render_sse(self.events)
        return body_bytes(self.body, self.body_text, self.body_base64)

    def replay_parts(self) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
        """Status, header pairs and body chunks, as a replay sends them.

        Headers go out as UTF-8 bytes: httpx refuses non-ASCII text in a header, and a recorded
        value httpx decoded from the wire may hold some.
        """
        headers = [
            (name.encode("utf-8", "backslashreplace"), value.encode("utf-8", "backslashreplace"))
            for name, value in self.headers.items()
        ]
        return self.status, headers, self.chunks()


MAX_OFFSET_MS: Final = 3_600_000
"""The latest an event of a recorded stream may arrive, in milliseconds from the start of its
answer: an hour. Longer is no recording (a provider's stream lasts seconds or minutes), so a
paced replay never waits longer than this times its slowdown."""


def _event_offsets(offsets: list[int]) -> list[int]:
    """`offsets` when each is from 0 to `MAX_OFFSET_MS` and none is before the one preceding
    it (events arrive in order); else an error naming the event, its offset and the bounds.
    Checked on every load: the offsets are outside the digest, so only this check stops an
    edited file from pacing a replay for days."""
    previous = 0
    for index, offset in enumerate(offsets):
        if not 0 <= offset <= MAX_OFFSET_MS:
            raise PydanticCustomError(
                "event_offset_out_of_range",
                f"event {index} is at {_milliseconds(offset)}, outside the 0 to {MAX_OFFSET_MS:,} ms "
                "(an hour) an event's offset from the start of the answer may be; re-record "
                "the cassette, or delete the interaction's offsets_ms to replay it unpaced",
            )
        if offset < previous:
            raise PydanticCustomError(
                "event_offset_out_of_order",
                f"event {index} is at {offset:,} ms, before event {index - 1} at {previous:,} "
                "ms, and events arrive in order; re-record the cassette, or delete the "
                "interaction's offsets_ms to replay it unpaced",
            )
        previous = offset
    return offsets


def _milliseconds(offset: int) -> str:
    # an integer may have thousands of digits: the message says where it is, not all of them
    if offset >= 10**15:
        return "10^15 ms or more"
    if offset <= -(10**15):
        return "-10^15 ms or less"
    return f"{offset:,} ms"


EventOffsets = Annotated[
    list[
        Annotated[int, WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_OFFSET_MS})]
    ],
    AfterValidator(_event_offsets),
]
"""When each event of a stream arrived: milliseconds from the start of the answer, from 0 to
`MAX_OFFSET_MS`, in order."""


class Interaction(_CassetteModel):
    """One recorded request and its response; `occurrence` counts from 1 per key.

    `offsets_ms` is, for an event stream, when each event arrived, in milliseconds from the
    start of the answer: what a paced replay keeps to. It is timing, not content: outside the
    digest, so re-recording unchanged traffic leaves the file as it was. Each offset is at
    most an hour (3,600,000 ms) and none is before the one preceding it; a file that says
    otherwise is refused when it is loaded.
    """

    key: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    occurrence: int = Field(ge=1)
    request: RecordedRequest
    response: RecordedResponse
    digest: str
    offsets_ms: EventOffsets | None = None

    @classmethod
    def build(
        cls,
        key: str,
        occurrence: int,
        request: RecordedRequest,
        response: RecordedResponse,
        offsets_ms: list[int] | None = None,
    ) -> Interaction:
        """An interaction with its digest computed. Timing a file may not hold (a stream whose
        events came over more than `MAX_OFFSET_MS`) is not kept: the answer replays unpaced,
        and the cassette it is saved in still loads."""
        if offsets_ms is not None:
            try:
                _event_offsets(offsets_ms)
            except PydanticCustomError:
                offsets_ms = None
        return cls(
            key=key,
            occurrence=occurrence,
            request=request,
            response=response,
            digest=interaction_digest(key, occurrence, request, response),
            offsets_ms=offsets_ms,
        )

    def with_occurrence(self, occurrence: int) -> Interaction:
        return Interaction.build(self.key, occurrence, self.request, self.response, self.offsets_ms)


_INTERACTIONS: Final = TypeAdapter(list[Interaction], config=ConfigDict(defer_build=True))


class CassetteMetadata(_CassetteModel):
    harness_version: str
    provider: str | None = None
    recorded_at: str
    identical_requests: IdenticalRequests | None = None
    """`shared` or `separate` (see the module docstring); a file that does not say is `separate`,
    as every cassette was before the choice existed."""


class CassetteDocument(_CassetteModel):
    """The whole file."""

    format: CassetteFormat = FORMAT
    metadata: CassetteMetadata
    interactions: list[Interaction] = Field(default_factory=list)
    signature: str | None = None


def interaction_digest(
    key: str, occurrence: int, request: RecordedRequest, response: RecordedResponse
) -> str:
    """`sha256:` digest of the canonical JSON of an interaction without its digest."""
    return raw_interaction_digest(
        {
            "key": key,
            "occurrence": occurrence,
            "request": request.model_dump(mode="json", exclude_none=True),
            "response": response.model_dump(mode="json", exclude_none=True),
        }
    )


def raw_interaction_digest(interaction: Mapping[str, Any]) -> str:
    """The digest of an interaction as stored (its `digest` member, if any, is left out).

    The canonical bytes are compact JSON with every object's keys sorted, as orjson writes them
    with `OPT_SORT_KEYS` (stdlib `json` with sorted keys for what orjson refuses: integers beyond
    64 bits, lone surrogates). Raises `CassetteFormatError` when the interaction nests deeper
    than a cassette may (`MAX_NESTING_DEPTH`), so nothing is recorded that could not be read.
    """
    content = {name: interaction[name] for name in _DIGESTED if name in interaction}
    try:
        data = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError; also raised past orjson's own depth limit
        if _nesting_depth(content) > _MAX_INTERACTION_DEPTH:
            raise CassetteFormatError(_too_deep("the interaction")) from None
        data = _sorted_json(content)
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _sorted_json(value: Any) -> bytes:
    """Compact JSON with sorted keys as the standard library writes it: the digest and signature
    form of every cassette ever recorded, kept as it is so that they all still verify."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8", "backslashreplace")


_DIGESTED: Final = ("key", "occurrence", "request", "response")
_MAX_INTERACTION_DEPTH: Final = MAX_NESTING_DEPTH - 2
"""An interaction sits inside the top-level object and the `interactions` list."""


def _too_deep(what: str) -> str:
    return (
        f"{what} is nested deeper than {MAX_NESTING_DEPTH} levels, the most a cassette file may "
        "hold (counting the top-level object)"
    )


def _nesting_depth(value: Any) -> int:
    """How many containers deep `value` nests, counted without recursion; stops past the limit."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack and deepest <= MAX_NESTING_DEPTH:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def signature_for(cassette: Cassette, signing_key: str) -> str:
    """HMAC-SHA256 over the format, the metadata and every interaction digest, in order."""
    message = _sorted_json(
        {
            "format": cassette.format,
            "metadata": cassette.metadata.model_dump(mode="json", exclude_none=True),
            "digests": [entry.digest for entry in cassette.entries],
        }
    )
    mac = hmac.new(signing_key.encode("utf-8"), message, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + mac


def signing_key_from_environment() -> str | None:
    return os.environ.get(SIGNING_KEY_VARIABLE) or None


ExactRequest = tuple[str, str, str, tuple[tuple[str, str], ...], bytes]
"""A request's method, path, query, keyed headers and the SHA-256 of its body bytes: two requests
with the same are byte-identical where the key looks, so they have the same key."""


def exact_request(request: RecordedRequest) -> ExactRequest:
    """The exact form of a recorded request; its body as compact JSON, the bytes httpx's `json=`
    and the harness gateway send. A JSON body is written by orjson, ten times faster than the
    standard library, whose bytes it matches but for rare number spellings (`1e16` for
    `1e+16`): such a request is not found by its exact form and takes the full key instead."""
    body = request.body
    try:
        sent = orjson.dumps(body) if body is not None else request.body_bytes()
    except TypeError:  # beyond what orjson writes (an integer over 64 bits): as stored
        sent = request.body_bytes()
    return (
        request.method,
        request.path,
        request.query,
        tuple(sorted(keyed_headers(request.headers).items())),
        hashlib.sha256(sent).digest(),
    )


class Entry(NamedTuple):
    """What a cassette knows of an interaction without reading it again."""

    key: str
    occurrence: int
    digest: str
    """As stored."""
    method: str
    path: str


class Cassette:
    """A cassette in memory: typed interactions, the stored form they were read from, an index.

    `raw` is each interaction exactly as stored (what digests hash and `dumps` writes back);
    `interactions` are the same interactions as typed models, checked when the cassette was read;
    `by_key` lists the indexes of each key's interactions in file order.

    A cassette file as `dumps` writes it is kept as its bytes: each interaction is read, checked
    and verified as the file is loaded and then let go, and read again when it is replayed, so a
    replay holds about the file's size in memory, not the file and its whole parsed tree. Both
    `interactions` and `raw` are then sequences that read each item when it is looked at.
    """

    def __init__(
        self,
        path: Path,
        metadata: CassetteMetadata,
        interactions: Sequence[Interaction],
        *,
        raw: Sequence[dict[str, Any]] | None = None,
        signature: str | None = None,
        digests: list[str] | None = None,
        entries: list[Entry] | None = None,
        exact: dict[ExactRequest, str] | None = None,
        format: CassetteFormat = FORMAT,
    ) -> None:
        self.path = path
        self.format = format
        self.metadata = metadata
        self.signature = signature
        self.interactions = interactions
        self.raw: Sequence[dict[str, Any]] = (
            raw
            if raw is not None
            else [i.model_dump(mode="json", exclude_none=True) for i in interactions]
        )
        self._digests = digests
        self.entries = (
            entries
            if entries is not None
            else [
                Entry(i.key, i.occurrence, i.digest, i.request.method, i.request.path)
                for i in interactions
            ]
        )
        self._exact = exact
        self.by_key: dict[str, list[int]] = defaultdict(list)
        for index, entry in enumerate(self.entries):
            self.by_key[entry.key].append(index)

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def key_version(self) -> int:
        """The request key version the interactions are keyed with (named by the format)."""
        return next(version for version, name in KEY_VERSIONS.items() if name == self.format)

    @property
    def identical_requests(self) -> IdenticalRequests:
        """How this cassette answers an identical request sent again (`separate` unless said)."""
        return self.metadata.identical_requests or "separate"

    @classmethod
    def from_document(cls, path: Path, document: CassetteDocument) -> Cassette:
        return cls(
            path,
            document.metadata,
            list(document.interactions),
            signature=document.signature,
            format=document.format,
        )

    @property
    def computed_digests(self) -> list[str]:
        """The digest of each stored interaction, as its content says it should be."""
        if self._digests is None:
            self._digests = [raw_interaction_digest(interaction) for interaction in self.raw]
        return self._digests

    @property
    def exact_requests(self) -> dict[ExactRequest, str]:
        """Each recorded request's exact form -> its key (the first, for a form seen twice)."""
        if self._exact is None:
            self._exact = {}
            for interaction in self.interactions:
                self._exact.setdefault(exact_request(interaction.request), interaction.key)
        return self._exact

    @property
    def document(self) -> CassetteDocument:
        return CassetteDocument.model_validate(
            {
                "format": self.format,
                "metadata": self.metadata,
                "interactions": list(self.interactions),
                "signature": self.signature,
            }
        )

    @classmethod
    def new(
        cls,
        path: str | os.PathLike[str],
        provider: str | None = None,
        identical_requests: IdenticalRequests | None = None,
    ) -> Cassette:
        """An empty cassette for `path` (nothing is written until `save`)."""
        return cls(Path(path), new_metadata(provider, identical_requests), [])

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        allow_tampered: bool = False,
        signing_key: str | None = None,
        index_requests: bool = False,
    ) -> Cassette:
        """Read, check and verify the cassette file at `path` (see `from_bytes`)."""
        path = Path(path)
        return cls.from_bytes(
            path,
            read_cassette(path),
            allow_tampered=allow_tampered,
            signing_key=signing_key,
            index_requests=index_requests,
        )

    @classmethod
    def from_bytes(
        cls,
        path: Path,
        raw: bytes,
        *,
        allow_tampered: bool = False,
        signing_key: str | None = None,
        index_requests: bool = False,
    ) -> Cassette:
        """Check and verify the bytes of the cassette file at `path`.

        `index_requests` builds `exact_requests` as the file is read, for a replay (otherwise it
        is built when first asked for, reading every interaction again).

        Raises `CassetteFormatError` naming the file (and line, or interaction and field) when
        the bytes are not a cassette a replay can serve (see `parse_cassette`), and
        `CassetteTamperedError` naming the file and interaction when a digest or the signature
        does not match, unless `allow_tampered` is set. The signature is checked when a signing
        key is given or `HARNESS_CASSETTE_KEY` is set.
        """
        key = signing_key or signing_key_from_environment()
        with _collector_paused():
            cassette = parse_cassette(path, raw, index_requests=index_requests)
            if allow_tampered:
                return cassette
            problems = list(find_tampering(cassette, key))
        if problems:
            raise CassetteTamperedError(
                f"cassette {path} failed verification: {problems[0]}"
                + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
                + "; re-record it, or load it with allow_tampered=True to inspect it"
            )
        return cassette

    def replay_parts(self, index: int) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
        """Status, header pairs and body chunks of interaction `index`, as a replay sends them
        (`RecordedResponse.replay_parts`)."""
        interactions = self.interactions
        response = (
            interactions.response(index)
            if isinstance(interactions, _StoredInteractions)
            else interactions[index].response
        )
        return response.replay_parts()

    def dumps(self, signing_key: str | None = None) -> bytes:
        """The file bytes: stable key order, two-space indent, a final newline."""
        key = signing_key or signing_key_from_environment()
        data: dict[str, Any] = {
            "format": self.format,
            "metadata": self.metadata.model_dump(mode="json", exclude_none=True),
            "interactions": list(self.raw),
        }
        if key:
            data["signature"] = signature_for(self, key)
        try:
            text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        except ValueError:
            raise CassetteFormatError(
                f"cassette {self.path} cannot be written: a body holds a number JSON cannot "
                "represent (NaN, Infinity, or an integer of over 4,300 digits)"
            ) from None
        return text.encode("utf-8", "backslashreplace")  # a lone surrogate as its JSON escape


def new_metadata(
    provider: str | None, identical_requests: IdenticalRequests | None = None
) -> CassetteMetadata:
    from harness import __version__

    return CassetteMetadata(
        harness_version=__version__,
        provider=provider,
        recorded_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        identical_requests=identical_requests,
    )


# -- reading -----------------------------------------------------------------------------------


def max_cassette_bytes() -> int:
    """The size limit for reading a cassette: `HARNESS_MAX_CASSETTE_BYTES`, else 256 MiB."""
    value = os.environ.get(MAX_BYTES_VARIABLE, "").strip()
    if not value:
        return DEFAULT_MAX_BYTES
    if not re.fullmatch(r"[0-9]{1,19}", value) or int(value) == 0:
        raise CassetteFormatError(
            f"expected a whole number of bytes above 0 but got {MAX_BYTES_VARIABLE}={value!r} "
            "(type=str)"
        )
    return int(value)


def cassette_exists(path: Path) -> bool:
    """Whether a cassette file is at `path`: False when nothing is there.

    Anything else there (a folder, FIFO, socket or device), or a path that cannot be looked
    at, raises `CassetteFormatError` naming it, before anything is read or recorded.
    """
    try:
        return regular_file_exists(path)
    except (OSError, ValueError) as error:
        raise _unreadable(path, error) from None


def read_cassette(path: Path) -> bytes:
    """The bytes of the cassette file at `path`.

    Only a regular file of at most `max_cassette_bytes()` is read; anything else raises
    `CassetteFormatError` naming the path. The file is opened without blocking and checked
    before the first read, so a FIFO with no writer is refused at once instead of hanging.
    """
    limit = max_cassette_bytes()
    try:
        return read_regular_file(path, limit)
    except FileTooLargeError as error:
        raise CassetteFormatError(
            f"cassette {path} is {error.size:,} bytes, over the {limit:,}-byte limit; if it is "
            f"meant to be this large, raise the limit with {MAX_BYTES_VARIABLE}=<bytes>"
        ) from None
    except (OSError, ValueError) as error:
        raise _unreadable(path, error) from None


def _unreadable(path: Path, error: OSError | ValueError) -> CassetteFormatError:
    if isinstance(error, NotARegularFileError):
        return CassetteFormatError(
            f"cassette {path} is {error.kind}, not a cassette file; give the path of a .json "
            "cassette file"
        )
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return CassetteFormatError(f"cassette {path} cannot be read: {reason}")


def parse_cassette(path: Path, raw: bytes, *, index_requests: bool = False) -> Cassette:
    """Parse and check the bytes of the cassette file at `path`; digests are not compared here.

    Raises `CassetteFormatError` naming the file when the bytes are not UTF-8 JSON (with line
    and column), nest deeper than `MAX_NESTING_DEPTH`, name an unknown format version, or hold an
    interaction a replay could not serve (with its index and field): every field is type-checked
    strictly, statuses are 100-599, base64 bodies decode, SSE events are events `parse_sse`
    could have produced. Bodies are not walked: parsed JSON is JSON.

    Numbers are read by one rule, whoever reads: the fast parser (orjson) when its reading
    passes every check and every digest matches, otherwise the exact parser (the standard
    library's, which keeps integers beyond 64 bits that orjson reads as floats), whose reading
    decides. The garbage collector is paused meanwhile: a cassette is many small containers,
    none of them cyclic, and collecting during the build costs more than the parse.
    """
    with _collector_paused():
        return _parse(path, raw, index_requests=index_requests)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a cassette is built: it is many small
    containers, none of them cyclic, and collecting during the build costs more than the parse."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _parse(path: Path, raw: bytes, *, index_requests: bool) -> Cassette:
    kept = _kept_as_bytes(path, raw, index_requests=index_requests)
    if kept is not None:
        return kept
    try:
        fast: Cassette | None = _checked(path, orjson.loads(raw))
    except (orjson.JSONDecodeError, CassetteFormatError):
        fast = None
    if fast is not None and all(
        _same(entry.digest, computed)
        for entry, computed in zip(fast.entries, fast.computed_digests, strict=True)
    ):
        return fast
    return _checked(path, _exact_loads(path, raw))


_ARRAY_OPENS: Final = b'\n  "interactions": [\n'
_ARRAY_CLOSES: Final = b"\n  ]"
_ITEM_CLOSES: Final = re.compile(rb"\n    }")


def _kept_as_bytes(path: Path, raw: bytes, *, index_requests: bool) -> Cassette | None:
    """The cassette in `raw` kept as its bytes, when the file is laid out as `dumps` writes it
    and every interaction reads with the fast parser, checks and verifies; else None, and the
    whole file is read the general way (which reports what is wrong with it).

    `dumps` writes JSON indented by two spaces, and JSON text holds no raw line break inside a
    string, so a line that is exactly four spaces and `}` ends an interaction and nothing else,
    and one of two spaces and `]` ends the list: each interaction's bytes are found without
    parsing the file at once.
    """
    opens = raw.find(_ARRAY_OPENS)
    # the only top-level list, so its close is the last line of two spaces and `]`
    closes = raw.rfind(_ARRAY_CLOSES)
    if opens < 0 or closes < opens + len(_ARRAY_OPENS) - 1:
        return None
    start = opens + len(_ARRAY_OPENS)
    spans: list[tuple[int, int]] = []
    for found in _ITEM_CLOSES.finditer(raw, start, closes):
        end = found.end()
        spans.append((start, end))
        start = end + 2 if raw[end : end + 2] == b",\n" else end
    if start != closes:
        return None
    try:
        head = orjson.loads(raw[: opens + len(_ARRAY_OPENS)] + raw[closes:])
        frame = _checked(path, head)
    except (orjson.JSONDecodeError, CassetteFormatError):
        return None
    if frame.interactions:
        return None
    responses: list[tuple[int, int] | None] = []
    entries: list[Entry] = []
    digests: list[str] = []
    exact: dict[ExactRequest, str] | None = {} if index_requests else None
    view = memoryview(raw)
    for start, end in spans:
        try:
            item = orjson.loads(view[start:end])
            interaction = Interaction.model_validate(item, context=_FROM_FILE)
            computed = raw_interaction_digest(item)
        except (orjson.JSONDecodeError, ValidationError, CassetteFormatError):
            return None
        if not _same(interaction.digest, computed):
            return None  # read again the exact way, which decides
        request = interaction.request
        # the digest verified: one string for the stored and the computed one
        entries.append(
            Entry(interaction.key, interaction.occurrence, computed, request.method, request.path)
        )
        digests.append(computed)
        responses.append(_response_span(raw, start, end))
        if exact is not None:
            exact.setdefault(exact_request(request), interaction.key)
    stored = _StoredInteractions(raw, spans, responses)
    return Cassette(
        path,
        frame.metadata,
        stored,
        raw=ReadOnDemand(len(stored), stored.raw_item),
        signature=frame.signature,
        digests=digests,
        entries=entries,
        exact=exact,
        format=frame.format,
    )


_RESPONSE_OPENS: Final = b'\n      "response": '
_DIGEST_OPENS: Final = b',\n      "digest": '
_MEMBER_OPENS: Final = b'\n      "'


def _response_span(raw: bytes, start: int, end: int) -> tuple[int, int] | None:
    """Where the response of the interaction in `raw[start:end]` lies, when `dumps` wrote it
    (`response` then `digest`, the interaction's members at six spaces): a replay then reads
    the response alone. None for any other order, and the whole interaction is read instead."""
    opens = raw.find(_RESPONSE_OPENS, start, end)
    if opens < 0:
        return None
    opens += len(_RESPONSE_OPENS)
    closes = raw.find(_DIGEST_OPENS, opens, end)
    if closes < 0 or raw.find(_MEMBER_OPENS, opens, closes) >= 0:
        return None
    return opens, closes


class _StoredInteractions(ReadOnDemand[Interaction]):
    """Interactions kept as their bytes in the cassette file, each read when it is looked at
    (they were all read, checked and verified when the file was loaded)."""

    def __init__(
        self,
        source: bytes,
        spans: list[tuple[int, int]],
        responses: list[tuple[int, int] | None],
    ) -> None:
        super().__init__(len(spans), self._interaction)
        self._source = source
        self._spans = spans
        self._responses = responses

    def _interaction(self, index: int) -> Interaction:
        with _collector_paused():
            return Interaction.model_validate(self.raw_item(index), context=_FROM_FILE)

    def response(self, index: int) -> RecordedResponse:
        """The response of interaction `index` alone: what a replay sends (the request, often
        the larger part, is not read again)."""
        span = self._responses[index]
        with _collector_paused():
            if span is None:
                return RecordedResponse.model_validate(
                    self.raw_item(index)["response"], context=_FROM_FILE
                )
            start, end = span
            return RecordedResponse.model_validate(
                orjson.loads(memoryview(self._source)[start:end]), context=_FROM_FILE
            )

    def raw_item(self, index: int) -> dict[str, Any]:
        """Interaction `index` as stored."""
        start, end = self._spans[index]
        item: dict[str, Any] = orjson.loads(memoryview(self._source)[start:end])
        return item


def _exact_loads(path: Path, raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CassetteFormatError(
            f"{path}: cassette is not UTF-8 text: {error.reason} at byte {error.start}"
        ) from None
    if json_nesting_depth(raw) > MAX_NESTING_DEPTH:
        raise CassetteFormatError(f"{path}: {_too_deep('the cassette JSON')}")
    try:
        return strict_json(text)
    except json.JSONDecodeError as error:
        raise CassetteFormatError(
            f"{path}:{error.lineno}:{error.colno}: cassette is not valid JSON: {error.msg}"
        ) from None
    except ValueError as error:  # from the hooks, or an integer of over 4,300 digits
        raise CassetteFormatError(f"{path}: cassette is not valid JSON: {error}") from None


_TOP_LEVEL_KEYS: Final = frozenset({"format", "metadata", "interactions", "signature"})


def _checked(path: Path, data: Any) -> Cassette:
    """The cassette parsed `data` describes, every shape checked (see `parse_cassette`)."""
    if not isinstance(data, dict):
        raise CassetteFormatError(
            f"{path}:1:1: expected a JSON object with a 'format' key but got {type(data).__name__}"
        )
    found = data.get("format")
    if found not in SUPPORTED_FORMATS:
        shown = (
            _shortened(repr(found))
            if isinstance(found, str | None)
            else f"of type {type(found).__name__}"
        )
        raise CassetteFormatError(
            f"{path}: unknown cassette format {shown}; supported: {', '.join(SUPPORTED_FORMATS)}"
        )
    unknown = set(data) - _TOP_LEVEL_KEYS
    if unknown:
        names = ", ".join(_shortened(name) for name in sorted(unknown))
        raise CassetteFormatError(f"{path}: unknown top-level key(s): {names}")
    try:
        metadata = CassetteMetadata.model_validate(data.get("metadata"))
    except ValidationError as error:
        raise _invalid(path, "invalid cassette", error, ("metadata",)) from None
    raw = data.get("interactions", [])
    signature = data.get("signature")
    if not isinstance(raw, list) or not (signature is None or isinstance(signature, str)):
        raise CassetteFormatError(
            f"{path}: invalid cassette: 'interactions' must be a list and 'signature' a string"
        )
    try:
        interactions = _INTERACTIONS.validate_python(raw, context=_FROM_FILE)
    except ValidationError as error:
        index, *_ = error.errors()[0]["loc"]
        raise _invalid(path, f"invalid interaction #{index}", error, skip=1) from None
    return Cassette(
        path,
        metadata,
        interactions,
        raw=raw,
        signature=signature,
        digests=[_stored_digest(path, index, item) for index, item in enumerate(raw)],
        format=cast(CassetteFormat, found),
    )


def _stored_digest(path: Path, index: int, interaction: dict[str, Any]) -> str:
    try:
        return raw_interaction_digest(interaction)
    except CassetteFormatError as error:
        raise CassetteFormatError(f"{path}: interaction #{index}: {error}") from None


def _invalid(
    path: Path, what: str, error: ValidationError, prefix: tuple[str, ...] = (), skip: int = 0
) -> CassetteFormatError:
    """The first problem pydantic found, by field; never the offending value, which may be a
    secret or the user's content."""
    first = error.errors()[0]
    where = ".".join(_shortened(str(part)) for part in (*prefix, *first["loc"][skip:]))
    more = f" ({error.error_count()} problems in all)" if error.error_count() > 1 else ""
    at = f" at {where}" if where else ""
    return CassetteFormatError(f"{path}: {what}{at}: {first['msg']}{more}")


def _shortened(part: str, limit: int = 60) -> str:
    return part if len(part) <= limit else part[: limit - 3] + "..."


def parse_document(path: Path, raw: bytes) -> CassetteDocument:
    """Parse and check file bytes into a typed document (digests are not compared)."""
    return parse_cassette(path, raw).document


def find_tampering(cassette: Cassette, signing_key: str | None) -> Iterator[str]:
    """Describe every interaction whose digest does not match or whose occurrence is out of
    order, and a signature that does not match (or is missing while a signing key is set).

    Occurrences must count 1, 2, ... per key in file order, since file order is replay order:
    swapping two answers to the same request, or duplicating one, is an edit too.
    """
    seen: dict[str, int] = defaultdict(int)
    for index, (entry, computed) in enumerate(
        zip(cassette.entries, cassette.computed_digests, strict=True)
    ):
        where = (
            f"interaction #{index} ({entry.method} {entry.path}, "
            f"key {entry.key}, occurrence {entry.occurrence})"
        )
        if not _same(entry.digest, computed):
            yield f"{where}: digest mismatch"
        seen[entry.key] += 1
        if entry.occurrence != seen[entry.key]:
            yield (
                f"{where}: occurrence out of order, {seen[entry.key]} expected "
                "(interactions of one key replay in file order)"
            )
    if signing_key and cassette.signature is None:
        yield "unsigned: HARNESS_CASSETTE_KEY is set, so every cassette must carry its signature"
    elif signing_key and cassette.signature is not None:
        expected = signature_for(cassette, signing_key)
        if not _same(cassette.signature, expected):
            yield "signature mismatch: the file was changed or signed with another key"


def _same(stored: str, expected: str) -> bool:
    """Constant-time equality of a stored digest or signature with the ASCII one expected."""
    try:
        return hmac.compare_digest(stored, expected)
    except TypeError:  # non-ASCII text, which no digest or signature is
        return False


def renumber(interactions: Iterable[Interaction]) -> list[Interaction]:
    """Interactions with `occurrence` recounted per key in list order, every digest recomputed.

    Recomputing also normalises an interaction read from a file that spelt a default out (an
    explicit `"body": null`): its digest then covers what `dumps` writes.
    """
    counts: dict[str, int] = defaultdict(int)
    result: list[Interaction] = []
    for interaction in interactions:
        counts[interaction.key] += 1
        result.append(interaction.with_occurrence(counts[interaction.key]))
    return result


# -- writing -----------------------------------------------------------------------------------


def write_atomically(path: Path, data: bytes) -> None:
    """Write the cassette at `path` atomically (`harness.files.write_atomically`).

    The caller holds the cassette's lock (`harness.cassettes.store.lock_for`), so temporary files
    of this cassette already there were left by killed processes and are removed first. An
    existing file keeps its permission bits. Failures raise `CassetteWriteError` and leave no
    temporary file behind.
    """
    try:
        files.write_atomically(path, data, remove_stale=True)
    except OSError as error:
        raise CassetteWriteError(
            f"cassette {path} cannot be written: {error.strerror or error}"
        ) from error


def body_bytes(body: JsonValue, text: str | None, encoded: str | None) -> bytes:
    """A stored body as bytes: JSON as compact JSON (what httpx's `json=` sends), else as is."""
    if body is not None:
        compact = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return compact.encode("utf-8", "backslashreplace")
    if text is not None:
        return text.encode("utf-8", "backslashreplace")
    if encoded is not None:
        return base64.b64decode(encoded, validate=True)
    return b""


def rekey(request: RecordedRequest, volatile: Iterable[str] = (), *, version: int = 2) -> str:
    """The canonical key of a stored request (headers as stored, i.e. scrubbed), of the key
    `version` (`harness.cassettes.key.KEY_VERSIONS`)."""
    return canonical_request_key(
        request.method,
        request.url,
        request.headers,
        request.body_bytes(),
        volatile=tuple(volatile),
        version=version,
    )


def equivalent_key(request: RecordedRequest, volatile: Iterable[str] = ()) -> str:
    """The equivalent key (`harness.cassettes.key.equivalent_request_key`) of a stored
    request."""
    return equivalent_request_key(
        request.method,
        request.url,
        request.headers,
        request.body_bytes(),
        volatile=tuple(volatile),
    )
