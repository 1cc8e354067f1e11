"""The package has no import cycle: between modules, counting deferred imports too.

A cycle is hidden, not removed, by moving one of its imports into a function: the modules still
need each other, and which one finishes loading first depends on who imports first. So every
import counts here (module level or inside a function), except those under `if TYPE_CHECKING:`,
which never run. Importing `a.b.c` also runs `a/__init__.py` and `a/b/__init__.py`, so an import
depends on every package above its target (bar the importer's own packages, which are loading
already).
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

import harness
from tests.support.package_source import parsed, python_files

PACKAGE: Final = Path(harness.__file__).parent


def _modules(root: Path) -> dict[str, Path]:
    """Module name -> file, for every module and package under `root` (a package folder)."""
    modules: dict[str, Path] = {}
    for path in python_files(root):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement in `tree` outside `if TYPE_CHECKING:` blocks."""
    for node in ast.iter_child_nodes(tree):
        typing_only = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for child in node.orelse if isinstance(node, ast.If) and typing_only else [node]:
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child
            yield from _imports(child)


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The module names an import statement in module `name` (file `path`) names."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        base = ".".join([*package[: len(package) - node.level + 1], *filter(None, [base])])
    yield base
    yield from (f"{base}.{alias.name}" for alias in node.names)  # submodules, if any


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (and thereby loads)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        loaded: set[str] = set()
        for node in _imports(parsed(path)):
            for target in _targets(name, path, node):
                parts = target.split(".")
                prefixes = (".".join(parts[:end]) for end in range(1, len(parts) + 1))
                loaded.update(
                    prefix
                    for prefix in prefixes
                    if prefix in modules and not f"{name}.".startswith(f"{prefix}.")
                )
        graph[name] = loaded
    return graph


def package_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The graph between the top-level parts of the package (`harness.llm`, `harness.cli`).

    The package's own `__init__` is left out: it is the public face and may name any part.
    """

    def part(module: str) -> str:
        return ".".join(module.split(".")[:2])

    parts: dict[str, set[str]] = {}
    root = next(iter(graph)).split(".")[0]
    for module, imported in graph.items():
        if module == root:
            continue
        parts.setdefault(part(module), set()).update(
            part(target) for target in imported if target != root and part(target) != part(module)
        )
    return parts


def _cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        cycle: list[str] = error.args[1]
        return cycle
    return None


def test_no_module_imports_itself_back() -> None:
    cycle = _cycle(import_graph(PACKAGE))
    assert cycle is None, f"import cycle between modules: {' -> '.join(cycle or [])}"


def test_no_part_of_the_package_imports_itself_back() -> None:
    """No exception: parts import each other one way only (the scenarios reach the targets; the
    reference target lives with the scenario runner it shares its code with)."""
    cycle = _cycle(package_graph(import_graph(PACKAGE)))
    assert cycle is None, f"import cycle between parts of the package: {' -> '.join(cycle or [])}"


def test_the_scenarios_reach_the_targets_and_never_the_reverse() -> None:
    parts = package_graph(import_graph(PACKAGE))
    assert "harness.targets" in parts["harness.scenarios"]
    assert "harness.scenarios" not in parts["harness.targets"]


def _write(root: Path, files: Mapping[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_cycle_through_a_deferred_import_is_found(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import thing\n",
            "pkg/b.py": "def f():\n    from pkg import a\n",
        },
    )
    assert _cycle(import_graph(package)) is not None


def test_a_type_checking_import_is_no_cycle(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import thing\n",
            "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n",
        },
    )
    assert _cycle(import_graph(package)) is None


def test_importing_a_submodule_loads_its_package(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from pkg.sub.x import X\nfrom pkg import other\n",
            "pkg/sub/x.py": "X = 1\n",
            "pkg/other.py": "from pkg.sub.x import X\n",
        },
    )
    graph = import_graph(package)
    assert graph["pkg.other"] == {"pkg.sub", "pkg.sub.x"}
    assert graph["pkg.sub.x"] == set()
    assert _cycle(graph) is not None  # importing pkg.other first meets a half-loaded pkg.sub


def test_relative_imports_resolve(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from . import a\n",
            "pkg/a.py": "from .b import thing\n",
            "pkg/b.py": "",
        },
    )
    assert import_graph(package)["pkg.a"] == {"pkg.b"}
    assert import_graph(package)["pkg"] == {"pkg.a"}


def test_parts_collapse_to_the_top_level(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.x import y\n",
            "pkg/x/__init__.py": "",
            "pkg/x/y.py": "from pkg.z import w\n",
            "pkg/z/__init__.py": "",
            "pkg/z/w.py": "from pkg.x import y\n",
        },
    )
    graph = import_graph(package)
    assert _cycle(graph) is not None
    assert package_graph(graph) == {"pkg.x": {"pkg.z"}, "pkg.z": {"pkg.x"}}


def test_scrubbing_sits_below_both_the_llm_boundary_and_the_cassettes() -> None:
    graph = import_graph(PACKAGE)
    parts = package_graph(graph)
    assert parts["harness.scrub"] & {"harness.llm", "harness.cassettes"} == set()
    assert "harness.scrub" in parts["harness.llm"]
    assert "harness.scrub" in parts["harness.cassettes"]
    assert "harness.llm" not in parts["harness.cassettes"]
    # Redacting loads no cassette code: the LLM boundary reaches the cassettes in one place only,
    # `LlmGateway.replaying`, which builds a gateway over a cassette when it is called.
    reaching = {
        module
        for module, loaded in graph.items()
        if module.startswith("harness.llm")
        and any(m.startswith("harness.cassettes") for m in loaded)
    }
    assert reaching <= {"harness.llm.gateway"}
    source = (PACKAGE / "llm" / "gateway.py").read_text(encoding="utf-8")
    top_level = [node for node in ast.parse(source).body if isinstance(node, ast.ImportFrom)]
    assert not any((node.module or "").startswith("harness.cassettes") for node in top_level)
