"""Scrubbing: secrets never reach a cassette file, a miss message, a report or an error.

Everything a recording writes goes through a `Scrubber` first (`Recorder`, so `CassetteTransport`
and the vcrpy interop alike); a miss message and the vcrpy matcher's report use the same
scrubber, and the LLM gateway `redact`s every error it raises. Every other output goes through
`environment_scrubber()` where it is written: the JSON, JUnit XML and HTML reports and the
terminal lines (`redact` / `redact_json`), and the run state a store keeps
(`Scrubber.json_text`, in `harness.agent.state.StateWriter`). The placeholder is `PLACEHOLDER`,
`[SCRUBBED]`. What is scrubbed:

- Credential headers get the placeholder as their whole value: `CREDENTIAL_HEADERS`, and any
  header whose name contains one of `CREDENTIAL_HEADER_WORDS` (`token`, `secret`, `key`,
  `password`, `passwd`).
- Credential query parameters and form fields (`application/x-www-form-urlencoded` bodies, and
  any text body that is all `name=value&...`) get the placeholder as their value: the names in
  `CREDENTIAL_FORM_FIELDS` (`CREDENTIAL_QUERY_PARAMETERS`, plus `code`, OAuth authorization
  codes, and `client_secret`), and every name that says credential by the word rule below.
- JSON members whose name says credential get the placeholder, whatever the value's type
  (string, number, list, object; `true`, `false` and `null` carry nothing and are kept). The word
  rule: the name is split into words (snake_case, kebab-case, camelCase), and it says credential
  when a word is, or ends with, one of `CREDENTIAL_WORDS` (`key(s)`, `apikey`, `token`,
  `secret(s)`, `password(s)`, `passwd`, `authorization`, `credential(s)`; ending with one covers
  lowercase run-together names: `apikey`, `accesstoken`, `clientsecret`). `tokens` is a count,
  not a credential, so `max_tokens`, `input_tokens`, `cache_creation_input_tokens`,
  `budget_tokens` ... are kept, and so is a name whose last word is `count(s)` (`COUNT_WORDS`:
  Gemini's `promptTokenCount`, `thoughtsTokenCount`); so is the `token` of a log-probability
  entry (an object that also has a `logprob` member: it is model output). Names directly inside a JSON Schema map
  (`SCHEMA_NAME_MAPS`: `properties`, `$defs`, ... whose values are all schemas) are parameter
  names, not credentials: a tool with a `token` parameter survives. Values below them are still
  scanned.
- Secret shapes: any substring of any string (header values, the URL path, query and form
  values, JSON strings and member names at any depth, text bodies, binary bodies read byte for
  byte, every SSE field) matching `SECRET_PATTERNS` (OpenAI, Anthropic and Google API keys,
  bearer tokens, AWS access keys) or a user pattern.
- Exact secret values (`Scrubber.secrets`), in all those places too: when recording (and when
  explaining a miss), the values the request itself sent in a credential position above (for
  `authorization` and `proxy-authorization` both `Bearer X` and `X`; each cookie value), the
  value of every environment variable whose name ends in `_API_KEY`, and `HARNESS_CASSETTE_KEY`,
  read at that moment. Their percent-encoded and JSON-escaped spellings are replaced too, and so
  is a JSON number whose digits contain one. Values shorter than `MIN_SECRET_LENGTH` (8)
  characters are not treated as secrets: a key like `x` would shred every body.
- SSE streams: every field of every event (`id`, `event`, `data`, comments; a `retry` that
  contains a secret is dropped). A secret split across events is caught as well: per response,
  the string values found at the same JSON path in successive events' `data`
  (`choices[0].delta.content`, `delta.text`, ...) are joined in order, and so is the raw `data`
  of the events whose data is not a JSON object or array; secret shapes and exact values are
  searched in the joined text, and the characters they cover are blanked in each piece: the
  piece where a secret starts gets the placeholder, later pieces lose their share, so a client
  joining the replayed deltas never sees the secret. Events something was scrubbed from have
  their JSON `data` rewritten compactly; the others keep their bytes.

JSON nested deeper than `MAX_JSON_DEPTH` (252) levels is refused with `JsonTooDeepError` rather
than written unscrubbed. Users add regular expressions and callables (`str -> str`, applied to
every string) per cassette (`Scrubber.with_extras`). Recording pays for all this (the exact
values are one regular expression, compiled once per distinct set); replay never does.
"""

