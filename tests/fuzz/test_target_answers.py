"""Hostile answers from an implementation under test: whatever a target answers (any JSON, the
reference's own answer with any member replaced, removed or added), its cell ends with a result:
passed, failed with mismatches, or failed with a typed `TargetError`, never a crash of the run,
and the next cell still runs against what it answers itself.

One target runner per module: a Python callable target whose answer each example sets.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.scenarios import RunOptions, expand, load_scenarios
from harness.scenarios.on_target import TargetRunner, TargetSpec, target_runner
from harness.scenarios.reference import run as reference
from harness.scenarios.run import Cell

SCENARIO = """\
- name: capital
  stores: [memory]
  runtimes: [js]
  script:
    - text: It is Paris.
    - tool_calls: [{name: __finish__, arguments: {city: Paris}}]
  agent:
    user_message: "Capital?"
    output_schema: {type: object, properties: {city: {type: string}}, required: [city]}
  expect: {status: completed, output: {city: Paris}}
"""

ANSWER: dict[str, Any] = {}
"""What the target answers to the next cell (the reference's answer when empty)."""


def hostile_target(message: dict[str, Any]) -> Any:
    if message.get("type") != "cell" or not ANSWER:
        return reference(message)
    return ANSWER["value"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=10,
)


@pytest.fixture(scope="module")
def cell(tmp_path_factory: pytest.TempPathFactory) -> Cell:
    path: Path = tmp_path_factory.mktemp("hostile") / "capital.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    (found,) = expand(load_scenarios([path]), RunOptions())
    return found


@pytest.fixture(scope="module")
def runner() -> Iterator[TargetRunner]:
    spec = TargetSpec(callable=f"{__name__}:hostile_target")
    with target_runner(spec) as running:
        yield running


@pytest.fixture(scope="module")
def true_answer(runner: TargetRunner, cell: Cell) -> dict[str, Any]:
    """The reference's own answer to the cell, as the target would send it."""
    captured: dict[str, Any] = {}
    original = runner.under_test.target.exchange

    def keep(message: Any, timeout: float) -> dict[str, Any]:
        answer = original(message, timeout)
        if message.get("type") == "cell":
            captured.update(answer)
        return answer

    runner.under_test.target.exchange = keep  # type: ignore[method-assign]
    try:
        assert runner.run_cell(cell, RunOptions()).passed
    finally:
        runner.under_test.target.exchange = original  # type: ignore[method-assign]
    return captured


def edits(answer: dict[str, Any]) -> st.SearchStrategy[Any]:
    """The reference's answer with one member (at any depth) replaced, removed or added."""
    paths: list[tuple[Any, ...]] = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        paths.append(path)
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, (*path, key))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, (*path, index))

    walk(answer, ())

    @st.composite
    def edited(draw: st.DrawFn) -> Any:
        value = copy.deepcopy(answer)
        path = draw(st.sampled_from(paths[1:]))
        *parents, last = path
        holder: Any = value
        for part in parents:
            holder = holder[part]
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "replace":
            holder[last] = draw(JSON)
        elif action == "remove":
            del holder[last]
        elif isinstance(holder, dict):
            holder[draw(st.text(max_size=10))] = draw(JSON)
        else:
            holder.append(draw(JSON))
        return value

    return edited()


def check_cell(runner: TargetRunner, cell: Cell, answer: Any) -> None:
    ANSWER["value"] = answer
    try:
        result = runner.run_cell(cell, RunOptions())
    finally:
        ANSWER.clear()
    assert result.passed or result.mismatches or result.error_code is not None
    if result.error_code is not None:
        assert result.error_code.startswith("target_"), result.error
        assert "Traceback" not in (result.error or "")
    # the target is still spoken to, and its next (correct) answer passes
    assert runner.run_cell(cell, RunOptions()).passed


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=JSON)
def test_any_json_as_an_answer_fails_the_cell_cleanly(
    runner: TargetRunner, cell: Cell, answer: Any
) -> None:
    check_cell(runner, cell, answer)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_true_answer_with_any_member_changed_fails_or_passes_cleanly(
    runner: TargetRunner, cell: Cell, true_answer: dict[str, Any], data: st.DataObject
) -> None:
    check_cell(runner, cell, data.draw(edits(true_answer)))
