"""Writing scenario files in tests and reading the refusal a broken one gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenarios import ScenarioFileError, load_scenarios


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refusal(path: Path) -> str:
    """The message of the `ScenarioFileError` loading `path` raises (the test fails if none)."""
    with pytest.raises(ScenarioFileError) as caught:
        load_scenarios([path])
    return str(caught.value)
