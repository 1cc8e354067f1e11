"""vcrpy interop: our request key and cassette format for vcrpy users, and an importer.

Three ways in, for teams that already record with vcrpy or pytest-recording and keep their
clients (official SDKs included):

- `request_hash`, a vcrpy matcher that compares requests by `canonical_request_key`, so JSON key
  order, volatile fields and host do not matter and behaviour-changing headers do;
- `HarnessPersister`, a vcrpy persister that stores vcrpy cassettes as `harness-cassette` JSON
  files, scrubbed exactly as `CassetteTransport` scrubs (the same `record_request` and
  `record_response`), and loads them back for vcrpy. It saves as `CassetteTransport` does, under
  the cassette's lock, merging into what is on disk, so pytest-xdist workers sharing a cassette
  lose nothing; `HarnessRerecordingPersister` is its record mode `all`, whose first save of a
  run replaces the file and later saves of the run merge;
- `import_vcr`, which converts existing vcrpy YAML cassettes (including pydantic-ai's
  `parsed_body` variant) into `harness-cassette/2` files `CassetteTransport` replays.

`register(vcr)` installs the matcher and the persister for the `vcr.VCR`'s record mode. With
pytest-recording, do it in the `pytest_recording_configure` hook of a `conftest.py`:

```python
import pytest
from harness.cassettes.vcr import register


def pytest_recording_configure(config, vcr):
    register(vcr)


@pytest.fixture(scope="module")
def vcr_config():
    # "json" only names the files `*.json`; the persister writes harness-cassette JSON anyway.
    return {"serializer": "json", "match_on": ["method", "path", "request_hash"]}
```

`request_hash` alone decides a match (the key covers method and path); `method` and `path` in
front of it give vcrpy's "no match" report a closest recorded request, whose `request_hash`
failure then names the differences.

Registering the persister replaces pytest-recording's own, so extra cassettes named as
`@pytest.mark.vcr("other.yaml")` arguments are not loaded; import them with `import_vcr` instead.
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, Protocol, TypeVar
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError
from vcr.persisters.filesystem import CassetteNotFoundError  # type: ignore[import-untyped]
from vcr.request import Request as VcrRequest  # type: ignore[import-untyped]
from vcr.util import read_body  # type: ignore[import-untyped]

from harness import bounded_yaml
from harness.bounded_yaml import MIB, YamlInputError, YamlLimitError, YamlLimits
from harness.cassettes.cassette import (
    Cassette,
    CassetteDocument,
    CassetteMetadata,
    Interaction,
    cassette_exists,
    new_metadata,
    parse_cassette,
    read_cassette,
    write_atomically,
)
from harness.cassettes.diff import structural_diff
from harness.cassettes.key import canonical_request_bytes, canonical_request_key
from harness.cassettes.record import Recorder
from harness.cassettes.recording_run import given_run_id, join_run
from harness.cassettes.store import lock_for, save_recording
from harness.errors import CassetteError, CassetteFormatError
from harness.json_body import MAX_BODY_DEPTH, json_nesting_depth
from harness.providers import ANTHROPIC_VERSION, detect_provider, detect_spec
from harness.scrub import DEFAULT_SCRUBBER, Scrubber

MATCHER_NAME: Final = "request_hash"
VCR_CASSETTE_SUFFIXES: Final = (".yaml", ".yml")
MATCH_ON: Final = ("method", "path", MATCHER_NAME)
"""The `match_on` to use: `request_hash` decides, `method` and `path` let vcrpy find the closest
recorded request to explain a miss with."""
VCR_DEFAULT_MATCH_ON: Final = ("method", "scheme", "host", "port", "path", "query")
"""vcrpy's own default `match_on`; `register` replaces it, and only it, with `MATCH_ON`."""

MAX_MISMATCH_LINES: Final = 3


class VcrImportError(CassetteError, ValueError):
    """Raised when `harness cassettes import-vcr` (`import_vcr`) is given sources it cannot convert:
    a missing path, a folder without cassettes, or two sources that would write the same output
    file."""

    code: ClassVar[str] = "cassette_vcr_import_invalid"


class RequestHashMismatchError(CassetteError, AssertionError):
    """Raised by vcrpy's `request_hash` matcher (installed by `harness.cassettes.vcr.register`) when
    two requests have different canonical keys: an `AssertionError`, which is how vcrpy matchers say
    "no match" (vcrpy reports the message)."""

    code: ClassVar[str] = "cassette_request_hash_mismatch"