from __future__ import annotations

import functools
import json as jsonlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Final
from urllib.parse import parse_qsl, quote, quote_plus, unquote_plus

from harness.errors import CassetteError
from harness.json_body import JSON_STRING_TEXT, MAX_BODY_DEPTH, parse_json_body
from harness.sse import SseEvent

SIGNING_KEY_VARIABLE: Final = "HARNESS_CASSETTE_KEY"
"""The environment variable holding the cassette signing key (`harness.cassettes`); declared
here, below the cassettes, because its value is a secret every scrubber removes."""

CREDENTIAL_QUERY_PARAMETERS: Final = frozenset(
    {
        "key",
        "api_key",
        "api-key",
        "apikey",
        "access_token",
        "token",
        "auth",
        "sig",
        "signature",
        "client_secret",
        "password",
        "x-goog-api-key",
    }
)
"""Query parameters that carry credentials: never keyed, always scrubbed."""

PLACEHOLDER: Final = "[SCRUBBED]"
MIN_SECRET_LENGTH: Final = 8
"""Exact values shorter than this are not secrets (they would match all over every body)."""
SECRET_VARIABLE_SUFFIX: Final = "_API_KEY"
"""Environment variables whose value is scrubbed wherever it appears: `*_API_KEY`, and the
cassette signing key."""

