"""The neutral LLM request and response: what the harness decides, before any wire format.

A request keeps the system prompt as ordered *named fragments* (`base`, `skills_catalog`,
`skill_bodies`, `workspace`, ...) so an assertion can see exactly which fragments went out; the
provider adapters join them into the provider's system prompt. Messages may carry metadata (for
example `forcedCompletion` on the `[completion]` message); metadata is for assertions and
persistence and is never rendered on the wire, since providers refuse unknown message fields.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue, NonNegativeFloat, NonNegativeInt, PositiveInt

from harness.json_body import strict_json
from harness.protocol._base import WireModel
from harness.protocol.outcome import AnyStopKind, LimitReached

FRAGMENT_BASE = "base"
FRAGMENT_SKILLS_CATALOG = "skills_catalog"
FRAGMENT_SKILL_BODIES = "skill_bodies"
FRAGMENT_WORKSPACE = "workspace"


class SystemFragment(WireModel):
    """One named part of the system prompt."""

    name: str = Field(min_length=1)
    text: str


class LlmToolCall(WireModel):
    """A tool call as the model produced it: `arguments` is the raw JSON text, possibly invalid.

    Arguments stay text because a reply cut off by the token limit can end mid-JSON; deciding
    what that means belongs to the caller, not to the parser.
    """

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> JsonValue:
        """The arguments decoded as JSON; raises `ValueError` when they are not valid JSON
        (`NaN`, `Infinity` and numbers beyond a 64-bit float included, which Python's parser
        would accept)."""
        value: JsonValue = strict_json(self.arguments or "{}")
        return value


class UserMessage(WireModel):
    kind: Literal["user"] = "user"
    content: str
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


class AssistantMessage(WireModel):
    kind: Literal["assistant"] = "assistant"
    text: str | None = None
    tool_calls: tuple[LlmToolCall, ...] = ()
    reasoning_blocks: tuple[dict[str, JsonValue], ...] = ()
    """The reply's provider reasoning blocks, sent back unchanged: Anthropic `thinking` /
    `redacted_thinking` with their signatures, before its text and calls while reasoning is on
    (Messages requires them before a `tool_use` it continues); Gemini's content of a turn that
    carries thinking, whole, in place of its text and calls whatever the reasoning (Gemini 3
    refuses a function call sent back without its `thoughtSignature`). The harness never reads
    them."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


class ToolResultMessage(WireModel):
    """The result of one tool call; `content` is what the model reads (JSON text or prose)."""

    kind: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


Message = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="kind")]


def _empty_object_schema() -> dict[str, JsonValue]:
    return {"type": "object", "properties": {}}


class ToolDefinition(WireModel):
    """A tool the model may call; `parameters` is its JSON schema."""

    name: str = Field(min_length=1, max_length=128)
    description: str = ""
    parameters: dict[str, JsonValue] = Field(default_factory=_empty_object_schema)


class NamedToolChoice(WireModel):
    """Force the model to call exactly this tool."""

    kind: Literal["tool"] = "tool"
    name: str = Field(min_length=1)


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


class ReasoningDisabled(WireModel):
    """Reasoning explicitly off: adapters omit or disable the provider's reasoning parameters."""

    kind: Literal["disabled"] = "disabled"


Effort = Literal["minimal", "low", "medium", "high"]
"""How hard a reasoning model thinks, lowest first."""


class ReasoningEffort(WireModel):
    """Reasoning on at an effort level (Anthropic: a thinking budget derived from it)."""

    kind: Literal["effort"] = "effort"
    effort: Effort
    budget_tokens: PositiveInt | None = None


Reasoning = Annotated[ReasoningDisabled | ReasoningEffort, Field(discriminator="kind")]


class ResponseFormat(WireModel):
    """Ask for JSON output matching `schema` (provider structured output)."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    name: str = "output"
    schema_: dict[str, JsonValue] = Field(alias="schema")
    strict: bool = True


class LlmRequest(WireModel):
    """Everything one model call sends, provider-neutral."""

    model: str = Field(min_length=1)
    system: tuple[SystemFragment, ...] = ()
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: ToolChoice = "auto"
    max_tokens: PositiveInt | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    stop_sequences: tuple[str, ...] = ()
    reasoning: Reasoning | None = None
    response_format: ResponseFormat | None = None
    stream: bool = False

    def system_text(self) -> str:
        """The system prompt as sent: non-empty fragments joined by a blank line."""
        return "\n\n".join(fragment.text for fragment in self.system if fragment.text)

    def fragment_names(self) -> tuple[str, ...]:
        """The names of the fragments that went out, in order."""
        return tuple(fragment.name for fragment in self.system if fragment.text)

    def tool_names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    def forces_tool(self, name: str) -> bool:
        """Whether this request forces the model to call `name`: its tool choice names it, or is
        `required` with `name` the only tool offered. This is how a forced-completion call is told
        apart from a work call, whatever runtime sent it."""
        return tool_forced_by(self.tool_choice, self.tool_names()) == name


def tool_forced_by(choice: ToolChoice, tool_names: tuple[str, ...]) -> str | None:
    """The tool a request with `choice` and tools `tool_names` forces the model to call: the one
    a named choice names, or the only tool offered with `required`; None when it forces none."""
    if isinstance(choice, NamedToolChoice):
        return choice.name
    if choice == "required" and len(tool_names) == 1:
        return tool_names[0]
    return None


class Usage(WireModel):
    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    total_tokens: NonNegativeInt = 0
    reasoning_tokens: NonNegativeInt = 0
    """Of `output_tokens`, those spent reasoning, where the provider says (OpenAI
    `reasoning_tokens`, Gemini `thoughtsTokenCount`); Anthropic counts thinking in
    `output_tokens` without saying how much."""


class LlmResponse(WireModel):
    """One model reply, provider-neutral, with the provider's raw payload kept for inspection.

    `stop` is the neutral stop kind; `provider_stop_reason` the provider's own word for it.
    `credits` is what the provider reported, if anything. `metadata` holds provider extras the
    harness understands, such as `retrieval` receipts.
    """

    text: str = ""
    tool_calls: tuple[LlmToolCall, ...] = ()
    reasoning_blocks: tuple[dict[str, JsonValue], ...] = ()
    """Provider reasoning blocks as sent (see `AssistantMessage.reasoning_blocks`)."""
    thinking: str = ""
    """The reasoning the reply shows in words (Anthropic `thinking` text, Gemini thought
    summaries, the summary of an OpenAI Responses `reasoning` item), never part of `text`. A
    renderer given a reply with `thinking` and no `reasoning_blocks` makes the provider's
    blocks from it, signed deterministically (`harness.llm._wire.thinking_signature`)."""
    stop: AnyStopKind
    provider_stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    credits: NonNegativeFloat | None = None
    model: str | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    raw: JsonValue = None

    @property
    def truncated(self) -> bool:
        """Whether the reply was cut off by the token limit."""
        return isinstance(self.stop, LimitReached)