class VcrMergeError(CassetteError, ValueError):
    """Raised by vcrpy's save of a cassette through `HarnessPersister` (installed by
    `harness.cassettes.vcr.register`) when the save leaves out interactions it loaded from the
    file: `record_mode='all'` given to `use_cassette` instead of the `VCR`,
    `drop_unused_requests=True`, or a `before_save_interaction` hook that drops them. The
    persister merges every save into the file, so that parallel workers lose nothing, and cannot
    tell an interaction to remove from one another test still replays; the message names the
    fix. Nothing is written."""

    code: ClassVar[str] = "cassette_vcr_merge_refused"


# -- the matcher -----------------------------------------------------------------------------------


class RecordedVcrRequest(VcrRequest):  # type: ignore[misc]  # vcrpy ships no type information
    """A vcrpy request loaded from a harness cassette, carrying the key it was recorded under.

    The stored request is the scrubbed one, so recomputing its key could differ from the live
    request's (a secret-shaped string in a prompt becomes `[SCRUBBED]`); the recorded key is what
    the live request hashed to, exactly what `CassetteTransport` replays by.
    """

    def __init__(
        self, *, recorded_key: str, method: str, uri: str, body: bytes | None, headers: Any
    ) -> None:
        super().__init__(method, uri, body, headers)
        self.recorded_key = recorded_key


def vcr_request_key(request: Any) -> str:
    """The `canonical_request_key` of a vcrpy `Request` (`.method`, `.uri`, `.headers`, `.body`).

    A request loaded by `HarnessPersister` answers with the key it was recorded under.
    """
    if isinstance(request, RecordedVcrRequest):
        return str(request.recorded_key)
    return canonical_request_key(*_vcr_request_parts(request))


def request_hash(r1: Any, r2: Any) -> None:
    """vcrpy matcher: the two requests match when their canonical request keys are equal.

    vcrpy passes the request being made first and the recorded one second. A mismatch raises
    `RequestHashMismatchError` (an `AssertionError`) naming both keys and the first differences of
    their canonical forms, scrubbed, so vcrpy's "no match" report says why.
    """
    requested, recorded = vcr_request_key(r1), vcr_request_key(r2)
    if requested == recorded:
        return
    differences = list(structural_diff(_scrubbed_canonical_form(r2), _scrubbed_canonical_form(r1)))
    lines = [f"canonical request keys differ: {requested} (this request) != {recorded} (recorded)"]
    if differences:
        lines.append("differences, recorded -> this request:")
        lines.extend(f"  {line}" for line in differences[:MAX_MISMATCH_LINES])
        if len(differences) > MAX_MISMATCH_LINES:
            lines.append(f"  ... and {len(differences) - MAX_MISMATCH_LINES} more")
    else:
        lines.append(
            "(their canonical forms are equal now: the recorded key was computed from the request "
            "before it was scrubbed)"
        )
    raise RequestHashMismatchError("\n".join(lines))


def _scrubbed_canonical_form(request: Any) -> Any:
    method, uri, headers, body = _vcr_request_parts(request)
    scrubber = DEFAULT_SCRUBBER.for_request(headers, urlsplit(uri).query, body)
    return scrubber.json(json.loads(canonical_request_bytes(method, uri, headers, body)))


def _vcr_request_parts(request: Any) -> tuple[str, str, list[tuple[str, str]], bytes]:
    """Method, URI, header pairs and body bytes of a vcrpy request."""
    headers = [(str(name), _header_text(value)) for name, value in request.headers.items()]
    return str(request.method), str(request.uri), headers, _body_bytes(read_body(request))


def _header_text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


def _body_bytes(body: object) -> bytes:
    """A body as the bytes a client sends: text UTF-8, a JSON value `json.dumps`-ed."""
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, dict | list | int | float | bool):
        return json.dumps(body).encode("utf-8")
    raise CassetteFormatError(
        "expected a request body of bytes, str, None or a JSON value but got a body of "
        f"type={type(body).__name__}"
    )


# -- vcrpy's cassette shapes -----------------------------------------------------------------------


class _VcrModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


HeaderValues = list[str] | str
"""vcrpy writes a list of values per header; a single string is accepted too."""


