"""OpenAI (and OpenAI-compatible APIs): Chat Completions and Responses. Pure data."""

from __future__ import annotations

from typing import Final

from harness.providers.spec import Endpoint, ProviderSpec

OPENAI: Final = ProviderSpec(
    name="openai",
    adapter="harness.llm.openai",
    endpoints=(
        # Azure OpenAI: Chat Completions per deployment, Responses per resource
        Endpoint(
            "/v1/chat/completions",
            "chat_completions",
            deployment_paths=("/openai/deployments/{deployment}/chat/completions",),
        ),
        Endpoint("/v1/responses", "responses", deployment_paths=("/openai/responses",)),
    ),
    detected_paths=("/chat/completions", "/completions", "/responses", "/embeddings"),
    sdk_base_suffix="/v1",
    default_base_url="https://api.openai.com",
    api_key_variable="OPENAI_API_KEY",
    base_url_variable="OPENAI_BASE_URL",
    auth_header="authorization",
    auth_scheme="Bearer ",
    # `user`, `safety_identifier` and `prompt_cache_key` name the end user or a cache bucket;
    # `metadata` is stored-completion bookkeeping
    volatile_fields=("/user", "/safety_identifier", "/prompt_cache_key", "/metadata"),
    # `api-version` is Azure OpenAI's
    keyed_headers=frozenset({"openai-beta", "openai-version", "api-version"}),
    # a tool call's arguments are JSON text, which clients send back spelt their own way
    json_text_fields=(
        "/messages/*/tool_calls/*/function/arguments",
        "/input/*/arguments",
    ),
    # a reasoning model takes the system prompt as a `developer` message, and reads a `system`
    # one as such: clients send either
    equivalent_values=(
        ("/messages/*/role", "developer", "system"),
        ("/input/*/role", "developer", "system"),
    ),
    forced_tool_choice_refusal=(
        400,
        "invalid_request_error",
        "Unsupported value: 'tool_choice' does not support 'required' with this model.",
    ),
    default_model="gpt-4o-mini",
    tool_models=("gpt-4o-mini", "gpt-4.1"),
)
