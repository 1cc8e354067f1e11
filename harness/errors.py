"""The root error of `harness` and the stable codes a user can assert on.

Every failure a caller may want to tell apart carries a `code`: a short snake_case string that
never changes once released, so tests and dashboards can match on it instead of on wording.
Classes mix in the builtin a caller already catches (`ValueError`, `LookupError`,
`AssertionError`) so that existing `except` clauses keep working.
"""

from __future__ import annotations

from typing import ClassVar


class HarnessError(Exception):
    """Root of every error `harness` raises on purpose.

    `code` is stable across releases; `retryable` says whether repeating the same call can
    succeed without a change of input or configuration.
    """

    code: ClassVar[str] = "harness_error"
    retryable: ClassVar[bool] = False


class IllegalArgumentException(HarnessError, ValueError):
    """A module input or configuration is invalid; named after the Java exception
    the modules' contracts name.

    Not retryable: the same input fails the same way until it is corrected.
    """

    code: ClassVar[str] = "illegal_argument"


class AgentOutcomeError(HarnessError):
    """The agent-outcome record cannot be turned into its result payload."""

    code: ClassVar[str] = "agent_outcome_invalid"


class EmptySessionIdError(AgentOutcomeError, ValueError):
    """The record's mandatory `session_id` is the empty string."""

    code: ClassVar[str] = "agent_outcome_empty_session_id"

    def __init__(self) -> None:
        super().__init__(
            "the agent-outcome record's mandatory `session_id` is empty — every harness fills it "
            "with the handle of the conversation that produced this outcome, and an empty handle "
            "names no conversation"
        )


class OutputNotDeclaredError(HarnessError, LookupError):
    """An expression reads an output that the action or job does not declare.

    Raised instead of resolving to null, so a stale workflow fails where it reads the field.
    """

    code: ClassVar[str] = "output_not_declared"

    def __init__(self, field: str, owner: str, declared: list[str]) -> None:
        self.field = field
        self.owner = owner
        self.declared = declared
        super().__init__(
            f"output {field!r} is not declared by {owner}; declared outputs: "
            f"{', '.join(declared) if declared else '(none)'}"
        )

    def __str__(self) -> str:  # LookupError would quote the whole message
        return str(self.args[0])


class ExpressionError(HarnessError, ValueError):
    """A `${{ ... }}` expression is malformed or names a job or key that does not exist."""

    code: ClassVar[str] = "expression_invalid"


class UnknownModuleError(HarnessError, LookupError):
    """A module name that `harness.metadata` does not know; the message lists the known ones."""

    code: ClassVar[str] = "module_unknown"

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"expected one of {', '.join(known)} but got name={name!r} (type=str)")

    def __str__(self) -> str:  # LookupError would quote the whole message
        return str(self.args[0])


class PublishRefusedError(HarnessError, ValueError):
    """`xema/publish-kb` cannot publish what it was given, and says what it needs instead.

    Its artifact branch requires an artifact version with `mode: inline` and a `payload.body`
    (a `json_payload` handoff artifact has neither), and its inline branch requires a markdown
    body (an agent's `outputs.response` is always null). The message names the input and the
    shape it needs, never the content it refused.
    """

    code: ClassVar[str] = "publish_kb_refused"


class StoreUnavailableError(HarnessError):
    """A store cannot be reached, opened, or used: its server is down, went away mid-run, or
    timed out. The message names the store kind and the driver's exception type, never the URL
    (it may hold a password)."""

    code: ClassVar[str] = "store_unavailable"


class CassetteError(HarnessError):
    """A cassette cannot be used as it is."""

    code: ClassVar[str] = "cassette_error"


class CassetteMissError(CassetteError, AssertionError):
    """A request has no recorded answer left; the message explains the nearest recorded ones."""

    code: ClassVar[str] = "cassette_miss"


class CassetteFormatError(CassetteError, ValueError):
    """A cassette file does not parse, or has an unknown format version; names file and line."""

    code: ClassVar[str] = "cassette_format_invalid"


class CassetteWriteError(CassetteError, OSError):
    """A cassette (or its lock) cannot be written: the folder is not writable or not a folder,
    the disk is full, or another process held the cassette's lock too long."""

    code: ClassVar[str] = "cassette_write_failed"


class CassetteTamperedError(CassetteError):
    """An interaction's digest or the cassette's signature does not match its content."""

    code: ClassVar[str] = "cassette_tampered"


class CassetteUnplayedError(CassetteError, AssertionError):
    """Strict replay: recorded interactions were never requested."""

    code: ClassVar[str] = "cassette_unplayed"


class RecordModeError(CassetteError, ValueError):
    """An unknown record mode or an option combination that cannot work."""

    code: ClassVar[str] = "cassette_record_mode_invalid"


class SecurityException(HarnessError):
    """A server-owned security policy is required but unavailable; never fall back to no policy."""

    code: ClassVar[str] = "security_policy_unavailable"


class AgentDecisionCallException(HarnessError):
    """The LLM gateway failed: a non-2xx answer, a timeout, or a body that is not the provider's.

    Carries the HTTP `status` (None for a timeout or a transport failure) and the provider's
    error `error_type`; never a credential, never the request body. Retry only through the
    durable loop's bounded policy.
    """

    code: ClassVar[str] = "agent_decision_call_failed"
    retryable: ClassVar[bool] = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        provider: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.provider = provider


class ToolChoiceUnsupportedError(AgentDecisionCallException):
    """The provider or model cannot force a named tool (for example Anthropic with thinking on)."""

    code: ClassVar[str] = "tool_choice_unsupported"
    retryable: ClassVar[bool] = False


class AgentDecisionProtocolException(HarnessError):
    """The provider's output is not a valid typed `AgentDecision`; the text is never executed.

    `correction` is the bounded protocol correction recorded for the next attempt.
    """

    code: ClassVar[str] = "agent_decision_protocol_invalid"
    retryable: ClassVar[bool] = True

    def __init__(self, message: str, *, correction: str) -> None:
        super().__init__(message)
        self.correction = correction


class ScenarioCellFailedError(HarnessError, AssertionError):
    """A scenario cell's expectations did not hold, or an error kept it from finishing.

    `result` is the cell's `CellResult` (typed loosely: errors import nothing of ours).
    """

    code: ClassVar[str] = "scenario_cell_failed"

    def __init__(self, cell_id: str, result: object) -> None:
        super().__init__(f"{cell_id} failed")
        self.result = result


CassetteMiss = CassetteMissError
"""The earlier name of `CassetteMissError`, kept so existing code keeps working."""

ScenarioCellFailed = ScenarioCellFailedError
"""The earlier name of `ScenarioCellFailedError`, kept so existing code keeps working."""

ToolChoiceUnsupported = ToolChoiceUnsupportedError
"""The earlier name of `ToolChoiceUnsupportedError`, kept so existing code keeps working."""