class VcrRequestRecord(_VcrModel):
    """A request as vcrpy stores it; the body under `body`, or pydantic-ai's `parsed_body`."""

    method: str
    uri: str
    headers: dict[str, HeaderValues] = Field(default_factory=dict)
    body: bytes | JsonValue = None
    parsed_body: JsonValue = None

    def header_pairs(self) -> list[tuple[str, str]]:
        return _header_pairs(self.headers)

    def body_bytes(self) -> bytes:
        """The body exactly as the recording client sent it (`json.dumps` of `parsed_body`)."""
        if "parsed_body" in self.model_fields_set:
            if "body" in self.model_fields_set:
                raise ValueError("a request has both 'body' and 'parsed_body'; keep one of them")
            return json.dumps(self.parsed_body).encode("utf-8")
        return _body_bytes(self.body)


class VcrStatus(_VcrModel):
    code: int = Field(ge=100, le=599)
    message: str | None = None


class VcrResponseBody(_VcrModel):
    string: bytes | str | None = None


class VcrResponseRecord(_VcrModel):
    """A response as vcrpy stores it; `url` is tornado's effective URL, which is not kept."""

    status: VcrStatus
    headers: dict[str, HeaderValues] = Field(default_factory=dict)
    body: VcrResponseBody | None = None
    parsed_body: JsonValue = None
    url: str | None = None

    def header_pairs(self) -> list[tuple[str, str]]:
        return _header_pairs(self.headers)

    def content(self) -> bytes:
        """The body as received: `json.dumps` of `parsed_body`, and compression undone."""
        if "parsed_body" in self.model_fields_set:
            if self.body is not None and self.body.string:
                raise ValueError("a response has both 'body' and 'parsed_body'; keep one of them")
            return json.dumps(self.parsed_body).encode("utf-8")
        raw = _body_bytes(self.body.string if self.body is not None else None)
        return _decoded_content(self.status.code, self.header_pairs(), raw)


class VcrInteraction(_VcrModel):
    request: VcrRequestRecord
    response: VcrResponseRecord


class VcrCassetteFile(_VcrModel):
    """A vcrpy cassette file, format version 1 (`version` may be left out)."""

    interactions: list[VcrInteraction]
    version: Literal[1] = 1
    metadata: dict[str, JsonValue] | None = None


def _header_pairs(headers: Mapping[str, HeaderValues]) -> list[tuple[str, str]]:
    return [
        (name, value)
        for name, values in headers.items()
        for value in ([values] if isinstance(values, str) else values)
    ]


def _decoded_content(status: int, headers: list[tuple[str, str]], raw: bytes) -> bytes:
    """`raw` with its `content-encoding` undone: cassettes store bodies decoded, no encoding."""
    encodings = [
        coding.strip().lower()
        for name, value in headers
        if name.lower() == "content-encoding"
        for coding in value.split(",")
    ]
    if not raw or all(coding in ("", "identity") for coding in encodings):
        return raw
    try:
        decoded = httpx.Response(status, headers=headers, content=raw).content
    except httpx.DecodingError as error:
        raise ValueError(
            f"the body does not decode as content-encoding {', '.join(encodings)}: {error}"
        ) from None
    if decoded == raw:
        raise ValueError(
            f"content-encoding {', '.join(encodings)} is not supported here; record with "
            "decode_compressed_response=True or install the decoder httpx needs for it"
        )
    return decoded


# -- the persister ---------------------------------------------------------------------------------


