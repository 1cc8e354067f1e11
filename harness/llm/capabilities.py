"""What each provider and model accepts, so an impossible request fails before any call.

Each wire adapter holds one table (`MODEL_RULES`, `DEFAULT_CAPABILITIES`, read through its
`model_capabilities`) mapping model-name patterns to a frozen `Capabilities` record: the rules
are facts of the models a wire serves, so a provider that reuses an adapter (an OpenAI-compatible
API) gets its table. The first pattern that matches the model name wins, and an unknown model
gets the adapter's defaults (OpenAI: tools, forced tool choice, no reasoning; Anthropic: thinks
like the current Claude models). A model name is matched without a routing prefix
(`openai/gpt-5` matches like `gpt-5`).

The rules that matter for a harness that forces a final tool call:

- Anthropic refuses a forced tool choice (`any` or a named tool) while extended thinking is
  enabled: "Thinking may not be enabled when tool_choice forces tool use." (HTTP 400). The
  adapter renders every `ReasoningEffort` as `thinking: {"type": "enabled"}`, so any effort
  counts as thinking on. (Adaptive thinking on Opus 4.6 accepts `any`, but the adapter never
  renders adaptive thinking.)
- OpenAI `o1-mini` and `o1-preview` take no tools at all (HTTP 404 "tools is not supported in
  this model"), no system message and no `reasoning_effort`.
- OpenAI reasoning models (`o1`, `o3*`, `o4*`, `gpt-5*` except `gpt-5-chat*`) take
  `reasoning_effort` and refuse sampling parameters (`temperature`, `top_p`); they and every
  `gpt-5*` model take `max_completion_tokens` instead of `max_tokens`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Final, Literal, get_args

from harness.errors import IllegalArgumentException, ToolChoiceUnsupportedError
from harness.llm.adapters import adapter_for
from harness.llm.models import Effort, LlmRequest, NamedToolChoice, Reasoning, ReasoningEffort
from harness.providers import PROVIDERS as PROVIDERS
from harness.providers import Provider as Provider

ALL_EFFORTS: Final[tuple[Effort, ...]] = get_args(Effort)


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    """What one model of one provider accepts.

    `reasoning` says whether the model can reason (OpenAI reasoning model, Anthropic extended
    thinking); `reasoning_efforts` the efforts it accepts. `forced_tool_choice_with_reasoning`
    is False where forcing a tool is refused while reasoning is on. `sampling_with_reasoning` is
    False where `temperature`/`top_p` are refused while reasoning is on (always on for an OpenAI
    reasoning model). `note` says which table rule matched, and why it differs.
    """

    provider: Provider
    model: str
    note: str = ""
    supports_tools: bool = True
    supports_forced_tool_choice: bool = True
    supports_system_prompt: bool = True
    supports_response_format: bool = True
    reasoning: bool = False
    reasoning_efforts: tuple[Effort, ...] = ()
    forced_tool_choice_with_reasoning: bool = True
    sampling_with_reasoning: bool = True
    max_tokens_parameter: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    reasons_by_default: bool = False
    """Whether the model reasons when a request says nothing of reasoning (OpenAI's o-series
    and GPT-5, Gemini 2.5 and 3; not GPT-5.1, whose default is `none`, nor Claude): for such
    a model only an explicit setting turns reasoning off or down."""
    reasoning_off: str | None = None
    """What `ReasoningDisabled` sends a model that reasons unless told not to: the provider's
    word for no reasoning where the model has one (OpenAI's `none`), else its lowest effort
    (GPT-5's `minimal`, the o-series' `low`), the closest the model comes to not reasoning.
    None sends nothing: the model does not reason unless asked."""

    def accepts_reasoning_effort(self, effort: Effort) -> bool:
        """Whether a `ReasoningEffort(effort=...)` can be sent to this model."""
        return self.reasoning and effort in self.reasoning_efforts


@dataclass(frozen=True, kw_only=True)
class CapabilityRule:
    """Models whose name matches `pattern` have `template`'s capabilities (its `provider` and
    `model` are replaced by the ones asked about)."""

    pattern: re.Pattern[str]
    template: Capabilities


def first_matching(
    rules: tuple[CapabilityRule, ...], defaults: Capabilities, *, provider: Provider, model: str
) -> Capabilities:
    """The template of the first rule matching `model` (without a routing prefix, lower-cased),
    else `defaults`, for `provider` and `model`: how every adapter reads its table."""
    name = model.rsplit("/", 1)[-1].lower()
    template = next((rule.template for rule in rules if rule.pattern.search(name)), defaults)
    return replace(template, provider=provider, model=model)


def capabilities_for(provider: Provider, model: str) -> Capabilities:
    """The capabilities of `model` at `provider`, from the first matching rule of the table of
    the provider's wire adapter (`ProviderSpec.adapter`).

    An unknown model gets the adapter's defaults; an unknown Anthropic model is assumed to
    think like the current ones (and so to refuse forced tool use while thinking). A name that
    is no registered provider is an `IllegalArgumentException` listing them.
    """
    return adapter_for(provider).model_capabilities(provider, model)


def supports_tools(provider: Provider, model: str) -> bool:
    """Whether the model accepts a `tools` list at all."""
    return capabilities_for(provider, model).supports_tools


def supports_forced_tool_choice(
    provider: Provider, model: str, reasoning: Reasoning | None
) -> bool:
    """Whether `tool_choice` "required" or a named tool is accepted with this reasoning setting.

    Reasoning counts as on only for `ReasoningEffort`; unset and `ReasoningDisabled` send no
    reasoning parameter.
    """
    capabilities = capabilities_for(provider, model)
    if not capabilities.supports_forced_tool_choice:
        return False
    thinking = isinstance(reasoning, ReasoningEffort)
    return not thinking or capabilities.forced_tool_choice_with_reasoning


def supports_reasoning(provider: Provider, model: str) -> bool:
    """Whether the model reasons at all (OpenAI `reasoning_effort`, Anthropic `thinking`)."""
    return capabilities_for(provider, model).reasoning


def check_request(provider: Provider, request: LlmRequest) -> None:
    """Refuse, before any call, a request whose tool choice the model cannot honour.

    Raises `ToolChoiceUnsupportedError` (not retryable) when the model takes no tools but the request
    has some, or when the request forces a tool ("required" or a named tool) that the model
    cannot be forced to call with the request's reasoning setting. Raises
    `IllegalArgumentException` when the tool choice forces a tool the request does not offer,
    since the adapters would otherwise drop `tool_choice` together with the empty tool list.
    Other parameters are left for the provider to judge.
    """
    capabilities = capabilities_for(provider, request.model)
    forced = request.tool_choice == "required" or isinstance(request.tool_choice, NamedToolChoice)
    if forced and not request.tools:
        raise IllegalArgumentException(
            f"tool_choice={_describe_choice(request)} forces a tool call but the request has no "
            "tools; add the tool to `tools` or use tool_choice='auto'"
        )
    if isinstance(request.tool_choice, NamedToolChoice):
        offered = request.tool_names()
        if request.tool_choice.name not in offered:
            raise IllegalArgumentException(
                f"tool_choice names the tool {request.tool_choice.name!r} but the request offers "
                f"only: {', '.join(offered)}"
            )
    if request.tools and not capabilities.supports_tools:
        raise ToolChoiceUnsupportedError(
            f"{provider} model {request.model!r} takes no tools; choose a model that supports "
            "function calling",
            error_type="tool_choice_unsupported",
            provider=provider,
        )
    if forced and not supports_forced_tool_choice(provider, request.model, request.reasoning):
        raise ToolChoiceUnsupportedError(
            f"{provider} model {request.model!r} cannot be forced to call a tool "
            f"(tool_choice={_describe_choice(request)}) while reasoning is enabled; send "
            "reasoning=ReasoningDisabled() for the forced call or use tool_choice='auto'",
            error_type="tool_choice_unsupported",
            provider=provider,
        )


def _describe_choice(request: LlmRequest) -> str:
    choice = request.tool_choice
    return f"tool {choice.name!r}" if isinstance(choice, NamedToolChoice) else repr(choice)
