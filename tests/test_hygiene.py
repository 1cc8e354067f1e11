"""How the test suite is put together: shared helpers live in tests/support, and no test module
imports another test module or a conftest (pytest loads those itself; importing one runs its
tests' module twice and couples unrelated files)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_test_module_imports_a_test_module_or_a_conftest() -> None:
    offenders = {
        f"{path.relative_to(TESTS)} imports {name}"
        for path in TESTS.rglob("*.py")
        for name in imported_modules(path)
        if name.startswith("tests.")
        and (name.rsplit(".", 1)[-1].startswith("test_") or name.endswith("conftest"))
    }
    assert offenders == set(), "move what they share to tests/support/"