class HarnessPersister:
    """vcrpy persister that keeps cassettes as `harness-cassette` JSON whatever their suffix, and
    merges every save into the file, so that processes recording one cassette at once (pytest-xdist
    workers) lose none of each other's interactions.

    `load_cassette` verifies the file (digests, and the signature when `HARNESS_CASSETTE_KEY` is
    set) and raises `CassetteNotFoundError` when it is absent or empty, which vcrpy reads as "record
    it"; a file in another format raises `CassetteFormatError` (a `ValueError`) instead of being
    treated as empty. Loaded requests carry no scheme or host (the format keys requests without
    them), so match with `MATCH_ON`, never with `uri`, `scheme`, `host` or `port`.

    vcrpy saves the whole cassette as this process knows it: what it loaded and what it recorded
    since. `save_cassette` writes only the interactions recorded since, each scrubbed with the
    transport's own `record_request` and `record_response`: under the cassette's lock it re-reads
    the file, keeps every interaction there (another process's included) and appends them
    (`harness.cassettes.store.save_recording`, as `CassetteTransport` saves), writing atomically.
    A request sent twice keeps both answers, as vcrpy replays each recorded answer once. Nothing
    recorded means no write.

    Merging never removes an interaction, so a save that leaves out some of what it loaded is
    refused with `VcrMergeError` naming the fix: re-recording (record mode `all`) is
    `HarnessRerecordingPersister`'s, which `register` installs on a `VCR` in that mode. Both
    ignore vcrpy's `serializer`.
    """

    rerecords: ClassVar[bool] = False
    """Whether a save re-records (record mode `all`) instead of merging."""

    @classmethod
    def load_cassette(
        cls, cassette_path: str | os.PathLike[str], serializer: object = None
    ) -> tuple[list[Any], list[dict[str, Any]]]:
        path = Path(cassette_path)
        _LAST_LOAD.loaded = None
        if not cassette_exists(path):
            raise CassetteNotFoundError(f"cassette {path} does not exist")
        raw = read_cassette(path)
        if not raw.strip():
            # vcrpy records over an empty file, as it would over a missing one.
            raise CassetteNotFoundError(f"cassette {path} is empty")
        if not raw.lstrip().startswith(b"{"):
            raise CassetteFormatError(
                f"{path}: expected a harness-cassette JSON file but this looks like a vcrpy "
                "YAML cassette; convert it with harness.cassettes.vcr.import_vcr "
                "(`harness cassettes import-vcr`) or delete it to re-record"
            )
        cassette = Cassette.from_bytes(path, raw)
        requests = [
            RecordedVcrRequest(
                recorded_key=interaction.key,
                method=interaction.request.method,
                uri=interaction.request.url,
                body=interaction.request.body_bytes() or None,
                headers=dict(interaction.request.headers),
            )
            for interaction in cassette.interactions
        ]
        responses = [_vcr_response(interaction) for interaction in cassette.interactions]
        _LAST_LOAD.loaded = _LoadedCassette(
            path=_resolved(path),
            keys=Counter(request.recorded_key for request in requests),
            key_version=cassette.key_version,
        )
        return requests, responses

    @classmethod
    def save_cassette(
        cls,
        cassette_path: str | os.PathLike[str],
        cassette_dict: Mapping[str, Any],
        serializer: object = None,
    ) -> None:
        path = Path(cassette_path)
        metadata = cassette_dict.get("metadata")
        if metadata:
            raise CassetteFormatError(
                f"{path}: a harness cassette has no place for vcrpy cassette metadata "
                f"(get_metadata keys: {', '.join(sorted(map(str, metadata)))}); "
                "keep such values outside the cassette"
            )
        loaded: _LoadedCassette | None = getattr(_LAST_LOAD, "loaded", None)
        if loaded is not None and loaded.path != _resolved(path):
            loaded = None  # another cassette was loaded since; nothing to compare with
        _LAST_LOAD.loaded = None
        requests = list(cassette_dict["requests"])
        if not cls.rerecords and loaded is not None:
            _refuse_dropped(path, loaded.keys, requests)
        key_version = loaded.key_version if loaded is not None and not cls.rerecords else None
        pairs: list[tuple[int, str, httpx.Request, VcrResponseRecord]] = []
        for index, (request, response) in enumerate(
            zip(requests, cassette_dict["responses"], strict=True)
        ):
            if isinstance(request, RecordedVcrRequest):
                continue  # loaded from the file, which keeps it
            try:
                sent = _httpx_request(request)
            except (ValueError, httpx.InvalidURL) as error:
                raise CassetteFormatError(
                    f"{path}: interaction #{index} request: {error}"
                ) from None
            _check_nesting(path, f"interaction #{index} request", sent.content)
            try:
                record = VcrResponseRecord.model_validate(response)
            except ValidationError as error:
                raise _validation_error(path, error, f"interaction #{index} response") from None
            key = (
                vcr_request_key(request)
                if key_version is None
                else canonical_request_key(*_vcr_request_parts(request), version=key_version)
            )
            pairs.append((index, key, sent, record))
        recorded = _build_interactions(path, _recorder(path, DEFAULT_SCRUBBER), pairs)
        if not recorded and not cls.rerecords:
            return
        save_recording(
            path,
            recorded,
            replace=cls.rerecords,
            provider=_provider_of(recorded),
            run_token=_run_token(),
        )


class HarnessRerecordingPersister(HarnessPersister):
    """`HarnessPersister` for record mode `all`, which `register` installs on a `VCR` in that mode.

    A save writes what vcrpy recorded, never what it loaded: the first save of a recording run
    replaces the file, and later saves of the same run (other tests, other pytest-xdist workers)
    merge into it (`harness.cassettes.store.save_recording`, as `CassetteTransport` re-records).
    A run is a pytest session with its workers (`PYTEST_XDIST_TESTRUNUID`), or every process
    given one `HARNESS_RECORD_RUN_ID` (`harness.cassettes.recording_run`); without either, this
    process. So a re-recorded cassette holds the run's traffic, and no stale interaction survives,
    as with vcrpy's `drop_unused_requests=True`.
    """

    rerecords: ClassVar[bool] = True