CREDENTIAL_HEADERS: Final = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
    }
)
CREDENTIAL_HEADER_WORDS: Final = ("token", "secret", "key", "password", "passwd")
CREDENTIAL_WORDS: Final = frozenset(
    {
        "key",
        "keys",
        "apikey",
        "token",
        "secret",
        "secrets",
        "password",
        "passwords",
        "passwd",
        "authorization",
        "credential",
        "credentials",
    }
)
"""Words that make a JSON member, form field or query parameter name a credential (`tokens`,
a count, is deliberately absent)."""
CREDENTIAL_FORM_FIELDS: Final = CREDENTIAL_QUERY_PARAMETERS | {"code", "client_secret"}
"""Form fields and query parameters that are credentials whatever the word rule says."""
SCHEMA_NAME_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
"""JSON Schema members whose own members are names of parameters or definitions."""
SECRET_PATTERNS: Final[Mapping[str, re.Pattern[str]]] = {
    "anthropic-key": re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    "openai-key": re.compile(r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{16,}"),
    "bearer-token": re.compile(r"(?i)(?<=bearer )[A-Za-z0-9\-._~+/]{8,}=*"),
    "aws-access-key": re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"),
    # Gemini's keys (`GEMINI_API_KEY`, `GOOGLE_API_KEY`), sent as `x-goog-api-key` or `?key=`
    "google-api-key": re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
}

MAX_JSON_DEPTH: Final = MAX_BODY_DEPTH
"""JSON nested deeper than this is refused instead of scrubbed (no provider answers so deep);
a recorded body that deep is stored as text, so this guards values given to the scrubber in code."""

StringScrubber = Callable[[str], str]


class JsonTooDeepError(CassetteError, ValueError):
    """Raised when a JSON body or SSE event given to the scrubber (to record it, or to write it into
    a report or a store) nests deeper than `MAX_JSON_DEPTH` (252) levels; it is not recorded."""

    code: ClassVar[str] = "cassette_json_too_deep"


_NAME_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_FORM_SHAPE = re.compile(r"[^=&\s]+=[^&\s]*(?:&[^=&\s]+=[^&\s]*)*")
_SCHEME = re.compile(r"\S+\s+(\S.*)")


_CREDENTIAL_SUFFIXES: Final = tuple(sorted(CREDENTIAL_WORDS))
COUNT_WORDS: Final = frozenset({"count", "counts"})
"""A name whose last word is one of these is a count (`promptTokenCount`), never a credential."""


@functools.lru_cache(maxsize=4096)
def name_is_credential(name: str) -> bool:
    """Whether a JSON member, form field or query parameter name says credential: one of its
    words is, or ends with, one of `CREDENTIAL_WORDS` (`api_key`, `apiKey`, `apikey`), and its
    last word is not one of `COUNT_WORDS` (`promptTokenCount` counts tokens)."""
    words = _NAME_WORD.findall(name)
    if words and words[-1].lower() in COUNT_WORDS:
        return False
    return any(word.lower().endswith(_CREDENTIAL_SUFFIXES) for word in words)


def member_is_credential(name: str, parent: Mapping[str, Any]) -> bool:
    """Whether member `name` of the JSON object `parent` holds a credential."""
    # A log-probability entry's `token` is a piece of the model's output.
    return name_is_credential(name) and not (name == "token" and "logprob" in parent)


def field_is_credential(name: str) -> bool:
    """Whether a form field or query parameter named `name` holds a credential."""
    return name.lower() in CREDENTIAL_FORM_FIELDS or name_is_credential(name)


def header_is_credential(name: str) -> bool:
    """Whether a header's value must never be written."""
    lowered = name.lower()
    return lowered in CREDENTIAL_HEADERS or any(word in lowered for word in CREDENTIAL_HEADER_WORDS)


def environment_secrets(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The values of `*_API_KEY` variables and `HARNESS_CASSETTE_KEY`, read now."""
    env = os.environ if environ is None else environ
    return frozenset(
        value.strip()
        for name, value in env.items()
        if name.upper().endswith(SECRET_VARIABLE_SUFFIX) or name == SIGNING_KEY_VARIABLE
    )


def secrets_sent(
    headers: Iterable[tuple[str, str]], query: str, body: bytes, content_type: str = ""
) -> frozenset[str]:
    """The exact credential values a request carries: credential headers (with and without their
    scheme word, and each cookie value), credential query parameters, and the credential JSON
    members or form fields of its body."""
    found: set[str] = set()
    for name, value in headers:
        if header_is_credential(name):
            found.update(_header_secrets(name, value))
    found.update(_form_secrets(query))
    is_json, parsed = _parse_json(body)
    if is_json:
        found.update(_json_secrets(parsed))
    elif body:
        text = body.decode("utf-8", "replace")
        if _is_form(text, content_type):
            found.update(_form_secrets(text))
    return frozenset(found)


@dataclass(frozen=True)
class Scrubber:
    """What to remove before writing; the defaults cover the credential names and known shapes.

    `secrets` are exact values removed wherever they appear (see the module docstring); add
    them with `with_secrets`, which drops values shorter than `MIN_SECRET_LENGTH`.
    """

    patterns: Sequence[re.Pattern[str]] = field(default_factory=tuple)
    callables: Sequence[StringScrubber] = field(default_factory=tuple)
    secrets: frozenset[str] = frozenset()

    @classmethod
    def with_extras(
        cls,
        patterns: Iterable[str | re.Pattern[str]] = (),
        callables: Iterable[StringScrubber] = (),
    ) -> Scrubber:
        """A scrubber that also removes `patterns` and applies `callables` to every string."""
        return cls(
            patterns=tuple(re.compile(p) if isinstance(p, str) else p for p in patterns),
            callables=tuple(callables),
        )

    def with_secrets(self, secrets: Iterable[str]) -> Scrubber:
        """This scrubber, also removing every occurrence of the exact values `secrets`."""
        added = frozenset(secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH)
        if added <= self.secrets:
            return self
        return replace(self, secrets=self.secrets | added)

    def for_request(
        self,
        headers: Iterable[tuple[str, str]],
        query: str,
        body: bytes,
        content_type: str = "",
    ) -> Scrubber:
        """This scrubber, also removing what the request sent as credentials and the
        environment's secrets (`secrets_sent`, `environment_secrets`)."""
        sent = secrets_sent(headers, query, body, content_type)
        return self.with_secrets(sent | environment_secrets())

    @functools.cached_property
    def _exact(self) -> re.Pattern[str] | None:
        return _exact_pattern(self.secrets)

    @functools.cached_property
    def _scanners(self) -> tuple[re.Pattern[str], ...]:
        """Exact values first (a known shape may cover only part of one), then shapes."""
        return (
            *((self._exact,) if self._exact is not None else ()),
            *SECRET_PATTERNS.values(),
            *self.patterns,
        )

    def header_is_credential(self, name: str) -> bool:
        """Whether a header's value must never be written."""
        return header_is_credential(name)

    def headers(self, headers: Iterable[tuple[str, str]]) -> dict[str, str]:
        """Lower-cased headers with credentials replaced and secrets scrubbed."""
        scrubbed: dict[str, list[str]] = {}
        for name, value in headers:
            lowered = name.lower()
            clean = PLACEHOLDER if header_is_credential(lowered) else self.text(value)
            scrubbed.setdefault(lowered, []).append(clean)
        return {name: ", ".join(values) for name, values in sorted(scrubbed.items())}

    def query(self, query: str) -> str:
        """The query string with credential parameters replaced and secrets scrubbed."""
        return self.form(query)

    def form(self, text: str) -> str:
        """A form-encoded string with credential fields replaced and secrets scrubbed.

        Fields nothing was scrubbed from keep their original spelling.
        """
        return "&".join(self._form_field(segment) for segment in text.split("&")) if text else ""

    def _form_field(self, segment: str) -> str:
        name, equals, value = segment.partition("=")
        if equals and field_is_credential(unquote_plus(name)):
            return f"{self.text(name)}={PLACEHOLDER}"
        decoded = unquote_plus(value)
        clean = self.text(decoded)
        if clean != decoded:
            value = quote_plus(clean, safe="[]", errors="backslashreplace")
        return self.text(name) + equals + value

    def path(self, path: str) -> str:
        """A URL path with secrets replaced; user callables do not apply (a path names what
        is requested, and callables are free to rewrite ordinary words)."""
        return self._scan(path)

    def body_text(self, text: str, content_type: str = "") -> str:
        """A text body: form rules when it is a form, else secrets scrubbed from the text."""
        return self.form(text) if _is_form(text, content_type) else self.text(text)

    def text(self, value: str) -> str:
        """`value` with every secret, secret-shaped substring and user pattern replaced."""
        value = self._scan(value)
        for scrub in self.callables:
            value = scrub(value)
        return value

    def _scan(self, value: str) -> str:
        for pattern in self._scanners:
            value = pattern.sub(PLACEHOLDER, value)
        return value

    def json_text(self, text: str) -> str:
        """JSON text (a document, or the members or items of one) with every string that holds a
        secret rewritten with it scrubbed (`text`), member names included.

        Everything else is kept as it is: the structure, the numbers, and every string nothing is
        scrubbed from, byte for byte, so what is read back is the same value but for the
        secrets. Text in which no secret occurs is returned as it is, after one scan.
        """
        if not self.callables and not any(scanner.search(text) for scanner in self._scanners):
            return text
        return JSON_STRING_TEXT.sub(self._json_string, text)

    def _json_string(self, token: re.Match[str]) -> str:
        value = jsonlib.loads(token.group(), strict=False)
        clean = self.text(value)
        return token.group() if clean == value else jsonlib.dumps(clean)

    def json(self, value: Any) -> Any:
        """A copy of a JSON value with credential members and secrets scrubbed.

        Raises `JsonTooDeepError` for a value nested deeper than `MAX_JSON_DEPTH`.
        """
        _check_depth(value)
        return self._json(value, names_checked=True)

    def _json(self, value: Any, *, names_checked: bool = True) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._json(item) for item in value]
        if isinstance(value, dict):
            return {
                self._scan(name): PLACEHOLDER
                if names_checked and _scrubs_as_credential(name, item, value)
                else self._json(item, names_checked=not _is_schema_map(name, item))
                for name, item in value.items()
            }
        if self._exact is not None and (digits := _number_text(value)) is not None:
            return PLACEHOLDER if self._exact.search(digits) else value
        return value

    def events(self, events: Sequence[SseEvent]) -> list[SseEvent]:
        """One SSE response's events with every field scrubbed, secrets split across events
        included (see the module docstring for what is joined)."""
        datas, groups = _split_stream(events)
        for pieces in groups.values():
            blanked = self._blank_joined([piece.get() for piece in pieces])
            for piece, text in zip(pieces, blanked, strict=True):
                piece.set(text)
        return [self._event(event, data) for event, data in zip(events, datas, strict=True)]

    def _event(self, event: SseEvent, parsed: _EventData) -> SseEvent:
        data = parsed.data
        if parsed.value is not None:
            clean = self.json(parsed.value)
            # A secret outside any string (a duplicate member json.loads dropped) shows in the scan.
            if parsed.blanked or clean != parsed.value or self._scan(data or "") != data:
                data = jsonlib.dumps(clean, ensure_ascii=False, separators=(",", ":"))
        elif data is not None:
            data = self.text(data)
        retry = event.retry
        if retry is not None and self.text(str(retry)) != str(retry):
            retry = None
        return SseEvent(
            event=None if event.event is None else self.text(event.event),
            data=data,
            id=None if event.id is None else self.text(event.id),
            retry=retry,
            comments=tuple(self.text(comment) for comment in event.comments),
        )

    def _blank_joined(self, pieces: list[str]) -> list[str]:
        """`pieces` with every secret found in their concatenation removed: the piece where a
        secret starts gets the placeholder, the others lose the characters it covers."""
        joined = "".join(pieces)
        spans = self._spans(joined)
        if not spans:
            return pieces
        result: list[str] = []
        start = 0
        for piece in pieces:
            end = start + len(piece)
            kept: list[str] = []
            cursor = start
            for span_start, span_end in spans:
                if span_end <= start or span_start >= end:
                    continue
                kept.append(joined[cursor : max(span_start, start)])
                if span_start >= start:
                    kept.append(PLACEHOLDER)
                cursor = min(span_end, end)
            kept.append(joined[cursor:end])
            result.append("".join(kept))
            start = end
        return result

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """The merged character ranges of `text` any scanner matches."""
        found = sorted(
            match.span() for pattern in self._scanners for match in pattern.finditer(text)
        )
        merged: list[tuple[int, int]] = []
        for start, end in found:
            if start == end:
                continue
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged


DEFAULT_SCRUBBER: Final = Scrubber()


def environment_scrubber(secrets: Iterable[str] = ()) -> Scrubber:
    """The scrubber every output of a run goes through: the known secret shapes, the
    environment's secrets (`environment_secrets`, read now) and the exact values `secrets` (8
    characters or longer). Build one per file or run written, not one per line."""
    return DEFAULT_SCRUBBER.with_secrets((*environment_secrets(), *secrets))


def redact(text: str, *, secrets: Iterable[str] = ()) -> str:
    """`text` with the known secret shapes, the environment's secrets (`environment_secrets`)
    and the exact values `secrets` (8 characters or longer) replaced by `PLACEHOLDER`.

    For arbitrary text bound for a terminal, a log or a report file.
    """
    return environment_scrubber(secrets).text(text)


def redact_json(value: Any, *, secrets: Iterable[str] = ()) -> Any:
    """A copy of the JSON value `value` scrubbed as `redact` scrubs text, and credential
    members (by name) replaced too."""
    return environment_scrubber(secrets).json(value)


# -- what a request sent ----------------------------------------------------------------------------


def _header_secrets(name: str, value: str) -> Iterator[str]:
    yield value.strip()
    scheme = _SCHEME.fullmatch(value.strip())
    if scheme:
        yield scheme.group(1)
    if name.lower() in ("cookie", "set-cookie"):
        for pair in value.split(";"):
            yield pair.partition("=")[2].strip()


def _form_secrets(text: str) -> Iterator[str]:
    for name, value in parse_qsl(text, keep_blank_values=True):
        if field_is_credential(name):
            yield value


def _json_secrets(value: Any, *, names_checked: bool = True) -> Iterator[str]:
    if isinstance(value, list):
        for item in value:
            yield from _json_secrets(item)
    elif isinstance(value, dict):
        for name, item in value.items():
            if names_checked and member_is_credential(name, value):
                yield from _leaves(item)
            else:
                yield from _json_secrets(item, names_checked=not _is_schema_map(name, item))


def _leaves(value: Any) -> Iterator[str]:
    """Every string and number below a credential member, as text."""
    if isinstance(value, str):
        yield value
    elif (digits := _number_text(value)) is not None:
        yield digits
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)


