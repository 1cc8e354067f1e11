"""Reading JSON bounded: an HTTP body (`parse_json_body`) or a file the harness reads
(`read_json_file`), so that no reader of hostile JSON (nor the recursive JSON libraries behind it)
comes near Python's recursion limit, blocks on a FIFO or reads without end."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from itertools import accumulate
from pathlib import Path
from typing import Any, ClassVar, Final, NamedTuple

from harness.errors import HarnessError
from harness.files import FileTooLargeError, NotARegularFileError, read_regular_file

MAX_BODY_DEPTH: Final = 252
"""The deepest a JSON body may nest and still be read as JSON. Real LLM traffic nests a few dozen
levels; a deeper body is keyed, scrubbed and stored as text, so no reader (nor the recursive JSON
libraries behind it) comes near Python's recursion limit."""


def parse_json_body(
    body: bytes | str | None, *, numbers: NumberReaders | None = None
) -> tuple[bool, Any]:
    """`(True, value)` when `body` is a JSON document, else `(False, None)`.

    Not JSON here, so kept as text: a body nested deeper than `MAX_BODY_DEPTH`, and one holding
    `NaN` or `Infinity` (Python's parser accepts them; JSON and a cassette file cannot hold them).
    `numbers` reads numbers another way (`canonical_numbers`: by value, as RFC 8785 does).
    """
    if not body:
        return False, None
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if (
        raw.count(b"[") + raw.count(b"{") > MAX_BODY_DEPTH
        and json_nesting_depth(raw) > MAX_BODY_DEPTH
    ):
        return False, None
    try:
        return True, strict_json(body, numbers=numbers)
    except (ValueError, UnicodeDecodeError):
        return False, None


class NumberReaders(NamedTuple):
    """How a JSON parser turns number literals into values (`json.loads`'s two hooks)."""

    read_float: Callable[[str], Any]
    read_int: Callable[[str], Any]


def strict_json(text: str | bytes, *, numbers: NumberReaders | None = None) -> Any:
    """`text` decoded as JSON as RFC 8259 defines it.

    Raises `ValueError` (`json.JSONDecodeError` for a syntax error) for what Python's parser
    accepts beyond JSON: `NaN`, `Infinity` and `-Infinity`, and a number too large for a 64-bit
    float, which it reads as infinity. None of them can be written back as JSON.
    """
    if numbers is None:
        return json.loads(text, parse_constant=_not_a_json_number, parse_float=_finite_float)
    return json.loads(
        text,
        parse_constant=_not_a_json_number,
        parse_float=numbers.read_float,
        parse_int=numbers.read_int,
    )


def _not_a_json_number(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} is too large for a 64-bit float")
    return value


MAX_EXACT_INTEGER: Final = 2**53
"""Beyond it a double no longer holds every integer: JavaScript reads `9007199254740993` as
`9007199254740992`, and so does the canonical form."""


def canonical_number(value: float) -> int | float:
    """The value RFC 8785 writes for the double `value`: an integral double below 10^21 as the
    integer JavaScript prints (`1.0` -> `1`, `1.2345678901234568e19` -> `12345678901234568000`),
    any other double as itself (written in its shortest round-trip form)."""
    if value.is_integer() and abs(value) < 1e21:
        if abs(value) < MAX_EXACT_INTEGER:
            return int(value)
        return int(Decimal(repr(value)))  # the shortest digits, then zeros, as JavaScript prints
    return value


def _canonical_float(text: str) -> int | float:
    return canonical_number(_finite_float(text))


def _canonical_int(text: str) -> int | float:
    value = int(text)
    if -MAX_EXACT_INTEGER < value < MAX_EXACT_INTEGER:
        return value
    return canonical_number(_finite_float(text))


canonical_numbers: Final = NumberReaders(_canonical_float, _canonical_int)
"""Numbers read by value, as RFC 8785 (the JSON Canonicalization Scheme) reads them: `1.0`, `1`
and `1e0` are the same number, and an integer beyond 2^53 is the double nearest to it."""


_JSON_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET_STEPS: Final = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in _BRACKET_STEPS)


def json_nesting_depth(raw: bytes) -> int:
    """The deepest bracket nesting of JSON text outside its strings, found without recursion.

    The standard library parser recurses once per level, so this runs before it does. On text
    that is not JSON it still bounds how deep a JSON parser could recurse into it.
    """
    skeleton = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_BRACKET_STEPS.__getitem__, skeleton)), default=0)


# -- JSON files ------------------------------------------------------------------------------------

MAX_JSON_FILE_DEPTH: Final = 256
"""The deepest a JSON file the harness reads may nest: a report's cell (4 levels) holding a value
as deep as a recorded body may be (`MAX_BODY_DEPTH`)."""
MAX_JSON_FILE_BYTES_VARIABLE: Final = "HARNESS_MAX_JSON_BYTES"
DEFAULT_MAX_JSON_FILE_BYTES: Final = 64 * 1024 * 1024
"""The largest JSON file read (a report of tens of thousands of cells), unless
`HARNESS_MAX_JSON_BYTES` says otherwise."""


class JsonFileError(HarnessError, ValueError):
    """A JSON file the harness reads (a `--json` report to merge, `.harness/last-run.json`) is
    not a regular file within the limits, or not valid JSON in valid UTF-8. The message names
    the file, with `line:column` where there is one, and what is wrong, never the content."""

    code: ClassVar[str] = "json_file_invalid"


