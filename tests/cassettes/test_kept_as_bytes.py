"""A cassette file as `dumps` writes it is kept as its bytes once loaded: every interaction is read,
checked and verified at load and read again when looked at. It must hold exactly what the general
reader holds, refuse exactly what it refuses, and keep about the file's size in memory."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.cassettes import Cassette, CassetteTamperedError, CassetteTransport
from harness.cassettes.cassette import (
    Interaction,
    RecordedRequest,
    RecordedResponse,
    exact_request,
    new_metadata,
    rekey,
)
from harness.sse import SseEvent

TRICKY = 'ends a line early: "\n    }\n  ]\n}" and a quote \\" and a brace }'


def interaction(index: int, repeat: int = 0) -> Interaction:
    request = RecordedRequest(
        method="POST",
        path="/v1/chat/completions",
        headers={"content-type": "application/json"},
        body={
            "model": "m",
            "messages": [{"role": "user", "content": f"question {index} {TRICKY}"}],
        },
    )
    if index % 3 == 2:
        response = RecordedResponse(
            status=200,
            headers={"content-type": "text/event-stream"},
            events=[SseEvent(data=json.dumps({"n": index})), SseEvent(data="[DONE]")],
        )
    else:
        response = RecordedResponse(
            status=200,
            headers={"content-type": "application/json"},
            body={"id": f"r{index}", "answer": "x" * 3000, "score": 0.25, "tags": [TRICKY]},
        )
    return Interaction.build(rekey(request), 1 + repeat, request, response)


def written(path: Path, count: int) -> Path:
    items = [interaction(index) for index in range(count)]
    items.append(interaction(0, repeat=1))  # a key recorded twice
    cassette = Cassette(path, new_metadata("openai"), items)
    path.write_bytes(cassette.dumps())
    return path


def compact_copy(path: Path, into: Path) -> Path:
    """The same cassette in another layout, which only the general reader reads."""
    into.write_text(json.dumps(json.loads(path.read_bytes()), separators=(",", ":")))
    return into


def test_a_file_dumps_wrote_is_kept_as_bytes_and_holds_what_the_general_reader_holds(
    tmp_path: Path,
) -> None:
    kept = Cassette.load(written(tmp_path / "kept.json", 12), index_requests=True)
    general = Cassette.load(compact_copy(kept.path, tmp_path / "compact.json"))

    assert not isinstance(kept.interactions, list)  # read when looked at
    assert isinstance(general.interactions, list)
    assert list(kept.interactions) == general.interactions
    assert kept.interactions == general.interactions  # equal to a list, as a list is
    assert general.raw == kept.raw
    assert kept.interactions != general.interactions[:-1]
    assert kept.entries == general.entries
    assert kept.computed_digests == general.computed_digests
    assert kept.by_key == general.by_key
    assert kept.exact_requests == general.exact_requests
    assert kept.metadata == general.metadata
    assert kept.interactions[-1] == general.interactions[-1]
    assert kept.interactions[2:4] == general.interactions[2:4]
    assert kept.raw[0]["response"]["body"]["tags"] == [TRICKY]
    assert [kept.replay_parts(index) for index in range(len(kept))] == [
        general.replay_parts(index) for index in range(len(general))
    ]
    with pytest.raises(IndexError):
        kept.interactions[13]


def test_dumps_of_a_kept_cassette_writes_the_same_file(tmp_path: Path) -> None:
    path = written(tmp_path / "kept.json", 5)
    assert Cassette.load(path).dumps() == path.read_bytes()


def test_requests_are_indexed_the_same_at_load_and_later(tmp_path: Path) -> None:
    path = written(tmp_path / "kept.json", 6)
    at_load = Cassette.load(path, index_requests=True).exact_requests
    later = Cassette.load(path).exact_requests
    assert at_load == later
    assert len(at_load) == 6
    assert at_load[exact_request(interaction(4).request)] == interaction(4).key


def test_a_kept_cassette_replays_every_answer_and_its_repeat(tmp_path: Path) -> None:
    path = written(tmp_path / "kept.json", 6)
    with httpx2.Client(
        base_url="https://api.openai.com", transport=CassetteTransport(path, mode="none")
    ) as client:
        for index in [*range(6), 0]:
            body: Any = interaction(index).request.body
            answer = client.post("/v1/chat/completions", json=body)
            assert answer.status_code == 200
            if index % 3 == 2:
                assert f'"n": {index}' in answer.text
            else:
                assert answer.json()["id"] == f"r{index}"


@pytest.mark.parametrize("layout", ["as written", "compact"])
def test_an_edited_answer_is_tampering_in_either_layout(tmp_path: Path, layout: str) -> None:
    path = written(tmp_path / "kept.json", 4)
    if layout == "compact":
        path = compact_copy(path, tmp_path / "compact.json")
    text = path.read_text()
    path.write_text(text.replace('"r1"', '"r9"', 1))
    with pytest.raises(CassetteTamperedError, match=r"interaction #1 \(POST .*digest mismatch"):
        Cassette.load(path)
    body: Any = Cassette.load(path, allow_tampered=True).interactions[1].response.body
    assert body["id"] == "r9"


def kept_in_memory(path: Path) -> float:
    """What a loaded cassette keeps allocated, as a multiple of its file size."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cassette = Cassette.load(path)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cassette) > 0
    return kept / path.stat().st_size


def test_a_kept_cassette_holds_about_its_file_size_in_memory(tmp_path: Path) -> None:
    path = written(tmp_path / "kept.json", 300)
    compact = compact_copy(path, tmp_path / "compact.json")
    assert kept_in_memory(path) < 1.4
    # the general reader keeps the parsed tree and the typed interactions
    assert kept_in_memory(compact) > 1.5


def test_members_in_another_order_are_still_kept_and_replayed(tmp_path: Path) -> None:
    """Laid out as `dumps` lays a file out, but each interaction's digest written before its
    response: the response cannot be found alone, so each replay reads the whole interaction."""
    path = written(tmp_path / "kept.json", 6)
    document = json.loads(path.read_bytes())
    document["interactions"] = [
        {name: item[name] for name in ("digest", "key", "occurrence", "request", "response")}
        for item in document["interactions"]
    ]
    reordered = tmp_path / "reordered.json"
    reordered.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")

    kept = Cassette.load(reordered)
    assert not isinstance(kept.interactions, list)
    assert kept.interactions == Cassette.load(path).interactions
    for index in range(6):
        status, _, chunks = kept.replay_parts(index)
        assert (status, chunks) == Cassette.load(path).replay_parts(index)[::2]
