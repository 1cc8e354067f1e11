"""Implementations under test: the target protocol, the ways to reach a target (a Python callable,
a command speaking JSON lines), and the harness's own reference as a target. The scenario runner
that checks a target's answers and traffic is `harness.scenarios.targets`."""

from harness.targets.base import DEFAULT_CELL_TIMEOUT, CallableTarget, CommandTarget, Target
from harness.targets.errors import (
    TargetCrashedError,
    TargetError,
    TargetProtocolError,
    TargetSpecError,
    TargetTimeoutError,
)
from harness.targets.protocol import PROTOCOL_VERSION, json_schema

REFERENCE_TARGET = "harness.targets.reference:run"
"""The harness's own modules as a target: `harness run --target harness.targets.reference:run`."""

__all__ = [
    "DEFAULT_CELL_TIMEOUT",
    "PROTOCOL_VERSION",
    "REFERENCE_TARGET",
    "CallableTarget",
    "CommandTarget",
    "Target",
    "TargetCrashedError",
    "TargetError",
    "TargetProtocolError",
    "TargetSpecError",
    "TargetTimeoutError",
    "json_schema",
]
