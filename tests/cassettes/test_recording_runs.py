"""Shared recording neither loses nor invents an answer: a process of the run killed at any step
of handing an answer over, a run name that is not one safe text, a name used again by a later
run, and a hand-off file that is not what its run left."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner

from harness.cassettes import Cassette, CassetteTransport
from harness.cassettes.cassette import Interaction, RecordedRequest, RecordedResponse
from harness.cassettes.recording_run import (
    RecordRunIdError,
    join_run,
    leave_run,
    private_folder,
)
from harness.cassettes.sharing import RunAnswers
from harness.cli import main
from harness.errors import CassetteWriteError
from tests.cassettes._workers import KILL_STEPS, converse_handing_over
from tests.support.cassette_traffic import CHAT, OPENAI, NoNetwork

QUESTION = "What time is it?"


def replayed(path: Path, role: str) -> list[str]:
    """The three turns of `role`'s conversation, replayed from the cassette alone."""
    transport = CassetteTransport(path, inner=NoNetwork())
    messages = [{"role": "user", "content": QUESTION}]
    answers = []
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        for turn in range(3):
            if turn:
                messages.append({"role": "user", "content": f"{role}, turn {turn}"})
            reply = client.post(CHAT, json={"model": "m", "messages": messages})
            answers.append(reply.json()["choices"][0]["message"]["content"])
            messages.append({"role": "assistant", "content": answers[-1]})
    return answers


@pytest.mark.subprocess
def test_a_process_killed_at_any_step_of_handing_an_answer_over_loses_nothing(
    tmp_path: Path,
) -> None:
    """The process that sends the shared first turn first is killed with SIGKILL at each step
    of handing its answer over; the process that played (or then recorded) it keeps it, so
    the cassette replays the survivor's whole conversation."""
    context = multiprocessing.get_context("spawn")
    runs = []
    for step in KILL_STEPS:
        folder = tmp_path / step
        folder.mkdir()
        run_id = f"kill-{step}-{uuid.uuid4().hex[:8]}"
        processes = {
            role: context.Process(
                target=converse_handing_over,
                args=(
                    str(folder / "cassette.json"),
                    role,
                    step,
                    run_id,
                    str(folder),
                    str(folder / f"{role}.json"),
                ),
            )
            for role in ("leader", "follower")
        }
        for process in processes.values():
            process.start()
        runs.append((step, folder, processes))
    for step, folder, processes in runs:
        for process in processes.values():
            process.join(timeout=60)
        assert processes["leader"].exitcode == -9, f"{step}: the leader was not killed"
        assert processes["follower"].exitcode == 0, f"{step}: the follower failed"
        played = json.loads((folder / "follower.json").read_text())
        cassette = Cassette.load(folder / "cassette.json")  # verifies every digest
        assert len(cassette) == 3, f"{step}: {[i.request.body for i in cassette.interactions]}"
        assert replayed(folder / "cassette.json", "follower") == played, step
        if step in ("in_flight", "answered"):
            assert played[0].startswith("follower says"), "nothing was handed over"
        else:
            assert played[0].startswith("leader says"), "the leader's answer was handed over"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("nightly\r", r"'nightly\r' (character 8 is '\r')"),
        ("night\udcffly", r"(character 6 is '\udcff')"),
        ("two words", "(character 4 is ' ')"),
        ("x" * 129, "(it is 129 characters long)"),
        ("-leading", "(it starts with '-')"),
    ],
)
def test_a_run_name_not_in_the_safe_form_is_refused_naming_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, shown: str
) -> None:
    monkeypatch.setenv("HARNESS_RECORD_RUN_ID", value)
    with pytest.raises(RecordRunIdError) as raised:
        CassetteTransport(tmp_path / "c.json", mode="all", inner=NoNetwork())
    message = str(raised.value)
    assert message.startswith("expected HARNESS_RECORD_RUN_ID to be 1 to 128 ASCII letters")
    assert shown in message
    message.encode("ascii")  # printable anywhere: no raw control or undecodable character
    assert raised.value.code == "cassette_record_run_id_invalid"
    assert not (tmp_path / "c.json").exists()


