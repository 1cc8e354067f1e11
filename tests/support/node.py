"""Node.js from tests: find `node` and `npm`, install a folder's pinned packages on first use, and
run calls of the official Node.js SDKs through tests/node/driver.mjs.

`installed_node(folder)` skips the calling test when `node` or `npm` is missing, with the reason;
under CI (`CI` set, as CI services do) a missing Node is a failure instead, because CI has it.
Installing runs `npm ci` into the folder's node_modules (git-ignored) under a file lock, so
parallel xdist workers install once; a later run finds the packages of the same lock file already
there. A failed or stuck install fails the test with npm's own message. It serves tests/node (the
SDKs `NodeSdks` drives) and the Node examples under examples/targets.

`NodeSdks.run(calls)` performs every call in one Node process, in order, and returns what each
SDK parsed (`NodeResult`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, NoReturn, Self

import pytest
from filelock import FileLock, Timeout
from pydantic import BaseModel, ConfigDict, Field

from harness.providers import Provider

NODE_FOLDER: Final = Path(__file__).resolve().parents[1] / "node"
DRIVER: Final = NODE_FOLDER / "driver.mjs"
INSTALL_SECONDS: Final = 300.0
"""How long `npm ci` may take (it downloads on a fresh machine) before the test fails."""
RUN_SECONDS: Final = 120.0
"""How long one batch of calls may take before the test fails instead of hanging."""
NPM_CI: Final = ("ci", "--no-audit", "--no-fund", "--prefer-offline", "--ignore-scripts")
"""Offline-friendly (no audit or funding calls, the npm cache first) and no install scripts: the
pinned packages need none."""

NodeMethod = Literal[
    "chat.completions.create", "responses.create", "messages.create", "messages.stream"
]


class NodeCall(BaseModel):
    """One SDK call for the driver: the client (provider, base URL, API key), the SDK method and
    its parameters (the request body), request headers (`None` removes one the SDK sends by
    default) and query parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    provider: Provider  # the driver has the OpenAI and Anthropic SDKs
    base_url: str = Field(serialization_alias="baseURL")
    method: NodeMethod
    params: dict[str, Any]
    api_key: str = Field(default="sk-node-client-dummy", serialization_alias="apiKey")
    headers: dict[str, str | None] = Field(default_factory=dict)
    query: dict[str, str] = Field(default_factory=dict)


class NodeError(BaseModel):
    """What the SDK raised: its class name, the HTTP status (`None` for an error event inside a
    stream), the error's `.error` (OpenAI: the body's `error` member; Anthropic: the whole body)
    and its message."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    class_name: str = Field(alias="class")
    status: int | None
    body: Any
    message: str


class NodeResult(BaseModel):
    """What one call gave: the parsed answer, or the events of a stream (and for
    `messages.stream` the message it accumulated), or the error with the events before it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    response: Any = None
    events: list[Any] | None = None
    final: Any = None
    error: NodeError | None = None


@dataclass(frozen=True)
class NodeSdks:
    """The driver, run by the `node` at this path."""

    node: str

    @classmethod
    def installed(cls) -> Self:
        """The driver, its packages installed; skips (or under CI fails) without Node."""
        return cls(installed_node(NODE_FOLDER))

    def run(self, calls: Sequence[NodeCall]) -> list[NodeResult]:
        """Perform `calls` in order in one Node process; one result per call."""
        payload = json.dumps([call.model_dump(mode="json", by_alias=True) for call in calls])
        try:
            completed = subprocess.run(
                [self.node, str(DRIVER)],
                input=payload,
                capture_output=True,
                text=True,
                cwd=NODE_FOLDER,
                timeout=RUN_SECONDS,
            )
        except subprocess.TimeoutExpired as expired:
            # what the driver wrote so far; bytes even in text mode
            stderr = expired.stderr.decode() if isinstance(expired.stderr, bytes) else ""
            pytest.fail(f"the Node driver did not finish within {RUN_SECONDS:g}s:\n{stderr}")
        if completed.returncode != 0:
            pytest.fail(
                f"the Node driver failed (exit {completed.returncode}):\n{completed.stderr}"
            )
        lines = completed.stdout.splitlines()
        assert len(lines) == len(calls), f"{len(calls)} calls but {len(lines)} results:\n{lines}"
        return [NodeResult.model_validate_json(line) for line in lines]


def installed_node(packages: Path | None) -> str:
    """The `node` on PATH, with the pinned packages of the `packages` folder installed (None: the
    caller needs none, and so no npm). Skips the calling test without Node, or fails it under CI."""
    node = shutil.which("node")
    if node is None:
        _missing("node")
    if packages is not None:
        npm = shutil.which("npm")
        if npm is None:
            _missing("npm")
        install_packages(npm, packages)
    return node


def install_packages(
    npm: str, folder: Path = NODE_FOLDER, *, timeout: float = INSTALL_SECONDS
) -> None:
    """`npm ci` in `folder` unless its node_modules already holds the packages of its
    package-lock.json (a stamp file there records the lock file's digest; `npm ci` starts by
    removing node_modules, stamp included). One process installs while the others wait."""
    digest = hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest()
    stamp = folder / "node_modules" / ".harness-installed"
    try:
        with FileLock(folder / ".install.lock", timeout=timeout * 2):
            if stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
                return
            _npm_ci(npm, folder, timeout)
            stamp.write_text(digest, encoding="utf-8")
    except Timeout:
        pytest.fail(f"another test process held the npm install lock in {folder} too long")


def _npm_ci(npm: str, folder: Path, timeout: float) -> None:
    command = " ".join(["npm", *NPM_CI])
    try:
        completed = subprocess.run(
            [npm, *NPM_CI], cwd=folder, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{command}` in {folder} did not finish within {timeout:g}s")
    if completed.returncode != 0:
        pytest.fail(
            f"`{command}` in {folder} failed (exit {completed.returncode}):\n"
            f"{completed.stderr.strip() or completed.stdout.strip()}"
        )


def _missing(program: str) -> NoReturn:
    message = (
        f"{program} is not on PATH: the Node.js tests need Node.js 20 or newer with npm "
        "(https://nodejs.org)"
    )
    if os.environ.get("CI"):
        pytest.fail(f"{message}; under CI Node is required")
    pytest.skip(message)
