"""ACL-visible model records (`LlmDetails`) and the authenticated session that sees them."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from harness.providers import Provider

Visibility = Literal["*"] | str


@dataclass(frozen=True, kw_only=True)
class LlmDetails:
    """One configured model: its UUID, display name, provider, wire model, and who may see it.

    `visible_to` holds principal or group names; `"*"` makes the record visible to every
    authenticated session.
    """

    id: uuid.UUID
    name: str
    provider: Provider
    model: str
    visible_to: frozenset[str] = frozenset({"*"})


@dataclass(frozen=True, kw_only=True)
class AuthenticatedSession:
    """Who runs the workflow: a principal, its groups, and its default model (if any)."""

    principal: str
    groups: frozenset[str] = frozenset()
    default_llm_details_id: uuid.UUID | None = None

    def identities(self) -> frozenset[str]:
        return frozenset({self.principal, *self.groups, "*"})


@dataclass(frozen=True)
class LlmDetailsService:
    """Model discovery under ACL: it never returns a record the session cannot see."""

    records: Sequence[LlmDetails] = field(default_factory=tuple)

    def visible(self, session: AuthenticatedSession) -> list[LlmDetails]:
        """The records `session` may see, in configuration order."""
        identities = session.identities()
        return [record for record in self.records if record.visible_to & identities]

    def find_visible(
        self, session: AuthenticatedSession, record_id: uuid.UUID
    ) -> LlmDetails | None:
        """The record with `record_id` if `session` may see it; None for unknown and invisible."""
        return next((r for r in self.visible(session) if r.id == record_id), None)

    @classmethod
    def of(cls, records: Iterable[LlmDetails]) -> LlmDetailsService:
        return cls(tuple(records))
