"""`harness`: pin down how LLM agents finish.

The user path, importable from here:

- define an agent (`AgentDefinition`, `AgentTool`), give it a model that answers from a script
  (`LlmGateway.scripted("openai", [ScriptedReply(...)])`) or a cassette
  (`LlmGateway.replaying("openai", "cassettes/run.json")`), run it on a runtime profile
  (`run_agent`) and check its `RunResult`: status, output, chunks, outcome record, envelope;
- run scenario files as `harness run` does (`run_scenarios`), on the reference or on your own
  implementation (`target=` / `target_cmd=`), and read each cell's `CellResult`;
- replay any client through `ReplayServer`, the in-process `harness serve`.

Property testing has its own modules: `harness.strategies`, `harness.invariants`,
`harness.factories`; cassettes and their options `harness.cassettes`; the wire records
`harness.protocol`. Everything else is private and may change between releases. Names are
imported on first use, so importing `harness` (which pytest does for the plugin in every test run
of a project that installs it) costs nothing until something is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import imported as _imported
from harness.lazy import on_first_use as _on_first_use

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # the user path: define an agent, script or replay its model, run it, check the result
    "AgentDefinition": "harness.agent.definition",
    "AgentTool": "harness.agent.definition",
    "run_agent": "harness.runtimes.run",
    "RunResult": "harness.agent.result",
    "Cancel": "harness.runtimes.base",
    "Fault": "harness.runtimes.base",
    "LlmGateway": "harness.llm.gateway",
    "GatewayConfig": "harness.llm.gateway",
    "LlmRequest": "harness.llm.models",
    "LlmResponse": "harness.llm.models",
    "ScriptTransport": "harness.llm.script",
    "ScriptedReply": "harness.llm.script",
    "ScriptedToolCall": "harness.llm.script",
    "CassetteTransport": "harness.cassettes",
    "RecordMode": "harness.cassettes",
    "run_scenarios": "harness.scenarios.library",
    "ScenarioRun": "harness.scenarios.library",
    "CellResult": "harness.scenarios.run",
    "ReplayServer": "harness.serve",
    # the reference modules
    "AgentCompletionModule": "harness.modules.completion",
    "AgentDecisionModule": "harness.modules.decision",
    "AuthenticatedSession": "harness.modules.models_acl",
    "LlmDetails": "harness.modules.models_acl",
    "LlmDetailsService": "harness.modules.models_acl",
    # the wire records
    "ForcedCompletionState": "harness.protocol.forced",
    "AgentDecision": "harness.protocol",
    "AgentOutcome": "harness.protocol",
    "AgentOutputEnvelope": "harness.protocol",
    "ArtifactRef": "harness.protocol",
    "DecisionOutcome": "harness.protocol",
    "Payload": "harness.protocol",
    "StopKind": "harness.protocol",
    "ToolCall": "harness.protocol",
    # errors: `HarnessError` is the root of every one; the Java-style names are the ones the source documents give
    "HarnessError": "harness.errors",
    "AgentDecisionCallException": "harness.errors",
    "AgentDecisionProtocolException": "harness.errors",
    "EmptySessionIdError": "harness.errors",
    "ExpressionError": "harness.errors",
    "IllegalArgumentException": "harness.errors",
    "OutputNotDeclaredError": "harness.errors",
    "SecurityException": "harness.errors",
    "ToolChoiceUnsupportedError": "harness.errors",
    # an earlier name, kept until 1.0 (harness.error_registry.EARLIER_NAMES lists every one)
    "ToolChoiceUnsupported": "harness.errors",
}

__all__ = [
    "AgentCompletionModule",
    "AgentDecision",
    "AgentDecisionCallException",
    "AgentDecisionModule",
    "AgentDecisionProtocolException",
    "AgentDefinition",
    "AgentOutcome",
    "AgentOutputEnvelope",
    "AgentTool",
    "ArtifactRef",
    "AuthenticatedSession",
    "Cancel",
    "CassetteTransport",
    "CellResult",
    "DecisionOutcome",
    "EmptySessionIdError",
    "ExpressionError",
    "Fault",
    "ForcedCompletionState",
    "GatewayConfig",
    "HarnessError",
    "IllegalArgumentException",
    "LlmDetails",
    "LlmDetailsService",
    "LlmGateway",
    "LlmRequest",
    "LlmResponse",
    "OutputNotDeclaredError",
    "Payload",
    "RecordMode",
    "ReplayServer",
    "RunResult",
    "ScenarioRun",
    "ScriptTransport",
    "ScriptedReply",
    "ScriptedToolCall",
    "SecurityException",
    "StopKind",
    "ToolCall",
    "ToolChoiceUnsupported",
    "ToolChoiceUnsupportedError",
    "__version__",
    "run_agent",
    "run_scenarios",
]


__getattr__, __dir__ = _on_first_use(__name__, _imported(_EXPORTS))


if TYPE_CHECKING:
    from harness.agent.definition import (
        AgentDefinition as AgentDefinition,
    )
    from harness.agent.definition import (
        AgentTool as AgentTool,
    )
    from harness.agent.result import (
        RunResult as RunResult,
    )
    from harness.cassettes import (
        CassetteTransport as CassetteTransport,
    )
    from harness.cassettes import (
        RecordMode as RecordMode,
    )
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
    from harness.errors import (
        ToolChoiceUnsupportedError as ToolChoiceUnsupportedError,
    )
    from harness.llm.gateway import (
        GatewayConfig as GatewayConfig,
    )
    from harness.llm.gateway import (
        LlmGateway as LlmGateway,
    )
    from harness.llm.models import (
        LlmRequest as LlmRequest,
    )
    from harness.llm.models import (
        LlmResponse as LlmResponse,
    )
    from harness.llm.script import (
        ScriptedReply as ScriptedReply,
    )
    from harness.llm.script import (
        ScriptedToolCall as ScriptedToolCall,
    )
    from harness.llm.script import (
        ScriptTransport as ScriptTransport,
    )
    from harness.modules.completion import (
        AgentCompletionModule as AgentCompletionModule,
    )
    from harness.modules.decision import (
        AgentDecisionModule as AgentDecisionModule,
    )
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
    from harness.protocol.forced import (
        ForcedCompletionState as ForcedCompletionState,
    )
    from harness.runtimes.base import (
        Cancel as Cancel,
    )
    from harness.runtimes.base import (
        Fault as Fault,
    )
    from harness.runtimes.run import (
        run_agent as run_agent,
    )
    from harness.scenarios.library import (
        ScenarioRun as ScenarioRun,
    )
    from harness.scenarios.library import (
        run_scenarios as run_scenarios,
    )
    from harness.scenarios.run import (
        CellResult as CellResult,
    )
    from harness.serve import (
        ReplayServer as ReplayServer,
    )
