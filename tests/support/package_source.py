"""The package's source, read and parsed once per test process for every guard test that scans
it (import graph, one definition, error registry, unchecked updates, user-facing words)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Final

import harness

PACKAGE: Final = Path(harness.__file__).parent


@functools.cache
def source(path: Path) -> str:
    """The text of the Python file at `path`."""
    return path.read_text(encoding="utf-8")


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The Python file at `path`, parsed. Callers must not change the tree they are given."""
    return ast.parse(source(path))


@functools.cache
def python_files(root: Path = PACKAGE) -> tuple[Path, ...]:
    """Every Python file under `root`, sorted."""
    return tuple(sorted(root.rglob("*.py")))
