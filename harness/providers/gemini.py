"""Google Gemini (the Gemini API, not Vertex AI): `generateContent`. Pure data.

The model is named in the path, and streaming is a path of its own: `models/{model}:generateContent`
answers with one JSON reply, `models/{model}:streamGenerateContent?alt=sse` with server-sent
events. Both are at `v1beta`, the version the Gemini REST reference and `@ai-sdk/google` use and
the harness's gateway sends to; `harness serve` takes them at `v1` too (google-genai 3's
default), as the same requests, keyed and recorded at `v1beta`, whose API holds all of `v1`'s.
"""

from __future__ import annotations

from typing import Final

from harness.providers.spec import Endpoint, ProviderSpec

GEMINI_API_KEY_HEADER: Final = "x-goog-api-key"
"""The header the Gemini API reads its key from (google-genai and `@ai-sdk/google` send it). The
API also takes the key as the query parameter `key`, which a request key leaves out and a
recording scrubs, and which `harness serve` never forwards."""

GEMINI: Final = ProviderSpec(
    name="gemini",
    adapter="harness.llm.gemini",
    endpoints=(
        Endpoint(
            "/v1beta/models/{model}:generateContent", "generate_content", other_versions=("/v1",)
        ),
        Endpoint(
            "/v1beta/models/{model}:streamGenerateContent",
            "generate_content",
            streams=True,
            query="alt=sse",
            other_versions=("/v1",),
        ),
    ),
    detected_paths=(
        ":generateContent",
        ":streamGenerateContent",
        ":countTokens",
        ":embedContent",
        ":batchEmbedContents",
        ":batchGenerateContent",
    ),
    # google-genai adds the version itself; `@ai-sdk/google` wants it in its base URL
    sdk_base_suffix="",
    default_base_url="https://generativelanguage.googleapis.com",
    api_key_variable="GEMINI_API_KEY",
    # google-genai prefers GOOGLE_API_KEY when both are set (it logs a warning): so does the harness
    preferred_api_key_variables=("GOOGLE_API_KEY",),
    # the base URL google-genai reads when its `HttpOptions(base_url=...)` is not given
    base_url_variable="GOOGLE_GEMINI_BASE_URL",
    auth_header=GEMINI_API_KEY_HEADER,
    # protobuf JSON: google-genai sends snake_case member names where the REST reference and
    # `@ai-sdk/google` write lowerCamelCase, and gives the system instruction a role
    snake_case_members=True,
    data_members=frozenset(
        {
            "args",
            "response",
            "parametersJsonSchema",
            "responseJsonSchema",
            "enum",
            "example",
            "default",
            "labels",
        }
    ),
    map_members=frozenset({"properties"}),
    ignored_when_equivalent=("/systemInstruction/role",),
    # a failed call's functionResponse answers with an `error` member
    tool_result_error_flag=True,
    forced_tool_choice_refusal=(
        400,
        "INVALID_ARGUMENT",
        "Function calling is not enabled for models/gemini-2.5-flash",
    ),
    default_model="gemini-2.5-flash",
    # both can turn thinking off, which a forced call asks for
    tool_models=("gemini-2.5-flash", "gemini-2.5-flash-lite"),
    # `functionCall.args` is always an object, streamed or not; thinking is spent out of
    # `maxOutputTokens`
    tool_input_is_object=True,
    tool_input_streams_whole=True,
    thinking_counts_toward_max_tokens=True,
)
