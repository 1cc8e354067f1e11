"""What users read speaks of the harness, not of how this project was built: no internal
project names, no issue numbers. The scan covers README.md, CHANGELOG.md, every page of docs/,
and the text those pages are generated from (the record schemas, the error classes' docstrings
and the `harness` command's help)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from harness.cli import main
from tests.docs.fences import ROOT, documents
from tests.docs.reference_hook import render_errors, render_schemas

# Each pattern names an internal word and what to write instead.
INTERNAL_WORDS = {
    r"\bseeds?\b": "name the source document (ValkyrAI's Agent Decision ExecModule, ...)",
    r"pre-#\d+": "describe the older shape itself",
    r"(?<![\w&])#\d{2,}\b": "drop the issue or task number",
    r"\b(issue|task|ticket)\s+#?\d+": "drop the issue or task number",
    r"\bGrayMatter\b": "say what the receipts are (retrieval receipts)",
}
ALLOWED: tuple[str, ...] = ("--seed",)
"""Only `harness fuzz --seed`, the option's name (hypothesis's word for where a search starts);
the library's own files are named for what they hold."""


def _texts() -> Iterator[tuple[str, str]]:
    for path in [*documents(), ROOT / "CHANGELOG.md"]:
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    yield "the record reference (schemas/)", render_schemas(ROOT / "schemas")
    yield "the error reference (error classes)", render_errors()
    yield "harness --help", "\n".join(_help(main))


def _help(command: click.Command) -> Iterator[str]:
    yield command.help or ""
    for parameter in command.params:
        yield getattr(parameter, "help", None) or ""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from _help(sub)


@pytest.mark.parametrize(("where", "text"), list(_texts()), ids=lambda v: str(v)[:40])
def test_no_internal_project_names(where: str, text: str) -> None:
    for allowed in ALLOWED:
        text = text.replace(allowed, "")
    found = [
        f"{where}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)!r}: {fix}"
        for pattern, fix in INTERNAL_WORDS.items()
        for match in re.finditer(pattern, text, re.IGNORECASE)
    ]
    assert not found, "\n".join(found)


def test_the_scan_finds_what_it_looks_for() -> None:
    text = "exactly as its seed; the pre-#241 shape (issue 13, #241); GrayMatter receipts"
    hits = [p for p in INTERNAL_WORDS if re.search(p, text, re.IGNORECASE)]
    assert hits == list(INTERNAL_WORDS)
