"""Reading YAML a stranger wrote, in bounded time and memory.

YAML can name a node once and repeat it by alias, so a 1 KB file can stand for billions of
nodes, and a path ending in `.yaml` can be a FIFO that blocks forever. `load` reads only regular
files, up to a size limit, and checks the parser's event stream against limits on aliases,
nodes, characters and nesting depth before each event reaches the composer, so nothing grows
before a limit is checked. Nodes and characters are counted as if every alias were expanded,
each anchor's size computed once (memoised), so the check costs one pass over the file.

Each caller names its limits with an environment-variable prefix (`HARNESS_MAX_SCENARIO` reads
`HARNESS_MAX_SCENARIO_BYTES`, `_ALIASES`, `_NODES`, `_CHARACTERS` and `_DEPTH`); an error names
the variable that raises the limit it hit. Every failure is a `YamlInputError` starting `path:line:column:`
where there is a position, never a bare PyYAML or decoding exception.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Final, NoReturn, Protocol

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.reader import Reader
from yaml.resolver import Resolver

from harness.errors import HarnessError
from harness.files import FileTooLargeError, NotARegularFileError, read_regular_file

_PARSER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MIB: Final = 1024 * 1024


class Position(Protocol):
    """Where a problem is: PyYAML's marks, from its C parser or its Python one (0-based)."""

    @property
    def line(self) -> int: ...

    @property
    def column(self) -> int: ...


class YamlInputError(HarnessError, ValueError):
    """Raised when a YAML file (a scenario file, a vcrpy cassette) cannot be read as it is: not a
    regular file, not UTF-8, or unreadable; also the family of `YamlSyntaxError` and
    `YamlLimitError`. `where` is `path[:line:column]`, `problem` the rest."""

    code: ClassVar[str] = "yaml_input_refused"

    def __init__(self, path: Path, problem: str, mark: Position | None = None) -> None:
        self.where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        self.problem = problem
        super().__init__(f"{self.where}: {problem}")


class YamlSyntaxError(YamlInputError):
    """The text is not YAML PyYAML's safe loader accepts (control characters, bad indentation,
    an unhashable key, an unknown tag, a value its tag cannot hold)."""

    code: ClassVar[str] = "yaml_invalid"


class YamlLimitError(YamlInputError):
    """The file exceeds a limit: bytes, aliases, nodes or characters once aliases are expanded,
    or nesting depth."""

    code: ClassVar[str] = "yaml_limit_exceeded"


class YamlLimitSettingError(HarnessError, ValueError):
    """Raised when an environment variable that sets a YAML limit (`HARNESS_MAX_SCENARIO_*`,
    `HARNESS_MAX_VCR_CASSETTE_*`) is not a positive whole number."""

    code: ClassVar[str] = "yaml_limit_setting_invalid"


@dataclass(frozen=True, kw_only=True)
class YamlLimits:
    """How much YAML one file may hold. `prefix` names the variables that change each limit."""

    prefix: str
    max_bytes: int
    max_aliases: int = 1_000
    max_nodes: int = 100_000
    max_characters: int = 16 * MIB
    max_depth: int = 100
    _NAMES: ClassVar[tuple[str, ...]] = ("bytes", "aliases", "nodes", "characters", "depth")

    def variable(self, limit: str) -> str:
        """The environment variable that sets `limit` (one of `bytes`, `aliases`, `nodes`,
        `characters`, `depth`)."""
        return f"{self.prefix}_{limit.upper()}"

    def from_environment(self, environ: Mapping[str, str] = os.environ) -> YamlLimits:
        """These limits, each replaced by its environment variable when that is set."""
        changes: dict[str, Any] = {}
        for name in self._NAMES:
            variable = self.variable(name)
            text = environ.get(variable)
            if text is None or text == "":
                continue
            if not (text.isascii() and text.isdigit()) or int(text) < 1:
                raise YamlLimitSettingError(
                    f"expected a whole number of at least 1 but got {variable}={text!r} (type=str)"
                )
            changes[f"max_{name}"] = int(text)
        return replace(self, **changes)


def load(path: Path, limits: YamlLimits) -> Any:
    """The Python value of the YAML file at `path` (None for an empty file), within `limits`."""
    root = compose(path, read_text(path, limits), limits)
    return None if root is None else construct(path, root)


