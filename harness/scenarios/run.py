"""Run one scenario and compare what happened with its `expect:` block."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.errors import HarnessError
from harness.modules.completion import AgentCompletionModule
from harness.scenarios.format import ModuleExpect, Scenario


@dataclass(frozen=True)
class Mismatch:
    """One `expect:` key whose expected value differs from what the run produced."""

    key: str
    expected: Any
    actual: Any


@dataclass(frozen=True)
class CellResult:
    """The outcome of one scenario run: passed when it has no mismatch."""

    name: str
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.mismatches


def run_scenario(scenario: Scenario) -> CellResult:
    """Run `scenario` and check every key of its `expect:` block."""
    module = AgentCompletionModule()
    try:
        outputs: dict[str, Any] = module.execute(scenario.input)
    except HarnessError as error:
        return CellResult(scenario.name, _check_failure(scenario.expect, error, module.outputs))
    return CellResult(scenario.name, _check_success(scenario.expect, outputs))


def _check_success(expect: ModuleExpect, outputs: dict[str, Any]) -> list[Mismatch]:
    mismatches: list[Mismatch] = []
    if expect.status != "completed":
        mismatches.append(Mismatch("status", expect.status, "completed"))
    if expect.outputs is not None and expect.outputs != outputs:
        mismatches.append(Mismatch("outputs", expect.outputs, outputs))
    return mismatches


def _check_failure(
    expect: ModuleExpect, error: HarnessError, outputs: dict[str, Any]
) -> list[Mismatch]:
    actual = {
        "status": "failed",
        "error_code": error.code,
        "error_type": type(error).__name__,
        "error_message": str(error),
    }
    mismatches = [
        Mismatch(key, expected, actual[key])
        for key, expected in (
            ("status", expect.status),
            ("error_code", expect.error_code),
            ("error_type", expect.error_type),
            ("error_message", expect.error_message),
        )
        if expected is not None and expected != actual[key]
    ]
    if expect.outputs is not None and expect.outputs != outputs:
        mismatches.append(Mismatch("outputs", expect.outputs, outputs))
    return mismatches
