"""The request log of `harness serve`: one line per request on stderr, as text or as JSON.

A line says when a request arrived, which cassette or session it was for, the provider endpoint,
the first 12 hex characters of its request key, what the server did with it and how long the
answer took; the line of a request refused or not understood (`refused`, `invalid`) also gives
the path it was sent to, which says what the client got wrong. It never holds a header, a body,
a query string, a credential or a place on the server's disk: cassettes are named as the client
named them, inside the cassettes folder.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import time
from collections.abc import Iterable
from typing import Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict

from harness.scrub import redact

LogFormat = Literal["text", "json"]
LOG_FORMATS: Final[tuple[LogFormat, ...]] = ("text", "json")

Outcome = Literal[
    "replayed",
    "recorded",
    "missed",
    "used up",
    "scripted",
    "refused",
    "invalid",
    "failed",
    "control",
]
"""What the server did with a request:

- `replayed`: answered from a cassette; `recorded`: forwarded to the provider and recorded;
- `missed`: the cassette has no answer for it; `used up`: its recorded answers were all played
  (or a script has no reply left); `scripted`: answered by a session's script;
- `refused`: a limit or the server's rights refused it (a body too large or too slow, no control
  token, a session asking to record more than the server does, a cassette name leaving the folder);
- `invalid`: no such path, endpoint or session, a body that is not a JSON object, the wrong method;
- `failed`: a cassette that does not exist or does not load, a provider that cannot be reached;
- `control`: a control call (`/_harness/...`) answered.
"""

PATH_SHOWN_FOR: Final[frozenset[Outcome]] = frozenset({"refused", "invalid"})
"""The outcomes whose line gives the request's path: the rest of it may not say where the
request went (no cassette, session or endpoint was recognised in it)."""
SHOWN_PATH_LENGTH: Final = 200
"""A longer path is cut to this many characters (and `...`): the line stays readable."""
KEY_PREFIX_LENGTH: Final = 12
_PLAIN: Final = re.compile(r"[\w./@:+-]+")
"""What a text line shows unquoted; anything else (spaces, control characters a client put in a
cassette name) is written as a JSON string, so one request is always one line."""


class RequestLogLine(BaseModel):
    """One request, as `--log-format json` writes it: one object per line, every field present
    (null when unknown)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    time: str
    """When the request arrived: ISO 8601, UTC, to the millisecond."""
    session: str | None
    cassette: str | None
    """The cassette's name inside the cassettes folder (a session's too, when it plays one)."""
    provider: str | None
    endpoint: str | None
    """The provider endpoint (`/v1/chat/completions`), or a control call's method and path."""
    key: str | None
    """The first 12 hex characters of the request key, when the request got that far."""
    outcome: Outcome
    status: int
    ms: float
    path: str | None
    """The path a `refused` or `invalid` request was sent to, as the server saw it (without the
    query string; secrets redacted; cut at 200 characters); null on every other line."""


_FIELDS: Final = tuple(RequestLogLine.model_fields)


def format_line(
    log_format: LogFormat,
    arrived: float,
    session: str | None,
    cassette: str | None,
    provider: str | None,
    endpoint: str | None,
    key: str | None,
    outcome: Outcome,
    status: int,
    ms: float,
    path: str | None = None,
) -> str:
    """One request's line, without its newline: a `RequestLogLine` as JSON, or as text:
    `TIME [session=ID] [cassette=NAME] PROVIDER ENDPOINT KEY OUTCOME STATUS MSms [path=PATH]`,
    `-` for what is unknown. `path` is written as given (`logged_path` chooses and cleans it).

    Written for every request a server logs, so it builds no model (which cost a replay as much
    as the rest of the line together); the tests check each line against `RequestLogLine`.
    """
    stamp = iso_time(arrived)
    if log_format == "json":
        values = (stamp, session, cassette, provider, endpoint, key, outcome, status, ms, path)
        return orjson.dumps(dict(zip(_FIELDS, values, strict=True))).decode()
    where = [
        f"{label}={_shown(value)}"
        for label, value in (("session", session), ("cassette", cassette))
        if value is not None
    ]
    return " ".join(
        [
            stamp,
            *(where or ["-"]),
            _shown(provider),
            _shown(endpoint),
            key or "-",
            outcome,
            str(status),
            f"{ms:.1f}ms",
            *([] if path is None else [f"path={_shown(path)}"]),
        ]
    )


def logged_path(
    path: str, outcome: Outcome, status: int, *, secrets: Iterable[str] = ()
) -> str | None:
    """What a line gives as the request's `path`: for a 4xx answer whose outcome is in
    `PATH_SHOWN_FOR`, the path the client sent (as the server saw it: percent-decoded, without
    its query string, where some SDKs put their API key, nor anything after a `?` it decoded),
    with the known secret shapes, the environment's secrets and `secrets` (the server's control
    token) redacted, cut at `SHOWN_PATH_LENGTH` characters; else None."""
    if outcome not in PATH_SHOWN_FOR or not 400 <= status < 500:
        return None
    shown = redact(path.split("?", 1)[0], secrets=secrets)
    if len(shown) > SHOWN_PATH_LENGTH:
        shown = shown[: SHOWN_PATH_LENGTH - 3] + "..."
    return shown


def _shown(value: str | None) -> str:
    if value is None:
        return "-"
    return value if _PLAIN.fullmatch(value) else json.dumps(value)


@functools.lru_cache(maxsize=1)
def _second(whole: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))


def iso_time(seconds: float) -> str:
    """`seconds` since the epoch as ISO 8601 UTC, to the millisecond (`...T10:00:00.123Z`)."""
    whole = int(seconds)
    return f"{_second(whole)}.{int((seconds - whole) * 1000):03d}Z"


def key_prefix(key: str) -> str:
    """The first 12 hex characters of a `sha256:` request key."""
    return key.removeprefix("sha256:")[:KEY_PREFIX_LENGTH]


def write_line(line: str) -> None:
    """Write `line` to stderr in one write (stderr is line-buffered: one system call)."""
    sys.stderr.write(line + "\n")
