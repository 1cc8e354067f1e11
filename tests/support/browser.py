"""Headless Chromium from tests: Debian's `chromium` (installed by `make services`), driven with
Playwright for Python; Playwright never downloads a browser of its own here.

`chromium_executable()` skips the calling test when Chromium is missing, with the reason; under
CI (`CI` set) a missing Chromium is a failure instead, because CI installs it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final, NoReturn

import pytest

ARTIFACTS: Final = Path(__file__).resolve().parents[2] / "test-artifacts"
"""Where browser tests keep their screenshots (git-ignored)."""
CHROMIUM_NAMES: Final = ("chromium", "chromium-browser")
LAUNCH_ARGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
"""Headless, no sandbox (tests run as root in CI), and none of the browser's own traffic."""


def chromium_executable() -> str:
    """The Chromium on PATH; skips the calling test without one, or fails it under CI."""
    found = next(filter(None, (shutil.which(name) for name in CHROMIUM_NAMES)), None)
    if found is None:
        _missing()
    return found


def artifact_path(folder: str, name: str) -> Path:
    """`test-artifacts/<folder>/<name>`, its folder created."""
    path = ARTIFACTS / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _missing() -> NoReturn:
    message = (
        "chromium is not on PATH: the browser tests need Debian's chromium package "
        "(`make services` installs it)"
    )
    if os.environ.get("CI"):
        pytest.fail(f"{message}; under CI Chromium is required")
    pytest.skip(message)
