"""Safe writes: parallel recorders lose nothing, a killed save leaves a whole file."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cassettes import Cassette
from harness.cassettes.cassette import parse_document
from tests.cassettes._workers import big_document, record_many

WORKERS = 4
PER_WORKER = 8
ROOT = Path(__file__).resolve().parents[2]


def run_workers(path: Path, mode: str) -> None:
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=record_many, args=(str(path), worker, PER_WORKER, mode))
        for worker in range(WORKERS)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0


@pytest.mark.subprocess
def test_parallel_recorders_lose_no_interaction(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    run_workers(path, "new_episodes")
    cassette = Cassette.load(path)
    bodies = [i.request.body for i in cassette.interactions]
    for worker in range(WORKERS):
        for index in range(PER_WORKER):
            assert {"worker": worker, "index": index} in bodies
    # A worker that starts after another saved replays the shared request instead of recording it.
    shared = [i for i in cassette.interactions if i.request.body == {"shared": True}]
    assert 1 <= len(shared) <= WORKERS
    assert sorted(i.occurrence for i in shared) == list(range(1, len(shared) + 1))
    assert len(cassette.interactions) == WORKERS * PER_WORKER + len(shared)


@pytest.mark.subprocess
def test_parallel_re_recording_in_one_run_keeps_every_worker_and_drops_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "shared.json"
    monkeypatch.setenv("HARNESS_RECORD_RUN_ID", "first-run")
    record_many(str(path), 99, 3, "all")
    monkeypatch.setenv("HARNESS_RECORD_RUN_ID", "second-run")
    run_workers(path, "all")
    bodies = [i.request.body for i in Cassette.load(path).interactions]
    own = [b for b in bodies if isinstance(b, dict) and b != {"shared": True}]
    assert sorted((b["worker"], b["index"]) for b in own) == [
        (worker, index) for worker in range(WORKERS) for index in range(PER_WORKER)
    ]
    # identical requests are shared: a worker that starts after another saved replays it
    assert 1 <= len(bodies) - len(own) <= WORKERS


@pytest.mark.subprocess
def test_a_save_killed_at_any_moment_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "killed.json"
    versions = {big_document("A", 400), big_document("B", 400)}
    generator = random.Random(1234)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(8):
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from tests.cassettes._workers import save_forever; "
                "save_forever(sys.argv[1])",
                str(path),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        time.sleep(generator.uniform(0.01, 0.15))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        if path.exists():
            data = path.read_bytes()
            parse_document(path, data)
            # recorded_at may differ by the second between builds; compare the interactions
            assert any(_same_interactions(data, version) for version in versions)


def _same_interactions(a: bytes, b: bytes) -> bool:
    left = parse_document(Path("a"), a).interactions
    right = parse_document(Path("b"), b).interactions
    return [i.digest for i in left] == [i.digest for i in right]