class JsonFileMissingError(JsonFileError):
    """Raised when a JSON file the harness reads (a `--json` report to merge,
    `.harness/last-run.json`) does not exist; callers that treat a missing file apart catch it."""

    code: ClassVar[str] = "json_file_missing"


class JsonLimitSettingError(HarnessError, ValueError):
    """`HARNESS_MAX_JSON_BYTES` is set to something other than a whole number of at least 1."""

    code: ClassVar[str] = "json_limit_setting_invalid"


def max_json_file_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The size limit of `read_json_file`: `HARNESS_MAX_JSON_BYTES`, else 64 MiB."""
    text = (os.environ if environ is None else environ).get(MAX_JSON_FILE_BYTES_VARIABLE, "")
    if text == "":
        return DEFAULT_MAX_JSON_FILE_BYTES
    if not (text.isascii() and text.isdigit() and len(text) <= 20) or int(text) < 1:
        raise JsonLimitSettingError(
            f"expected a whole number of at least 1 but got {MAX_JSON_FILE_BYTES_VARIABLE}="
            f"{text[:40]!r} (type=str)"
        )
    return int(text)


def read_json_file(path: Path) -> Any:
    """The JSON value in the file at `path`, read by the rules every JSON file of the harness is
    read by (but cassettes, which have a reader of their own).

    Refused with `JsonFileError`, naming the file and what is wrong but never the content: a path
    that is not a regular file (a FIFO is opened without blocking, so it never hangs the run), a
    file over `max_json_file_bytes()`, bytes that are not UTF-8 or a string escape that is not a
    character (a lone surrogate, `"\\ud800"`), nesting deeper than `MAX_JSON_FILE_DEPTH` (found
    without recursing), and what RFC 8259 does not allow (`strict_json`). A missing file is a
    `JsonFileMissingError`, never read as empty.
    """
    data = _json_file_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = _position(data[: error.start].decode("utf-8"), error.start)
        raise JsonFileError(
            f"{path}:{where}: the file is not UTF-8 (byte 0x{data[error.start]:02x}); save it as "
            "UTF-8"
        ) from None
    if (
        data.count(b"[") + data.count(b"{") > MAX_JSON_FILE_DEPTH
        and json_nesting_depth(data) > MAX_JSON_FILE_DEPTH
    ):
        raise JsonFileError(
            f"{path}:{_position(text, _too_deep_at(text))}: the JSON nests deeper than "
            f"{MAX_JSON_FILE_DEPTH} levels; no file the harness writes is that deep"
        )
    try:
        value = strict_json(text)
    except json.JSONDecodeError as error:
        raise JsonFileError(
            f"{path}:{error.lineno}:{error.colno}: not valid JSON ({error.msg})"
        ) from None
    except ValueError:
        raise JsonFileError(
            f"{path}: not valid JSON: it holds a number JSON cannot hold (NaN, Infinity, a number "
            "beyond a 64-bit float, or an integer of more than 4,300 digits)"
        ) from None
    if _SURROGATE_ESCAPE.search(text) and _holds_a_surrogate(value):
        raise JsonFileError(
            f"{path}:{_position(text, _surrogate_at(text))}: a string holds half of a UTF-16 "
            "surrogate pair (a \\ud800-\\udfff escape without its other half), which is no "
            "character"
        )
    return value


def _json_file_bytes(path: Path) -> bytes:
    limit = max_json_file_bytes()
    try:
        return read_regular_file(path, limit)
    except FileNotFoundError:
        raise JsonFileMissingError(f"{path}: no such file") from None
    except NotARegularFileError as error:
        raise JsonFileError(
            f"{path}: it is {error.kind}, not a regular file; give the path of a JSON file"
        ) from None
    except FileTooLargeError:
        raise JsonFileError(
            f"{path}: the file is larger than {_size(limit)}; set {MAX_JSON_FILE_BYTES_VARIABLE} "
            "to a larger number of bytes to read it"
        ) from None
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the path
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise JsonFileError(f"{path}: cannot read it ({reason})") from None


def _size(count: int) -> str:
    mib = 1024 * 1024
    return f"{count // mib} MiB" if count % mib == 0 else f"{count:,} bytes"


def _position(text: str, offset: int) -> str:
    """`line:column` (both from 1) of character `offset` of `text`."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"{line}:{column}"


JSON_STRING_TEXT: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""A string of JSON text: scanned from the start of valid JSON text, it finds exactly its strings
(no `"` occurs outside them)."""
_STRING_OR_BRACKET: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
"""Where a surrogate can come from in text that is UTF-8: an escape (the value is walked only
when one occurs)."""


def _too_deep_at(text: str) -> int:
    """Where `text` first nests deeper than `MAX_JSON_FILE_DEPTH` (0 if it never does)."""
    depth = 0
    for token in _STRING_OR_BRACKET.finditer(text):
        mark = token.group()
        if mark in ("[", "{"):
            depth += 1
            if depth > MAX_JSON_FILE_DEPTH:
                return token.start()
        elif mark in ("]", "}"):
            depth -= 1
    return 0


def _holds_a_surrogate(value: Any) -> bool:
    """Whether a string of the JSON value `value` (a member name too) holds a surrogate; walked
    without recursion."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return True
        elif isinstance(node, dict):
            pending.extend(node)
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False


def _surrogate_at(text: str) -> int:
    """Where the first string of the JSON text `text` holding a surrogate starts."""
    for token in JSON_STRING_TEXT.finditer(text):
        if "\\u" in token.group() and _SURROGATE.search(json.loads(token.group(), strict=False)):
            return token.start()
    return 0
