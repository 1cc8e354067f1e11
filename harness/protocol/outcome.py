"""The canonical agent-outcome record and the neutral stop vocabulary (`StopKind`).

Ported from the record's Rust definition (`agent_outcome.rs`): the record is exactly four mandatory snake_case string
keys, a payload missing one or carrying an extra one does not decode, and `stop_reason` is spelled
by the one mapping `StopKind.canonical_stop_reason()`.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import Field, StrictBytes, StrictStr, TypeAdapter, ValidationError
from pydantic.config import ExtraValues
from pydantic_core import InitErrorDetails, PydanticCustomError

from harness.errors import EmptySessionIdError
from harness.protocol._base import WireModel

CanonicalStopReason = Literal[
    "end_turn", "tool_use", "limit_reached", "cancelled", "error", "other"
]
CANONICAL_STOP_REASONS: tuple[CanonicalStopReason, ...] = (
    "end_turn",
    "tool_use",
    "limit_reached",
    "cancelled",
    "error",
    "other",
)


class StopKind(WireModel):
    """Why a model turn or an agent run stopped: a tagged union on `kind`.

    Build a variant with `StopKind.EndTurn()`, `StopKind.Error(message=...)` and so on (or
    `StopKind.end_turn()`, `StopKind.error("...")`, ...), or decode any JSON form with
    `StopKind.parse(...)`. The detail of `Error` and `Other` never reaches the
    canonical string: the canonical vocabulary is closed.
    """

    kind: str

    EndTurn: ClassVar[type[EndTurn]]
    ToolUse: ClassVar[type[ToolUse]]
    LimitReached: ClassVar[type[LimitReached]]
    Cancelled: ClassVar[type[Cancelled]]
    Error: ClassVar[type[ErrorStop]]
    Other: ClassVar[type[OtherStop]]

    def model_post_init(self, context: object, /) -> None:
        if type(self) is StopKind:
            raise TypeError(
                "StopKind is a union: build one of its variants, e.g. StopKind.EndTurn()"
            )

    def canonical_stop_reason(self) -> CanonicalStopReason:
        """The canonical snake_case `stop_reason`: the one mapping onto the outcome record."""
        return _CANONICAL[self.kind]

    @staticmethod
    def end_turn() -> StopKind:
        return EndTurn()

    @staticmethod
    def tool_use() -> StopKind:
        return ToolUse()

    @staticmethod
    def limit_reached() -> StopKind:
        return LimitReached()

    @staticmethod
    def cancelled() -> StopKind:
        return Cancelled()

    @staticmethod
    def error(message: str) -> StopKind:
        return ErrorStop(message=message)

    @staticmethod
    def other(reason: str) -> StopKind:
        return OtherStop(reason=reason)

    @staticmethod
    def parse(value: object) -> AnyStopKind:
        """Decode a `{"kind": ...}` mapping (or JSON text) into its variant."""
        if isinstance(value, str | bytes):
            return _STOP_KIND_ADAPTER.validate_json(value)
        return _STOP_KIND_ADAPTER.validate_python(value)


class EndTurn(StopKind):
    """The model ended its turn on its own."""

    kind: Literal["end_turn"] = "end_turn"


class ToolUse(StopKind):
    """The turn stopped to call tools."""

    kind: Literal["tool_use"] = "tool_use"


class LimitReached(StopKind):
    """A token or step limit cut the turn or the run off."""

    kind: Literal["limit_reached"] = "limit_reached"


class Cancelled(StopKind):
    """The run was cancelled from outside."""

    kind: Literal["cancelled"] = "cancelled"


class ErrorStop(StopKind):
    """The run failed; `message` stays on the transcript channel, never in `stop_reason`."""

    kind: Literal["error"] = "error"
    message: str


class OtherStop(StopKind):
    """A provider-specific stop with no neutral meaning; `reason` keeps the original word."""

    kind: Literal["other"] = "other"
    reason: str


AnyStopKind = Annotated[
    EndTurn | ToolUse | LimitReached | Cancelled | ErrorStop | OtherStop,
    Field(discriminator="kind"),
]
_STOP_KIND_ADAPTER: TypeAdapter[AnyStopKind] = TypeAdapter(AnyStopKind)
_CANONICAL: dict[str, CanonicalStopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "limit_reached": "limit_reached",
    "cancelled": "cancelled",
    "error": "error",
    "other": "other",
}
StopKind.EndTurn = EndTurn
StopKind.ToolUse = ToolUse
StopKind.LimitReached = LimitReached
StopKind.Cancelled = Cancelled
StopKind.Error = ErrorStop
StopKind.Other = OtherStop


class ContentType(StrEnum):
    """The content type of a result payload."""

    JSON = "application/json"


class Payload(WireModel):
    """A type-erased activity result: a content type and the bytes it describes."""

    content_type: ContentType
    bytes: StrictBytes


class AgentOutcome(WireModel):
    """The canonical agent-outcome record: what a completed agent activity's result carries.

    `text` is every completed answer accumulated; `final_message` the last answer alone (empty
    when the agent said nothing; equal to `text` when it answered once); `stop_reason` one of the
    canonical strings; `session_id` the handle of the conversation, never empty on the wire.
    Empty `text` and `final_message` are honest, not a bug.
    """

    text: StrictStr
    final_message: StrictStr
    stop_reason: CanonicalStopReason
    session_id: StrictStr

    @classmethod
    def new(cls, text: str, final_message: str, stop: StopKind, session_id: str) -> AgentOutcome:
        """Build the record, spelling `stop_reason` through the one canonical mapping."""
        return cls(
            text=text,
            final_message=final_message,
            stop_reason=stop.canonical_stop_reason(),
            session_id=session_id,
        )

    def into_payload(self) -> Payload:
        """Serialise the record as the activity's JSON result payload.

        Refuses an empty `session_id` with `EmptySessionIdError`, whose message names the field:
        a vacant handle is a harness bug and is never shipped.
        """
        if not self.session_id:
            raise EmptySessionIdError
        return Payload(content_type=ContentType.JSON, bytes=self.model_dump_json().encode())

    @classmethod
    def from_payload(cls, payload: Payload) -> AgentOutcome:
        """Decode a JSON result payload; a missing, extra or repeated key fails validation."""
        return cls.model_validate_json(payload.bytes)

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """Decode the record's JSON; a repeated key is refused, as the Rust definition's serde
        decoder refuses it, rather than letting the last value win."""
        data = (
            json_data.encode("utf-8", "surrogatepass") if isinstance(json_data, str) else json_data
        )
        repeated = _repeated_keys(bytes(data))
        if repeated:
            raise ValidationError.from_exception_data(
                cls.__name__,
                [
                    InitErrorDetails(
                        type=PydanticCustomError(
                            "duplicate_key", "the key '{key}' appears more than once", {"key": key}
                        ),
                        loc=(key,),
                        input=key,  # never the payload: it is the user's content
                    )
                    for key in repeated
                ],
            )
        return super().model_validate_json(
            json_data,
            strict=strict,
            extra=extra,
            context=context,
            by_alias=by_alias,
            by_name=by_name,
        )


def _repeated_keys(data: bytes) -> list[str]:
    """The object keys that appear twice in one object of `data` (none if it is not JSON)."""
    repeated: list[str] = []

    def collect(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen and key not in repeated:
                repeated.append(key)
            seen.add(key)
        return dict(pairs)

    try:
        json.loads(data, object_pairs_hook=collect)
    except ValueError:
        return []  # model_validate_json reports what is wrong with it
    return repeated
