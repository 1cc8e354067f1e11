"""Every error the harness raises on purpose, read from the error classes themselves.

An error is declared once, by its class: the class attribute `code`, its bases (the builtin a
caller can catch it as), and its docstring, which says when it is raised. `registry()` imports
every module of the package and returns each `HarnessError` subclass it defines with those
facts; it refuses (`ErrorRegistryError`) a code two classes declare, a class without a code or
docstring of its own, and a class defined where it cannot be found (inside a function).

The names error classes had in 0.1.0 stay importable, as aliases of the same classes, until 1.0:
`EARLIER_NAMES` lists each one and every module it is importable from, and `earlier_names()`
refuses an alias that is not listed or a listed one that is gone.

This module is separate from `harness.errors` because it imports every module, and
`harness.errors` imports nothing of ours. The error reference page (`docs/reference/errors.md`)
is rendered from `registry()` and `earlier_names()` when the documentation is built.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import pkgutil
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import ClassVar, Final

from harness.errors import HarnessError

PACKAGE: Final = Path(__file__).parent

_CODE: Final = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")

_CATCH_ALL: Final = frozenset({BaseException, Exception, object})


class ErrorRegistryError(HarnessError):
    """Raised by `harness.error_registry.registry()` (and so by the documentation build and the
    test suite) when the error classes contradict each other: two classes declare the same
    code, a class declares no code or docstring of its own, a class is defined inside a function
    where the registry cannot list it, or an earlier name is not the alias `EARLIER_NAMES` says.
    The message lists every problem. Only someone changing the harness itself meets it."""

    code: ClassVar[str] = "error_registry_invalid"


@dataclass(frozen=True, kw_only=True)
class RegisteredError:
    """One error class as it declares itself."""

    error: type[HarnessError]
    code: str
    builtins: tuple[type[BaseException], ...]
    """The most specific builtin exceptions it can be caught as (`ValueError`, ...), if any."""
    module: str
    doc: str
    """Its docstring, cleaned: when it is raised, for a user of the harness."""
    retryable: bool

    @property
    def name(self) -> str:
        return self.error.__name__

    @property
    def package(self) -> str:
        """The part of `harness` that defines it: `harness.cassettes` for
        `harness.cassettes.vcr`, `harness.errors` for the shared errors."""
        return ".".join(self.module.split(".")[:2])


@dataclass(frozen=True, kw_only=True)
class EarlierName:
    """The name an error class had in 0.1.0, kept as an alias of the same class until 1.0."""

    name: str
    error: str
    """The class it names, as `module.ClassName`."""
    locations: tuple[str, ...]
    """Every module it is importable from: where the class is defined and where 0.1.0 exported
    the earlier name."""


EARLIER_NAMES: Final[tuple[EarlierName, ...]] = (
    EarlierName(
        name="CassetteMiss",
        error="harness.errors.CassetteMissError",
        locations=("harness.errors", "harness.cassettes"),
    ),
    EarlierName(
        name="ScenarioCellFailed",
        error="harness.errors.ScenarioCellFailedError",
        locations=("harness.errors",),
    ),
    EarlierName(
        name="ToolChoiceUnsupported",
        error="harness.errors.ToolChoiceUnsupportedError",
        locations=("harness.errors", "harness"),
    ),
    EarlierName(
        name="RequestHashMismatch",
        error="harness.cassettes.vcr.RequestHashMismatchError",
        locations=("harness.cassettes.vcr",),
    ),
    EarlierName(
        name="ScriptExhausted",
        error="harness.llm.script.ScriptExhaustedError",
        locations=("harness.llm.script",),
    ),
    EarlierName(
        name="ScriptProviderMismatch",
        error="harness.llm.script.ScriptProviderMismatchError",
        locations=("harness.llm.script",),
    ),
    EarlierName(
        name="PolicyUnavailable",
        error="harness.modules.catalog.PolicyUnavailableError",
        locations=("harness.modules.catalog",),
    ),
    EarlierName(
        name="ActivityNotRegistered",
        error="harness.runtimes.base.ActivityNotRegisteredError",
        locations=("harness.runtimes.base",),
    ),
    EarlierName(
        name="CancelPlanInvalid",
        error="harness.runtimes.base.CancelPlanInvalidError",
        locations=("harness.runtimes.base",),
    ),
    EarlierName(
        name="RunNotFound",
        error="harness.runtimes.base.RunNotFoundError",
        locations=("harness.runtimes.base",),
    ),
    EarlierName(
        name="SimulatedCrash",
        error="harness.runtimes.base.SimulatedCrashError",
        locations=("harness.runtimes.base", "harness.runtimes"),
    ),
    EarlierName(
        name="UnknownRuntime",
        error="harness.runtimes.profiles.UnknownRuntimeError",
        locations=("harness.runtimes.profiles",),
    ),
    EarlierName(
        name="CancelNotReached",
        error="harness.runtimes.run.CancelNotReachedError",
        locations=("harness.runtimes.run",),
    ),
    EarlierName(
        name="FaultNotReached",
        error="harness.runtimes.run.FaultNotReachedError",
        locations=("harness.runtimes.run",),
    ),
    EarlierName(
        name="TargetCrashed",
        error="harness.targets.errors.TargetCrashedError",
        locations=("harness.targets.base", "harness.targets"),
    ),
    EarlierName(
        name="TargetTimeout",
        error="harness.targets.errors.TargetTimeoutError",
        locations=("harness.targets.base", "harness.targets"),
    ),
)
"""Every earlier name, in one place; the error reference lists them."""


def modules() -> list[ModuleType]:
    """Every module of the package, imported.

    `harness.pytest_plugin` is imported only where pytest is installed (it is the plugin pytest
    loads, and pytest is no dependency of the harness); it defines no error.
    """
    names = ["harness"]
    for info in pkgutil.walk_packages([str(PACKAGE)], "harness."):
        if info.name == "harness.pytest_plugin" and importlib.util.find_spec("pytest") is None:
            continue  # pragma: no cover - pytest runs this
        names.append(info.name)
    return [importlib.import_module(name) for name in names]


@functools.cache
def registry() -> tuple[RegisteredError, ...]:
    """Every `HarnessError` subclass of the package, the root included, in the order of its
    modules and, within one, of its definitions. Refuses with `ErrorRegistryError` what
    `errors_of` refuses, and any subclass defined in the package where no module names it."""
    loaded = modules()
    found = errors_of(loaded)
    listed = {entry.error for entry in found}
    hidden = sorted(
        f"{error.__module__}.{error.__qualname__}"
        for error in _subclasses(HarnessError)
        if error.__module__.split(".")[0] == "harness" and error not in listed
    )
    if hidden:
        raise ErrorRegistryError(
            "error classes defined where no module names them (inside a function or a class): "
            f"{', '.join(hidden)}; define each at the top level of its module"
        )
    return found


def errors_of(loaded: Iterable[ModuleType]) -> tuple[RegisteredError, ...]:
    """The `HarnessError` subclasses each module defines (an alias counts once), as registered
    errors. Raises `ErrorRegistryError` listing every class that declares no `code` (a
    snake_case string) or docstring of its own, and every code two classes declare."""
    entries: list[RegisteredError] = []
    problems: list[str] = []
    owners: dict[str, type[HarnessError]] = {}
    for module in loaded:
        for error in _defined_in(module):
            where = f"{error.__module__}.{error.__qualname__}"
            code = error.__dict__.get("code")
            doc = error.__dict__.get("__doc__")
            if not isinstance(code, str) or not _CODE.fullmatch(code):
                problems.append(
                    f"{where} declares no code of its own; expected a snake_case string but got "
                    f"code={code!r} (type={type(code).__name__})"
                )
                continue
            if not isinstance(doc, str) or not doc.strip():
                problems.append(f"{where} has no docstring saying when it is raised")
                continue
            owner = owners.setdefault(code, error)
            if owner is not error:
                problems.append(
                    f"code {code!r} is declared by both {owner.__module__}.{owner.__qualname__} "
                    f"and {where}; give each error its own code"
                )
                continue
            entries.append(
                RegisteredError(
                    error=error,
                    code=code,
                    builtins=builtin_bases(error),
                    module=error.__module__,
                    doc=inspect.cleandoc(doc),
                    retryable=error.retryable,
                )
            )
    if problems:
        raise ErrorRegistryError("; ".join(problems))
    return tuple(entries)


def builtin_bases(error: type[BaseException]) -> tuple[type[BaseException], ...]:
    """The most specific builtin exceptions `error` derives from, bar `Exception` itself:
    `(TimeoutError,)` for a class that mixes in `TimeoutError`, not `OSError` as well."""
    found = [
        base for base in error.__mro__ if base.__module__ == "builtins" and base not in _CATCH_ALL
    ]
    return tuple(
        base
        for base in found
        if not any(other is not base and issubclass(other, base) for other in found)
    )


@functools.cache
def earlier_names() -> tuple[tuple[EarlierName, type[HarnessError]], ...]:
    """Each entry of `EARLIER_NAMES` with the class it names. Raises `ErrorRegistryError` when
    an earlier name is missing from one of its modules or is not that class there, and when a
    module binds an error class to a name other than its own without `EARLIER_NAMES` listing
    it there."""
    errors = {f"{entry.module}.{entry.name}": entry.error for entry in registry()}
    problems: list[str] = []
    resolved: list[tuple[EarlierName, type[HarnessError]]] = []
    declared: set[tuple[str, str]] = set()
    for earlier in EARLIER_NAMES:
        error = errors.get(earlier.error)
        if error is None:
            problems.append(f"{earlier.name} names {earlier.error}, which is no error class")
            continue
        resolved.append((earlier, error))
        current = error.__name__
        for location in earlier.locations:
            declared.add((location, earlier.name))
            value = getattr(importlib.import_module(location), earlier.name, None)
            if value is not error:
                problems.append(
                    f"{location}.{earlier.name} is not {earlier.error}; bind "
                    f"{earlier.name} = {current} there"
                )
    for module in modules():
        for name, aliased in _aliases(module, set(errors.values())):
            if (module.__name__, name) not in declared:
                problems.append(
                    f"{module.__name__}.{name} is another name of {aliased.__name__} that "
                    "EARLIER_NAMES does not list; import the class by its own name"
                )
    if problems:
        raise ErrorRegistryError("; ".join(problems))
    return tuple(resolved)


def _defined_in(module: ModuleType) -> Iterator[type[HarnessError]]:
    seen: set[type[HarnessError]] = set()
    for value in list(vars(module).values()):
        if (
            isinstance(value, type)
            and issubclass(value, HarnessError)
            and value.__module__ == module.__name__
            and value not in seen
        ):
            seen.add(value)
            yield value


def _aliases(
    module: ModuleType, errors: set[type[HarnessError]]
) -> Iterator[tuple[str, type[HarnessError]]]:
    """Public names of `module` (those it loads on first use included) bound to an error class
    under a name other than the class's own."""
    for name in dir(module):
        if not name[:1].isupper() or name.isupper():
            continue
        value = getattr(module, name, None)
        if isinstance(value, type) and value in errors and value.__name__ != name:
            yield name, value


def _subclasses(root: type[HarnessError]) -> Iterator[type[HarnessError]]:
    for sub in root.__subclasses__():
        yield sub
        yield from _subclasses(sub)
