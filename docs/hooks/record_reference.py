"""MkDocs hook: the record reference page is generated from the committed JSON Schemas.

`docs/reference/records.md` holds the marker `<!-- record-schemas -->`; at build time it becomes
one section per `schemas/*.schema.json` file: the record's description, a table of its fields,
one table per definition in `$defs`, and the whole schema. The page cannot drift from the
schemas, and the schemas cannot drift from the models (`tests/test_record_schemas.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

MARKER = "<!-- record-schemas -->"
PAGE = "reference/records.md"

Schema = dict[str, Any]


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Replace the marker on the record reference page; leave every other page alone."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker {MARKER}; put it back where the tables go")
    root = Path(config.config_file_path).parent
    return markdown.replace(MARKER, render_schemas(root / "schemas"))


def render_schemas(folder: Path) -> str:
    """Every `*.schema.json` file in `folder`, in name order, as Markdown sections."""
    paths = sorted(folder.glob("*.schema.json"))
    if not paths:
        raise ValueError(f"no *.schema.json files in {folder}; run `harness schema records`")
    return "\n".join(render_schema(path) for path in paths)


def render_schema(path: Path) -> str:
    """One schema file: its title, description, fields, definitions and the schema itself."""
    schema: Schema = json.loads(path.read_text(encoding="utf-8"))
    stem = path.name.removesuffix(".schema.json")
    title = schema.get("title", stem)
    parts = [f"## `{path.name}`: {title} {{#{stem}}}", ""]
    parts += _described(schema)
    parts += _shape(schema, stem)
    for name, definition in sorted(schema.get("$defs", {}).items()):
        parts += [f"### {name} {{#{_anchor(stem, name)}}}", ""]
        parts += _described(definition)
        parts += _shape(definition, stem)
    text = json.dumps(schema, indent=2, ensure_ascii=False)
    parts += [f'??? note "The whole schema ({path.name})"', ""]
    parts += ["    ```json", *(f"    {line}" for line in text.splitlines()), "    ```", ""]
    return "\n".join(parts)


def _described(schema: Schema) -> list[str]:
    description = schema.get("description")
    return [str(description), ""] if description else []


def _shape(schema: Schema, stem: str) -> list[str]:
    properties: dict[str, Schema] = schema.get("properties", {})
    if properties:
        required = set(schema.get("required", ()))
        rows = ["| field | type | required | description |", "| --- | --- | --- | --- |"]
        for name, field in properties.items():
            rows.append(
                f"| `{name}` | {type_text(field, stem)} | {'yes' if name in required else 'no'} "
                f"| {_cell(field.get('description', ''))} |"
            )
        closed = schema.get("additionalProperties") is False
        note = "No other field is allowed." if closed else "Other fields are allowed."
        return [*rows, "", note, ""]
    return [f"One of: {type_text(schema, stem)}.", ""]


def type_text(schema: Schema, stem: str) -> str:
    """A short Markdown rendering of a JSON Schema type, linking to local definitions."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(stem, name)})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return " or ".join(type_text(option, stem) for option in schema[union])
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"array of {type_text(items, stem)}" if isinstance(items, dict) else "array"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_text(schema['additionalProperties'], stem)}"
    if isinstance(kind, list):
        return " or ".join(f"`{k}`" for k in kind)
    return f"`{kind}`" if kind else "any JSON value"


def _anchor(stem: str, name: str) -> str:
    return f"{stem}-{name}".lower()


def _cell(text: object) -> str:
    """Markdown table cells hold one line and no bare pipe."""
    return " ".join(str(text).split()).replace("|", "\\|")
