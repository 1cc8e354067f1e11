"""A sequence whose items are read when they are looked at: what a cassette kept as its bytes
and the requests a target's session received are to the code that reads them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar, overload

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
