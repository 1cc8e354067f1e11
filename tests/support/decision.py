"""The Agent Decision module under test: its documented example's configuration and state, a
model catalog with visibility, and a module wired to a scripted completer."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from harness.llm.models import LlmResponse
from harness.modules.decision import AgentDecisionModule
from harness.modules.models_acl import AuthenticatedSession, LlmDetails, LlmDetailsService
from tests.support.scripted import TestCompleter

VALOR = LlmDetails(
    id=uuid.UUID("00000000-0000-4000-8000-000000000001"),
    name="valor",
    provider="openai",
    model="gpt-4o-mini",
)
CLAUDE = LlmDetails(
    id=uuid.UUID("00000000-0000-4000-8000-000000000002"),
    name="claude",
    provider="anthropic",
    model="claude-sonnet-4-5",
    visible_to=frozenset({"team-a"}),
)
SECRET_MODEL = LlmDetails(
    id=uuid.UUID("00000000-0000-4000-8000-000000000003"),
    name="secret",
    provider="openai",
    model="gpt-4o",
    visible_to=frozenset({"admins"}),
)
SESSION = AuthenticatedSession(
    principal="alice", groups=frozenset({"team-a"}), default_llm_details_id=VALOR.id
)
EXAMPLE_CONFIG = {
    "modelSelection": "session-default-valor",
    "taskField": "agentTask",
    "sessionField": "sessionId",
}
EXAMPLE_STATE: dict[str, object] = {
    "agentTask": "Inspect the release evidence and continue until deployment is verified",
    "sessionId": "session-42",
    "agentStep": 3,
    "agentArtifactRefs": ["deployment:release-42"],
    "agentApprovalGranted": False,
}
INSPECT = ("workflow_execution_inspect", '{"executionId": "release-42"}')


def module(
    replies: list[LlmResponse | Exception],
    config: Mapping[str, object] | None = None,
    session: AuthenticatedSession = SESSION,
    **options: Any,
) -> tuple[AgentDecisionModule, TestCompleter, list[LlmDetails]]:
    completer = TestCompleter(replies)
    selected: list[LlmDetails] = []

    def completer_for(record: LlmDetails) -> TestCompleter:
        selected.append(record)
        return completer

    decision = AgentDecisionModule(
        EXAMPLE_CONFIG if config is None else config,
        models=LlmDetailsService.of([VALOR, CLAUDE, SECRET_MODEL]),
        session=session,
        completer_for=completer_for,
        **options,
    )
    return decision, completer, selected
