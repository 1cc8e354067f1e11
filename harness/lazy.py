"""Loading on first use: a sequence whose items are read when they are looked at (what a
cassette kept as its bytes and the requests a target's session received are to the code that
reads them), and module attributes made the first time they are read (a package's names, or a
class that needs `httpx` 0.28)."""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, overload

T = TypeVar("T")


class ReadOnDemand(Sequence[T]):
    """`count` items, item `index` being `read(index)` each time it is looked at (once, with
    `keep`). It equals any sequence (a list, a tuple) holding equal items, as a list would."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, count: int, read: Callable[[int], T], *, keep: bool = False) -> None:
        self._count = count
        self._read = read
        self._kept: dict[int, T] | None = {} if keep else None

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self[position] for position in range(self._count)[index]]
        position = range(self._count)[index]  # IndexError as for a list
        if self._kept is None:
            return self._read(position)
        if position not in self._kept:
            self._kept[position] = self._read(position)
        return self._kept[position]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(
            mine == theirs for mine, theirs in zip(self, other, strict=True)
        )

    def __repr__(self) -> str:
        return f"<{self._count} items, each read when looked at>"


def on_first_use(
    module: str, makers: Mapping[str, Callable[[], Any]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`module`'s `__getattr__` and `__dir__` (PEP 562) for names made on first use: each name of
    `makers` is made by its function the first time it is read, then kept in the module."""

    def __getattr__(name: str) -> Any:
        make = makers.get(name)
        if make is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = make()
        setattr(sys.modules[module], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[module]), *makers})

    return __getattr__, __dir__


def imported(exports: Mapping[str, str]) -> dict[str, Callable[[], Any]]:
    """Makers for `on_first_use` that import each name of `exports` from the module it names."""
    return {name: functools.partial(_attribute, module, name) for name, module in exports.items()}


def _attribute(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)
