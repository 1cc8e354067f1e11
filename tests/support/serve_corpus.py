"""The corpus of real provider recordings (pydantic-ai's vcrpy cassettes), for `harness serve`.

The corpus folder (the one holding `pydantic-ai/`) is found next to the repository, or named by
the environment variable HARNESS_CORPUS_DIR. `served_recordings` lists the recordings whose every
request goes to an endpoint the server speaks, at the path the official SDKs use; the others call
OpenAI-compatible providers under their own path prefixes (`/openai/v1/...`, `/api/v1/...`),
Azure deployments, or Anthropic's `count_tokens`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import yaml

from harness.serve import ENDPOINTS

SERVED_QUERIES: Final = frozenset({"", "beta=true"})
"""The recorded queries an SDK call can send again: none, and the old Anthropic SDKs' beta flag."""


def _served(recording: Path) -> bool:
    document: Any = yaml.load(recording.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    uris = [urlsplit(item["request"]["uri"]) for item in document["interactions"]]
    return bool(uris) and all(uri.path in ENDPOINTS and uri.query in SERVED_QUERIES for uri in uris)


def served_recordings(folder: Path) -> list[str]:
    """The names (paths under `folder`, without suffix) of the recordings the server serves."""
    if not folder.is_dir():
        return []
    return [
        path.relative_to(folder).with_suffix("").as_posix()
        for path in sorted(folder.rglob("*.yaml"))
        if _served(path)
    ]
