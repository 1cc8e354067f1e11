"""The canonical request key: what makes two LLM HTTP requests "the same request".

The key is `"sha256:" + hex(sha256(canonical bytes))`, where the canonical bytes are compact JSON
with sorted keys of:

- `method`, upper-case;
- `path`, and `query` as its parameters sorted (credential parameters left out); scheme, host and
  port are not part of the key, so a cassette recorded against one base URL replays against any;
- `headers`: only the behaviour-changing ones (every registered provider's `keyed_headers`),
  lower-cased;
- `body`: the parsed JSON body with the provider's volatile fields (its spec's
  `volatile_fields`) and the caller's removed, or for a non-JSON body `body_text`
  (UTF-8) or `body_base64`; an empty body is `null`.

Numbers in a JSON body mean their value, as RFC 8785 (the JSON Canonicalization Scheme) reads
them: each is the IEEE 754 double it denotes, so `1.0`, `1` and `1e0` are one key whether a
Python client (which sends `1.0` for a float) or a JavaScript one (which can only send `1`) made
the request. An integral value below 10^21 is written as an integer (with the digits JavaScript
prints: `12345678901234567890` is the double `12345678901234567000`), any other value in its
shortest round-trip form.

This is a compatibility contract: golden tests pin the key of fixed requests, and changing how it
is computed bumps the key version, which the cassette format names (`KEY_VERSIONS`). Version 1,
the key of `harness-cassette/1` files, wrote each number as the client spelt it (`1.0` and `1`
were two keys); everything else is the same, so both versions give one key for a request whose
numbers are spelt canonically already.

A request may also be spelt differently by two clients and still be the same request to the
provider: a tool call's arguments sent back as the model wrote them (`{"q": "x"}`) or as the
client's own `JSON.stringify` (`{"q":"x"}`), an Anthropic text as a string or as one text block.
The key keeps those bytes as sent (it is pinned); `equivalent_request_key` reads them by value
(the spec's `json_text_fields` and `text_block_fields`), and a cassette that has no interaction
under a request's key replays the one under the same equivalent key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

from harness.errors import CassetteError
from harness.json_body import canonical_numbers, parse_json_body
from harness.providers import BUILT_IN, detect_spec, find_provider, keyed_header_names
from harness.scrub import CREDENTIAL_QUERY_PARAMETERS

KEY_VERSION: Final = 2
"""The request key new cassettes are written with (numbers by value, RFC 8785)."""
KEY_VERSIONS: Final[Mapping[int, str]] = {1: "harness-cassette/1", 2: "harness-cassette/2"}
"""Each key version and the cassette format whose interactions are keyed with it."""

KEYED_HEADERS: Final = frozenset(name for spec in BUILT_IN.values() for name in spec.keyed_headers)
"""Headers that change what a built-in provider does, and so are part of the key (the key
reads every registered provider's, `harness.providers.keyed_header_names()`)."""

DEFAULT_VOLATILE_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    name: spec.volatile_fields for name, spec in BUILT_IN.items()
}
"""Body fields (JSON pointers) that vary between runs without changing the answer, per built-in
provider (`ProviderSpec.volatile_fields`; a registered provider's come from its spec).

OpenAI: `user`, `safety_identifier` and `prompt_cache_key` identify the end user or a cache
bucket, and `metadata` is stored-completion bookkeeping. Anthropic: `metadata.user_id`.
A `*` segment matches every item of an array or every member of an object.
"""


class VolatileFieldError(CassetteError, ValueError):
    """Raised when an entry of `volatile` (the request fields a cassette leaves out of its request
    key) is not a JSON pointer (RFC 6901)."""

    code = "cassette_volatile_field_invalid"


def canonical_request_key(
    method: str,
    url: str,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    body: bytes | str | None = None,
    *,
    volatile: Sequence[str] = (),
    provider: str | None = None,
    version: int = KEY_VERSION,
    equivalent: bool = False,
) -> str:
    """The `sha256:` key of a request; see the module docstring for what it covers.

    `volatile` adds JSON pointers to the provider's default volatile fields (`provider` is detected
    from the path when not given); `version` is the key version (`KEY_VERSIONS`), the latest by
    default; `equivalent` gives the equivalent key (`equivalent_request_key`).
    """
    return (
        "sha256:"
        + hashlib.sha256(
            canonical_request_bytes(
                method,
                url,
                headers,
                body,
                volatile=volatile,
                provider=provider,
                version=version,
                equivalent=equivalent,
            )
        ).hexdigest()
    )


def equivalent_request_key(
    method: str,
    url: str,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    body: bytes | str | None = None,
    *,
    volatile: Sequence[str] = (),
    provider: str | None = None,
) -> str:
    """The key of a request read by value where its provider lets a client spell one request
    two ways (`ProviderSpec.json_text_fields`, `text_block_fields`, `snake_case_members`): two
    requests that differ only there have one equivalent key and two request keys. Never written
    to a file: a cassette computes it for its recorded requests when a request misses its own
    key."""
    return canonical_request_key(
        method, url, headers, body, volatile=volatile, provider=provider, equivalent=True
    )


