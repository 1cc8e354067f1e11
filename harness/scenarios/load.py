"""Load scenario files: YAML in, validated scenarios out, or an error at `file:line:column`."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from harness import bounded_yaml
from harness.errors import HarnessError
from harness.scenarios import build
from harness.scenarios.format import Scenario

SCENARIO_SUFFIXES = (".yaml", ".yml")
SCENARIO_LIMITS: Final = bounded_yaml.YamlLimits(
    prefix="HARNESS_MAX_SCENARIO", max_bytes=4 * bounded_yaml.MIB
)
"""How much YAML a scenario file may hold; each limit has an environment variable
(`HARNESS_MAX_SCENARIO_BYTES`, `_ALIASES`, `_NODES`, `_CHARACTERS`, `_DEPTH`)."""
MAX_PROBLEMS: Final = 20
"""A file with thousands of invalid entries gets a readable message, not thousands of lines."""
_ADAPTER: TypeAdapter[Scenario] = TypeAdapter(Scenario)


class ScenarioFileError(HarnessError, ValueError):
    """A scenario file does not parse or does not validate; the message starts `file:line:col`."""

    code: ClassVar[str] = "scenario_invalid"


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario, where it came from, and the line of each `expect:` key."""

    scenario: Scenario
    path: Path
    line: int
    expect_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        """The line of the `expect:` key a mismatch names (`chunk_sequence[3].code` is on the
        line of `chunk_sequence`), else the scenario's."""
        return self.expect_lines.get(key.split(".")[0].split("[")[0], self.line)

    @property
    def folder(self) -> Path:
        return self.path.parent


def discover(paths: Iterable[Path]) -> list[Path]:
    """Every scenario file under `paths` (files as given, folders searched), sorted."""
    found: list[Path] = []
    for path in paths:
        try:
            path.stat()
        except FileNotFoundError:
            raise ScenarioFileError(f"{path}: no such file or folder") from None
        except (OSError, ValueError) as error:  # a NUL byte in the path, a folder we may not read
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise ScenarioFileError(f"{str(path)!r}: cannot look at it ({reason})") from None
        if path.is_dir():
            # a folder named `x.yaml` is searched, not read; a FIFO or device is refused at load
            found.extend(
                p for p in path.rglob("*") if p.suffix in SCENARIO_SUFFIXES and not p.is_dir()
            )
        else:
            found.append(path)
    return sorted(set(found))


def load_scenarios(paths: Sequence[Path]) -> list[LoadedScenario]:
    """Load every scenario under `paths`; the first invalid one raises `ScenarioFileError`."""
    return [loaded for path in discover(paths) for loaded in load_file(path)]


def load_file(path: Path) -> list[LoadedScenario]:
    """Load one file holding one scenario or a list of them.

    Every problem is a `ScenarioFileError` starting `file:line:column:` where there is a
    position: a file that is not a regular file or exceeds a `SCENARIO_LIMITS` limit, YAML that
    does not parse, a scenario that does not validate, and an agent the run would refuse to build.
    """
    limits = SCENARIO_LIMITS.from_environment()
    try:
        root = bounded_yaml.compose(path, bounded_yaml.read_text(path, limits), limits)
        if root is None:
            raise ScenarioFileError(f"{path}:1:1: the file is empty; expected a scenario or a list")
        _refuse_repeated_keys(path, root)
        data: Any = bounded_yaml.construct(path, root)  # the same nodes, parsed once
    except bounded_yaml.YamlInputError as error:
        raise ScenarioFileError(str(error)) from None
    nodes = root.value if isinstance(root, yaml.SequenceNode) else [root]
    items = data if isinstance(data, list) else [data]
    return [
        LoadedScenario(
            _validated(path, node, item), path, node.start_mark.line + 1, _expect_lines(node)
        )
        for node, item in zip(nodes, items, strict=True)
    ]


def _validated(path: Path, node: yaml.Node, item: object) -> Scenario:
    """The scenario in `item`, checked as the run will use it: its agent is built here, so a
    definition the run would refuse fails now, at the key that causes it."""
    try:
        scenario = _ADAPTER.validate_python(item)
    except ValidationError as error:
        raise ScenarioFileError(_describe(path, node, error.errors())) from None
    if scenario.kind == "agent" and scenario.agent is not None:
        refusals = build.agent_refusals(scenario, scenario.agent)
        if refusals:
            raise ScenarioFileError(_describe(path, node, refusals))
    return scenario


