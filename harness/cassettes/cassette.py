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
import gc
import hashlib
import hmac
import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from harness.cassettes.key import canonical_request_key
from harness.cassettes.sse import SseEvent, render_sse
from harness.errors import CassetteFormatError, CassetteTamperedError
from harness.protocol.canonical import canonical_json

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
        return body_bytes(self.body, self.body_text, self.body_base64)


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
        body = body_bytes(self.body, self.body_text, self.body_base64)
        return [body] if body else []

    def body_bytes(self) -> bytes:
        if self.events is not None:
            return render_sse(self.events)
        return body_bytes(self.body, self.body_text, self.body_base64)


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
    with `OPT_SORT_KEYS` (stdlib `json` with sorted keys for integers beyond 64 bits).
    """
    content = {name: interaction[name] for name in _DIGESTED if name in interaction}
    try:
        data = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError: integers beyond 64 bits
        data = canonical_json(content)
    return "sha256:" + hashlib.sha256(data).hexdigest()


_DIGESTED: Final = ("key", "occurrence", "request", "response")


def signature_for(cassette: Cassette, signing_key: str) -> str:
    """HMAC-SHA256 over the format, the metadata and every interaction digest, in order."""
    message = canonical_json(
        {
            "format": FORMAT,
            "metadata": cassette.metadata.model_dump(mode="json", exclude_none=True),
            "digests": [interaction["digest"] for interaction in cassette.raw],
        }
    )
    mac = hmac.new(signing_key.encode("utf-8"), message, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + mac


def signing_key_from_environment() -> str | None:
    return os.environ.get(SIGNING_KEY_VARIABLE) or None


class Cassette:
    """A loaded cassette: interactions as stored, indexed by key, validated on first use.

    Loading parses the JSON, checks the format, every digest and the signature, and indexes
    interactions by key; typed `Interaction` models are built only when something reads them
    (a miss diagnosis, a review, a merge). Replay reads the stored form directly, so lookup cost
    is one dictionary access and load cost stays close to the JSON parse itself.
    """

    def __init__(
        self,
        path: Path,
        metadata: CassetteMetadata,
        raw: list[dict[str, Any]],
        *,
        signature: str | None = None,
        validated: list[Interaction] | None = None,
    ) -> None:
        self.path = path
        self.metadata = metadata
        self.signature = signature
        self.raw = raw
        self._validated = validated
        self.by_key: dict[str, list[int]] = defaultdict(list)
        for index, interaction in enumerate(raw):
            self.by_key[interaction["key"]].append(index)

    @classmethod
    def from_document(cls, path: Path, document: CassetteDocument) -> Cassette:
        raw = [i.model_dump(mode="json", exclude_none=True) for i in document.interactions]
        return cls(
            path,
            document.metadata,
            raw,
            signature=document.signature,
            validated=list(document.interactions),
        )

    @property
    def interactions(self) -> list[Interaction]:
        """Every interaction as a typed model (validated once, on first access)."""
        if self._validated is None:
            self._validated = [self.interaction(index) for index in range(len(self.raw))]
        return self._validated

    def interaction(self, index: int) -> Interaction:
        """Interaction `index` as a typed model; `CassetteFormatError` names it when invalid."""
        if self._validated is not None:
            return self._validated[index]
        try:
            return Interaction.model_validate(self.raw[index])
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise CassetteFormatError(
                f"{self.path}: invalid interaction #{index} at {where}: {first['msg']}"
            ) from None

    @property
    def document(self) -> CassetteDocument:
        return CassetteDocument(
            metadata=self.metadata, interactions=self.interactions, signature=self.signature
        )

    @classmethod
    def new(cls, path: str | os.PathLike[str], provider: str | None = None) -> Cassette:
        """An empty cassette for `path` (nothing is written until `save`)."""
        return cls(Path(path), new_metadata(provider), [], validated=[])

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        allow_tampered: bool = False,
        signing_key: str | None = None,
    ) -> Cassette:
        """Load and verify a cassette file.

        Raises `CassetteFormatError` naming the file (and line) when it does not parse or names
        an unknown format version, and `CassetteTamperedError` naming the file and interaction
        when a digest or the signature does not match, unless `allow_tampered` is set. The
        signature is checked when a signing key is given or `HARNESS_CASSETTE_KEY` is set.
        """
        path = Path(path)
        raw = path.read_bytes()
        if allow_tampered:
            return parse_cassette(path, raw, exact=True)
        key = signing_key or signing_key_from_environment()
        cassette = parse_cassette(path, raw)
        problems = list(find_tampering(cassette, key))
        if problems:
            # orjson reads integers beyond 64 bits as floats, which no digest matches: parse
            # such a file exactly before calling it tampered.
            cassette = parse_cassette(path, raw, exact=True)
            problems = list(find_tampering(cassette, key))
            if problems:
                raise CassetteTamperedError(
                    f"cassette {path} failed verification: {problems[0]}"
                    + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
                    + "; re-record it, or load it with allow_tampered=True to inspect it"
                )
        return cassette

    def replay_parts(self, index: int) -> tuple[int, dict[str, str], list[bytes]]:
        """Status, headers and body chunks of interaction `index`, read from the stored form."""
        response = self.raw[index]["response"]
        try:
            status = response["status"]
            headers = response.get("headers", {})
            if not isinstance(status, int) or not isinstance(headers, dict):
                raise TypeError
            events = response.get("events")
            if events is not None:
                return status, headers, [SseEvent.model_validate(e).render() for e in events]
            body = body_bytes(
                response.get("body"), response.get("body_text"), response.get("body_base64")
            )
        except (KeyError, TypeError, ValueError, ValidationError):
            self.interaction(index)  # names the invalid field
            raise CassetteFormatError(
                f"{self.path}: interaction #{index} has an invalid response"
            ) from None
        return status, headers, [body] if body else []

    def dumps(self, signing_key: str | None = None) -> bytes:
        """The file bytes: stable key order, two-space indent, a final newline."""
        key = signing_key or signing_key_from_environment()
        data: dict[str, Any] = {
            "format": FORMAT,
            "metadata": self.metadata.model_dump(mode="json", exclude_none=True),
            "interactions": self.raw,
        }
        if key:
            data["signature"] = signature_for(self, key)
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        return text.encode("utf-8", "backslashreplace")  # a lone surrogate as its JSON escape


def new_metadata(provider: str | None) -> CassetteMetadata:
    from harness import __version__

    return CassetteMetadata(
        harness_version=__version__,
        provider=provider,
        recorded_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
    )


def parse_cassette(path: Path, raw: bytes, *, exact: bool = False) -> Cassette:
    """Parse file bytes into a `Cassette`, or raise `CassetteFormatError` naming file and line.

    The fast parser (orjson) reads integers beyond 64 bits as floats; `exact=True` uses the
    standard library parser, which keeps them. Digest verification tells the two apart.

    The garbage collector is paused while the parsed tree is built: a cassette is many small
    containers, none of them cyclic, and collecting during the build costs more than the parse.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _parse_cassette(path, raw, exact)
    finally:
        if collecting:
            gc.enable()


