"""One registry of errors: every error class of the package declares its code, builtin and when
it is raised once, in itself, and `harness.error_registry` finds every one of them.

The source is read here on its own (by AST), so a class the registry missed, or one declared
without a code or docstring, fails this test whatever the registry does.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

import harness
from harness.error_registry import (
    EARLIER_NAMES,
    ErrorRegistryError,
    builtin_bases,
    earlier_names,
    errors_of,
    registry,
)
from harness.errors import HarnessError
from tests.support.package_source import parsed, python_files

PACKAGE = Path(harness.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


Where = tuple[str, str]
"""A class as its module and name."""


def _names(module: str, path: Path, tree: ast.Module) -> dict[str, Where]:
    """What each top-level name of a module is: a class it defines, or a name it imports."""
    names: dict[str, Where] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                package = (
                    module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                )
                source = ".".join(
                    [*package[: len(package) - node.level + 1], *filter(None, [source])]
                )
            for alias in node.names:
                names[alias.asname or alias.name] = (source, alias.name)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = (module, node.name)
    return names


def source_errors() -> dict[Where, ast.ClassDef]:
    """Every class in the package's source that derives from `HarnessError`, at any depth (a
    class inside a function included), keyed by module and name. A base is followed through
    the imports of the module that names it, so a class that only shares an error's name is no
    error."""
    trees = {_module_name(path): (path, parsed(path)) for path in python_files(PACKAGE)}
    names = {module: _names(module, path, tree) for module, (path, tree) in trees.items()}

    def resolved(where: Where) -> Where:
        for _ in range(10):  # re-exports: harness.targets -> harness.targets.errors
            module, name = where
            found = names.get(module, {}).get(name)
            if found is None or found == where:
                return where
            where = found
        return where

    classes = [
        (module, node)
        for module, (_, tree) in trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    ]
    errors: set[Where] = {("harness.errors", "HarnessError")}
    while True:
        found = {
            (module, node.name)
            for module, node in classes
            if (module, node.name) not in errors
            and any(
                isinstance(base, ast.Name) and resolved((module, base.id)) in errors
                for base in node.bases
            )
        }
        if not found:
            break
        errors |= found
    return {(module, node.name): node for module, node in classes if (module, node.name) in errors}


def _declared_code(node: ast.ClassDef) -> str | None:
    for statement in node.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if (
            isinstance(target, ast.Name)
            and target.id == "code"
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            return value.value
    return None


SOURCE = source_errors()


def test_the_registry_lists_every_error_class_in_the_source() -> None:
    registered = {(entry.module, entry.name) for entry in registry()}
    assert registered == set(SOURCE)


@pytest.mark.parametrize("where", sorted(SOURCE), ids=lambda where: f"{where[0]}.{where[1]}")
def test_every_error_class_declares_its_code_and_when_it_is_raised(where: tuple[str, str]) -> None:
    node = SOURCE[where]
    assert _declared_code(node), 'declare `code = "..."` in the class itself'
    docstring = ast.get_docstring(node)
    assert docstring, "write a docstring saying when it is raised, for a user of the harness"
    assert len(docstring.split()) >= 6, "say when it is raised, not just its name"


def test_every_code_is_declared_once() -> None:
    codes = [_declared_code(node) for node in SOURCE.values()]
    assert len(codes) == len(set(codes)), sorted(c for c in codes if c and codes.count(c) > 1)
    assert [entry.code for entry in registry()] == [entry.error.code for entry in registry()], (
        "a class's code is the one it declares"
    )


def test_the_registry_reports_each_class_as_it_is() -> None:
    entries = {entry.name: entry for entry in registry()}
    miss = entries["CassetteMissError"]
    assert (miss.code, miss.module, miss.package) == (
        "cassette_miss",
        "harness.errors",
        "harness.errors",
    )
    assert miss.builtins == (AssertionError,)
    assert miss.doc.startswith("Raised when a replayed request has no recorded answer left.")
    assert entries["TargetTimeoutError"].builtins == (TimeoutError,)
    assert entries["TargetTimeoutError"].package == "harness.targets"
    assert entries["HarnessError"].builtins == ()
    assert entries["AgentDecisionCallException"].retryable
    assert entries["RequestFormatError"].builtins == (ValueError,), "inherited builtins count"


def test_builtin_bases_are_the_most_specific() -> None:
    class Both(HarnessError, PermissionError, LookupError):
        """Raised for a test of the registry only."""

        code = "test_both"

    assert builtin_bases(Both) == (PermissionError, LookupError)


def _module(name: str, *classes: type[HarnessError]) -> ModuleType:
    module = ModuleType(name)
    for error in classes:
        error.__module__ = name
        error.__qualname__ = error.__name__
        setattr(module, error.__name__, error)
    return module


def test_a_code_declared_twice_is_refused_naming_both_classes() -> None:
    class FirstError(HarnessError):
        """Raised when the first thing goes wrong, for a test of the registry."""

        code = "test_twice"

    class SecondError(HarnessError):
        """Raised when the second thing goes wrong, for a test of the registry."""

        code = "test_twice"

    with pytest.raises(ErrorRegistryError) as caught:
        errors_of([_module("fake.a", FirstError), _module("fake.b", SecondError)])
    assert str(caught.value) == (
        "code 'test_twice' is declared by both fake.a.FirstError and fake.b.SecondError; give "
        "each error its own code"
    )
    assert caught.value.code == "error_registry_invalid"


def test_a_class_without_its_own_code_or_docstring_is_refused() -> None:
    class InheritsItsCodeError(HarnessError):
        """Raised when nothing, for a test of the registry."""

    class UndocumentedError(HarnessError):
        code = "test_undocumented"

    with pytest.raises(ErrorRegistryError) as caught:
        errors_of([_module("fake.c", InheritsItsCodeError, UndocumentedError)])
    assert str(caught.value) == (
        "fake.c.InheritsItsCodeError declares no code of its own; expected a snake_case string "
        "but got code=None (type=NoneType); fake.c.UndocumentedError has no docstring saying "
        "when it is raised"
    )


def test_an_alias_counts_once() -> None:
    class AliasedError(HarnessError):
        """Raised when nothing, for a test of the registry."""

        code = "test_aliased"

    module = _module("fake.d", AliasedError)
    module.Aliased = AliasedError  # type: ignore[attr-defined]  # a module made for the test
    assert [entry.name for entry in errors_of([module])] == ["AliasedError"]


# -- earlier names ----------------------------------------------------------------------------------

RELEASED_NAMES = {
    "ActivityNotRegistered",
    "CancelNotReached",
    "CancelPlanInvalid",
    "CassetteMiss",
    "FaultNotReached",
    "PolicyUnavailable",
    "RequestHashMismatch",
    "RunNotFound",
    "ScenarioCellFailed",
    "ScriptExhausted",
    "ScriptProviderMismatch",
    "SimulatedCrash",
    "TargetCrashed",
    "TargetTimeout",
    "ToolChoiceUnsupported",
    "UnknownRuntime",
}
"""The names 0.1.0 released before the `...Error` convention: each stays until 1.0."""


def test_every_released_name_is_listed_once() -> None:
    names = [earlier.name for earlier in EARLIER_NAMES]
    assert sorted(names) == sorted(RELEASED_NAMES)
    assert len(earlier_names()) == len(EARLIER_NAMES)


@pytest.mark.parametrize(
    ("name", "location", "error"),
    [
        (earlier.name, location, earlier.error)
        for earlier in EARLIER_NAMES
        for location in earlier.locations
    ],
    ids=lambda value: str(value),
)
def test_an_earlier_name_imports_from_where_it_was_documented(
    name: str, location: str, error: str
) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {location} import {name}", namespace)  # as a user's code imports it
    module_name, class_name = error.rsplit(".", 1)
    current = getattr(importlib.import_module(module_name), class_name)
    assert namespace[name] is current
    assert isinstance(current, type)
    assert issubclass(current, HarnessError)


def test_the_lost_cassette_miss_is_back_where_the_docs_promise_it() -> None:
    from harness.cassettes import CassetteMiss, CassetteMissError

    assert CassetteMiss is CassetteMissError
