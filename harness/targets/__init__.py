"""Implementations under test: the target protocol and the ways to reach a target (a Python
callable, a command speaking JSON lines). The scenario runner that checks a target's answers and
traffic is `harness.scenarios.on_target`; the harness's own reference as a target is
`harness.scenarios.reference` (`REFERENCE_TARGET`). Nothing here imports the scenarios."""

from harness.targets.base import (
    DEFAULT_CELL_TIMEOUT,
    REAL_ENGINE_REFERENCE_TARGET,
    REFERENCE_TARGET,
    CallableTarget,
    CommandTarget,
    Target,
    TargetCrashed,
    TargetTimeout,
)
from harness.targets.errors import (
    TargetCrashedError,
    TargetError,
    TargetProtocolError,
    TargetSpecError,
    TargetTimeoutError,
)
from harness.targets.protocol import PROTOCOL_VERSION, json_schema

__all__ = [
    "DEFAULT_CELL_TIMEOUT",
    "PROTOCOL_VERSION",
    "REAL_ENGINE_REFERENCE_TARGET",
    "REFERENCE_TARGET",
    "CallableTarget",
    "CommandTarget",
    "Target",
    "TargetCrashed",  # earlier names, kept until 1.0
    "TargetCrashedError",
    "TargetError",
    "TargetProtocolError",
    "TargetSpecError",
    "TargetTimeout",
    "TargetTimeoutError",
    "json_schema",
]