@dataclass(frozen=True, kw_only=True)
class _LoadedCassette:
    """What this thread last loaded for vcrpy: the keys it handed over, and their version."""

    path: Path
    keys: Counter[str]
    key_version: int


_LAST_LOAD: Final = threading.local()
"""`loaded`: the `_LoadedCassette` a save is checked against (vcrpy loads and saves a cassette on
one thread, nothing in between)."""


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def _refuse_dropped(path: Path, loaded: Counter[str], requests: Sequence[Any]) -> None:
    """Raise `VcrMergeError` when `requests` leave out interactions this thread loaded."""
    kept = Counter(
        request.recorded_key for request in requests if isinstance(request, RecordedVcrRequest)
    )
    dropped = sum((loaded - kept).values())
    if not dropped:
        return
    raise VcrMergeError(
        f"{path}: vcrpy saved this cassette without {dropped} of the {loaded.total()} "
        "interaction(s) it loaded from it (record_mode='all' given to use_cassette re-records "
        "them; drop_unused_requests=True or a before_save_interaction hook leaves them out), but "
        "HarnessPersister merges every save so that parallel workers lose nothing, and removes "
        "no interaction another test may replay. To re-record, set the record mode on the VCR "
        "before register(vcr) (vcr.VCR(record_mode='all'); pytest-recording: --record-mode=all, "
        "vcr_config or the vcr marker) or pass persister=HarnessRerecordingPersister to "
        "use_cassette; to keep every interaction, leave drop_unused_requests unset"
    )


_PROCESS_RUN_TOKEN: Final = uuid.uuid4().hex
"""The run of a process given no run name: its saves are the run."""


def _run_token() -> str:
    """The save marker of this process's recording run (`RecordingRun.token`), joined now."""
    named = given_run_id()
    return join_run(named).token if named is not None else _PROCESS_RUN_TOKEN


def _provider_of(interactions: Iterable[Interaction]) -> str | None:
    return next(
        (
            found
            for interaction in interactions
            if (found := detect_provider(interaction.request.path)) is not None
        ),
        None,
    )


def _vcr_response(interaction: Interaction) -> dict[str, Any]:
    response = interaction.response
    try:
        message = HTTPStatus(response.status).phrase
    except ValueError:
        message = ""
    return {
        "status": {"code": response.status, "message": message},
        "headers": {name: [value] for name, value in response.headers.items()},
        "body": {"string": response.body_bytes()},
    }


def _httpx_request(request: Any) -> httpx.Request:
    method, uri, headers, body = _vcr_request_parts(request)
    return httpx.Request(method, uri, headers=headers, content=body)


# -- registration ----------------------------------------------------------------------------------


class VcrConfig(Protocol):
    """What `register` needs of a `vcr.VCR`."""

    match_on: Any
    record_mode: Any

    def register_matcher(self, name: str, matcher: Callable[[Any, Any], None]) -> None: ...

    def register_persister(self, persister: type[HarnessPersister]) -> None: ...


VcrConfigT = TypeVar("VcrConfigT", bound=VcrConfig)


def register(vcr_instance: VcrConfigT) -> VcrConfigT:
    """Register `request_hash` and a persister on a `vcr.VCR`, and return it.

    The persister is chosen by the instance's `record_mode`: `HarnessRerecordingPersister` for
    `all`, `HarnessPersister` (which merges) for every other mode. pytest-recording makes one
    `VCR` per test, in that test's mode, so its option, `vcr_config` and markers all count; with
    vcrpy alone, give `record_mode='all'` to the `VCR` rather than to `use_cassette`.

    When the instance still has vcrpy's default `match_on`, which can never match a cassette of
    ours (loaded requests have no scheme or host), it becomes `MATCH_ON`
    (`method`, `path`, `request_hash`); a `match_on` the user chose is kept.
    """
    vcr_instance.register_matcher(MATCHER_NAME, request_hash)
    rerecords = getattr(vcr_instance.record_mode, "value", vcr_instance.record_mode) == "all"
    vcr_instance.register_persister(HarnessRerecordingPersister if rerecords else HarnessPersister)
    if tuple(vcr_instance.match_on) == VCR_DEFAULT_MATCH_ON:
        vcr_instance.match_on = MATCH_ON
    return vcr_instance


