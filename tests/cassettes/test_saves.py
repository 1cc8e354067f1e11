"""Saving: each recorded interaction is written once, temporary files never outlive a save,
and a cassette keeps its permission bits."""

from __future__ import annotations

import json
import os
import stat
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from harness.cassettes import (
    Cassette,
    CassetteFormatError,
    CassetteTransport,
    CassetteWriteError,
)
from harness.cassettes.cassette import write_atomically
from tests.support.cassette_traffic import CHAT, OPENAI, ScriptedProvider, chat


def bodies(path: Path) -> list[object]:
    return [i.request.body for i in Cassette.load(path).interactions]


def transport(path: Path, mode: str, run_id: str | None = None) -> CassetteTransport:
    return CassetteTransport(
        path,
        mode=mode,
        inner=ScriptedProvider().transport(),
        run_id=run_id or uuid.uuid4().hex,
        identical_requests="separate",  # saves count each occurrence of a repeated request
    )


@pytest.mark.parametrize("mode", ["once", "new_episodes", "all"])
def test_saving_twice_then_closing_writes_each_interaction_once(
    cassette_path: Path, mode: str
) -> None:
    recorder = transport(cassette_path, mode)
    client = httpx2.Client(transport=recorder, base_url=OPENAI)
    client.post(CHAT, json=chat("a"))
    recorder.save()
    recorder.save()
    assert bodies(cassette_path) == [chat("a")]
    client.post(CHAT, json=chat("b"))
    recorder.save()
    client.close()  # closes the transport, which saves again
    assert bodies(cassette_path) == [chat("a"), chat("b")]
    assert [i.occurrence for i in Cassette.load(cassette_path).interactions] == [1, 1]


def test_a_repeated_request_recorded_across_saves_counts_its_occurrences(
    cassette_path: Path,
) -> None:
    recorder = transport(cassette_path, "new_episodes")
    with httpx2.Client(transport=recorder, base_url=OPENAI) as client:
        client.post(CHAT, json=chat("a"))
        recorder.save()
        client.post(CHAT, json=chat("a"))
    stored = Cassette.load(cassette_path).interactions
    assert [(i.request.body, i.occurrence) for i in stored] == [(chat("a"), 1), (chat("a"), 2)]
    assert [i.response.body for i in stored] == [
        {"n": 1, "echo": chat("a")},
        {"n": 2, "echo": chat("a")},
    ]


def test_mode_all_replaces_once_per_run_then_merges(cassette_path: Path) -> None:
    with httpx2.Client(transport=transport(cassette_path, "all"), base_url=OPENAI) as client:
        client.post(CHAT, json=chat("old"))
    first = transport(cassette_path, "all", run_id="run-2")
    second = transport(cassette_path, "all", run_id="run-2")
    with httpx2.Client(transport=first, base_url=OPENAI) as client:
        client.post(CHAT, json=chat("a"))
        first.save()
        assert bodies(cassette_path) == [chat("a")], "the first save of a run replaces the file"
        client.post(CHAT, json=chat("b"))
        first.save()
    with httpx2.Client(transport=second, base_url=OPENAI) as client:
        client.post(CHAT, json=chat("c"))
    assert bodies(cassette_path) == [chat("a"), chat("b"), chat("c")]


def test_mode_all_with_no_traffic_empties_the_cassette_once(cassette_path: Path) -> None:
    with httpx2.Client(transport=transport(cassette_path, "all"), base_url=OPENAI) as client:
        client.post(CHAT, json=chat("old"))
    idle = transport(cassette_path, "all")
    idle.save()
    idle.close()
    assert bodies(cassette_path) == []


# -- temporary files ------------------------------------------------------------------------------