def _parse_cassette(path: Path, raw: bytes, exact: bool) -> Cassette:
    try:
        data = _loads(raw, exact)
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
    unknown = set(data) - {"format", "metadata", "interactions", "signature"}
    if unknown:
        raise CassetteFormatError(f"{path}: unknown top-level key(s): {', '.join(sorted(unknown))}")
    try:
        metadata = CassetteMetadata.model_validate(data.get("metadata"))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(("metadata", *(str(part) for part in first["loc"])))
        raise CassetteFormatError(f"{path}: invalid cassette at {where}: {first['msg']}") from None
    interactions = data.get("interactions", [])
    signature = data.get("signature")
    if not isinstance(interactions, list) or not (signature is None or isinstance(signature, str)):
        raise CassetteFormatError(
            f"{path}: invalid cassette: 'interactions' must be a list and 'signature' a string"
        )
    for index, interaction in enumerate(interactions):
        if not (
            isinstance(interaction, dict)
            and isinstance(interaction.get("key"), str)
            and isinstance(interaction.get("digest"), str)
            and isinstance(interaction.get("response"), dict)
        ):
            raise CassetteFormatError(
                f"{path}: invalid cassette at interactions.{index}: expected an object with "
                "key, occurrence, request, response and digest"
            )
    return Cassette(path, metadata, interactions, signature=signature)


def _loads(raw: bytes, exact: bool) -> Any:
    if not exact:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # the standard parser gives the precise message, line and column
    return json.loads(raw)


def parse_document(path: Path, raw: bytes) -> CassetteDocument:
    """Parse and fully validate file bytes into a typed document (every interaction checked)."""
    return parse_cassette(path, raw).document


def find_tampering(cassette: Cassette, signing_key: str | None) -> Iterator[str]:
    """Describe every interaction whose digest does not match or whose occurrence is out of
    order, and a signature that does not match (or is missing while a signing key is set).

    Occurrences must count 1, 2, ... per key in file order, since file order is replay order:
    swapping two answers to the same request, or duplicating one, is an edit too.
    """
    seen: dict[str, int] = defaultdict(int)
    for index, interaction in enumerate(cassette.raw):
        request = interaction.get("request") or {}
        where = (
            f"interaction #{index} ({request.get('method')} {request.get('path')}, "
            f"key {interaction['key']}, occurrence {interaction.get('occurrence')})"
        )
        if not hmac.compare_digest(interaction["digest"], raw_interaction_digest(interaction)):
            yield f"{where}: digest mismatch"
        seen[interaction["key"]] += 1
        if interaction.get("occurrence") != seen[interaction["key"]]:
            yield (
                f"{where}: occurrence out of order, {seen[interaction['key']]} expected "
                "(interactions of one key replay in file order)"
            )
    if signing_key and cassette.signature is None:
        yield "unsigned: HARNESS_CASSETTE_KEY is set, so every cassette must carry its signature"
    elif signing_key and cassette.signature is not None:
        expected = signature_for(cassette, signing_key)
        if not hmac.compare_digest(cassette.signature, expected):
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


def body_bytes(body: JsonValue, text: str | None, encoded: str | None) -> bytes:
    """A stored body as bytes: JSON as compact JSON (what httpx's `json=` sends), else as is."""
    if body is not None:
        compact = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return compact.encode("utf-8", "backslashreplace")
    if text is not None:
        return text.encode("utf-8", "backslashreplace")
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