def _number_text(value: Any) -> str | None:
    """A JSON number as text; None for anything else, and for integers too long to print."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        return str(value)
    except ValueError:  # more digits than int-to-str allows; no key is that long
        return None


def _scrubs_as_credential(name: str, item: Any, parent: Mapping[str, Any]) -> bool:
    # true/false/null say whether a credential is set, not what it is; keeping them keeps types.
    return item is not None and not isinstance(item, bool) and member_is_credential(name, parent)


def _is_schema_map(name: str, item: Any) -> bool:
    return (
        name in SCHEMA_NAME_MAPS
        and isinstance(item, dict)
        and all(isinstance(schema, dict | bool) for schema in item.values())
    )


def _parse_json(body: bytes | str | None) -> tuple[bool, Any]:
    """`parse_json_body`, refusing values nested deeper than `MAX_JSON_DEPTH`."""
    try:
        is_json, value = parse_json_body(body)
    except RecursionError:  # deeper than the parser itself goes
        raise _too_deep() from None
    _check_depth(value)
    return is_json, value


def _check_depth(value: Any) -> None:
    """Raise `JsonTooDeepError` when `value` nests more than `MAX_JSON_DEPTH` levels."""
    if not isinstance(value, dict | list):
        return
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            raise _too_deep()
        children = node.values() if isinstance(node, dict) else node
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def _too_deep() -> JsonTooDeepError:
    return JsonTooDeepError(
        f"a JSON body or SSE event nests deeper than {MAX_JSON_DEPTH} levels, so it cannot be "
        "scrubbed and is not recorded; no provider answers this deep, so check what the server "
        "sent (the cassette is unchanged)"
    )


def _is_form(text: str, content_type: str) -> bool:
    return "x-www-form-urlencoded" in content_type.lower() or bool(_FORM_SHAPE.fullmatch(text))


@functools.lru_cache(maxsize=64)
def _exact_pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    """One alternation of every spelling of every secret, longest first; built once per set."""
    spellings = {
        spelling
        for secret in secrets
        if len(secret) >= MIN_SECRET_LENGTH
        for spelling in _spellings(secret)
    }
    if not spellings:
        return None
    return re.compile("|".join(re.escape(s) for s in sorted(spellings, key=lambda s: (-len(s), s))))


def _spellings(secret: str) -> set[str]:
    """How a secret can appear in stored text: as is, percent-encoded, JSON-escaped, and as the
    latin-1 reading of its UTF-8 bytes (how binary bodies are scanned)."""
    return {
        secret,
        quote(secret, safe="", errors="backslashreplace"),
        quote(secret, errors="backslashreplace"),
        quote_plus(secret, safe="", errors="backslashreplace"),
        jsonlib.dumps(secret)[1:-1],
        jsonlib.dumps(secret, ensure_ascii=False)[1:-1],
        secret.encode("utf-8", "backslashreplace").decode("latin-1"),
    }


# -- joining a stream ------------------------------------------------------------------------------


@dataclass
class _EventData:
    """An event's data while pieces are blanked: parsed JSON (object or array), else raw text."""

    value: Any
    data: str | None
    blanked: bool = False


