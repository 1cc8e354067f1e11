"""`harness`: pin down how LLM agents finish.

The public API lives here; everything else may change between releases. Names are imported on
first use, so importing `harness` (which pytest does for the plugin in every test run of a
project that installs it) costs nothing until something is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AgentCompletionModule": "harness.modules.completion",
    "AgentDecision": "harness.protocol",
    "AgentDecisionCallException": "harness.errors",
    "AgentDecisionModule": "harness.modules.decision",
    "AgentDecisionProtocolException": "harness.errors",
    "AgentOutcome": "harness.protocol",
    "AgentOutputEnvelope": "harness.protocol",
    "ArtifactRef": "harness.protocol",
    "AuthenticatedSession": "harness.modules.models_acl",
    "DecisionOutcome": "harness.protocol",
    "EmptySessionIdError": "harness.errors",
    "ExpressionError": "harness.errors",
    "HarnessError": "harness.errors",
    "IllegalArgumentException": "harness.errors",
    "LlmDetails": "harness.modules.models_acl",
    "LlmDetailsService": "harness.modules.models_acl",
    "OutputNotDeclaredError": "harness.errors",
    "Payload": "harness.protocol",
    "SecurityException": "harness.errors",
    "StopKind": "harness.protocol",
    "ToolCall": "harness.protocol",
    "ToolChoiceUnsupported": "harness.errors",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:
    from harness.errors import (
        AgentDecisionCallException as AgentDecisionCallException,
    )
    from harness.errors import (
        AgentDecisionProtocolException as AgentDecisionProtocolException,
    )
    from harness.errors import (
        EmptySessionIdError as EmptySessionIdError,
    )
    from harness.errors import (
        ExpressionError as ExpressionError,
    )
    from harness.errors import (
        HarnessError as HarnessError,
    )
    from harness.errors import (
        IllegalArgumentException as IllegalArgumentException,
    )
    from harness.errors import (
        OutputNotDeclaredError as OutputNotDeclaredError,
    )
    from harness.errors import (
        SecurityException as SecurityException,
    )
    from harness.errors import (
        ToolChoiceUnsupported as ToolChoiceUnsupported,
    )
    from harness.modules.completion import AgentCompletionModule as AgentCompletionModule
    from harness.modules.decision import AgentDecisionModule as AgentDecisionModule
    from harness.modules.models_acl import (
        AuthenticatedSession as AuthenticatedSession,
    )
    from harness.modules.models_acl import (
        LlmDetails as LlmDetails,
    )
    from harness.modules.models_acl import (
        LlmDetailsService as LlmDetailsService,
    )
    from harness.protocol import (
        AgentDecision as AgentDecision,
    )
    from harness.protocol import (
        AgentOutcome as AgentOutcome,
    )
    from harness.protocol import (
        AgentOutputEnvelope as AgentOutputEnvelope,
    )
    from harness.protocol import (
        ArtifactRef as ArtifactRef,
    )
    from harness.protocol import (
        DecisionOutcome as DecisionOutcome,
    )
    from harness.protocol import (
        Payload as Payload,
    )
    from harness.protocol import (
        StopKind as StopKind,
    )
    from harness.protocol import (
        ToolCall as ToolCall,
    )
