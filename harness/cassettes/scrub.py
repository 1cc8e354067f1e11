"""Scrubbing: secrets never reach a cassette file.

Applied to every request and response before anything is written:

- credential headers (`CREDENTIAL_HEADERS`, and any header whose name contains `token`, `secret`
  or `key`) get the value `PLACEHOLDER`;
- credential query parameters (`CREDENTIAL_QUERY_PARAMETERS`) get `PLACEHOLDER`;
- JSON members whose name is a credential (`api_key`, `access_token`, `password`, ...) get
  `PLACEHOLDER`;
- any substring of any string, anywhere in a body or an SSE event, with the shape of a known
  secret (`SECRET_PATTERNS`: OpenAI and Anthropic keys, bearer tokens, AWS access keys) is
  replaced by `PLACEHOLDER`.

Users add regular expressions and callables (`str -> str`, applied to every string) per cassette.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode

from harness.cassettes.key import CREDENTIAL_QUERY_PARAMETERS

PLACEHOLDER: Final = "[SCRUBBED]"

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
CREDENTIAL_HEADER_WORDS: Final = ("token", "secret", "key")
CREDENTIAL_JSON_MEMBERS: Final = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "password",
        "secret",
        "authorization",
    }
)
SECRET_PATTERNS: Final[Mapping[str, re.Pattern[str]]] = {
    "anthropic-key": re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    "openai-key": re.compile(r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{16,}"),
    "bearer-token": re.compile(r"(?i)(?<=bearer )[A-Za-z0-9\-._~+/]{8,}=*"),
    "aws-access-key": re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"),
}

StringScrubber = Callable[[str], str]


@dataclass(frozen=True)
class Scrubber:
    """What to remove before writing; the defaults cover the known credential shapes."""

    patterns: Sequence[re.Pattern[str]] = field(default_factory=tuple)
    callables: Sequence[StringScrubber] = field(default_factory=tuple)

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

    def header_is_credential(self, name: str) -> bool:
        """Whether a header's value must never be written."""
        lowered = name.lower()
        return lowered in CREDENTIAL_HEADERS or any(
            word in lowered for word in CREDENTIAL_HEADER_WORDS
        )

    def headers(self, headers: Iterable[tuple[str, str]]) -> dict[str, str]:
        """Lower-cased headers with credentials replaced and secret shapes scrubbed."""
        scrubbed: dict[str, list[str]] = {}
        for name, value in headers:
            lowered = name.lower()
            clean = PLACEHOLDER if self.header_is_credential(lowered) else self.text(value)
            scrubbed.setdefault(lowered, []).append(clean)
        return {name: ", ".join(values) for name, values in sorted(scrubbed.items())}

    def query(self, query: str) -> str:
        """The query string with credential parameters replaced and secret shapes scrubbed."""
        if not query:
            return ""
        pairs = [
            (name, PLACEHOLDER if name.lower() in CREDENTIAL_QUERY_PARAMETERS else self.text(value))
            for name, value in parse_qsl(query, keep_blank_values=True)
        ]
        return urlencode(pairs, safe="[]")

    def text(self, value: str) -> str:
        """`value` with every secret-shaped substring and user pattern replaced."""
        for pattern in SECRET_PATTERNS.values():
            value = pattern.sub(PLACEHOLDER, value)
        for pattern in self.patterns:
            value = pattern.sub(PLACEHOLDER, value)
        for scrub in self.callables:
            value = scrub(value)
        return value

    def json(self, value: Any) -> Any:
        """A copy of a JSON value with credential members and secret-shaped strings scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(item) for item in value]
        if isinstance(value, dict):
            return {
                name: PLACEHOLDER
                if name.lower() in CREDENTIAL_JSON_MEMBERS and isinstance(item, str)
                else self.json(item)
                for name, item in value.items()
            }
        return value


DEFAULT_SCRUBBER: Final = Scrubber()
