"""Anthropic: Messages. Pure data."""

from __future__ import annotations

from typing import Final

from harness.providers.spec import Endpoint, ProviderSpec

ANTHROPIC_VERSION: Final = "2023-06-01"
"""The `anthropic-version` header the Anthropic API requires, as every Anthropic SDK sends it."""

ANTHROPIC: Final = ProviderSpec(
    name="anthropic",
    adapter="harness.llm.anthropic",
    endpoints=(Endpoint("/v1/messages", "messages"),),
    detected_paths=("/messages", "/messages/count_tokens"),
    sdk_base_suffix="",
    default_base_url="https://api.anthropic.com",
    api_key_variable="ANTHROPIC_API_KEY",
    base_url_variable="ANTHROPIC_BASE_URL",
    auth_header="x-api-key",
    volatile_fields=("/metadata/user_id",),
    keyed_headers=frozenset({"anthropic-version", "anthropic-beta"}),
    version_headers={"anthropic-version": ANTHROPIC_VERSION},
    # a string is one text block: the system prompt, a turn's content, a tool result's content
    text_block_fields=("/system", "/messages/*/content", "/messages/*/content/*/content"),
    tool_result_error_flag=True,
    forced_tool_choice_refusal=(
        400,
        "invalid_request_error",
        "Thinking may not be enabled when tool_choice forces tool use.",
    ),
    default_model="claude-sonnet-4-5",
    tool_models=("claude-sonnet-4-5",),
    # `tool_use.input` is always an object; thinking is budgeted inside `max_tokens`
    tool_input_is_object=True,
    thinking_counts_toward_max_tokens=True,
)