# -- the importer ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ImportedCassette:
    """One converted file; `written` is False when the output already held the same content."""

    source: Path
    output: Path
    interactions: int
    written: bool
    without_version: int = 0
    """Anthropic requests recorded without an `anthropic-version` header (the recorder filtered
    it out: the API refuses a request without one)."""


@dataclass(frozen=True, kw_only=True)
class ImportReport:
    """What `import_vcr` converted, in the order it was given."""

    out_dir: Path
    cassettes: tuple[ImportedCassette, ...]
    anthropic_version: str | None = None
    """What requests recorded without `anthropic-version` were keyed with (None: nothing)."""

    @property
    def file_count(self) -> int:
        return len(self.cassettes)

    @property
    def interaction_count(self) -> int:
        return sum(cassette.interactions for cassette in self.cassettes)

    def summary(self) -> str:
        unchanged = sum(not cassette.written for cassette in self.cassettes)
        lines = [
            f"converted {self.file_count} vcrpy cassette(s) with {self.interaction_count} "
            f"interaction(s) into {self.out_dir}"
            + (f" ({unchanged} already up to date)" if unchanged else "")
        ]
        missing = sum(cassette.without_version for cassette in self.cassettes)
        if missing and self.anthropic_version is not None:
            lines.append(
                f"{missing} Anthropic request(s) recorded without an anthropic-version header "
                f"are keyed with anthropic-version {self.anthropic_version}"
            )
        elif missing:
            lines.append(
                f"warning: {missing} Anthropic request(s) were recorded without an "
                "anthropic-version header (the recorder filtered it out), so a client that sends "
                "one misses them: import again with --anthropic-version set to the version your "
                "client sends (an Anthropic SDK client's default_headers['anthropic-version']; "
                f"the harness's own gateway sends {ANTHROPIC_VERSION})"
            )
        return "\n".join(lines)


def import_vcr(
    sources: Sequence[Path],
    out_dir: Path,
    *,
    scrubber: Scrubber = DEFAULT_SCRUBBER,
    anthropic_version: str | None = None,
) -> ImportReport:
    """Convert vcrpy YAML cassettes into `harness-cassette/2` files under `out_dir`.

    A source is a cassette file, or a folder searched recursively for `*.yaml` and `*.yml`;
    outputs keep the path relative to their folder (a file's is its name), with a `.json`
    suffix. Every interaction is kept, in order: its key is computed from the request exactly as
    the recording client sent it (a `parsed_body` is sent as `json.dumps(parsed_body)`), and
    identical requests are numbered by occurrence, so their different answers replay in order.
    Bodies may be bytes, text, null, a YAML mapping or `parsed_body`; stale `content-length`
    headers are dropped, compressed bodies decoded, streams split into SSE events, and secrets,
    cookies and OpenAI organisation/project ids scrubbed, as `CassetteTransport` records them.

    `anthropic-version` is part of a request's key, and the Anthropic API refuses a request
    without one, so an Anthropic request recorded without it lost it to the recorder's header
    filter (pydantic-ai's recordings filter every `anthropic-*` header). With
    `anthropic_version`, such requests are keyed as sent with that version, the one the client
    that will replay them sends; without it they are kept as recorded, and the report counts
    them.

    Every source is converted before anything is written, so a source that is not a vcrpy
    cassette raises `CassetteFormatError` naming the file (and the interaction and field) and
    leaves `out_dir` untouched. An output whose content would not change is not rewritten.
    """
    out_dir = Path(out_dir)
    if anthropic_version is not None and not _HEADER_VALUE.fullmatch(anthropic_version):
        raise VcrImportError(
            f"expected an anthropic-version such as {ANTHROPIC_VERSION} but got "
            f"anthropic_version={anthropic_version!r}"
        )
    converted = [
        (source, output, *_convert_vcr_file(source, _recorder(output, scrubber), anthropic_version))
        for source, output in _plan_outputs(sources, out_dir)
    ]
    return ImportReport(
        out_dir=out_dir,
        anthropic_version=anthropic_version,
        cassettes=tuple(
            ImportedCassette(
                source=source,
                output=output,
                interactions=len(interactions),
                written=_write_cassette(output, interactions),
                without_version=without_version,
            )
            for source, output, interactions, without_version in converted
        ),
    )


_HEADER_VALUE: Final = re.compile(r"[!-~]+")
"""A header value of printable ASCII, without spaces."""


