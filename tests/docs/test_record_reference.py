"""The record reference page is generated from the committed schemas: every file, every
definition and every field appears, with its required flag, and nothing else can stand in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.docs.fences import DOCS, ROOT
from tests.docs.reference_hook import render_schemas

SCHEMAS = sorted((ROOT / "schemas").glob("*.schema.json"))
RENDERED = render_schemas(ROOT / "schemas")


def test_the_page_keeps_its_marker() -> None:
    assert "<!-- record-schemas -->" in (DOCS / "reference" / "records.md").read_text()


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_field_of_every_definition_is_rendered(path: Path) -> None:
    rendered = RENDERED
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert f"## `{path.name}`" in rendered
    for name, definition in [("", schema), *schema.get("$defs", {}).items()]:
        if name:
            assert f"### {name} {{#" in rendered
        required = set(definition.get("required", ()))
        for field in definition.get("properties", {}):
            flag = "yes" if field in required else "no"
            assert f"| `{field}` |" in rendered, (path.name, name, field)
            assert any(
                line.startswith(f"| `{field}` |") and f"| {flag} |" in line
                for line in rendered.splitlines()
            ), (path.name, name, field, flag)


def test_an_empty_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="harness schema records"):
        render_schemas(tmp_path)
