"""What goes wrong with an implementation under test: every `TargetError`, each with its code.
A cell whose target fails one of these fails; the run goes on."""

from __future__ import annotations

from harness.errors import HarnessError


class TargetError(HarnessError):
    """The target did not answer as the protocol says. The cell fails; the run goes on."""

    code = "target_failed"


class TargetSpecError(TargetError, ValueError):
    """`--target` does not name an importable callable, or `--target-cmd` cannot be started."""

    code = "target_spec_invalid"


class TargetTimeoutError(TargetError, TimeoutError):
    code = "target_timeout"


class TargetCrashedError(TargetError):
    code = "target_crashed"


class TargetProtocolError(TargetError):
    code = "target_protocol_invalid"
