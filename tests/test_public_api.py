"""The public surface: what `from harness import ...` promises."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import harness
import harness.cassettes
import harness.llm
import harness.protocol


def public_names(module: object) -> set[str]:
    return {
        name
        for name in vars(module)
        if not name.startswith("_")
        and not isinstance(getattr(module, name), type(harness))  # submodules
        and name != "annotations"
    }


def test_the_issue_names_import_from_the_top_level() -> None:
    from harness import (  # noqa: F401
        AgentCompletionModule,
        AgentDecision,
        AgentOutcome,
        HarnessError,
        IllegalArgumentException,
        Payload,
        StopKind,
    )


def test_all_is_exactly_the_public_names() -> None:
    exported = set(harness.__all__)
    assert len(harness.__all__) == len(exported)
    for name in exported:
        assert getattr(harness, name) is not None
    plumbing = {"importlib", "TYPE_CHECKING", "Any"}
    public = {
        name
        for name in dir(harness)
        if not name.startswith(("_", "@")) and not inspect.ismodule(getattr(harness, name))
    }
    assert public - plumbing - {"annotations"} == exported - {"__version__"}
    assert set(harness.protocol.__all__) == public_names(harness.protocol)
    assert set(harness.llm.__all__) == public_names(harness.llm)
    assert set(harness.cassettes.__all__) == public_names(harness.cassettes)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        getattr(harness, "Nope")  # noqa: B009


def test_importing_harness_loads_nothing_else() -> None:
    code = "import sys, harness; print(sorted(m for m in sys.modules if m.startswith('harness')))"
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert output.stdout.strip() == "['harness']"