@dataclass(frozen=True)
class _Piece:
    """One string of one event: a JSON leaf (`container[slot]`), or the raw data (no container)."""

    owner: _EventData
    container: Any = None
    slot: Any = None

    def get(self) -> str:
        text = self.owner.data if self.container is None else self.container[self.slot]
        return str(text or "")

    def set(self, text: str) -> None:
        if text == self.get():
            return
        if self.container is None:
            self.owner.data = text
        else:
            self.container[self.slot] = text
        self.owner.blanked = True


_RAW_DATA: Final = object()


def _split_stream(
    events: Sequence[SseEvent],
) -> tuple[list[_EventData], dict[tuple[Any, ...], list[_Piece]]]:
    """Each event's data, and its strings grouped by JSON path (raw data in one group)."""
    datas: list[_EventData] = []
    groups: dict[tuple[Any, ...], list[_Piece]] = {}
    for event in events:
        is_json, value = _parse_json(event.data)
        owner = _EventData(
            value if is_json and isinstance(value, dict | list) else None, event.data
        )
        datas.append(owner)
        if owner.value is not None:
            for path, container, slot in _string_leaves(owner.value, ()):
                groups.setdefault(path, []).append(_Piece(owner, container, slot))
        elif event.data is not None:
            groups.setdefault((_RAW_DATA,), []).append(_Piece(owner))
    return datas, groups


def _string_leaves(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], Any, Any]]:
    """(path, container, slot) of every string in a JSON value, depth first, in order."""
    slots: Iterable[tuple[Any, Any]] = (
        value.items() if isinstance(value, dict) else enumerate(value)
    )
    for slot, item in slots:
        if isinstance(item, str):
            yield (*path, slot), value, slot
        elif isinstance(item, dict | list):
            yield from _string_leaves(item, (*path, slot))
