"""`harness`: pin down how LLM agents finish.

The public API lives here; everything else may change between releases.
"""

from harness.errors import (
    EmptySessionIdError,
    ExpressionError,
    HarnessError,
    IllegalArgumentException,
    OutputNotDeclaredError,
)
from harness.modules.completion import AgentCompletionModule
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
    "AgentOutcome",
    "AgentOutputEnvelope",
    "ArtifactRef",
    "DecisionOutcome",
    "EmptySessionIdError",
    "ExpressionError",
    "HarnessError",
    "IllegalArgumentException",
    "OutputNotDeclaredError",
    "Payload",
    "StopKind",
    "ToolCall",
    "__version__",
]
