"""The model boundary's plumbing: neutral request/response, provider adapters, the gateway."""

from harness.llm.adapters import FRAGMENT_WIRE, RequestFormatError, adapter_for
from harness.llm.capabilities import Capabilities, capabilities_for, check_request
from harness.llm.gateway import Completer, GatewayConfig, GatewayConfigError, LlmGateway
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmResponse,
    LlmToolCall,
    Message,
    NamedToolChoice,
    Reasoning,
    ReasoningDisabled,
    ReasoningEffort,
    ResponseFormat,
    SystemFragment,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = [
    "FRAGMENT_WIRE",
    "AssistantMessage",
    "Capabilities",
    "Completer",
    "GatewayConfig",
    "GatewayConfigError",
    "LlmGateway",
    "LlmRequest",
    "LlmResponse",
    "LlmToolCall",
    "Message",
    "NamedToolChoice",
    "Reasoning",
    "ReasoningDisabled",
    "ReasoningEffort",
    "RequestFormatError",
    "ResponseFormat",
    "SystemFragment",
    "ToolChoice",
    "ToolDefinition",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "adapter_for",
    "capabilities_for",
    "check_request",
]
