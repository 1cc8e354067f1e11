"""How the committed cassettes under `cassettes/` were recorded, so tests can prove they still are.

Live providers are not reachable from CI, so these recordings go through the loopback server in
`fake_provider`, which speaks the provider wire protocol; the harness sends exactly the request
it would send to the real provider. A test re-records each into a temporary folder and compares
it with the committed file: a change in what the harness sends shows up as a failing test that
says to re-record, never as a silent fixture drift.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from harness.cassettes import CassetteTransport
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.modules.decision import AgentDecisionModule
from harness.modules.models_acl import AuthenticatedSession, LlmDetails, LlmDetailsService
from tests.support.fake_provider import ReceivedRequest, Reply, serve

REPOSITORY = Path(__file__).resolve().parents[2]
DECISION_SEED_CASSETTE = REPOSITORY / "cassettes" / "decision" / "seed-example.json"

VALOR = LlmDetails(
    id=uuid.UUID("5d1c8f8e-4a59-4f6b-9e0a-7f2f2b1c0a01"),
    name="valor",
    provider="openai",
    model="gpt-4o-mini",
)
SESSION = AuthenticatedSession(
    principal="alice", groups=frozenset({"release-team"}), default_llm_details_id=VALOR.id
)
SEED_CONFIG: dict[str, object] = {
    "modelSelection": "session-default-valor",
    "taskField": "agentTask",
    "sessionField": "sessionId",
}
SEED_STATE: dict[str, object] = {
    "agentTask": "Inspect the release evidence and continue until deployment is verified",
    "sessionId": "session-42",
    "agentStep": 3,
    "agentArtifactRefs": ["deployment:release-42"],
    "agentApprovalGranted": False,
}


def inspect_release(request: ReceivedRequest) -> Reply:
    """The provider's answer in the seed's example: one call to workflow.execution.inspect."""
    return Reply(
        body={
            "id": "chatcmpl-seed42",
            "object": "chat.completion",
            "created": 1_764_489_600,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_inspect_release42",
                                "type": "function",
                                "function": {
                                    "name": "workflow_execution_inspect",
                                    "arguments": '{"executionId":"release-42"}',
                                },
                            }
                        ],
                        "refusal": None,
                    },
                    "logprobs": None,
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 109, "completion_tokens": 19, "total_tokens": 128},
            "system_fingerprint": "fp_seed",
        }
    )


def decision_module(transport: CassetteTransport, base_url: str) -> AgentDecisionModule:
    config = GatewayConfig(provider="openai", base_url=base_url, api_key="sk-test-recording-key")
    return AgentDecisionModule(
        SEED_CONFIG,
        models=LlmDetailsService.of([VALOR]),
        session=SESSION,
        completer_for=lambda record: LlmGateway(config, transport=transport),
    )


def record_decision_seed(path: Path) -> dict[str, object]:
    """Record the seed example's one gateway call into `path`; return the module's outputs."""
    with serve(inspect_release) as provider:
        transport = CassetteTransport(path, mode="all", run_id=uuid.uuid4().hex)
        try:
            return decision_module(transport, provider.base_url).execute(SEED_STATE)
        finally:
            transport.close()


if __name__ == "__main__":
    record_decision_seed(DECISION_SEED_CASSETTE)
    print(f"recorded {DECISION_SEED_CASSETTE.relative_to(REPOSITORY)}")
