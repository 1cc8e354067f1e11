"""MkDocs hook: the error reference page is generated from the error classes themselves.

`docs/reference/errors.md` holds the marker `<!-- error-registry -->`; at build time it becomes
one table per part of the package, listing every error class `harness.error_registry.registry()`
finds (its code, the builtin it can be caught as, whether it is retryable, and its docstring,
which says when it is raised), then the earlier names kept until 1.0 (`EARLIER_NAMES`). A code
appears once; the page cannot drift from the classes, and the registry refuses a class without a
code or docstring (`tests/test_error_registry.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

if TYPE_CHECKING:
    from harness.error_registry import EarlierName, RegisteredError
    from harness.errors import HarnessError

MARKER = "<!-- error-registry -->"
PAGE = "reference/errors.md"
EARLIER_HEADING = "Earlier names, kept until 1.0"
SHARED = "harness.errors"


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Replace the marker on the error reference page; leave every other page alone."""
    if page.file.src_uri != PAGE:
        return markdown
    if markdown.count(MARKER) != 1:
        raise ValueError(f"{PAGE} must hold its marker {MARKER} once, where the tables go")
    return markdown.replace(MARKER, render_errors())


def render_errors() -> str:
    """Every registered error, grouped by the part of the package that defines it, and every
    earlier name, as Markdown."""
    from harness.error_registry import earlier_names, registry

    return render(registry(), earlier_names())


def render(
    errors: Sequence[RegisteredError],
    earlier: Sequence[tuple[EarlierName, type[HarnessError]]],
) -> str:
    """The tables for `errors` (in the order given, `harness.errors` first) and `earlier`."""
    packages = sorted({entry.package for entry in errors}, key=lambda name: (name != SHARED, name))
    parts: list[str] = []
    for package in packages:
        members = [entry for entry in errors if entry.package == package]
        parts += [f"## `{package}` {{#{_anchor(package)}}}", ""]
        parts += [_INTRO[package], ""] if package in _INTRO else []
        parts += [
            "| error | code | caught as | retryable | raised when |",
            "| --- | --- | --- | --- | --- |",
        ]
        parts += [_row(entry) for entry in members]
        parts.append("")
    parts += [f"## {EARLIER_HEADING} {{#earlier-names}}", "", _EARLIER_INTRO, ""]
    parts += ["| earlier name | now | importable from |", "| --- | --- | --- |"]
    for name, error in earlier:
        modules = ", ".join(f"`{module}`" for module in name.locations)
        parts.append(
            f"| `{name.name}` | [`{error.__name__}`](#{_error_anchor(error)}) | {modules} |"
        )
    parts.append("")
    return "\n".join(parts)


_INTRO = {
    SHARED: "The root error, and the errors the records and several parts of the package share. "
    "Import them from `harness.errors` (the most used also from `harness`).",
}

_EARLIER_INTRO = (
    "Before error names followed the `...Error` convention, some classes had other names. Each "
    "earlier name below is the same class as its new name (`CassetteMiss is CassetteMissError`), "
    "importable from every module listed, so existing imports and `except` clauses keep working. "
    "They will be removed in 1.0: use the new names."
)


def _row(entry: RegisteredError) -> str:
    name = (
        f"`{entry.name}`" if entry.module == entry.package else f"`{entry.name}` (`{entry.module}`)"
    )
    caught = ", ".join(f"`{base.__name__}`" for base in entry.builtins) or "-"
    retryable = "yes" if entry.retryable else "no"
    anchor = _error_anchor(entry.error)
    return (
        f'| <span id="{anchor}"></span>{name} | `{entry.code}` | {caught} | {retryable} '
        f"| {_cell(entry.doc)} |"
    )


def _anchor(package: str) -> str:
    return package.replace(".", "-").replace("_", "-")


def _error_anchor(error: type) -> str:
    return f"error-{error.__name__.lower()}"


def _cell(text: str) -> str:
    """Markdown table cells hold one line and no bare pipe."""
    return " ".join(text.split()).replace("|", "\\|")
