"""The MkDocs hook that renders the record reference, loaded from docs/hooks/ for the tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.docs.fences import DOCS

_spec = importlib.util.spec_from_file_location(
    "record_reference", DOCS / "hooks" / "record_reference.py"
)
assert _spec is not None
assert _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)


def render_schemas(folder: Path) -> str:
    """The Markdown the hook puts on the record reference page for the schemas in `folder`."""
    text: str = _module.render_schemas(folder)
    return text
