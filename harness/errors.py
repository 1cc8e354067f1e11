"""The root error of `harness` and the stable codes a user can assert on.

Every failure a caller may want to tell apart carries a `code`: a short snake_case string that
never changes once released, so tests and dashboards can match on it instead of on wording.
Classes mix in the builtin a caller already catches (`ValueError`, `LookupError`,
`AssertionError`) so that existing `except` clauses keep working.

Each error class declares itself once: its own `code`, its bases, and a docstring saying when it
is raised. This module holds the root and the errors several packages share; the others live
with the code that raises them, and `harness.error_registry` finds them all (this module stays
a leaf: it imports nothing of ours).
"""

from __future__ import annotations

from typing import ClassVar


class HarnessError(Exception):
    """The root of every error the harness raises on purpose; never raised itself, so catch it to
    catch them all.

    `code` is stable across releases; `retryable` says whether repeating the same call can succeed
    without a change of input or configuration.
    """

    code: ClassVar[str] = "harness_error"
    retryable: ClassVar[bool] = False


class IllegalArgumentException(HarnessError, ValueError):
    """Raised when an argument or input is invalid: a reference module's input
    (`AgentCompletionModule`, `AgentDecisionModule`), an agent's `output_schema`, what an
    `llm_config_override` callback returns, a request the provider cannot be sent as it is, or an
    argument to a strategy, factory or invariant of the property-testing kit. Named after the Java
    exception the module contracts name.

    Not retryable: the same input fails the same way until it is corrected.
    """

    code: ClassVar[str] = "illegal_argument"


class AgentOutcomeError(HarnessError):
    """Never raised itself: the family of errors raised when an agent-outcome record cannot be
    turned into its result payload; catch it for all of them."""

    code: ClassVar[str] = "agent_outcome_invalid"


class EmptySessionIdError(AgentOutcomeError, ValueError):
    """Raised by `AgentOutcome.into_payload()` when the record's mandatory `session_id` is the empty
    string."""

    code: ClassVar[str] = "agent_outcome_empty_session_id"

    def __init__(self) -> None:
        super().__init__(
            "the agent-outcome record's mandatory `session_id` is empty — every harness fills it "
            "with the handle of the conversation that produced this outcome, and an empty handle "
            "names no conversation"
        )


class OutputNotDeclaredError(HarnessError, LookupError):
    """Raised when a workflow expression reads an output that the action or job does not declare,
    instead of resolving it to null, so a stale workflow fails where it reads the field."""

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
    """Raised when a `${{ ... }}` expression is malformed or names a job or matrix key that does not
    exist."""

    code: ClassVar[str] = "expression_invalid"


class UnknownModuleError(HarnessError, LookupError):
    """Raised when `harness modules show` (or `harness.metadata.module_metadata`) is given a module
    name it does not know; the message lists the known ones."""

    code: ClassVar[str] = "module_unknown"

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"expected one of {', '.join(known)} but got name={name!r} (type=str)")

    def __str__(self) -> str:  # LookupError would quote the whole message
        return str(self.args[0])


class PublishRefusedError(HarnessError, ValueError):
    """Raised when `xema/publish-kb` cannot publish what it was given; the message says what it
    needs instead.

    Its artifact branch requires an artifact version with `mode: inline` and a `payload.body` (a
    `json_payload` handoff artifact has neither), and its inline branch requires a markdown body (an
    agent's `outputs.response` is always null). The message names the input and the shape it needs,
    never the content it refused.
    """

    code: ClassVar[str] = "publish_kb_refused"


class StoreUnavailableError(HarnessError):
    """Raised when a store cannot be reached, opened or used: `harness stores check` cannot connect,
    or the server goes away or times out during a run. The message names the store kind and the
    driver's exception type, never the URL (it may hold a password)."""

    code: ClassVar[str] = "store_unavailable"


class CassetteError(HarnessError):
    """Never raised itself: the family of errors raised when a cassette cannot be used as it is;
    catch it for all of them."""

    code: ClassVar[str] = "cassette_error"


class CassetteMissError(CassetteError, AssertionError):
    """Raised when a replayed request has no recorded answer left. The message names the cassette
    file, the request's method, path and key, and the nearest recorded requests with a structural
    diff of the best one; an `AssertionError`, so pytest prints it plainly."""

    code: ClassVar[str] = "cassette_miss"


