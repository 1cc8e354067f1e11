"""Requests to `harness serve` exactly as written, and the fake provider's environment for it.

`raw_request` sends its request target byte for byte (`http.client` does not normalise `..`,
percent escapes or backslashes away, as an HTTP client library's URL type would), so a test
sees what the server does with a hostile path.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

SERVER_KEYS = {
    "openai": "sk-proj-SERVERkeyCANARY0123456789abcdef",
    "anthropic": "sk-ant-SERVERkeyCANARY0123456789abcdef",
}
"""The keys a recording server forwards with: canaries no cassette or client may ever see."""


@dataclass(frozen=True)
class RawAnswer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def raw_request(
    server_url: str,
    method: str,
    target: str,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
) -> RawAnswer:
    """Send `method target` to the server at `server_url` as written, and read the answer."""
    address = urlsplit(server_url)
    assert address.hostname is not None, server_url
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.request(
            method,
            target,
            body=body,
            headers={"content-type": "application/json", **(headers or {})},
        )
        response = connection.getresponse()
        return RawAnswer(
            response.status,
            {name.lower(): value for name, value in response.getheaders()},
            response.read(),
        )
    finally:
        connection.close()


def provider_environ(base_url: str) -> dict[str, str]:
    """A recording server's environment: both providers at `base_url`, with the server keys."""
    return {
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": SERVER_KEYS["openai"],
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": SERVER_KEYS["anthropic"],
    }