def equivalent_body(value: Any, path: str, provider: str | None = None) -> Any:
    """A parsed JSON body with what its provider lets a client spell two ways read by value:
    each JSON text of `json_text_fields` as `{"parsed": <its value>}` (a text that is not JSON,
    such as a call cut off mid-arguments, stays as it is), and each list of one plain text
    block of `text_block_fields` as its text, and each value of `equivalent_values` as the
    value it means."""
    spec = find_provider(provider) if provider else detect_spec(path)
    if spec is None:
        return value
    if spec.snake_case_members:
        value = _camel_case_members(value, spec.data_members, spec.map_members)
    for pointer in spec.ignored_when_equivalent:
        value = _without(value, split_pointer(pointer))
    for pointer in spec.json_text_fields:
        value = _replaced_at(value, split_pointer(pointer), _json_value)
    for pointer in spec.text_block_fields:
        value = _replaced_at(value, split_pointer(pointer), _block_text)
    for pointer, spelt, meant in spec.equivalent_values:
        value = _replaced_at(value, split_pointer(pointer), _reading(spelt, meant))
    return value


def _reading(spelt: str, meant: str) -> Callable[[Any], Any]:
    """Reads `spelt` as `meant`, and any other value as itself."""
    return lambda node: meant if node == spelt else node


def _camel_case_members(
    node: Any, data: frozenset[str], maps: frozenset[str], *, names_are_data: bool = False
) -> Any:
    """`node` with every member name in lowerCamelCase (`parameters_json_schema` is
    `parametersJsonSchema`), but the values of `data` members, kept as they are, and the keys of
    `maps` members' objects (their values converted)."""
    if isinstance(node, list):
        return [_camel_case_members(item, data, maps) for item in node]
    if not isinstance(node, dict):
        return node
    converted: dict[str, Any] = {}
    for name, value in node.items():
        member = name if names_are_data else _lower_camel(name)
        if member in data and not names_are_data:
            converted[member] = value
        else:
            converted[member] = _camel_case_members(
                value, data, maps, names_are_data=member in maps and not names_are_data
            )
    return converted


def _lower_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _equivalent_path(path: str, provider: str | None) -> str:
    """`path` at its endpoint's own version when it came to one of the `other_versions` the
    same API is served at (Gemini's `/v1/...` is its `/v1beta/...`)."""
    spec = find_provider(provider) if provider else detect_spec(path)
    endpoint = spec.endpoint_at(path) if spec is not None else None
    if endpoint is not None:
        for version in endpoint.other_versions:
            if path.startswith(version + "/"):
                return endpoint.version + path.removeprefix(version)
    return path


def _json_value(node: Any) -> Any:
    if not isinstance(node, str):
        return node
    is_json, value = parse_json_body(node, numbers=canonical_numbers)
    return {"parsed": value} if is_json else node


def _block_text(node: Any) -> Any:
    if (
        isinstance(node, list)
        and len(node) == 1
        and isinstance(node[0], dict)
        and node[0].keys() == {"type", "text"}
        and node[0]["type"] == "text"
        and isinstance(node[0]["text"], str)
    ):
        return node[0]["text"]
    return node


def canonical_request_bytes(
    method: str,
    url: str,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    body: bytes | str | None = None,
    *,
    volatile: Sequence[str] = (),
    provider: str | None = None,
    version: int = KEY_VERSION,
    equivalent: bool = False,
) -> bytes:
    """The canonical bytes the key hashes (useful to see why two keys differ); with
    `equivalent`, those of `equivalent_request_key`."""
    if version not in KEY_VERSIONS:
        raise CassetteError(
            f"expected a request key version in {sorted(KEY_VERSIONS)} but got {version!r}"
        )
    parts = urlsplit(url)
    path = parts.path or "/"
    document: dict[str, Any] = {
        "method": method.upper(),
        "path": path,
        "query": sorted(
            [name, value]
            for name, value in parse_qsl(parts.query, keep_blank_values=True)
            if name.lower() not in CREDENTIAL_QUERY_PARAMETERS
        ),
        "headers": keyed_headers(headers),
    }
    document.update(_canonical_body(body, path, volatile, provider, version))
    if equivalent:
        document["path"] = _equivalent_path(path, provider)
        if "body" in document:
            document["body"] = equivalent_body(document["body"], path, provider)
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # JSON allows a lone surrogate ("\ud83d", half an emoji cut by a JS client); it is written
    # back as that escape. Any other text encodes exactly as UTF-8, so no existing key changes.
    return text.encode("utf-8", "backslashreplace")