def _plan_outputs(sources: Sequence[Path], out_dir: Path) -> list[tuple[Path, Path]]:
    """`(source file, output file)` pairs; a file listed twice is converted once."""
    planned: dict[Path, Path] = {}
    for source in map(Path, sources):
        if source.is_dir():
            found = sorted(
                path
                for path in source.rglob("*")
                if path.suffix.lower() in VCR_CASSETTE_SUFFIXES and path.is_file()
            )
            if not found:
                raise VcrImportError(
                    f"expected a folder holding vcrpy cassettes (*.yaml, *.yml) but got "
                    f"source={str(source)!r} (no such file under it)"
                )
            pairs: Iterable[tuple[Path, Path]] = (
                (path, path.relative_to(source)) for path in found
            )
        elif source.is_file():
            pairs = [(source, Path(source.name))]
        else:
            raise VcrImportError(
                f"expected an existing cassette file or folder but got source={str(source)!r}"
            )
        for path, relative in pairs:
            output = out_dir / relative.with_suffix(".json")
            previous = planned.get(output)
            if previous is not None and previous.resolve() != path.resolve():
                raise VcrImportError(
                    f"{previous} and {path} would both be written to {output}; import them into "
                    "different folders"
                )
            planned[output] = path
    return [(source, output) for output, source in planned.items()]


def _convert_vcr_file(
    path: Path, recorder: Recorder, anthropic_version: str | None
) -> tuple[list[Interaction], int]:
    """The file's interactions, and how many Anthropic requests had no `anthropic-version`."""
    data = _load_yaml(path)
    if isinstance(data, list) and data and isinstance(data[0], dict) and "request" in data[0]:
        raise CassetteFormatError(
            f"{path}: not a vcrpy cassette of format version 1 (it is a list of interactions, "
            "vcrpy's format before 1.0); migrate it with `python -m vcr.migration` first"
        )
    if not isinstance(data, dict) or "interactions" not in data:
        got = f"keys {', '.join(map(str, data))}" if isinstance(data, dict) else type(data).__name__
        raise CassetteFormatError(
            f"{path}: not a vcrpy cassette: expected a mapping with an 'interactions' list "
            f"but got {got}"
        )
    try:
        cassette = VcrCassetteFile.model_validate(data)
    except ValidationError as error:
        raise _validation_error(path, error, "") from None
    if cassette.metadata:
        raise CassetteFormatError(
            f"{path}: a harness cassette has no place for vcrpy cassette metadata "
            f"(keys: {', '.join(sorted(cassette.metadata))}); remove it before importing"
        )
    pairs: list[tuple[int, str, httpx.Request, VcrResponseRecord]] = []
    without_version = 0
    for index, interaction in enumerate(cassette.interactions):
        headers = interaction.request.header_pairs()
        try:
            request = httpx.Request(
                interaction.request.method,
                interaction.request.uri,
                headers=headers,
                content=interaction.request.body_bytes(),
            )
            if _lacks_anthropic_version(request):
                without_version += 1
                if anthropic_version is not None:
                    request.headers[_ANTHROPIC_VERSION_HEADER] = anthropic_version
        except (ValueError, httpx.InvalidURL) as error:
            raise CassetteFormatError(f"{path}: interaction #{index} request: {error}") from None
        _check_nesting(path, f"interaction #{index} request", request.content)
        pairs.append((index, recorder.key_for(request), request, interaction.response))
    return _build_interactions(path, recorder, pairs), without_version


def _lacks_anthropic_version(request: httpx.Request) -> bool:
    """A request to an API that requires `anthropic-version` (its spec's `version_headers`)
    recorded without it."""
    spec = detect_spec(request.url.path)
    return (
        spec is not None
        and _ANTHROPIC_VERSION_HEADER in spec.version_headers
        and _ANTHROPIC_VERSION_HEADER not in request.headers
    )


_ANTHROPIC_VERSION_HEADER: Final = "anthropic-version"


VCR_YAML_LIMITS: Final = YamlLimits(
    prefix="HARNESS_MAX_VCR_CASSETTE",
    max_bytes=256 * MIB,
    max_aliases=10_000,
    max_nodes=10_000_000,
    max_characters=512 * MIB,
)
"""How much YAML one vcrpy cassette may hold (vcrpy writes an alias for each repeated object);
each limit has an environment variable (`HARNESS_MAX_VCR_CASSETTE_BYTES`, `_ALIASES`, ...)."""