class CassetteFormatError(CassetteError, ValueError):
    """Raised when a cassette cannot be read: it does not parse, has an unknown format version, is
    missing in record mode `none`, is not a regular file, is over the size limit
    (`HARNESS_MAX_CASSETTE_BYTES`, which must be a whole number above 0) or the nesting limit, or
    holds an interaction a replay could not serve (its events' timing, `offsets_ms`, beyond an
    hour or out of order included). The message names the file, and the line or the
    interaction and field where there is one."""

    code: ClassVar[str] = "cassette_format_invalid"


class CassetteWriteError(CassetteError, OSError):
    """Raised when a cassette (or its lock) cannot be written: the folder is not writable or not a
    folder, the disk is full, or another process held the cassette's lock longer than 120 s."""

    code: ClassVar[str] = "cassette_write_failed"


class CassetteTamperedError(CassetteError):
    """Raised when a cassette is loaded whose interaction digest, or whose signature (with
    `HARNESS_CASSETTE_KEY` set), does not match its content. Re-record it, or load it with
    `allow_tampered=True` to inspect it."""

    code: ClassVar[str] = "cassette_tampered"


class CassetteUnplayedError(CassetteError, AssertionError):
    """Raised when a cassette replayed with `strict=True` is closed with recorded interactions that
    were never requested."""

    code: ClassVar[str] = "cassette_unplayed"


class RecordModeError(CassetteError, ValueError):
    """Raised for an unknown record mode, or an `inner` transport of another HTTP library or kind
    (sync or async) than the client recording through it; the message names what was passed and what
    is needed."""

    code: ClassVar[str] = "cassette_record_mode_invalid"


class SecurityException(HarnessError):
    """Raised by `AgentDecisionModule` when contextual tool visibility is requested and the server's
    tool-visibility policy is missing, unavailable, or answers with something other than a catalog:
    it never falls back to no policy. Named after the Java exception the module contracts name."""

    code: ClassVar[str] = "security_policy_unavailable"


class AgentDecisionCallException(HarnessError):
    """Raised when a call through the LLM gateway fails: a non-2xx answer, a timeout, or a body that
    is not the provider's. Named after the Java exception the module contracts name.

    Carries the HTTP `status` (None for a timeout or a transport failure) and the provider's error
    `error_type`; never a credential, never the request body. Retry only through the durable loop's
    bounded policy.
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
    """Raised when the provider or model cannot force a named tool (for example Anthropic with
    extended thinking on, or o1-mini): by the capability check before the request is sent (`status`
    is None), or when the provider's 400 answer says so."""

    code: ClassVar[str] = "tool_choice_unsupported"
    retryable: ClassVar[bool] = False


class AgentDecisionProtocolException(HarnessError):
    """Raised when the provider's output is not a valid typed `AgentDecision`; the text is never
    executed. Named after the Java exception the module contracts name.

    `correction` is the bounded protocol correction recorded for the next attempt.
    """

    code: ClassVar[str] = "agent_decision_protocol_invalid"
    retryable: ClassVar[bool] = True

    def __init__(self, message: str, *, correction: str) -> None:
        super().__init__(message)
        self.correction = correction


class ScenarioCellFailedError(HarnessError, AssertionError):
    """Raised by the pytest plugin when a scenario cell's expectations did not hold or an error kept
    it from finishing; an `AssertionError`, so pytest reports a failed test.

    `result` is the cell's `CellResult`.
    """

    code: ClassVar[str] = "scenario_cell_failed"

    def __init__(self, cell_id: str, result: object) -> None:
        super().__init__(f"{cell_id} failed")
        self.result = result


CassetteMiss = CassetteMissError
"""The earlier name of `CassetteMissError`, deprecated: kept until 1.0."""

ScenarioCellFailed = ScenarioCellFailedError
"""The earlier name of `ScenarioCellFailedError`, deprecated: kept until 1.0."""

ToolChoiceUnsupported = ToolChoiceUnsupportedError
"""The earlier name of `ToolChoiceUnsupportedError`, deprecated: kept until 1.0."""