def read_text(path: Path, limits: YamlLimits) -> str:
    """The text of the regular file at `path`: at most `limits.max_bytes` bytes of UTF-8 without
    the control characters YAML forbids. A FIFO, device, socket or folder is refused at once."""
    data = _read_regular_file(path, limits)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise YamlInputError(
            path,
            f"the file is not UTF-8 (byte 0x{data[error.start]:02x}); save it as UTF-8",
            _mark(data[: error.start].decode("utf-8")),
        ) from None
    forbidden = Reader.NON_PRINTABLE.search(text)
    if forbidden is not None:
        raise YamlSyntaxError(
            path,
            f"invalid YAML: control character U+{ord(forbidden.group()):04X} is not allowed; "
            "remove it or write it as an escape (\\x..) in a double-quoted string",
            _mark(text[: forbidden.start()]),
        )
    return text


def compose(path: Path, text: str, limits: YamlLimits) -> yaml.Node | None:
    """The node graph of the single YAML document in `text` (None when it has none).

    Aliases share their anchor's node, so the graph is no larger than the text; the limits are
    checked on the event stream before each event reaches the composer.
    """
    composer = _BoundedComposer(_checked_events(text, limits))
    try:
        return composer.get_single_node()
    except yaml.YAMLError as error:
        raise _syntax_error(path, error) from None


def construct(path: Path, root: yaml.Node) -> Any:
    """The Python value of a composed document; a value its tag cannot hold (`!!int x`, the date
    2001-02-30) is a `YamlSyntaxError` at that value, not a bare `ValueError`."""
    try:
        return _PositionedConstructor().construct_document(root)
    except yaml.YAMLError as error:
        raise _syntax_error(path, error) from None


def _read_regular_file(path: Path, limits: YamlLimits) -> bytes:
    try:
        return read_regular_file(path, limits.max_bytes)
    except NotARegularFileError as error:
        raise YamlInputError(
            path, f"it is {error.kind}, not a regular file; give the path of a YAML file"
        ) from None
    except FileTooLargeError:
        raise _too_large(path, limits) from None
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise YamlInputError(path, f"cannot read it ({reason})") from None


def _too_large(path: Path, limits: YamlLimits) -> YamlLimitError:
    return YamlLimitError(
        path,
        f"the file is larger than {_size(limits.max_bytes)}; set "
        f"{limits.variable('bytes')} to a larger number of bytes to read it",
    )


def _size(count: int) -> str:
    if count % MIB == 0:
        return f"{count // MIB} MiB"
    return f"{count} bytes"


def _mark(before: str) -> yaml.Mark:
    """The mark of the character that follows `before`."""
    line = before.count("\n")
    column = len(before) - (before.rfind("\n") + 1)
    return yaml.Mark("", len(before), line, column, None, 0)


def _syntax_error(path: Path, error: yaml.YAMLError) -> YamlInputError:
    if isinstance(error, _LimitReached):
        return YamlLimitError(path, error.problem, error.mark)
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or getattr(error, "reason", None)
    return YamlSyntaxError(path, f"invalid YAML: {problem or type(error).__name__}", mark)


