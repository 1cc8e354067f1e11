"""Hostile scenario files: whatever a file holds, loading it gives scenarios or a
`ScenarioFileError`, never another exception and never a hang; a scenario that loads builds its
agent, and a decision scenario that loads runs to a result."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from harness.scenarios import ScenarioFileError
from harness.scenarios.build import agent_definition, agent_refusals
from harness.scenarios.load import LoadedScenario, load_file
from harness.scenarios.run import Cell, RunOptions, run_cell

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = sorted((ROOT / "scenarios").rglob("*.yaml"))
SMALL_LIBRARY = [path for path in LIBRARY if path.stat().st_size < 20_000]

YAML_PIECES = st.sampled_from(
    [*"-:[]{},&*!|>'\"#%@`?\n\t ", "\x00", "\x85", "\ufeff", "²", "&a ", "*a", "<<: ", "!!int ",
     "!!binary ", "!!set ", "!!python/object ", "!foo ", "---\n", "...\n", "? ", "name: x\n",
     "agent:\n  ", "tools: ", "- name: ", "2001-02-30", "0x", "1e999", ".nan", "~", "null"]
)  # fmt: skip
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["", "__finish__", "load_skill", "/messages/²", "status", "x.json", "#"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "scenario.yaml"


def loads_or_refuses(path: Path, content: bytes) -> list[LoadedScenario]:
    """`load_file`'s promise: scenarios, or a `ScenarioFileError` (a `HarnessError`)."""
    path.write_bytes(content)
    try:
        return load_file(path)
    except ScenarioFileError as error:
        message = str(error)
    assert message.startswith(str(path)), "every refusal names the file"
    return []


@given(content=st.binary(max_size=512))
def test_any_bytes_load_or_are_refused(scenario_file: Path, content: bytes) -> None:
    loads_or_refuses(scenario_file, content)


@given(pieces=st.lists(YAML_PIECES | st.text(max_size=4), max_size=60))
def test_any_yaml_like_text_loads_or_is_refused(scenario_file: Path, pieces: list[str]) -> None:
    loads_or_refuses(scenario_file, "".join(pieces).encode("utf-8", "surrogatepass"))


@given(
    source=st.sampled_from(SMALL_LIBRARY),
    cuts=st.lists(
        st.tuples(st.integers(0, 20_000), st.integers(0, 8), st.binary(max_size=6)), max_size=4
    ),
)
def test_library_files_with_bytes_changed_load_or_are_refused(
    scenario_file: Path, source: Path, cuts: list[tuple[int, int, bytes]]
) -> None:
    content = bytearray(source.read_bytes())
    for start, length, replacement in cuts:
        at = start % (len(content) + 1)
        content[at : at + length] = replacement
    loads_or_refuses(scenario_file, bytes(content))


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key or index path inside a JSON-like value."""
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        yield (*prefix, key)
        yield from paths(child, (*prefix, key))


def mutated(document: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """`document` with one key or item deleted, or replaced by another JSON value."""
    changed = copy.deepcopy(document)
    path = data.draw(st.sampled_from(list(paths(changed))))
    parent = changed
    for part in path[:-1]:
        parent = parent[part]
    if data.draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(JSON_VALUES)
    return changed


@functools.cache
def library_documents() -> list[dict[str, Any]]:
    """The library's scenarios as plain documents: valid and varied in kind (the few holding
    64 KB texts are left out, as hypothesis would print them with every example). Read on the
    first draw, not when the tests are collected."""
    documents: list[dict[str, Any]] = []
    for path in LIBRARY:
        content = yaml.safe_load(path.read_text(encoding="utf-8"))
        documents.extend(content if isinstance(content, list) else [content])
    return [document for document in documents if len(json.dumps(document)) < 10_000]


DOCUMENTS = st.deferred(lambda: st.sampled_from(library_documents()))
MODULE_DOCUMENTS = st.deferred(
    lambda: st.sampled_from(
        [document for document in library_documents() if document.get("kind", "agent") != "agent"]
    )
)


@given(document=DOCUMENTS, data=st.data())
def test_a_scenario_with_one_part_changed_loads_and_builds_or_is_refused(
    scenario_file: Path, document: dict[str, Any], data: st.DataObject
) -> None:
    changed = mutated(document, data)
    for loaded in loads_or_refuses(scenario_file, yaml.safe_dump(changed).encode()):
        agent = loaded.scenario.agent
        if loaded.scenario.kind == "agent" and agent is not None:
            assert agent_refusals(loaded.scenario, agent) == []
            agent_definition(loaded.scenario, agent)


@given(document=MODULE_DOCUMENTS, data=st.data())
def test_a_module_scenario_with_one_part_changed_runs_or_is_refused(
    scenario_file: Path, document: dict[str, Any], data: st.DataObject
) -> None:
    """Decision, completion and store-check scenarios build their module only when they run, so
    what loads must run to a result (a refusal at run time is a reported, coded error)."""
    changed = mutated(document, data)
    for loaded in loads_or_refuses(scenario_file, yaml.safe_dump(changed).encode()):
        for runtime, store in loaded.scenario.cells():
            run_cell(Cell(loaded, runtime, store), RunOptions(workdir=scenario_file.parent))
