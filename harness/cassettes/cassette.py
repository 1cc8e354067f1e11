"""The cassette file: one JSON document of recorded interactions, verified on load.

```json
{
  "format": "harness-cassette/1",
  "metadata": {"harness_version": "...", "provider": "openai", "recorded_at": "..."},
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

A body is stored as `body` (a JSON value), `body_text` or `body_base64`; a `text/event-stream`
response as `events`, the list of its SSE events. Keys and headers are in a stable order and the
file is indented, so re-recording unchanged traffic writes the same bytes and a git diff shows
only what changed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from harness.cassettes.key import canonical_request_key
from harness.cassettes.sse import SseEvent, render_sse
from harness.errors import CassetteFormatError, CassetteTamperedError
from harness.protocol.canonical import canonical_json, sha256_digest

FORMAT: Final = "harness-cassette/1"
SUPPORTED_FORMATS: Final = (FORMAT,)
SIGNING_KEY_VARIABLE: Final = "HARNESS_CASSETTE_KEY"
SIGNATURE_PREFIX: Final = "hmac-sha256:"


class _CassetteModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RecordedRequest(_CassetteModel):
    """A request as written: scrubbed headers and query, the body as JSON when it is JSON."""

    method: str
    path: str
    query: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    body: JsonValue = None
    body_text: str | None = None
    body_base64: str | None = None

    @property
    def url(self) -> str:
        return f"{self.path}?{self.query}" if self.query else self.path

    def body_bytes(self) -> bytes:
        """The body as it is sent again (JSON re-serialised compactly)."""
        return _body_bytes(self.body, self.body_text, self.body_base64)


class RecordedResponse(_CassetteModel):
    """A response as written: status, scrubbed headers, and the body or the SSE events."""

    status: int
    headers: dict[str, str] = Field(default_factory=dict)
    body: JsonValue = None
    body_text: str | None = None
    body_base64: str | None = None
    events: list[SseEvent] | None = None

    def chunks(self) -> list[bytes]:
        """The body as the chunks a replay delivers: one per SSE event, else one."""
        if self.events is not None:
            return [event.render() for event in self.events]
        body = _body_bytes(self.body, self.body_text, self.body_base64)
        return [body] if body else []

    def body_bytes(self) -> bytes:
        if self.events is not None:
            return render_sse(self.events)
        return _body_bytes(self.body, self.body_text, self.body_base64)


class Interaction(_CassetteModel):
    """One recorded request and its response; `occurrence` counts from 1 per key."""

    key: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    occurrence: int = Field(ge=1)
    request: RecordedRequest
    response: RecordedResponse
    digest: str

    @classmethod
    def build(
        cls, key: str, occurrence: int, request: RecordedRequest, response: RecordedResponse
    ) -> Interaction:
        """An interaction with its digest computed."""
        return cls(
            key=key,
            occurrence=occurrence,
            request=request,
            response=response,
            digest=interaction_digest(key, occurrence, request, response),
        )

    def with_occurrence(self, occurrence: int) -> Interaction:
        return Interaction.build(self.key, occurrence, self.request, self.response)

    def digest_matches(self) -> bool:
        expected = interaction_digest(self.key, self.occurrence, self.request, self.response)
        return hmac.compare_digest(self.digest, expected)


class CassetteMetadata(_CassetteModel):
    harness_version: str
    provider: str | None = None
    recorded_at: str


class CassetteDocument(_CassetteModel):
    """The whole file."""

    format: Literal["harness-cassette/1"] = FORMAT
    metadata: CassetteMetadata
    interactions: list[Interaction] = Field(default_factory=list)
    signature: str | None = None


def interaction_digest(
    key: str, occurrence: int, request: RecordedRequest, response: RecordedResponse
) -> str:
    """`sha256:` digest of the canonical JSON of an interaction without its digest."""
    return sha256_digest(
        canonical_json(
            {
                "key": key,
                "occurrence": occurrence,
                "request": request.model_dump(mode="json", exclude_none=True),
                "response": response.model_dump(mode="json", exclude_none=True),
            }
        )
    )


def signature_for(document: CassetteDocument, signing_key: str) -> str:
    """HMAC-SHA256 over the format, the metadata and every interaction digest, in order."""
    message = canonical_json(
        {
            "format": document.format,
            "metadata": document.metadata.model_dump(mode="json", exclude_none=True),
            "digests": [interaction.digest for interaction in document.interactions],
        }
    )
    mac = hmac.new(signing_key.encode("utf-8"), message, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + mac


def signing_key_from_environment() -> str | None:
    return os.environ.get(SIGNING_KEY_VARIABLE) or None


class Cassette:
    """A loaded cassette: its document plus an index from key to interactions in order.

    Lookup by key is one dictionary access, so replay cost does not grow with the cassette.
    """

    def __init__(self, path: Path, document: CassetteDocument) -> None:
        self.path = path
        self.document = document
        self.by_key: dict[str, list[Interaction]] = defaultdict(list)
        for interaction in document.interactions:
            self.by_key[interaction.key].append(interaction)

    @property
    def interactions(self) -> list[Interaction]:
        return self.document.interactions

    @classmethod
    def new(cls, path: str | os.PathLike[str], provider: str | None = None) -> Cassette:
        """An empty cassette for `path` (nothing is written until `save`)."""
        return cls(Path(path), CassetteDocument(metadata=new_metadata(provider)))

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        allow_tampered: bool = False,
        signing_key: str | None = None,
    ) -> Cassette:
        """Load and verify a cassette file.

        Raises `CassetteFormatError` naming the file (and line) when it does not parse, or names
        an unknown format version, and `CassetteTamperedError` naming the file and interaction
        when a digest or the signature does not match, unless `allow_tampered` is set. The
        signature is checked when a signing key is given or `HARNESS_CASSETTE_KEY` is set.
        """
        path = Path(path)
        document = parse_document(path, path.read_bytes())
        if not allow_tampered:
            problems = list(find_tampering(document, signing_key or signing_key_from_environment()))
            if problems:
                raise CassetteTamperedError(
                    f"cassette {path} failed verification: {problems[0]}"
                    + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
                    + "; re-record it, or load it with allow_tampered=True to inspect it"
                )
        return cls(path, document)

    def dumps(self, signing_key: str | None = None) -> bytes:
        """The file bytes: stable key order, two-space indent, a final newline."""
        document = self.document
        key = signing_key or signing_key_from_environment()
        document = document.model_copy(
            update={"signature": signature_for(document, key) if key else None}
        )
        data = document.model_dump(mode="json", exclude_none=True)
        return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def new_metadata(provider: str | None) -> CassetteMetadata:
    from harness import __version__

    return CassetteMetadata(
        harness_version=__version__,
        provider=provider,
        recorded_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
    )


def parse_document(path: Path, raw: bytes) -> CassetteDocument:
    """Parse file bytes into a document, or raise `CassetteFormatError` naming file and line."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        raise CassetteFormatError(
            f"{path}:{error.lineno}:{error.colno}: cassette is not valid JSON: {error.msg}"
        ) from None
    except UnicodeDecodeError as error:
        raise CassetteFormatError(f"{path}: cassette is not UTF-8 text: {error.reason}") from None
    if not isinstance(data, dict):
        raise CassetteFormatError(
            f"{path}:1:1: expected a JSON object with a 'format' key but got {type(data).__name__}"
        )
    found = data.get("format")
    if found not in SUPPORTED_FORMATS:
        raise CassetteFormatError(
            f"{path}: unknown cassette format {found!r}; supported: {', '.join(SUPPORTED_FORMATS)}"
        )
    try:
        return CassetteDocument.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CassetteFormatError(
            f"{path}: invalid cassette at {where}: {first['msg']} "
            f"({error.error_count()} problem(s) in all)"
        ) from None