def temporaries(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


def test_a_save_removes_temporary_files_a_killed_save_left(cassette_path: Path) -> None:
    cassette_path.parent.mkdir(parents=True)
    stale = cassette_path.parent / f".{cassette_path.name}.0123456789abcdef.tmp"
    stale.write_bytes(b"x" * 1_000_000)
    others = [
        cassette_path.parent / f".{cassette_path.name}.x.json.0123456789abcdef.tmp",  # x.json's
        cassette_path.parent / ".other.json.0123456789abcdef.tmp",
        cassette_path.parent / f".{cassette_path.name}.notours.tmp",
    ]
    for other in others:
        other.write_bytes(b"")
    with httpx2.Client(transport=transport(cassette_path, "once"), base_url=OPENAI) as client:
        client.post(CHAT, json=chat("a"))
    assert not stale.exists()
    assert temporaries(cassette_path.parent) == sorted(other.name for other in others)
    assert bodies(cassette_path) == [chat("a")]


@pytest.fixture
def failing_replace(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(source: object, target: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)


@pytest.mark.usefixtures("failing_replace")
def test_a_failed_write_names_the_cassette_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b"old")
    with pytest.raises(CassetteWriteError) as caught:
        write_atomically(path, b"new")
    assert str(caught.value) == f"cassette {path} cannot be written: No space left on device"
    assert caught.value.code == "cassette_write_failed"
    assert isinstance(caught.value, OSError)
    assert path.read_bytes() == b"old"
    assert temporaries(tmp_path) == []


def test_an_interrupted_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(descriptor: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(tmp_path / "c.json", b"new")
    assert temporaries(tmp_path) == []
    assert not (tmp_path / "c.json").exists()


def test_a_folder_that_cannot_be_created_is_a_write_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(CassetteWriteError, match=r"cannot be written: (File exists|Not a dir)"):
        write_atomically(tmp_path / "file" / "c.json", b"{}")


# -- permissions ----------------------------------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o664, 0o600])
def test_a_save_keeps_the_permission_bits_of_an_existing_cassette(
    cassette_path: Path, mode: int
) -> None:
    with httpx2.Client(transport=transport(cassette_path, "all"), base_url=OPENAI) as client:
        client.post(CHAT, json=chat("a"))
    cassette_path.chmod(mode)
    with httpx2.Client(
        transport=transport(cassette_path, "new_episodes"), base_url=OPENAI
    ) as client:
        client.post(CHAT, json=chat("b"))
    assert len(bodies(cassette_path)) == 2
    assert stat.S_IMODE(cassette_path.stat().st_mode) == mode


@pytest.mark.usefixtures("umask_022")
def test_a_new_cassette_gets_the_mode_the_umask_gives(cassette_path: Path) -> None:
    with httpx2.Client(transport=transport(cassette_path, "once"), base_url=OPENAI) as client:
        client.post(CHAT, json=chat("a"))
    assert stat.S_IMODE(cassette_path.stat().st_mode) == 0o644
    assert json.loads(cassette_path.read_text())["interactions"]


def test_a_body_json_cannot_spell_is_refused_before_anything_is_written(
    cassette_path: Path,
) -> None:
    from harness.cassettes.cassette import Interaction, RecordedRequest, RecordedResponse
    from harness.cassettes.store import save_recording

    not_a_number = Interaction.build(
        "sha256:" + "0" * 64,
        1,
        RecordedRequest(method="POST", path="/v1/x"),
        RecordedResponse(status=200, body={"score": float("nan")}),
    )
    with pytest.raises(CassetteFormatError, match="a number JSON cannot represent"):
        save_recording(cassette_path, [not_a_number], replace=True, provider=None, run_token="r")
    assert not cassette_path.exists()


def test_a_lock_held_too_long_is_a_write_error(
    cassette_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cassettes import store

    monkeypatch.setattr(store, "LOCK_TIMEOUT_SECONDS", 0.05)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.lock_for(cassette_path):
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    try:
        with pytest.raises(CassetteWriteError, match="another process has held its lock"):
            with store.lock_for(cassette_path):
                pass
    finally:
        release.set()
        holder.join()


def test_a_lock_folder_that_cannot_be_created_is_a_write_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cassettes import store

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(blocked))
    with pytest.raises(CassetteWriteError, match="its lock cannot be created"):
        with store.lock_for(tmp_path / "c.json"):
            pass
