"""Real PostgreSQL and Redis servers for store tests, started by the suite on loopback.

Each server runs from its installed binaries in a fresh temporary folder, on a free port, and is
stopped when the session ends. PostgreSQL refuses to run as root, so as root it runs as the
`postgres` system user (`runuser`). When a binary is missing the tests that need it are skipped
with the reason, except under CI (`CI=true`), where a missing server is an error: `make test`
installs both.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def find_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return candidates[0] if candidates else None


def missing(what: str) -> None:
    message = f"{what} is not installed; `make test` installs it (apt-get)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def wait_for_port(port: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {seconds}s")


@dataclass(frozen=True)
class RunningServer:
    """A server started for a test: its URL, and a way to stop it early (as if it died)."""

    url: str
    stop: Callable[[], None]


@contextmanager
def postgres_server() -> Iterator[str]:
    with running_postgres() as server:
        yield server.url


@contextmanager
def redis_server() -> Iterator[str]:
    with running_redis() as server:
        yield server.url


@contextmanager
def running_postgres() -> Iterator[RunningServer]:
    initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        missing("PostgreSQL (initdb, pg_ctl)")
        raise AssertionError("unreachable")
    folder = Path(tempfile.mkdtemp(prefix="harness-pg-"))
    data = folder / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    folder.chmod(0o755)
    port = free_port()

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, text=True, cwd=folder)

    run(initdb, "-D", str(data), "-A", "trust", "-U", "harness", "-E", "UTF8", "--no-sync")
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    run(pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start")

    def stop() -> None:
        subprocess.run(
            [*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            cwd=folder,
        )

    try:
        wait_for_port(port)
        yield RunningServer(f"postgresql://harness@127.0.0.1:{port}/postgres", stop)
    finally:
        stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def running_redis() -> Iterator[RunningServer]:
    binary = find_binary("redis-server")
    if binary is None:
        missing("Redis (redis-server)")
        raise AssertionError("unreachable")
    folder = Path(tempfile.mkdtemp(prefix="harness-redis-"))
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def stop() -> None:
        process.terminate()
        process.wait(timeout=10)

    try:
        wait_for_port(port)
        yield RunningServer(f"redis://127.0.0.1:{port}/0", stop)
    finally:
        stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never answers: a hung database server."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.1)  # so the accepting thread sees `stopped`
    accepted: list[socket.socket] = []
    stopped = threading.Event()

    def accept() -> None:
        while not stopped.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stopped.set()
        thread.join()
        listener.close()
        for connection in accepted:
            connection.close()