def find_tampering(document: CassetteDocument, signing_key: str | None) -> Iterator[str]:
    """Describe every interaction whose digest, and the signature, that does not match."""
    for index, interaction in enumerate(document.interactions):
        if not interaction.digest_matches():
            yield (
                f"interaction #{index} ({interaction.request.method} {interaction.request.path}, "
                f"key {interaction.key}, occurrence {interaction.occurrence}): digest mismatch"
            )
    if signing_key and document.signature is not None:
        expected = signature_for(document, signing_key)
        if not hmac.compare_digest(document.signature, expected):
            yield "signature mismatch: the file was changed or signed with another key"


def renumber(interactions: Iterable[Interaction]) -> list[Interaction]:
    """Interactions with `occurrence` recounted per key in list order (digests recomputed)."""
    counts: dict[str, int] = defaultdict(int)
    result: list[Interaction] = []
    for interaction in interactions:
        counts[interaction.key] += 1
        occurrence = counts[interaction.key]
        result.append(
            interaction
            if interaction.occurrence == occurrence
            else interaction.with_occurrence(occurrence)
        )
    return result


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` so a crash leaves the old file or the new one, never a mix.

    A temporary file in the same folder is written and fsynced, renamed over `path`, and the
    folder is fsynced so the rename itself is durable.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _body_bytes(body: JsonValue, text: str | None, encoded: str | None) -> bytes:
    if body is not None:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if text is not None:
        return text.encode("utf-8")
    if encoded is not None:
        return base64.b64decode(encoded)
    return b""


def rekey(request: RecordedRequest, volatile: Iterable[str] = ()) -> str:
    """The canonical key of a stored request (headers as stored, i.e. scrubbed)."""
    return canonical_request_key(
        request.method,
        request.url,
        request.headers,
        request.body_bytes(),
        volatile=tuple(volatile),
    )
