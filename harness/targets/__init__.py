"""Conformance of an implementation under test: the target protocol, the ways to reach a target
(a Python callable, a command speaking JSON lines), the harness's own reference as a target, and
the runner that checks a target's answers and traffic against the scenario library."""

from harness.targets.base import (
    DEFAULT_CELL_TIMEOUT,
    CallableTarget,
    CommandTarget,
    Target,
    TargetCrashed,
    TargetError,
    TargetProtocolError,
    TargetSpecError,
    TargetTimeout,
)
from harness.targets.conformance import (
    REFERENCE_TARGET,
    TargetRunner,
    TargetSpec,
    configured_target,
    target_runner,
)
from harness.targets.protocol import PROTOCOL_VERSION, json_schema

__all__ = [
    "DEFAULT_CELL_TIMEOUT",
    "PROTOCOL_VERSION",
    "REFERENCE_TARGET",
    "CallableTarget",
    "CommandTarget",
    "Target",
    "TargetCrashed",
    "TargetError",
    "TargetProtocolError",
    "TargetRunner",
    "TargetSpec",
    "TargetSpecError",
    "TargetTimeout",
    "configured_target",
    "json_schema",
    "target_runner",
]
