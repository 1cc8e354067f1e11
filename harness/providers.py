"""The providers whose wire formats the harness speaks, and telling them apart by request path.

A leaf (it imports nothing of ours), so the cassettes, the LLM boundary, the replay server and
the scenario format all name providers from this one definition.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

Provider = Literal["openai", "anthropic"]
"""OpenAI Chat Completions (and OpenAI-compatible APIs) and Anthropic Messages."""
PROVIDERS: Final[tuple[Provider, ...]] = get_args(Provider)
ANTHROPIC_VERSION: Final = "2023-06-01"
"""The `anthropic-version` header the Anthropic API requires, as every Anthropic SDK sends it."""


def detect_provider(path: str) -> Provider | None:
    """Guess the provider from a request path: Anthropic Messages or OpenAI(-compatible)."""
    if path.endswith(("/messages", "/messages/count_tokens")):
        return "anthropic"
    if path.endswith(("/chat/completions", "/completions", "/responses", "/embeddings")):
        return "openai"
    return None
