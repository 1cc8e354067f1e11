"""The public surface: what `from harness import ...` promises."""

from __future__ import annotations

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
    assert set(harness.__all__) == public_names(harness) | {"__version__"}
    assert set(harness.protocol.__all__) == public_names(harness.protocol)
    assert set(harness.llm.__all__) == public_names(harness.llm)
    assert set(harness.cassettes.__all__) == public_names(harness.cassettes)
    assert len(harness.__all__) == len(set(harness.__all__))
