"""Each concept is defined once. An enumeration is written out once and every other list of it
is derived; a scenario's agent block extends the same declaration as the agent definition; a
provider's facts live in its `ProviderSpec` alone.

A second hand-written copy drifts: a runtime added to the scenario format but not to the command
line's choices is refused by one and accepted by the other. The scan below finds every tuple,
list, set and `Literal[...]` in the package that names all members of an enumeration, and every
table keyed by a provider's name or comparison with one outside the providers' own modules.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Final, get_args

import pytest
from pydantic import ValidationError

import harness
from harness.agent.definition import AgentDefinition, AgentParts
from harness.agent.spec import AgentSpec
from harness.agent.state import PERSISTENCE_POINTS, CancelPoint
from harness.cassettes import RecordMode
from harness.llm.capabilities import ALL_EFFORTS
from harness.providers import PROVIDERS
from harness.pytest_plugin import HTTP_LIBRARY_NAMES
from harness.runtimes import PROFILES
from harness.runtimes.base import RUNTIME_NAMES
from harness.stores.base import STORE_KINDS
from harness.targets.protocol import Feature
from tests.support.package_source import parsed, python_files

PACKAGE: Final = Path(harness.__file__).parent

ENUMERATIONS: Final[dict[str, tuple[tuple[str, ...], list[str]]]] = {
    # name: (members, the modules that write all of them out: the one definition)
    "runtimes": (RUNTIME_NAMES, ["harness/runtimes/base.py"]),
    "store kinds": (STORE_KINDS, ["harness/stores/base.py"]),
    "providers": (PROVIDERS, ["harness/providers/__init__.py"]),
    "reasoning efforts": (ALL_EFFORTS, ["harness/llm/models.py"]),
    "cancel points": (get_args(CancelPoint), ["harness/agent/state.py"]),
    "target features": (get_args(Feature), ["harness/targets/protocol.py"]),
    "HTTP libraries": (HTTP_LIBRARY_NAMES, ["harness/pytest_plugin.py"]),
    # `PersistencePoint` is `Literal[CancelPoint, "run_finished"]`; `RecordMode` is an enum
    "persistence points": (PERSISTENCE_POINTS, []),
    "record modes": (tuple(mode.value for mode in RecordMode), []),
}


def _listed_strings(tree: ast.AST) -> Iterator[tuple[int, set[str]]]:
    """(line, the string constants) of every tuple, list, set and `Literal[...]` in `tree`."""
    literal_slices: set[int] = set()  # a `Literal[...]`'s tuple is counted with the Literal
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Literal"):
            literal_slices.add(id(node.slice))
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            yield node.lineno, _strings(items)
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and id(node) not in literal_slices:
            yield node.lineno, _strings(node.elts)


def _strings(items: list[ast.expr]) -> set[str]:
    return {
        item.value
        for item in items
        if isinstance(item, ast.Constant) and isinstance(item.value, str)
    }


@functools.cache
def _package_trees() -> tuple[tuple[str, ast.Module], ...]:
    """(path from the repository root, parsed module) of every module of the package, parsed
    once for every scan of this file."""
    return tuple(
        (path.relative_to(PACKAGE.parent).as_posix(), parsed(path))
        for path in python_files(PACKAGE)
    )


def _places_listing(members: tuple[str, ...]) -> list[str]:
    return [
        f"{path}:{line}"
        for path, tree in _package_trees()
        for line, strings in _listed_strings(tree)
        if set(members) <= strings
    ]


@pytest.mark.parametrize("name", sorted(ENUMERATIONS))
def test_each_enumeration_is_written_out_once(name: str) -> None:
    members, definitions = ENUMERATIONS[name]
    places = _places_listing(members)
    assert [place.split(":")[0] for place in places] == definitions, (
        f"the {name} ({', '.join(members)}) are written out at {places}; derive every other "
        f"list from the one definition with typing.get_args"
    )


def test_the_scan_finds_a_copy() -> None:
    names = ", ".join(f'"{name}"' for name in PROVIDERS)
    tree = ast.parse(f'A = Literal[{names}]\nB = ("x", {names})')
    found = [strings for _, strings in _listed_strings(tree) if set(PROVIDERS) <= strings]
    assert len(found) == 2


PROVIDER_HOMES: Final = ("harness/providers/",)
"""Where a provider may be named in a table or a comparison: its spec and the registry."""


def _provider_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and node.value in PROVIDERS:
        return str(node.value)
    return None


def _provider_tables_and_comparisons(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) of every dict keyed by a provider's name (`{"openai": ...}`,
    `dict(openai=...)`) and every comparison with one (`x == "openai"`, `x in ("openai", ...)`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None and (name := _provider_name(key)):
                    yield key.lineno, f"{name!r} as a dict key"
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "dict":
            for keyword in node.keywords:
                if keyword.arg in PROVIDERS:
                    yield node.lineno, f"{keyword.arg!r} as a dict key"
        elif isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                items = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else []
                for item in [operand, *items]:
                    if name := _provider_name(item):
                        yield item.lineno, f"a comparison with {name!r}"


def test_no_provider_is_named_in_a_table_or_a_comparison_outside_its_spec() -> None:
    places = [
        f"{path}:{line}: {what}"
        for path, tree in _package_trees()
        if not path.startswith(PROVIDER_HOMES)
        for line, what in _provider_tables_and_comparisons(tree)
    ]
    assert places == [], (
        "a provider's facts live in its ProviderSpec (harness/providers/): ask the registry "
        "(find_provider, detect_spec) or a spec field instead of naming the provider at "
        + "; ".join(places)
    )


def test_the_provider_scan_finds_tables_and_comparisons() -> None:
    tree = ast.parse(
        'A = {"openai": 1}\nB = dict(anthropic=2)\nC = x == "anthropic"\n'
        'D = "openai" != y\nE = z in ("openai", "other")\nF = {"other": "openai"}\n'
        'G = w == "openai-beta"\n'
    )
    found = sorted(line for line, _ in _provider_tables_and_comparisons(tree))
    assert found == [1, 2, 3, 4, 5]


def test_every_runtime_has_a_profile_in_order() -> None:
    assert tuple(PROFILES) == RUNTIME_NAMES
    assert all(name == profile.name for name, profile in PROFILES.items())


def test_a_cancel_point_is_every_persistence_point_but_the_last() -> None:
    assert (*get_args(CancelPoint), "run_finished") == PERSISTENCE_POINTS


def test_the_scenario_agent_and_the_agent_definition_share_one_declaration() -> None:
    shared = set(AgentParts.model_fields)
    for model in (AgentSpec, AgentDefinition):
        assert issubclass(model, AgentParts)
        for name in shared:
            assert repr(model.model_fields[name]) == repr(AgentParts.model_fields[name]), name
    # what only the scenario has: the message, and what the scenario scripts around the run
    assert set(AgentSpec.model_fields) - shared == {
        "user_message",
        "max_completion_retries",
        "reasoning",
        "llm_config_override",
        "deny_approval",
    }


def test_a_scenario_agent_refuses_what_a_definition_refuses_at_the_same_key() -> None:
    tool = {"name": "bad name"}
    with pytest.raises(ValidationError) as scenario:
        AgentSpec.model_validate({"tools": [tool]})
    with pytest.raises(ValidationError) as definition:
        AgentDefinition.model_validate({"tools": [tool]})
    assert scenario.value.errors(include_url=False) == definition.value.errors(include_url=False)