def keyed_headers(
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
) -> dict[str, str]:
    """The behaviour-changing headers of a request, lower-cased names, repeated values joined."""
    if headers is None:
        return {}
    items = headers.items() if isinstance(headers, Mapping) else headers
    names = keyed_header_names()
    keyed: dict[str, list[str]] = {}
    for name, value in items:
        lowered = name.lower()
        if lowered in names:
            keyed.setdefault(lowered, []).append(value)
    return {name: ", ".join(values) for name, values in keyed.items()}


def _canonical_body(
    body: bytes | str | None,
    path: str,
    volatile: Sequence[str],
    provider: str | None,
    version: int,
) -> dict[str, Any]:
    if not body:
        return {"body": None}
    is_json, value = parse_json_body(body, numbers=canonical_numbers if version >= 2 else None)
    if is_json:
        spec = find_provider(provider) if provider else detect_spec(path)
        pointers = (*(spec.volatile_fields if spec is not None else ()), *volatile)
        if pointers:
            value = remove_pointers(value, pointers)
        return {"body": value}
    raw = body.encode("utf-8", "backslashreplace") if isinstance(body, str) else body
    try:
        return {"body_text": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(raw).decode("ascii")}


def remove_pointers(value: Any, pointers: Iterable[str]) -> Any:
    """`value` without the members the JSON pointers name; missing members are ignored.

    Containers on the way to a removed member are copied, everything else is shared, so the cost
    is proportional to the pointers' depth, not to the size of the body.
    """
    for pointer in pointers:
        value = _without(value, split_pointer(pointer))
    return value


def split_pointer(pointer: str) -> list[str]:
    """The unescaped reference tokens of a volatile-field JSON pointer (RFC 6901).

    Refuses, with `VolatileFieldError`, the empty pointer (it names the whole body), a pointer
    not starting with `/`, and a `~` not followed by `0` or `1`. A `*` token matches every
    member or item; a token selects an array item only when it is ASCII digits.
    """
    if pointer == "":
        raise VolatileFieldError(
            "expected a JSON pointer such as '/metadata/user_id' but got '' (the whole body)"
        )
    if not pointer.startswith("/"):
        raise VolatileFieldError(
            f"expected a JSON pointer starting with '/' but got volatile={pointer!r}"
        )
    if _BAD_ESCAPE.search(pointer):
        raise VolatileFieldError(
            "expected a JSON pointer whose '~' is written '~0' and '/' inside a name '~1' but "
            f"got volatile={pointer!r}"
        )
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


_BAD_ESCAPE: Final = re.compile(r"~(?![01])")
_ARRAY_INDEX: Final = re.compile(r"[0-9]+")
"""ASCII digits only: `str.isdigit` also accepts `²` and `٣`, which `int` then refuses or reads."""


def _replaced_at(node: Any, parts: list[str], replace: Callable[[Any], Any]) -> Any:
    """`node` with `replace` applied to each value the pointer `parts` names (copied on the way,
    as `_without` does)."""
    if not parts:
        return replace(node)
    head, rest = parts[0], parts[1:]
    if isinstance(node, dict):
        names = list(node) if head == "*" else [head] if head in node else []
        if not names:
            return node
        copied = dict(node)
        for name in names:
            copied[name] = _replaced_at(node[name], rest, replace)
        return copied
    if isinstance(node, list):
        if head == "*":
            indexes = range(len(node))
        elif _ARRAY_INDEX.fullmatch(head) and int(head) < len(node):
            indexes = range(int(head), int(head) + 1)
        else:
            return node
        copied_list = list(node)
        for index in indexes:
            copied_list[index] = _replaced_at(node[index], rest, replace)
        return copied_list
    return node


def _without(node: Any, parts: list[str]) -> Any:
    head, rest = parts[0], parts[1:]
    if isinstance(node, dict):
        names = list(node) if head == "*" else [head] if head in node else []
        if not names:
            return node
        copied = dict(node)
        for name in names:
            if rest:
                copied[name] = _without(node[name], rest)
            else:
                del copied[name]
        return copied
    if isinstance(node, list):
        if head == "*":
            indexes = range(len(node))
        elif _ARRAY_INDEX.fullmatch(head) and int(head) < len(node):
            indexes = range(int(head), int(head) + 1)
        else:
            return node
        if not rest:
            drop = set(indexes)
            return [item for index, item in enumerate(node) if index not in drop]
        copied_list = list(node)
        for index in indexes:
            copied_list[index] = _without(node[index], rest)
        return copied_list
    return node


__all__ = [
    "DEFAULT_VOLATILE_FIELDS",
    "KEYED_HEADERS",
    "KEY_VERSION",
    "KEY_VERSIONS",
    "VolatileFieldError",
    "canonical_request_bytes",
    "canonical_request_key",
    "equivalent_body",
    "equivalent_request_key",
    "keyed_headers",
    "remove_pointers",
    "split_pointer",
]
