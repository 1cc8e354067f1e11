"""What goes wrong with an implementation under test: every `TargetError`, each with its code.
A cell whose target fails one of these fails; the run goes on."""

from __future__ import annotations

from harness.errors import HarnessError


class TargetError(HarnessError):
    """Raised when a target under test says it could not run a cell; also the family of every error
    a target causes. The cell fails; the run goes on."""

    code = "target_failed"


class TargetSpecError(TargetError, ValueError):
    """Raised when the target to test is given wrongly: `--target` names no importable callable,
    `--target-cmd` cannot start, both are given, or a `--target-env` entry is not `NAME` or
    `NAME=VALUE` (or names an unset variable)."""

    code = "target_spec_invalid"


class TargetTimeoutError(TargetError, TimeoutError):
    """Raised when a target under test does not answer within the cell timeout (`--cell-timeout`).
    The cell fails; a command target is stopped and started again for the next cell."""

    code = "target_timeout"


class TargetCrashedError(TargetError):
    """Raised when a target under test crashes: a callable target raises, or a command target's
    process exits or closes its pipes. The cell fails, named by exception type or exit status, never
    by the target's message; the run goes on."""

    code = "target_crashed"


class TargetProtocolError(TargetError):
    """Raised when a target under test answers outside the target protocol: a stdout line that is
    not a JSON object or nests deeper than 512 levels, an answer with another cell's id, a second
    answer, or a reply the cell cannot use. The cell fails; the run goes on."""

    code = "target_protocol_invalid"
