"""No text the package shows a user (messages, docstrings, schema descriptions: every string
literal) uses the project's internal names; it names the concept instead ("the Agent Decision
module's contract", not "the seed")."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import harness
from tests.support.package_source import parsed, python_files

PACKAGE: Final = Path(harness.__file__).parent

INTERNAL: Final = re.compile(
    r"\bseed(?:s|'s|s')?\b|\bpre-#|#\d{2,}\b|\bissues? \d+\b|graymatter|valkyr|aion_core",
    re.IGNORECASE,
)
"""The internal words: the specification documents' working name, issue and pull-request
numbers, and internal product names."""

ALLOWED: Final = {
    ("harness/metadata.py", "GrayMatter"): "copied verbatim from the Agent Decision module's "
    "contract (its output table), which tests/test_metadata.py compares word for word",
    ("harness/fuzz.py", "seed"): "hypothesis's seed, the number a `harness fuzz` search "
    "starts from; not the specification's working name",
    ("harness/cli.py", "-seed"): "the `harness fuzz --seed` option (hypothesis's seed)",
}
"""(file, the words around the match) -> why that use stays."""


def _strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def internal_words(root: Path) -> list[str]:
    """`file:line: match` for every internal word in a string literal under `root`."""
    found: list[str] = []
    for path in python_files(root):
        relative = path.relative_to(root.parent).as_posix()
        for line, text in _strings(parsed(path)):
            for match in INTERNAL.finditer(text):
                around = text[max(0, match.start() - 1) : match.end() + 1]
                if any(
                    relative == where and (words in around or words == match.group(0))
                    for where, words in ALLOWED
                ):
                    continue
                found.append(f"{relative}:{line + text[: match.start()].count(chr(10))}: {around}")
    return found


def test_no_string_in_the_package_uses_an_internal_name() -> None:
    assert internal_words(PACKAGE) == []


def test_the_scan_finds_each_kind_of_internal_word(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text(
        '"""As the seed says."""\n'
        'def f():\n    raise ValueError(f"fixed in #241, see issue 13 ({1})")\n'
        "X = 'a GrayMatter receipt'\n",
        encoding="utf-8",
    )
    found = internal_words(package)
    assert sorted(entry.split(": ", 1)[0] for entry in found) == [
        "pkg/m.py:1",
        "pkg/m.py:3",
        "pkg/m.py:3",
        "pkg/m.py:4",
    ]


def test_a_random_seed_and_seeding_are_no_internal_words() -> None:
    assert INTERNAL.search("The random generator is seeded once (`__random_seed__`)") is None