class _LimitReached(yaml.YAMLError):
    """Raised inside the event stream (the composer lets YAML errors through); `compose` turns
    it into a `YamlLimitError`."""

    def __init__(self, problem: str, mark: Position | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.mark = mark


@dataclass(frozen=True)
class _Size:
    """How much a node stands for once its aliases are expanded."""

    nodes: int
    characters: int

    def __add__(self, other: _Size) -> _Size:
        return _Size(self.nodes + other.nodes, self.characters + other.characters)


_ONE_COLLECTION: Final = _Size(1, 0)


@dataclass
class _Open:
    """A collection still being read: its anchor and its expanded size so far."""

    anchor: str | None
    size: _Size = _ONE_COLLECTION


@dataclass
class _Budget:
    """What the document has used so far, against its limits."""

    limits: YamlLimits
    aliases: int = 0
    total: _Size = _Size(0, 0)
    open: list[_Open] = field(default_factory=list)
    anchored: dict[str, _Size] = field(default_factory=dict)
    """The expanded size of each finished anchor: computed once, added at each alias."""

    def check(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.DocumentStartEvent):
            self.anchored.clear()  # anchors do not cross documents
        elif isinstance(event, yaml.AliasEvent):
            self._alias(event)
        elif isinstance(event, yaml.ScalarEvent):
            size = _Size(1, len(event.value))
            self._add(event, size)
            if event.anchor is not None:
                self.anchored[event.anchor] = size
        elif isinstance(event, yaml.CollectionStartEvent):
            if len(self.open) == self.limits.max_depth:
                self._refuse(event, "depth", f"it nests more than {self.limits.max_depth} levels")
            self._add(event, _ONE_COLLECTION)
            self.open.append(_Open(event.anchor))
        elif isinstance(event, yaml.CollectionEndEvent) and self.open:
            done = self.open.pop()
            if self.open:
                self.open[-1].size += done.size
            if done.anchor is not None:
                self.anchored[done.anchor] = done.size

    def _alias(self, event: yaml.AliasEvent) -> None:
        self.aliases += 1
        if self.aliases > self.limits.max_aliases:
            self._refuse(event, "aliases", f"it has more than {self.limits.max_aliases} aliases")
        if any(item.anchor == event.anchor for item in self.open):
            raise _LimitReached(
                f"the alias *{event.anchor} is inside the node it names, which would never end; "
                "repeat the content instead",
                event.start_mark,
            )
        size = self.anchored.get(event.anchor or "")
        if size is not None:  # an unknown anchor is the composer's error, with its position
            self._add(event, size)

    def _add(self, event: yaml.Event, size: _Size) -> None:
        self.total += size
        if self.open and not isinstance(event, yaml.CollectionStartEvent):
            self.open[-1].size += size  # a collection adds itself when it ends
        if self.total.nodes > self.limits.max_nodes:
            self._refuse(
                event,
                "nodes",
                f"it holds more than {self.limits.max_nodes} nodes once its aliases are expanded",
            )
        if self.total.characters > self.limits.max_characters:
            self._refuse(
                event,
                "characters",
                f"its values hold more than {self.limits.max_characters} characters once its "
                "aliases are expanded",
            )

    def _refuse(self, event: yaml.Event, limit: str, problem: str) -> NoReturn:
        raise _LimitReached(
            f"{problem}; simplify the file, or set {self.limits.variable(limit)} to a larger "
            "number to read it",
            event.start_mark,
        )


def _checked_events(text: str, limits: YamlLimits) -> Iterator[yaml.Event]:
    budget = _Budget(limits)
    for event in yaml.parse(text, Loader=_PARSER):
        budget.check(event)
        yield event


class _BoundedComposer(Composer, Resolver):
    """PyYAML's composer, fed from a checked event stream instead of its own parser."""

    def __init__(self, events: Iterator[yaml.Event]) -> None:
        Composer.__init__(self)
        Resolver.__init__(self)
        self._events = events
        self._current: yaml.Event | None = None

    def check_event(self, *choices: type[yaml.Event]) -> bool:
        if self._current is None:
            self._current = next(self._events, None)
        if self._current is None:
            return False
        return not choices or isinstance(self._current, choices)

    def peek_event(self) -> yaml.Event:
        self.check_event()
        assert self._current is not None, "the composer peeks only after check_event"
        return self._current

    def get_event(self) -> yaml.Event:
        event = self.peek_event()
        self._current = None
        return event


class _PositionedConstructor(SafeConstructor):
    """The safe constructor, with every failure located at the node that caused it."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            value = super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, LookupError, AttributeError, ArithmeticError):
            value = _UNREADABLE
        if value is _UNREADABLE or (isinstance(value, int) and abs(value) >= _TOO_MANY_DIGITS):
            # the exception's own text would repeat the value, which may be confidential
            kind = node.tag.rsplit(":", 1)[-1]
            raise ConstructorError(
                None,
                None,
                f"the value is not a valid {kind}; quote it if it is meant as text",
                node.start_mark,
            )
        return value


_UNREADABLE: Final = object()
_TOO_MANY_DIGITS: Final = 10**4300
"""Python refuses to print an integer this long (`sys.set_int_max_str_digits`), so `!!int 0x...`
must not make one."""