def test_a_run_name_given_as_an_argument_is_checked_too(tmp_path: Path) -> None:
    with pytest.raises(RecordRunIdError, match="expected run_id to be 1 to 128"):
        CassetteTransport(tmp_path / "c.json", mode="all", inner=NoNetwork(), run_id="a/b")


def test_serve_refuses_a_bad_run_name_before_it_listens(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["serve", "--cassettes", str(tmp_path), "--port", "0"],
        env={"HARNESS_RECORD_RUN_ID": "nightly\r"},
    )
    assert result.exit_code != 0
    assert "expected HARNESS_RECORD_RUN_ID to be 1 to 128" in result.output
    assert "Traceback" not in result.output


def test_saves_of_one_run_in_mode_all_keep_every_interaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three recorders of one named run each save in mode `all`: the first replaces the file,
    the others merge into it."""
    monkeypatch.setenv("HARNESS_RECORD_RUN_ID", f"all-{uuid.uuid4().hex}")
    path = tmp_path / "c.json"
    for index in range(3):
        transport = CassetteTransport(path, mode="all", inner=httpx2.MockTransport(echo))
        with httpx2.Client(transport=transport, base_url=OPENAI) as client:
            client.post(CHAT, json={"model": "m", "messages": [{"role": "user", "content": index}]})
    assert len(Cassette.load(path)) == 3


def echo(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json={"echo": json.loads(request.content), "at": uuid.uuid4().hex})


RECORD_ONE = """
import json, sys, uuid
import httpx2
from harness.cassettes import CassetteTransport
answer = sys.argv[2]
def handler(request):
    return httpx2.Response(200, json={"answer": answer})
transport = CassetteTransport(sys.argv[1], mode="all", inner=httpx2.MockTransport(handler))
with httpx2.Client(transport=transport, base_url="https://api.openai.com") as client:
    print(client.post("/v1/chat/completions", json={"model": "m"}).json()["answer"])
