"""The cassette file: stable bytes, located parse errors, tamper evidence, and the CLI over it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from harness.cassettes import (
    FORMAT,
    Cassette,
    CassetteFormatError,
    CassetteTamperedError,
    CassetteTransport,
)
from harness.cli import main
from tests.support.cassette_traffic import CHAT, OPENAI, ScriptedProvider, chat


def record(path: Path, bodies: list[dict[str, Any]], mode: str = "all") -> None:
    provider = ScriptedProvider()
    transport = CassetteTransport(
        path,
        mode=mode,
        inner=provider.transport(),
        run_id=uuid.uuid4().hex,
        identical_requests="separate",  # a repeated request recorded once per occurrence
    )
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        for body in bodies:
            client.post(CHAT, json=body)


def edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def test_the_file_is_one_indented_json_document_in_a_stable_order(cassette_path: Path) -> None:
    record(cassette_path, [chat("a")])
    text = cassette_path.read_text()
    data = json.loads(text)
    assert list(data) == ["format", "metadata", "interactions"]
    assert data["format"] == FORMAT == "harness-cassette/2"
    assert set(data["metadata"]) == {
        "harness_version",
        "provider",
        "recorded_at",
        "identical_requests",
    }
    assert data["metadata"]["identical_requests"] == "separate"
    assert data["metadata"]["provider"] == "openai"
    interaction = data["interactions"][0]
    assert list(interaction) == ["key", "occurrence", "request", "response", "digest"]
    assert interaction["request"]["body"] == chat("a")
    assert list(interaction["request"]["headers"]) == sorted(interaction["request"]["headers"])
    assert text.startswith('{\n  "format": "harness-cassette/2",\n')
    assert text.endswith("}\n")


def test_re_recording_unchanged_traffic_writes_identical_bytes(cassette_path: Path) -> None:
    record(cassette_path, [chat("a"), chat("b")])
    first = cassette_path.read_bytes()
    record(cassette_path, [chat("a"), chat("b")])
    assert cassette_path.read_bytes() == first
    record(cassette_path, [chat("a"), chat("c")])
    changed = cassette_path.read_text()
    assert '"content": "c"' in changed
    assert '"content": "b"' not in changed


def test_a_cassette_that_does_not_parse_names_file_and_line(cassette_path: Path) -> None:
    cassette_path.parent.mkdir(parents=True)
    cassette_path.write_text('{\n  "format": "harness-cassette/1",\n  "interactions": [,]\n}\n')
    with pytest.raises(
        CassetteFormatError, match=rf"{cassette_path}:3:\d+: cassette is not valid JSON"
    ):
        Cassette.load(cassette_path)


def test_an_empty_file_is_an_error_not_an_empty_cassette(cassette_path: Path) -> None:
    cassette_path.parent.mkdir(parents=True)
    cassette_path.write_text("")
    with pytest.raises(CassetteFormatError, match="not valid JSON"):
        CassetteTransport(cassette_path)


@pytest.mark.parametrize("found", ["harness-cassette/3", None])
def test_an_unknown_format_version_names_the_supported_ones(
    cassette_path: Path, found: str | None
) -> None:
    record(cassette_path, [chat("a")])
    edit(cassette_path, lambda data: data.update(format=found))
    with pytest.raises(
        CassetteFormatError, match="supported: harness-cassette/1, harness-cassette/2"
    ):
        Cassette.load(cassette_path)


def test_a_structurally_invalid_cassette_names_the_field(cassette_path: Path) -> None:
    record(cassette_path, [chat("a")])
    edit(cassette_path, lambda data: data["interactions"][0].update(occurrence=0))
    # A shape no replay could serve is refused at load, even when inspecting a tampered file.
    for allow_tampered in (False, True):
        with pytest.raises(
            CassetteFormatError,
            match=r"invalid interaction #0 at occurrence: Input should be greater than or equal",
        ):
            Cassette.load(cassette_path, allow_tampered=allow_tampered)
    edit(cassette_path, lambda data: data["interactions"][0].update(occurrence=1))
    edit(cassette_path, lambda data: data["interactions"][0].pop("digest"))
    with pytest.raises(
        CassetteFormatError, match=r"invalid interaction #0 at digest: Field required"
    ):
        Cassette.load(cassette_path)
    edit(cassette_path, lambda data: data.update(metadata={"provider": "openai"}))
    with pytest.raises(CassetteFormatError, match=r"metadata\.harness_version"):
        Cassette.load(cassette_path)
    edit(cassette_path, lambda data: data.update(extra=1))
    with pytest.raises(CassetteFormatError, match="unknown top-level key"):
        Cassette.load(cassette_path)


def test_a_hand_edited_response_is_refused_by_name(cassette_path: Path) -> None:
    record(cassette_path, [chat("a"), chat("b")])
    edit(cassette_path, lambda data: data["interactions"][1]["response"]["body"].update(n=99))
    with pytest.raises(CassetteTamperedError) as caught:
        CassetteTransport(cassette_path)
    message = str(caught.value)
    assert str(cassette_path) in message
    assert "interaction #1" in message
    assert "digest mismatch" in message
    loaded = Cassette.load(cassette_path, allow_tampered=True)
    assert loaded.interactions[1].response.body == {"n": 99, "echo": chat("b")}
    transport = CassetteTransport(cassette_path, allow_tampered=True)
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        assert client.post(CHAT, json=chat("b")).json()["n"] == 99


def test_signatures_are_verified_when_the_key_is_set(
    cassette_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CASSETTE_KEY", "team-secret")
    record(cassette_path, [chat("a")])
    data = json.loads(cassette_path.read_text())
    assert data["signature"].startswith("hmac-sha256:")
    assert "team-secret" not in cassette_path.read_text()
    Cassette.load(cassette_path)

    # A consistent edit (digest recomputed) still breaks the signature.
    cassette = Cassette.load(cassette_path)
    forged = cassette.interactions[0].model_copy(
        update={"response": cassette.interactions[0].response.model_copy(update={"status": 500})}
    )
    forged = forged.with_occurrence(1)
    edit(
        cassette_path,
        lambda doc: doc["interactions"].__setitem__(
            0, forged.model_dump(mode="json", exclude_none=True)
        ),
    )
    with pytest.raises(CassetteTamperedError, match="signature mismatch"):
        Cassette.load(cassette_path)
    monkeypatch.setenv("HARNESS_CASSETTE_KEY", "another-key")
    with pytest.raises(CassetteTamperedError, match="signature mismatch"):
        Cassette.load(cassette_path)
    monkeypatch.delenv("HARNESS_CASSETTE_KEY")
    Cassette.load(cassette_path)  # nothing to verify the signature with; digests still match


def test_cli_verify_lists_every_bad_interaction_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_CASSETTE_KEY", raising=False)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    record(good, [chat("a")])
    record(bad, [chat("a"), chat("b"), chat("c")])
    edit(bad, lambda d: [d["interactions"][i]["response"].update(status=500) for i in (0, 2)])
    runner = CliRunner()
    result = runner.invoke(main, ["cassettes", "verify", str(good)])
    assert result.exit_code == 0, result.output
    assert "1 cassette(s) verified" in result.output
    result = runner.invoke(main, ["cassettes", "verify", str(tmp_path)])
    assert result.exit_code == 1
    assert "interaction #0" in result.output
    assert "interaction #2" in result.output
    assert "interaction #1" not in result.output
    (tmp_path / "broken.json").write_text("{")
    result = runner.invoke(main, ["cassettes", "verify", str(tmp_path / "broken.json")])
    assert result.exit_code == 1
    assert "not valid JSON" in result.output

    monkeypatch.setenv("HARNESS_CASSETTE_KEY", "k")
    result = runner.invoke(main, ["cassettes", "verify", str(good)])
    assert result.exit_code == 1
    assert "unsigned" in result.output


def test_cli_show_stats_and_diff(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    record(a, [chat("x"), chat("y"), chat("y")])
    record(b, [chat("x"), chat("z"), chat("y")])
    runner = CliRunner()
    shown = runner.invoke(main, ["cassettes", "show", str(a)])
    assert shown.exit_code == 0, shown.output
    assert shown.output.count("POST /v1/chat/completions") == 3
    stats = runner.invoke(main, ["cassettes", "stats", str(a)])
    assert stats.exit_code == 0
    assert "openai" in stats.output
    different = runner.invoke(main, ["cassettes", "diff", str(a), str(b)])
    assert different.exit_code == 1
    assert "2 changed, 0 added, 0 removed, 1 unchanged" in different.output
    assert "$.body.n: 2 -> 3" in different.output
    same = runner.invoke(main, ["cassettes", "diff", str(a), str(a)])
    assert same.exit_code == 0
    (tmp_path / "bad.json").write_text("[]")
    invalid = runner.invoke(main, ["cassettes", "show", str(tmp_path / "bad.json")])
    assert invalid.exit_code == 2
    assert "expected a JSON object" in invalid.output


def test_cli_show_and_stats_print_bracketed_names_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest parametrize ids put brackets in cassette names, which rich would read as markup."""
    monkeypatch.chdir(tmp_path)
    Path("x[").mkdir()
    record(Path("x[/c[a].json"), [chat("x")])
    Path("x[/b].json").write_bytes(Path("x[/c[a].json").read_bytes())
    runner = CliRunner()
    shown = runner.invoke(main, ["cassettes", "show", "x[/c[a].json"])
    listed = runner.invoke(main, ["cassettes", "stats", "x["])
    for result in (shown, listed):
        assert result.exit_code == 0, result.output
        assert "x[/c[a].json" in result.output
    assert "x[/b].json" in listed.output


