"""The MkDocs hooks that render the record and error references, loaded from docs/hooks/ for the
tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from tests.docs.fences import DOCS


def _hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DOCS / "hooks" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_records = _hook("record_reference")
error_reference = _hook("error_reference")


def render_schemas(folder: Path) -> str:
    """The Markdown the hook puts on the record reference page for the schemas in `folder`."""
    text: str = _records.render_schemas(folder)
    return text


def render_errors() -> str:
    """The Markdown the hook puts on the error reference page: every registered error."""
    text: str = error_reference.render_errors()
    return text


def error_page() -> str:
    """The error reference page as the site shows it: its hand-written text, the marker
    replaced by the tables."""
    page = (DOCS / "reference" / "errors.md").read_text(encoding="utf-8")
    return page.replace(error_reference.MARKER, render_errors())
