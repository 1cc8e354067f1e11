"""One request key across languages: numbers keyed by value (RFC 8785), the key version named by
the cassette format, and every `harness-cassette/1` file still replaying and verifying."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from harness.cassettes import Cassette, CassetteTransport, canonical_request_key
from harness.cassettes.cassette import (
    FORMAT,
    SUPPORTED_FORMATS,
    CassetteDocument,
    CassetteMetadata,
    Interaction,
    RecordedRequest,
    RecordedResponse,
)
from harness.cassettes.key import KEY_VERSION, KEY_VERSIONS, canonical_request_bytes
from harness.cli import main
from harness.errors import CassetteError
from tests.support.cassette_traffic import CHAT, OPENAI, NoNetwork, ScriptedProvider

ROOT = Path(__file__).resolve().parents[2]
URL = f"{OPENAI}{CHAT}"


def key(text: str, version: int = KEY_VERSION) -> str:
    return canonical_request_key("POST", URL, {}, text, version=version)


def test_the_format_names_the_key_version() -> None:
    assert KEY_VERSIONS[KEY_VERSION] == FORMAT == "harness-cassette/2"
    assert tuple(KEY_VERSIONS.values()) == SUPPORTED_FORMATS


@pytest.mark.parametrize(
    "spellings",
    [
        ("1.0", "1", "1e0", "10E-1", "1.00"),
        ("0", "0.0", "-0", "-0.0", "0e5"),
        ("0.7", "7e-1", "0.70"),
        ("12345678901234567890", "12345678901234567000", "1.2345678901234567e19"),
        ("9007199254740993", "9007199254740992"),
        ("1e21", "1000000000000000000000", "1E+21"),
    ],
)
def test_numbers_with_one_value_are_one_key(spellings: tuple[str, ...]) -> None:
    keys = {key(f'{{"model":"m","temperature":{number}}}') for number in spellings}
    assert len(keys) == 1


def test_numbers_are_written_as_rfc_8785_writes_them() -> None:
    body = '{"a":1.0,"b":12345678901234567890,"c":1e21,"d":0.5,"e":-0.0,"f":100}'
    canonical = json.loads(canonical_request_bytes("POST", URL, {}, body))["body"]
    text = json.dumps(canonical, separators=(",", ":"))
    assert text == '{"a":1,"b":12345678901234567000,"c":1e+21,"d":0.5,"e":0,"f":100}'


def test_different_values_stay_different_keys() -> None:
    assert key('{"t":1}') != key('{"t":1.5}')
    assert key('{"t":0.1}') != key('{"t":0.10000000000000002}')
    assert key('{"t":"1"}') != key('{"t":1}')


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_and_its_javascript_spelling_are_one_key(value: float) -> None:
    # JavaScript's shortest spelling: no `.0`, no zero-padded exponent (`1e-7`, not `1e-07`)
    javascript = (
        str(int(value))
        if value.is_integer() and abs(value) < 1e21
        else repr(value).replace("e-0", "e-").replace("e+0", "e+")
    )
    assert key(json.dumps({"t": value})) == key(f'{{"t":{javascript}}}')


def test_version_one_keys_numbers_as_spelt_and_agrees_elsewhere() -> None:
    assert key('{"t":1.0}', version=1) != key('{"t":1}', version=1)
    same = '{"model":"m","temperature":0.7,"max_tokens":64}'
    assert key(same, version=1) == key(same)


def test_an_unknown_key_version_is_refused() -> None:
    with pytest.raises(CassetteError, match=r"key version in \[1, 2\] but got 3"):
        key("{}", version=3)


# -- harness-cassette/1 files --------------------------------------------------------------------


def version_one_cassette(path: Path, bodies: list[dict[str, Any]]) -> None:
    """A `harness-cassette/1` file as earlier releases wrote it: version-1 keys."""
    interactions = []
    counts: dict[str, int] = {}
    for number, body in enumerate(bodies, start=1):
        text = json.dumps(body, separators=(",", ":"))
        request_key = canonical_request_key("POST", CHAT, {}, text, version=1)
        counts[request_key] = counts.get(request_key, 0) + 1
        interactions.append(
            Interaction.build(
                request_key,
                counts[request_key],
                RecordedRequest(method="POST", path=CHAT, body=body),
                RecordedResponse(status=200, body={"n": number}),
            )
        )
    document = CassetteDocument(
        format="harness-cassette/1",
        metadata=CassetteMetadata(harness_version="0.1.0", recorded_at="2026-01-01T00:00:00"),
        interactions=interactions,
    )
    path.write_bytes(Cassette.from_document(path, document).dumps())


def post_all(transport: CassetteTransport, bodies: list[str]) -> list[Any]:
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        return [
            client.post(CHAT, content=body, headers={"content-type": "application/json"}).json()
            for body in bodies
        ]


def test_a_version_one_cassette_replays_both_spellings(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    version_one_cassette(path, [{"model": "m", "temperature": 1.0}, {"model": "m", "n": 2}])
    assert Cassette.load(path).format == "harness-cassette/1"
    as_python = post_all(
        CassetteTransport(path, inner=NoNetwork()), ['{"model":"m","temperature":1.0}']
    )
    as_node = post_all(
        CassetteTransport(path, inner=NoNetwork()), ['{"model":"m","temperature":1}']
    )
    assert as_python == as_node == [{"n": 1}]
    assert post_all(CassetteTransport(path, inner=NoNetwork()), ['{"model":"m","n":2.0}']) == [
        {"n": 2}
    ]


def test_recording_into_a_version_one_cassette_keeps_its_format_and_keys(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    version_one_cassette(path, [{"model": "m", "temperature": 1.0}])
    transport = CassetteTransport(path, mode="new_episodes", inner=ScriptedProvider().transport())
    post_all(transport, ['{"model":"m","temperature":1.0}', '{"model":"m","top_p":1.0}'])
    cassette = Cassette.load(path)
    assert cassette.format == "harness-cassette/1"
    assert [i.key for i in cassette.interactions][1] == canonical_request_key(
        "POST", CHAT, {}, '{"model":"m","top_p":1.0}', version=1
    )
    result = CliRunner().invoke(main, ["cassettes", "verify", str(path)])
    assert result.exit_code == 0, result.output


def test_the_repository_cassettes_still_verify_and_replay(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    shutil.copytree(ROOT / "cassettes" / "agent", folder)
    result = CliRunner().invoke(main, ["cassettes", "verify", str(folder)])
    assert result.exit_code == 0, result.output
    for path in sorted(folder.glob("*.json")):
        cassette = Cassette.load(path)
        transport = CassetteTransport(path, inner=NoNetwork(), strict=True)
        with httpx2.Client(transport=transport, base_url=OPENAI) as client:
            for interaction in cassette.interactions:
                request = interaction.request
                sent = client.post(
                    request.url, content=request.body_bytes(), headers=request.headers
                )
                assert sent.status_code == interaction.response.status


def test_a_miss_diagnosis_reads_numbers_by_value_too() -> None:
    from harness.cassettes.diff import structural_diff

    assert list(structural_diff({"t": 1, "n": [2.0]}, {"t": 1.0, "n": [2]})) == []
    assert list(structural_diff({"t": 1}, {"t": 1.5})) == ["$.t: 1 -> 1.5"]
    assert list(structural_diff({"t": True}, {"t": 1})) == ["$.t: true -> 1"]