def test_integers_beyond_64_bits_survive_exactly(cassette_path: Path) -> None:
    huge = 123456789012345678901234567890

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"huge": huge, "negative": -(2**70)})

    transport = CassetteTransport(cassette_path, mode="all", inner=httpx2.MockTransport(handler))
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        client.post(CHAT, json=chat("a", seed=2**65))
    loaded = Cassette.load(cassette_path)
    assert loaded.interactions[0].response.body == {"huge": huge, "negative": -(2**70)}
    with httpx2.Client(transport=CassetteTransport(cassette_path), base_url=OPENAI) as client:
        assert client.post(CHAT, json=chat("a", seed=2**65)).json()["huge"] == huge


def test_with_the_key_set_an_unsigned_cassette_is_refused(
    cassette_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_CASSETTE_KEY", raising=False)
    record(cassette_path, [chat("a")])  # unsigned
    monkeypatch.setenv("HARNESS_CASSETTE_KEY", "team-secret")
    with pytest.raises(CassetteTamperedError, match="unsigned: HARNESS_CASSETTE_KEY is set"):
        Cassette.load(cassette_path)
    assert Cassette.load(cassette_path, allow_tampered=True).signature is None
    # a signed recording whose signature was removed is refused the same way
    record(cassette_path, [chat("b")])
    edit(cassette_path, lambda doc: doc.pop("signature"))
    with pytest.raises(CassetteTamperedError, match="unsigned"):
        Cassette.load(cassette_path)


def test_answers_to_one_request_cannot_be_swapped_or_duplicated(
    cassette_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_CASSETTE_KEY", raising=False)
    record(cassette_path, [chat("a"), chat("a")])
    original = json.loads(cassette_path.read_text())
    edit(cassette_path, lambda doc: doc["interactions"].reverse())
    with pytest.raises(CassetteTamperedError, match="occurrence out of order, 1 expected"):
        Cassette.load(cassette_path)
    cassette_path.write_text(json.dumps(original))
    edit(cassette_path, lambda doc: doc["interactions"].__setitem__(1, doc["interactions"][0]))
    result = CliRunner().invoke(main, ["cassettes", "verify", str(cassette_path)])
    assert result.exit_code == 1
    assert "interaction #1" in result.output
    assert "occurrence out of order, 2 expected" in result.output
