"""The `harness serve` process is not stopped by full garbage collections of what it loaded at
startup: under load, each such pass held every open stream for ~50 ms."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """
import gc, os, sys
from pathlib import Path
from harness.serve import ServeConfig, serve_forever

def announce(line):
    print(gc.get_freeze_count(), flush=True)
    os._exit(0)

serve_forever(ServeConfig(cassettes=Path(sys.argv[1])), announce=announce)
"""


@pytest.mark.subprocess
def test_once_serving_the_startup_objects_are_out_of_the_cyclic_collectors_way(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 10_000, "harness, pydantic, starlette and uvicorn are frozen"
