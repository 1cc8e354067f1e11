"""The fenced code blocks of README.md and docs/, as CommonMark reads them (markdown-it-py).

A block may be preceded by a directive, an HTML comment that the rendered page hides and the
source shows: `<!-- example: fragment -->` (Python: compiled, not run; YAML: parsed as YAML, not
loaded as a scenario) or `<!-- example: load-only -->` (YAML: loaded as scenarios, not run).
Every other Python and YAML block runs. Keep directives rare: each is an example that can rot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

Directive = Literal["fragment", "load-only"]
DIRECTIVES: tuple[Directive, ...] = ("fragment", "load-only")
_DIRECTIVE = re.compile(r"^<!--\s*example:\s*(?P<name>[a-z-]+)\s*-->\s*$")

# The languages a block may be written in. Python and YAML run; the others are shown only.
# A block in any other language (```py, ```yml, no language) fails a test, so nothing that
# should run can slip past the runner under another name.
RUN_LANGUAGES = frozenset({"python", "yaml"})
SHOWN_LANGUAGES = frozenset({"sh", "text", "json", "toml", "js", "ts"})


@dataclass(frozen=True, kw_only=True)
class Fence:
    """One fenced block: where it is, its language, its text and its directive (if any)."""

    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    source: str
    directive: Directive | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    """README.md and every page of the site (the MkDocs hooks are code, not pages)."""
    pages = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)
    return [ROOT / "README.md", *pages]


def fences(path: Path) -> list[Fence]:
    """Every fenced block of one Markdown file, in order."""
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    found = []
    for index, token in enumerate(tokens):
        if token.type != "fence" or token.map is None:
            continue
        previous = tokens[index - 1] if index else None
        found.append(
            Fence(
                path=path,
                line=token.map[0] + 1,
                language=token.info.split()[0] if token.info.strip() else "",
                source=token.content,
                directive=_directive(path, previous.content if previous else ""),
            )
        )
    return found


def _directive(path: Path, html: str) -> Directive | None:
    match = _DIRECTIVE.match(html.strip())
    if match is None:
        return None
    name = match["name"]
    for directive in DIRECTIVES:
        if name == directive:
            return directive
    raise ValueError(f"{path}: unknown example directive {name!r}; use one of {DIRECTIVES}")


def all_fences() -> list[Fence]:
    return [fence for path in documents() for fence in fences(path)]
