"""Each concept is defined once. An enumeration is written out once and every other list of it
is derived; a scenario's agent block extends the same declaration as the agent definition.

A second hand-written copy drifts: a runtime added to the scenario format but not to the command
line's choices is refused by one and accepted by the other. The scan below finds every tuple,
list, set and `Literal[...]` in the package that names all members of an enumeration.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final, get_args

import pytest
from pydantic import ValidationError

import harness
from harness.agent.definition import AgentDefinition, AgentParts
from harness.agent.state import PERSISTENCE_POINTS, CancelPoint
from harness.cassettes import RecordMode
from harness.llm.capabilities import ALL_EFFORTS
from harness.providers import PROVIDERS
from harness.pytest_plugin import HTTP_LIBRARY_NAMES
from harness.runtimes import PROFILES
from harness.runtimes.base import RUNTIME_NAMES
from harness.scenarios.format import AgentSpec
from harness.stores.base import STORE_KINDS
from harness.targets.protocol import Feature

PACKAGE: Final = Path(harness.__file__).parent

ENUMERATIONS: Final[dict[str, tuple[tuple[str, ...], list[str]]]] = {
    # name: (members, the modules that write all of them out: the one definition)
    "runtimes": (RUNTIME_NAMES, ["harness/runtimes/base.py"]),
    "store kinds": (STORE_KINDS, ["harness/stores/base.py"]),
    "providers": (PROVIDERS, ["harness/providers.py"]),
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


def _places_listing(members: tuple[str, ...]) -> list[str]:
    places: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, strings in _listed_strings(tree):
            if set(members) <= strings:
                places.append(f"{path.relative_to(PACKAGE.parent).as_posix()}:{line}")
    return places


@pytest.mark.parametrize("name", sorted(ENUMERATIONS))
def test_each_enumeration_is_written_out_once(name: str) -> None:
    members, definitions = ENUMERATIONS[name]
    places = _places_listing(members)
    assert [place.split(":")[0] for place in places] == definitions, (
        f"the {name} ({', '.join(members)}) are written out at {places}; derive every other "
        f"list from the one definition with typing.get_args"
    )


def test_the_scan_finds_a_copy() -> None:
    tree = ast.parse('A = Literal["openai", "anthropic"]\nB = ("x", "openai", "anthropic")')
    found = [strings for _, strings in _listed_strings(tree) if set(PROVIDERS) <= strings]
    assert len(found) == 2


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