def _load_yaml(path: Path) -> object:
    """The cassette's YAML, read within `VCR_YAML_LIMITS`; a refusal never quotes the text (the
    offending line may hold a secret)."""
    try:
        return bounded_yaml.load(path, VCR_YAML_LIMITS.from_environment())
    except YamlLimitError as error:
        raise CassetteFormatError(str(error)) from None
    except YamlInputError as error:
        raise CassetteFormatError(f"{error.where}: not a vcrpy cassette: {error.problem}") from None


def _validation_error(path: Path, error: ValidationError, prefix: str) -> CassetteFormatError:
    first = error.errors()[0]
    location = list(first["loc"])
    where = [prefix] if prefix else []
    if len(location) > 1 and location[0] == "interactions" and isinstance(location[1], int):
        where.append(f"interaction #{location[1]}")
        location = location[2:]
    where.append(".".join(map(str, location)))
    return CassetteFormatError(
        f"{path}: not a vcrpy cassette: invalid {' '.join(filter(None, where)) or 'document'}: "
        f"{first['msg']} ({error.error_count()} problem(s) in all)"
    )


# -- shared by the persister and the importer ------------------------------------------------------


def _recorder(path: Path, scrubber: Scrubber) -> Recorder:
    """The recorder live traffic goes through, so vcrpy traffic is keyed and scrubbed alike."""
    return Recorder(scrubber=scrubber)


def _build_interactions(
    path: Path,
    recorder: Recorder,
    pairs: Iterable[tuple[int, str, httpx.Request, VcrResponseRecord]],
) -> list[Interaction]:
    """Scrubbed interactions, `occurrence` counted per key in order, from `(index, key,
    request, response)`, the index being where the interaction is in its source.

    Raises `CassetteFormatError` naming `path` and the interaction when one cannot be stored.
    """
    counts: dict[str, int] = defaultdict(int)
    interactions: list[Interaction] = []
    for index, key, request, response in pairs:
        where = f"interaction #{index} response"
        try:
            content = response.content()
            _check_nesting(path, where, content)
            recorded = recorder.record_response(
                request, response.status.code, response.header_pairs(), content
            )
            counts[key] += 1
            interactions.append(
                Interaction.build(key, counts[key], recorder.record_request(request), recorded)
            )
        except ValidationError as error:
            raise _validation_error(path, error, f"interaction #{index}") from None
        except CassetteFormatError:
            raise
        except ValueError as error:
            raise CassetteFormatError(f"{path}: {where}: {error}") from None
    return interactions


def _check_nesting(path: Path, where: str, content: bytes) -> None:
    """Refuse a body nested deeper than a cassette can hold, before anything parses it."""
    if json_nesting_depth(content) > MAX_BODY_DEPTH:
        raise CassetteFormatError(
            f"{path}: {where}: the body nests deeper than {MAX_BODY_DEPTH} levels, the most a "
            "cassette body may hold"
        )


def _write_cassette(path: Path, interactions: list[Interaction]) -> bool:
    """Write the cassette atomically under its lock; False when the file already says the same.

    Unchanged interactions keep the file's metadata (`recorded_at` included), so converting or
    saving the same traffic again leaves the file byte-identical.
    """
    provider = _provider_of(interactions)
    with lock_for(path):
        existing = read_cassette(path) if cassette_exists(path) else None
        metadata = _reusable_metadata(path, existing, interactions, provider)
        document = CassetteDocument(
            metadata=metadata or new_metadata(provider), interactions=interactions
        )
        data = Cassette.from_document(path, document).dumps()
        if data == existing:
            return False
        write_atomically(path, data)
        return True


def _reusable_metadata(
    path: Path, existing: bytes | None, interactions: list[Interaction], provider: str | None
) -> CassetteMetadata | None:
    if existing is None:
        return None
    try:
        document = parse_cassette(path, existing).document
    except CassetteFormatError:
        return None
    same = [i.digest for i in document.interactions] == [i.digest for i in interactions]
    return document.metadata if same and document.metadata.provider == provider else None


__all__ = [
    "MATCHER_NAME",
    "MATCH_ON",
    "HarnessPersister",
    "HarnessRerecordingPersister",
    "ImportReport",
    "ImportedCassette",
    "RecordedVcrRequest",
    "RequestHashMismatchError",
    "VcrImportError",
    "VcrMergeError",
    "import_vcr",
    "register",
    "request_hash",
    "vcr_request_key",
]

RequestHashMismatch = RequestHashMismatchError
"""The earlier name of `RequestHashMismatchError`, deprecated: kept until 1.0."""
