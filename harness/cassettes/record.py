"""Turning live HTTP traffic into what a cassette stores: keyed, scrubbed, decoded.

`Recorder` is shared by `CassetteTransport` and the vcrpy interop, so traffic recorded either way
is keyed and scrubbed identically.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from harness.cassettes.cassette import RecordedRequest, RecordedResponse
from harness.cassettes.key import KEY_VERSION, canonical_request_key
from harness.http_clients import AnyRequest
from harness.json_body import parse_json_body
from harness.scrub import DEFAULT_SCRUBBER, Scrubber
from harness.sse import parse_sse

DROPPED_RESPONSE_HEADERS: Final = frozenset(
    {
        "content-length",
        "content-encoding",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "date",
        "age",
        "via",
        "server-timing",
        "request-id",
        "x-request-id",
        "cf-ray",
        "cf-cache-status",
        "openai-processing-ms",
        "x-envoy-upstream-service-time",
        "anthropic-organization-id",
    }
)
DROPPED_RESPONSE_HEADER_PREFIXES: Final = ("x-ratelimit-", "anthropic-ratelimit-")
"""Response headers not written: lengths and encodings (bodies are stored decoded) and values
that change on every call, which would make re-recording unchanged traffic rewrite the file."""

DROPPED_REQUEST_HEADERS: Final = frozenset({"content-length", "host", "connection", "user-agent"})
DROPPED_REQUEST_HEADER_PREFIXES: Final = ("x-stainless-",)
"""Request headers not written: framing, and the client's own name and versions (`user-agent`,
the official SDKs' `x-stainless-*`), so upgrading httpx or an SDK does not rewrite a cassette
whose traffic is unchanged. None of them is part of the request key."""


@dataclass(frozen=True)
class Recorder:
    """Keys and scrubs requests and responses for writing.

    Each interaction is scrubbed by `scrubber` extended with the exact credential values its
    request sent and the environment's secrets, so a provider echoing the key (an error message,
    a header, a streamed delta) does not write it either.
    """

    scrubber: Scrubber = DEFAULT_SCRUBBER
    volatile: tuple[str, ...] = ()
    provider: str | None = None
    key_version: int = KEY_VERSION
    """The request key version (`KEY_VERSIONS`): the cassette's, which its format names."""

    def key_for(
        self, request: AnyRequest, *, version: int | None = None, equivalent: bool = False
    ) -> str:
        """The canonical key of an httpx request (its body must have been read), of the key
        `version`, else the recorder's; with `equivalent`, its equivalent key
        (`harness.cassettes.key.equivalent_request_key`)."""
        return canonical_request_key(
            request.method,
            str(request.url),
            request.headers.multi_items(),
            request.content,
            volatile=self.volatile,
            provider=self.provider,
            version=self.key_version if version is None else version,
            equivalent=equivalent,
        )

    def scrubber_for(self, request: AnyRequest) -> Scrubber:
        """The scrubber for one interaction: `scrubber` plus the exact credential values this
        request sent and the environment's secrets, read now (`Scrubber.for_request`)."""
        return self.scrubber.for_request(
            request.headers.multi_items(),
            request.url.query.decode("ascii", "replace"),
            request.content,
            request.headers.get("content-type", ""),
        )

    def record_request(self, request: AnyRequest) -> RecordedRequest:
        """The request as it will be written: scrubbed, body parsed when JSON."""
        scrubber = self.scrubber_for(request)
        headers = [
            (name, value)
            for name, value in request.headers.multi_items()
            if name.lower() not in DROPPED_REQUEST_HEADERS
            and not name.lower().startswith(DROPPED_REQUEST_HEADER_PREFIXES)
        ]
        content_type = request.headers.get("content-type", "")
        return RecordedRequest(
            method=request.method,
            path=scrubber.path(request.url.path),
            query=scrubber.query(request.url.query.decode("ascii", "replace")),
            headers=scrubber.headers(headers),
            **_scrub_body(scrubber, _body_fields(request.content, content_type), content_type),
        )

    def record_response(
        self,
        request: AnyRequest,
        status: int,
        headers: Iterable[tuple[str, str]],
        content: bytes,
    ) -> RecordedResponse:
        """The response to `request` as it will be written: scrubbed of everything the request's
        scrubber removes (the key it sent included), SSE split into events."""
        scrubber = self.scrubber_for(request)
        kept = [
            (name, value)
            for name, value in headers
            if name.lower() not in DROPPED_RESPONSE_HEADERS
            and not name.lower().startswith(DROPPED_RESPONSE_HEADER_PREFIXES)
        ]
        content_type = {n.lower(): v for n, v in kept}.get("content-type", "")
        if "text/event-stream" in content_type:
            events = scrubber.events(parse_sse(content.decode("utf-8", "replace")))
            return RecordedResponse(status=status, headers=scrubber.headers(kept), events=events)
        return RecordedResponse(
            status=status,
            headers=scrubber.headers(kept),
            **_scrub_body(scrubber, _body_fields(content, content_type), content_type),
        )


def _scrub_body(scrubber: Scrubber, fields: dict[str, Any], content_type: str) -> dict[str, Any]:
    if "body" in fields:
        return {"body": scrubber.json(fields["body"])}
    if "body_text" in fields:
        return {"body_text": scrubber.body_text(fields["body_text"], content_type)}
    if "body_base64" in fields:
        # Binary bodies can carry a key too (multipart uploads); latin-1 maps every byte to
        # one character, so the secret patterns apply and the other bytes survive unchanged.
        raw = base64.b64decode(fields["body_base64"]).decode("latin-1")
        scrubbed = scrubber.text(raw).encode("latin-1", "replace")
        return {"body_base64": base64.b64encode(scrubbed).decode("ascii")}
    return fields


def _body_fields(content: bytes, content_type: str) -> dict[str, Any]:
    """Which body field holds `content`: JSON as a value, text as text, anything else base64."""
    if not content:
        return {}
    is_json, value = parse_json_body(content)
    if is_json and value is not None and ("json" in content_type or not content_type):
        return {"body": value}
    try:
        return {"body_text": content.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(content).decode("ascii")}
