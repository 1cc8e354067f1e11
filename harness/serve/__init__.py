"""`harness serve`: the provider wire protocols (OpenAI Chat Completions and Responses, Anthropic
Messages) served from cassettes and scripts, so a client in any language replays and records by
pointing its base URL at loopback."""

from harness.serve.app import ServeConfig, create_app
from harness.serve.routing import ENDPOINTS, RouteError
from harness.serve.server import ReplayServer, ServeError, ServerSession, serve_forever

__all__ = [
    "ENDPOINTS",
    "ReplayServer",
    "RouteError",
    "ServeConfig",
    "ServeError",
    "ServerSession",
    "create_app",
    "serve_forever",
]