"""


@pytest.mark.subprocess
def test_a_run_name_used_again_later_is_a_new_run(tmp_path: Path) -> None:
    """A nightly job that always calls its run `nightly` re-records every night: the second
    night's mode-`all` recording gets the provider's answer, not the first night's."""
    path = tmp_path / "c.json"
    environment = {
        **os.environ,
        "HARNESS_RECORD_RUN_ID": "nightly",
        "HARNESS_RECORD_RUN_GRACE_SECONDS": "0",  # a night apart: far longer than the grace
    }
    nights = [
        subprocess.run(
            [sys.executable, "-c", RECORD_ONE, str(path), answer],
            env=environment,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
        for answer in ("first night", "second night")
    ]
    assert nights == ["first night", "second night"]
    (only,) = Cassette.load(path).interactions
    assert only.response.body == {"answer": "second night"}
    runs = private_folder() / "runs"
    assert not any(runs.glob(f"{run_digest('nightly')}/answers/*")), "the hand-offs outlived it"


@pytest.mark.subprocess
def test_processes_of_a_run_started_one_after_another_are_one_run(tmp_path: Path) -> None:
    """Workers a parent starts one after another (the first done before the next begins) record
    one run: in mode `all` the second merges into what the first saved."""
    path = tmp_path / "c.json"
    environment = {**os.environ, "HARNESS_RECORD_RUN_ID": f"workers-{uuid.uuid4().hex[:8]}"}
    for worker in ("first", "second"):
        script = RECORD_ONE.replace('json={"model": "m"}', f'json={{"model": "{worker}"}}')
        subprocess.run(
            [sys.executable, "-c", script, str(path), worker],
            env=environment,
            check=True,
            timeout=60,
            capture_output=True,
        )
    answers = [i.response.body for i in Cassette.load(path).interactions]
    assert answers == [{"answer": "first"}, {"answer": "second"}]


def run_digest(run_id: str) -> str:
    import hashlib

    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def test_hand_offs_are_in_a_private_folder_and_go_with_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run_id = f"private-{uuid.uuid4().hex}"
    monkeypatch.setenv("HARNESS_RECORD_RUN_ID", run_id)
    path = tmp_path / "c.json"
    transport = CassetteTransport(path, mode="all", inner=httpx2.MockTransport(echo))
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        client.post(CHAT, json={"model": "m"})
    folder = private_folder()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert folder.stat().st_uid == os.getuid()
    run_folder = folder / "runs" / run_digest(run_id)
    assert [p.name for p in (run_folder / "answers").iterdir()], "the answer was handed over"
    leave_run(run_id)
    assert not any((run_folder / "answers").iterdir()), "its last process left: hand-offs gone"


def test_a_recording_folder_others_can_open_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = private_folder()
    folder.chmod(0o777)
    monkeypatch.setenv("HARNESS_RECORD_RUN_ID", "open-folder")
    with pytest.raises(CassetteWriteError, match=r"is open to other users \(mode 777\)"):
        CassetteTransport(tmp_path / "c.json", mode="all", inner=NoNetwork())


def an_answer(key: str, text: str) -> Interaction:
    return Interaction.build(
        key,
        1,
        RecordedRequest(method="POST", path="/v1/chat/completions", body={"model": "m"}),
        RecordedResponse(status=200, body={"answer": text}),
    )


def test_a_handed_over_answer_is_played_only_when_its_digest_run_and_request_check_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run = join_run(f"planted-{uuid.uuid4().hex}")
    answers = RunAnswers(tmp_path / "c.json", run)
    key, other_key = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    answers.publish(key, an_answer(key, "genuine"))
    played = answers.recorded(key)
    assert played is not None
    assert played.response.body == {"answer": "genuine"}

    _, answer_file = run.handoff(answers.cassette_name, key)  # the file it reads
    left = json.loads(answer_file.read_text())
    planted = {
        "a changed answer": {
            **left,
            "interaction": {
                **left["interaction"],
                "response": {"status": 200, "body": {"answer": "invented"}},
            },
        },
        "another run's": {**left, "run": "0" * 32},
        "another request's": {**left, "interaction": an_answer(other_key, "x").model_dump()},
        "not JSON": None,
    }
    for name, content in planted.items():
        answer_file.write_text("{" if content is None else json.dumps(content))
        with caplog.at_level(logging.WARNING):
            assert answers.recorded(key) is None, name
    assert "does not match its digest, request or run" in caplog.text
    leave_run(run.run_id)


def test_a_planted_answer_is_recorded_again_from_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run_id = f"planted-{uuid.uuid4().hex}"
    monkeypatch.setenv("HARNESS_RECORD_RUN_ID", run_id)
    path = tmp_path / "c.json"
    transport = CassetteTransport(
        path,
        mode="all",
        inner=httpx2.MockTransport(lambda _: httpx2.Response(200, json={"answer": "provider"})),
    )
    key = transport.key_for(httpx2.Request("POST", OPENAI + CHAT, json={"model": "m"}))
    genuine = an_answer(key, "planted")
    forged = genuine.model_dump(mode="json")
    forged["response"]["body"] = {"answer": "invented"}
    run = join_run(run_id)
    _, answer_file = run.handoff(RunAnswers(path, run).cassette_name, key)
    answer_file.write_text(json.dumps({"run": run.token, "interaction": forged}))
    with httpx2.Client(transport=transport, base_url=OPENAI) as client:
        assert client.post(CHAT, json={"model": "m"}).json() == {"answer": "provider"}
    (only,) = Cassette.load(path).interactions
    assert only.response.body == {"answer": "provider"}
    leave_run(run_id)
