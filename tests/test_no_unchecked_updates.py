"""No `model_copy(update=...)` on keys a caller chose.

pydantic's `model_copy(update=...)` validates nothing: a misspelt field is added silently and an
out-of-range value is kept (`max_tokens=-3`). The harness may use it only with a dict literal
whose keys are constant strings, its own field names; whatever a caller supplies goes through
`WireModel.evolve` or `model_validate`, which refuse an unknown field or a bad value.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import harness
from tests.support.package_source import python_files, source

PACKAGE = Path(harness.__file__).parent


def unchecked_updates(source: str) -> list[int]:
    """Lines of `model_copy` calls whose update is not a dict literal of constant string keys
    (a `**` argument counts: it could carry `update`)."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "model_copy"
        ):
            continue
        for keyword in node.keywords:
            if keyword.arg is None or (keyword.arg == "update" and not _literal(keyword.value)):
                lines.append(node.lineno)
    return lines


def _literal(value: ast.expr) -> bool:
    return isinstance(value, ast.Dict) and all(
        isinstance(key, ast.Constant) and isinstance(key.value, str) for key in value.keys
    )


def test_no_module_updates_a_model_with_keys_it_did_not_write() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in python_files(PACKAGE)
        for line in unchecked_updates(source(path))
    ]
    assert found == [], "validate the changes: use `evolve(**changes)` or `model_validate`"


@pytest.mark.parametrize(
    "source",
    [
        "config.model_copy(update=dict(override))",
        "metadata.model_copy(update=kwargs)",
        "state.model_copy(update={name: value})",
        "state.model_copy(update={'step': 1, **changes})",
        "state.model_copy(**options)",
        "state.model_copy(deep=True, update=changes)",
    ],
)
def test_the_check_finds_an_update_a_caller_could_choose(source: str) -> None:
    assert unchecked_updates(source) == [1]


@pytest.mark.parametrize(
    "source",
    [
        "state.model_copy(update={'attempts_used': used})",
        "response.model_copy(update={})",
        "state.model_copy()",
        "state.model_copy(deep=True)",
        "copy(update=kwargs)",
    ],
)
def test_the_harness_own_literal_fields_are_allowed(source: str) -> None:
    assert unchecked_updates(source) == []
