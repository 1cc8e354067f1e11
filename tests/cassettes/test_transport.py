"""`CassetteTransport`: record modes, O(1) FIFO replay, streams, async, misses."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.cassettes import (
    Cassette,
    CassetteFormatError,
    CassetteMissError,
    CassetteTransport,
    CassetteUnplayedError,
    RecordMode,
    RecordModeError,
)
from harness.cassettes.cassette import IdenticalRequests
from tests.support.cassette_traffic import CHAT, OPENAI, NoNetwork, ScriptedProvider, chat


def record(
    path: Path,
    provider: ScriptedProvider,
    bodies: list[dict[str, Any]],
    mode: str = "once",
    identical_requests: IdenticalRequests = "separate",
) -> list[Any]:
    """Record `bodies`; each occurrence of a repeated request separately unless told (the
    per-occurrence machinery is what most tests here check; shared ones say so)."""
    transport = CassetteTransport(
        path,
        mode=mode,
        inner=provider.transport(),
        run_id=uuid.uuid4().hex,
        identical_requests=identical_requests,
    )
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        return [client.post(CHAT, json=body).json() for body in bodies]


def replay(path: Path, bodies: list[dict[str, Any]], **options: Any) -> list[Any]:
    transport = CassetteTransport(path, inner=NoNetwork(), **options)
    with httpx2.Client(transport=transport, base_url="http://127.0.0.1:9") as client:
        return [client.post(CHAT, json=body).json() for body in bodies]


def test_record_then_replay_returns_the_recorded_answers(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    bodies = [chat("a"), chat("b"), chat("c")]
    recorded = record(cassette_path, provider, bodies)
    assert [r["n"] for r in recorded] == [1, 2, 3]
    assert replay(cassette_path, bodies) == recorded


def test_mode_none_never_reaches_the_network(
    cassette_path: Path, provider: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(cassette_path, provider, [chat("a")])

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a socket was opened in replay")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    transport = CassetteTransport(cassette_path)  # default inner would be the real network
    assert transport.mode is RecordMode.NONE
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        assert client.post(CHAT, json=chat("a")).json()["n"] == 1
        with pytest.raises(CassetteMissError):
            client.post(CHAT, json=chat("not recorded"))
    assert len(provider.calls) == 1


def test_mode_none_needs_an_existing_file(cassette_path: Path) -> None:
    with pytest.raises(CassetteFormatError, match="does not exist and record mode is 'none'"):
        CassetteTransport(cassette_path)


def test_misspelt_modes_fail_loudly(cassette_path: Path) -> None:
    with pytest.raises(RecordModeError, match="expected one of none, once, new_episodes, all"):
        CassetteTransport(cassette_path, mode="new_episode")


def test_replay_is_fifo_per_key_whatever_the_order_of_keys(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    bodies = [chat("a"), chat("b"), chat("a"), chat("c"), chat("a")]
    recorded = record(cassette_path, provider, bodies)
    answers = replay(cassette_path, [chat("c"), chat("a"), chat("b"), chat("a"), chat("a")])
    assert [a["n"] for a in answers] == [4, 1, 2, 3, 5]
    assert {json.dumps(a) for a in answers} == {json.dumps(r) for r in recorded}
    document = Cassette.load(cassette_path).document
    assert [i.occurrence for i in document.interactions] == [1, 1, 2, 1, 3]


def test_a_key_requested_more_often_than_recorded_is_a_miss_unless_repeats_are_allowed(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    record(cassette_path, provider, [chat("a"), chat("a")])
    with pytest.raises(CassetteMissError, match="was recorded 2 time"):
        replay(cassette_path, [chat("a"), chat("a"), chat("a")])
    answers = replay(cassette_path, [chat("a"), chat("a"), chat("a")], allow_repeats=True)
    assert [a["n"] for a in answers] == [1, 2, 2]


def test_once_records_only_when_the_file_does_not_exist(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    record(cassette_path, provider, [chat("a")])
    with pytest.raises(CassetteMissError):
        record(cassette_path, provider, [chat("a"), chat("new")])
    assert len(provider.calls) == 1


def test_new_episodes_replays_hits_and_appends_misses(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    record(cassette_path, provider, [chat("a")])
    answers = record(cassette_path, provider, [chat("a"), chat("b"), chat("a")], "new_episodes")
    assert [a["n"] for a in answers] == [1, 2, 3]
    document = Cassette.load(cassette_path).document
    assert [(i.request.body, i.occurrence) for i in document.interactions] == [
        (chat("a"), 1),
        (chat("b"), 1),
        (chat("a"), 2),
    ]


def test_all_rewrites_the_file_from_this_run_alone(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    record(cassette_path, provider, [chat("stale"), chat("a")])
    record(cassette_path, provider, [chat("a"), chat("b")], "all")
    bodies = [i.request.body for i in Cassette.load(cassette_path).interactions]
    assert bodies == [chat("a"), chat("b")]
    with pytest.raises(CassetteMissError):
        replay(cassette_path, [chat("stale")])


def test_unplayed_interactions_are_reported_and_strict_fails(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    record(cassette_path, provider, [chat("a"), chat("b")])
    transport = CassetteTransport(cassette_path)
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        client.post(CHAT, json=chat("a"))
        assert [i.request.body for i in transport.unplayed] == [chat("b")]
    strict = CassetteTransport(cassette_path, strict=True)
    client = httpx2.Client(transport=strict, base_url=OPENAI)
    client.post(CHAT, json=chat("a"))
    with pytest.raises(CassetteUnplayedError, match=r"1 recorded interaction\(s\) were never"):
        client.close()


def test_streams_replay_incrementally_with_their_event_boundaries(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    transport = CassetteTransport(cassette_path, mode="once", inner=provider.transport())
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        with client.stream("POST", CHAT, json=chat("s", stream=True)) as response:
            live = b"".join(response.iter_bytes())
    stored = Cassette.load(cassette_path).interactions[0].response
    assert stored.events is not None
    assert [e.data for e in stored.events][-1] == "[DONE]"
    assert len(stored.events) == 4
    with httpx2.Client(transport=CassetteTransport(cassette_path), base_url=OPENAI) as client:
        with client.stream("POST", CHAT, json=chat("s", stream=True)) as response:
            chunks = list(response.iter_raw())
    assert len(chunks) == 4
    assert all(chunk.endswith(b"\n\n") for chunk in chunks)
    assert b"".join(chunks) == live


def test_async_clients_record_and_replay(cassette_path: Path, provider: ScriptedProvider) -> None:
    async def scenario() -> tuple[list[int], list[int], list[bytes]]:
        inner = provider.transport()
        async with httpx2.AsyncClient(
            transport=CassetteTransport(cassette_path, mode="all", inner=inner), base_url=OPENAI
        ) as client:
            first = [(await client.post(CHAT, json=chat(x))).json()["n"] for x in "ab"]
            async with client.stream("POST", CHAT, json=chat("s", stream=True)) as response:
                await response.aread()
        async with httpx2.AsyncClient(
            transport=CassetteTransport(cassette_path), base_url=OPENAI
        ) as client:
            second = [(await client.post(CHAT, json=chat(x))).json()["n"] for x in "ab"]
            async with client.stream("POST", CHAT, json=chat("s", stream=True)) as response:
                chunks = [chunk async for chunk in response.aiter_raw()]
        return first, second, chunks

    first, second, chunks = asyncio.run(scenario())
    assert first == second == [1, 2]
    assert len(chunks) == 4


def test_a_client_that_stops_reading_early_still_records_the_whole_stream(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    transport = CassetteTransport(cassette_path, mode="once", inner=provider.transport())
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        with client.stream("POST", CHAT, json=chat("s", stream=True)) as response:
            next(response.iter_raw())
    events = Cassette.load(cassette_path).interactions[0].response.events
    assert events is not None
    assert len(events) == 4


def test_a_miss_explains_itself_with_the_nearest_request_and_a_structural_diff(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(5)]
    long_text = "You are a careful assistant. " * 10
    recorded = chat("weather in Paris", tools=tools, tool_choice="auto", system=long_text)
    record(cassette_path, provider, [recorded, chat("something else entirely")])
    forced = chat(
        "weather in Paris",
        tools=tools[:1],
        tool_choice={"type": "function", "function": {"name": "t0"}},
        system=long_text.replace("careful", "precise", 3),
    )
    with pytest.raises(CassetteMissError) as caught:
        replay(cassette_path, [forced])
    message = str(caught.value)
    assert str(cassette_path) in message
    assert "POST /v1/chat/completions" in message
    assert "key sha256:" in message
    assert "Nearest recorded requests" in message
    assert '$.tool_choice: "auto" -> {"type": "function", ...}' in message
    assert "$.tools: 5 items -> 1 item" in message
    assert "$.system:" in message
    system_line = next(line for line in message.splitlines() if "$.system:" in line)
    assert len(system_line) < 120, "long strings are shortened around the first difference"
    assert "careful" in system_line
    assert "precise" in system_line
    assert isinstance(caught.value, AssertionError)


def test_a_miss_with_no_same_path_request_lists_what_was_recorded(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    record(cassette_path, provider, [chat("a")])
    transport = CassetteTransport(cassette_path)
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        with pytest.raises(CassetteMissError, match="recorded: POST /v1/chat/completions"):
            client.post("/v1/messages", json=chat("a"))


SECRET = "sk-proj-MISSCANARY0000000000000000"


def test_a_miss_never_prints_a_credential_and_never_counts_one_as_a_difference(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    transport = CassetteTransport(
        cassette_path, mode="once", inner=provider.transport(), run_id=uuid.uuid4().hex
    )
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        client.post(f"{CHAT}?key=sk-proj-RECORDEDKEY00000000000000", json=chat("a", api_key="x"))
    live = chat(f"my key is {SECRET}", api_key=SECRET)
    transport = CassetteTransport(cassette_path, inner=NoNetwork())
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        with pytest.raises(CassetteMissError) as caught:
            client.post(f"{CHAT}?key={SECRET}", json=live)
    message = str(caught.value)
    assert SECRET not in message
    assert "[SCRUBBED]" in message
    assert "$.api_key" not in message, "both sides are the placeholder: not a difference"
    assert "query:" not in message
    assert "$.messages[0].content" in message  # the real difference is still shown


def test_all_replaces_a_corrupt_or_tampered_cassette_instead_of_failing_after_the_calls(
    cassette_path: Path, provider: ScriptedProvider
) -> None:
    record(cassette_path, provider, [chat("a")])
    data = json.loads(cassette_path.read_text())
    data["interactions"][0]["response"]["status"] = 500  # digest no longer matches
    cassette_path.write_text(json.dumps(data))
    for broken in (cassette_path.read_text(), '{"format": "harness-cassette/1", "metad'):
        cassette_path.write_text(broken)
        assert record(cassette_path, provider, [chat("b")], mode="all")[0]["echo"] == chat("b")
        cassette = Cassette.load(cassette_path)
        assert [i.request.body for i in cassette.interactions] == [chat("b")]


def test_a_lone_surrogate_in_a_json_body_records_and_replays(cassette_path: Path) -> None:
    content = b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"cut \\ud83d"}]}'

    def echo(request: httpx2.Request) -> httpx2.Response:  # JS's JSON.stringify sends these
        return httpx2.Response(200, content=b'{"echo":' + request.content + b"}")

    transport = CassetteTransport(
        cassette_path, mode="once", inner=httpx2.MockTransport(echo), run_id=uuid.uuid4().hex
    )
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        recorded = client.post(CHAT, content=content).json()
    assert recorded["echo"]["messages"][0]["content"] == "cut \ud83d"
    assert Cassette.load(cassette_path).interactions[0].request.body == json.loads(content)
    transport = CassetteTransport(cassette_path, inner=NoNetwork())
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        assert client.post(CHAT, content=content).json() == recorded


def test_secrets_in_binary_bodies_are_scrubbed_too(cassette_path: Path) -> None:
    def binary(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=b"\xff\xfe" + SECRET.encode() + b"\x00\x81")

    transport = CassetteTransport(
        cassette_path, mode="once", inner=httpx2.MockTransport(binary), run_id=uuid.uuid4().hex
    )
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        client.post("/v1/files", content=b"\xff" + SECRET.encode())
    stored = json.loads(cassette_path.read_text())["interactions"][0]
    for side in ("request", "response"):
        raw = base64.b64decode(stored[side]["body_base64"])
        assert SECRET.encode() not in raw
        assert b"[SCRUBBED]" in raw
    assert base64.b64decode(stored["response"]["body_base64"]).endswith(b"\x00\x81")
