"""`harness`: pin down how LLM agents finish.

The public API lives here; everything else may change between releases.
"""

from harness.errors import (
    AgentDecisionCallException,
    AgentDecisionProtocolException,
    EmptySessionIdError,
    ExpressionError,
    HarnessError,
    IllegalArgumentException,
    OutputNotDeclaredError,
    SecurityException,
    ToolChoiceUnsupported,
)
from harness.modules.completion import AgentCompletionModule
from harness.modules.decision import AgentDecisionModule
from harness.modules.models_acl import AuthenticatedSession, LlmDetails, LlmDetailsService
from harness.protocol import (
    AgentDecision,
    AgentOutcome,
    AgentOutputEnvelope,
    ArtifactRef,
    DecisionOutcome,
    Payload,
    StopKind,
    ToolCall,
)

__version__ = "0.1.0"

__all__ = [
    "AgentCompletionModule",
    "AgentDecision",
    "AgentDecisionCallException",
    "AgentDecisionModule",
    "AgentDecisionProtocolException",
    "AgentOutcome",
    "AgentOutputEnvelope",
    "ArtifactRef",
    "AuthenticatedSession",
    "DecisionOutcome",
    "EmptySessionIdError",
    "ExpressionError",
    "HarnessError",
    "IllegalArgumentException",
    "LlmDetails",
    "LlmDetailsService",
    "OutputNotDeclaredError",
    "Payload",
    "SecurityException",
    "StopKind",
    "ToolCall",
    "ToolChoiceUnsupported",
    "__version__",
]
