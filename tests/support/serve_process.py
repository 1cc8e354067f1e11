"""`harness serve` as a child process, as a user runs it: on a free port, its URL read from the
ready file, stopped with Ctrl-C (or another signal) when the block ends, its log (stderr) written
to a file so a long run never blocks on a full pipe, and read once it has exited."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

STARTUP_SECONDS: Final = 30.0


@dataclass
class ServeProcess:
    """A running `harness serve`: its base URL, the process, and (once stopped) its log."""

    url: str
    process: subprocess.Popen[bytes]
    stderr_path: Path
    stderr: str = field(default="", init=False)

    def log_lines(self) -> list[dict[str, Any]]:
        """The request log's lines, as `--log-format json` writes them (other lines skipped)."""
        return [json.loads(line) for line in self.stderr.splitlines() if line.startswith("{")]


@contextmanager
def harness_serve(
    folder: Path,
    *options: str,
    environ: Mapping[str, str] | None = None,
    stop: int = signal.SIGINT,
) -> Iterator[ServeProcess]:
    """`harness serve --cassettes folder OPTIONS` until the block ends, then stopped with `stop`
    (Ctrl-C by default, which saves recordings); the test fails if it does not start, does not
    stop, or exits with an error. `environ` is added to this process's environment."""
    work = folder.parent
    work.mkdir(parents=True, exist_ok=True)
    ready = work / "url.txt"
    ready.unlink(missing_ok=True)
    stderr_path = work / "serve.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from harness.cli import main; main()",
                "serve",
                f"--cassettes={folder}",
                "--port=0",
                f"--ready-file={ready}",
                *options,
            ],
            env={**os.environ, **(environ or {})},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not ready.exists():
            process.kill()
            process.wait()
            pytest.fail(f"harness serve did not start:\n{stderr_path.read_text()}")
        served = ServeProcess(ready.read_text().strip(), process, stderr_path)
        yield served
    finally:
        if process.poll() is None:
            process.send_signal(stop)
        try:
            process.wait(STARTUP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            pytest.fail(f"harness serve did not stop within {STARTUP_SECONDS:g}s")
    served.stderr = stderr_path.read_text(encoding="utf-8")
