"""Fuzzing cassette files: whatever a file holds, reading, verifying and replaying it give a
result or a `HarnessError`, never another exception; and `verify` reports a problem exactly
when `Cassette.load` refuses the file.

(a) feeds arbitrary bytes, JSON documents and byte-level corruptions of a real cassette;
(b) makes structured mutations of a cassette the harness recorded (delete, retype or re-nest any
member, swap two values, nest deeply, huge integers, bad base64, bad SSE events), with digests
left stale or recomputed so the shape checks behind the digest check are reached too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.cassettes import Cassette, CassetteTransport
from harness.cassettes.cassette import raw_interaction_digest
from harness.cassettes.review import verify
from harness.errors import HarnessError
from harness.scrub import SIGNING_KEY_VARIABLE
from tests.support.cassette_files import BASE_URL, nested, record_every_shape, send_every_shape


@pytest.fixture(scope="module", autouse=True)
def unsigned() -> Iterator[None]:
    """Verification here is of digests and shapes; a signing key in the environment would make
    every file "unsigned"."""
    saved = os.environ.pop(SIGNING_KEY_VARIABLE, None)
    yield
    if saved is not None:
        os.environ[SIGNING_KEY_VARIABLE] = saved


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-cassettes")


@pytest.fixture(scope="module")
def recorded(folder: Path) -> dict[str, Any]:
    path = record_every_shape(folder / "recorded.json")
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def load_and_verify_agree(path: Path) -> bool:
    """Whether `Cassette.load` accepts `path`; fails unless `verify` says the same."""
    try:
        Cassette.load(path)
        accepted = True
    except HarnessError:
        accepted = False
    try:
        problems = [problem.problem for problem in verify([path])]
    except HarnessError as error:  # the file could not be read at all
        problems = [str(error)]
    assert accepted == (not problems), problems
    event("loaded" if accepted else "refused")
    return accepted


def replays_or_refuses(path: Path) -> None:
    """Replaying the recorded requests through `path` answers or raises a `HarnessError`.

    Answering means the client receives the status, headers and body bytes (decoded as the
    stored headers say); turning the bytes into text by a stored charset is the client's call.
    """
    try:
        transport = CassetteTransport(path, allow_tampered=True)
    except HarnessError:
        return
    with httpx2.Client(transport=transport, base_url=BASE_URL) as client:
        try:
            for response in send_every_shape(client):
                assert 100 <= response.status_code <= 599
                assert isinstance(response.content, bytes)
                assert all(isinstance(value, str) for value in response.headers.values())
            event("replayed")
        except HarnessError:  # a CassetteMissError counts: the mutation changed what was recorded
            event("replay refused")


# -- (a) bytes ------------------------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def corrupted(draw: st.DrawFn, recorded: dict[str, Any]) -> bytes:
    """The recorded cassette's bytes with a few bytes replaced, inserted or deleted."""
    data = bytearray(json.dumps(recorded, indent=2).encode())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        operation = draw(st.sampled_from(["replace", "insert", "delete"]))
        if operation == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        else:
            chunk = draw(
                st.binary(min_size=1, max_size=8)
                | st.sampled_from([b"[", b"{", b'"', b"\\", b"9" * 30])
            )
            data[at : at + (len(chunk) if operation == "replace" else 0)] = chunk
    return bytes(data)


def any_bytes(recorded: dict[str, Any]) -> st.SearchStrategy[bytes]:
    documents = st.fixed_dictionaries(
        {"format": st.just("harness-cassette/1") | JSON_VALUES},
        optional={
            "metadata": JSON_VALUES,
            "interactions": st.lists(JSON_VALUES, max_size=3),
            "signature": JSON_VALUES,
        },
    )
    return st.one_of(
        st.binary(max_size=512),
        JSON_VALUES.map(lambda value: json.dumps(value).encode()),
        documents.map(lambda value: json.dumps(value).encode()),
        st.integers(200, 3_000).map(lambda n: b'{"format": "harness-cassette/1", "x": ' + b"[" * n),
        corrupted(recorded),
    )


@given(data=st.data())
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_any_bytes_load_or_raise_a_harness_error(
    data: st.DataObject, folder: Path, recorded: dict[str, Any]
) -> None:
    path = folder / "bytes.json"
    path.write_bytes(data.draw(any_bytes(recorded)))
    if load_and_verify_agree(path):
        replays_or_refuses(path)