def _refuse_repeated_keys(path: Path, root: yaml.Node) -> None:
    """YAML lets a later key silently replace an earlier one, which would drop an expectation
    without a word; a repeated key is an error at its second occurrence."""
    pending = [root]
    visited: set[int] = set()  # an alias shares its anchor's node, even recursively
    while pending:
        node = pending.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[object, yaml.Node] = {}
            for key_node, value_node in node.value:
                name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if name is not None and name in seen:
                    first, mark = seen[name].start_mark, key_node.start_mark
                    raise ScenarioFileError(
                        f"{path}:{mark.line + 1}:{mark.column + 1}: key {name!r} is repeated "
                        f"(first at line {first.line + 1}); YAML would keep only the last one"
                    )
                if name is not None:
                    seen[name] = key_node
                pending.append(value_node)
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)


def _expect_lines(node: yaml.Node) -> dict[str, int]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    for key_node, value_node in node.value:
        if key_node.value == "expect" and isinstance(value_node, yaml.MappingNode):
            return {k.value: k.start_mark.line + 1 for k, _ in value_node.value}
    return {}


def _describe(path: Path, node: yaml.Node, errors: Sequence[ErrorDetails]) -> str:
    """One located line per problem, the first `MAX_PROBLEMS` of them."""
    lines: list[str] = []
    for detail in errors[:MAX_PROBLEMS]:
        location = _location(detail)
        target = _node_at(node, location, at_key=detail["type"] == "extra_forbidden")
        mark = target.start_mark
        key = ".".join(str(part) for part in location) or "(scenario)"
        message = detail["msg"]
        if detail["type"] == "extra_forbidden":
            message = f"unknown key {location[-1]!r}" + _suggestion(node, location)
        elif detail["type"] == "missing":
            message = "required key is missing"
        found = detail.get("input")
        found_text = "" if detail["type"] in ("missing",) else f" (found {_short(found)})"
        lines.append(f"{path}:{mark.line + 1}:{mark.column + 1}: {key}: {message}{found_text}")
    if len(errors) > MAX_PROBLEMS:
        lines.append(f"{path}: and {len(errors) - MAX_PROBLEMS} more problem(s) like these")
    return "\n".join(lines)


def _location(detail: ErrorDetails) -> list[int | str]:
    """The keys an error is about, without the union members pydantic names along the way.

    An unknown key is the user's own word (`A`, `a[b]`), never a union member, so it is kept.
    """
    if detail["type"] == "extra_forbidden":
        *parents, unknown = detail["loc"]
        return [part for part in parents if not _is_union_tag(part)] + [unknown]
    location = [part for part in detail["loc"] if not _is_union_tag(part)]
    if location and not isinstance(location[-1], int) and "[" in str(location[-1]):
        location = location[:-1]
    return location


def _is_union_tag(part: int | str) -> bool:
    # pydantic names union members in error locations (`list[str]`, `FragmentsExpect`, ...)
    return isinstance(part, str) and (part[:1].isupper() or "[" in part or part in _TAGS)


_TAGS = frozenset({"str", "int", "float", "bool", "none", "dict", "list"})


def _node_at(node: yaml.Node, location: Sequence[int | str], *, at_key: bool) -> yaml.Node:
    """The YAML node a validation error points at (the key itself for an unknown key)."""
    current = node
    for depth, part in enumerate(location):
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if key_node.value == part:
                    last = depth == len(location) - 1
                    current = key_node if at_key and last else value_node
                    break
            else:
                return current
        elif isinstance(current, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(current.value):
                return current
            current = current.value[part]
        else:
            return current
    return current


def _suggestion(node: yaml.Node, location: Sequence[int | str]) -> str:
    model = _model_at(location[:-1])
    if model is None:
        return ""
    close = difflib.get_close_matches(str(location[-1]), list(model.model_fields), n=1)
    return (
        f"; did you mean {close[0]!r}?" if close else f"; allowed: {', '.join(model.model_fields)}"
    )


def _model_at(location: Sequence[int | str]) -> type[BaseModel] | None:
    from harness.scenarios.format import Scenario

    model: type[BaseModel] = Scenario
    for part in location:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        found = _model_in(field.annotation)
        if found is None:
            return None
        model = found
    return model


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as `list[ToolSpec] | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        found = _model_in(argument)
        if found is not None:
            return found
    return None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