# -- (b) structured mutations ---------------------------------------------------------------------

Location = tuple[str | int, ...]


def locations(value: Any, prefix: Location = ()) -> list[Location]:
    """Every member and item inside `value`, parents before children."""
    if isinstance(value, dict):
        items: list[tuple[str | int, Any]] = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return []
    found: list[Location] = []
    for name, child in items:
        found.append((*prefix, name))
        found.extend(locations(child, (*prefix, name)))
    return found


def parent_of(document: Any, location: Location) -> Any:
    for part in location[:-1]:
        document = document[part]
    return document


SPECIAL_VALUES = st.sampled_from(
    [
        2**64,
        -(2**70),
        10**30,
        1.0,
        True,
        99,
        600,
        -1,
        "",
        "not base64!",
        "AP8",
        "a\nb",
        "a\rb",
        "\ud800",
        "gzip",
        "sha256:" + "0" * 64,
        [],
        {},
        {"data": 5},
        {"id": "a\nb"},
        {"retry": -1},
        {"data": "x", "comments": ["a\nb"]},
    ]
)
NEW_VALUES = JSON_VALUES | SPECIAL_VALUES | st.integers(240, 600).map(nested)
NEW_NAMES = st.sampled_from(
    ["content-encoding", "body", "body_text", "body_base64", "events", "extra", "status"]
)
# Response headers that change how a client reads the body, with values that stress it.
BODY_HEADERS = st.sampled_from(
    ["content-encoding", "content-type", "content-length", "transfer-encoding"]
)
BODY_HEADER_VALUES = st.sampled_from(
    [
        "gzip",
        "br",
        "deflate, gzip",
        "identity",
        "zstd",
        "text/event-stream",
        "text/plain; charset=bogus",
        "application/json; charset=utf-16",
        "chunked",
        "-1",
        "99999999999999999999",
        "é",
        "a\nb",
    ]
)


@st.composite
def mutated(draw: st.DrawFn, recorded: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.dumps(recorded))
    for _ in range(draw(st.integers(1, 3))):
        places = locations(document)
        if draw(st.integers(0, 4)):  # mostly inside interactions: (a) covers the rest
            places = [place for place in places if place[:1] == ("interactions",)] or places
        if not places:
            break
        location = draw(st.sampled_from(places))
        parent, name = parent_of(document, location), location[-1]
        operation = draw(
            st.sampled_from(["header", "retype", "delete", "list", "object", "swap", "rename"])
        )
        if operation == "header":
            set_response_header(
                document, draw(st.integers(0, 4)), draw(BODY_HEADERS), draw(BODY_HEADER_VALUES)
            )
        elif operation == "delete":
            del parent[name]
        elif operation == "retype":
            parent[name] = draw(NEW_VALUES)
        elif operation == "list":
            parent[name] = [parent[name]]
        elif operation == "object":
            parent[name] = {"value": parent[name]}
        elif operation == "swap":
            other = draw(st.sampled_from(places))
            if other[: len(location)] != location and location[: len(other)] != other:
                other_parent = parent_of(document, other)
                parent[name], other_parent[other[-1]] = other_parent[other[-1]], parent[name]
        elif isinstance(parent, dict):
            parent[draw(NEW_NAMES)] = parent.pop(name)
    if draw(st.booleans()):
        redigest(document)
    return document


def set_response_header(document: dict[str, Any], index: int, name: str, value: str) -> None:
    """Set a header of response `index`, where the document still has that shape."""
    with suppress(LookupError, TypeError, AttributeError):
        document["interactions"][index]["response"]["headers"][name] = value


def redigest(document: dict[str, Any]) -> None:
    """Recompute every digest that can be, so a mutation is not caught as tampering first."""
    interactions = document.get("interactions")
    for interaction in interactions if isinstance(interactions, list) else []:
        if isinstance(interaction, dict):
            # Nested too deep, the digest stays stale: the depth is refused anyway.
            with suppress(HarnessError):
                interaction["digest"] = raw_interaction_digest(interaction)


@given(data=st.data())
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_mutated_cassettes_load_verify_and_replay_or_raise_a_harness_error(
    data: st.DataObject, folder: Path, recorded: dict[str, Any]
) -> None:
    path = folder / "mutated.json"
    path.write_text(json.dumps(data.draw(mutated(recorded))), encoding="utf-8")
    load_and_verify_agree(path)
    replays_or_refuses(path)
