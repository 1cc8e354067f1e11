"""The two HTTP client libraries users run: `httpx2` and `httpx` 0.28.

The official SDKs (`openai` 3, `anthropic` 2, pydantic-ai) are built on `httpx2`, the continuation
of httpx; much user code still runs `httpx` 0.28. Their APIs match, but no class is shared: a
client asserts that a response's stream is *its own* library's byte stream, a network transport
only sends its own library's requests, and their exceptions are unrelated. This module is the thin
glue the harness's transports and gateway use to serve either: the replay and record logic never
names a library.

- `library_of(request)` says which library a request came from; `HttpLibrary.response(...)`
  builds a response of that library.
- `ChunkStream` is one byte stream both libraries accept, sync and async.
- `TIMEOUT_ERRORS` and `HTTP_ERRORS` catch either library's failures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Final, TypeAlias

import httpx
import httpx2

AnyRequest: TypeAlias = httpx2.Request | httpx.Request
AnyResponse: TypeAlias = httpx2.Response | httpx.Response
AnySyncTransport: TypeAlias = httpx2.BaseTransport | httpx.BaseTransport
AnyAsyncTransport: TypeAlias = httpx2.AsyncBaseTransport | httpx.AsyncBaseTransport
AnyTransport: TypeAlias = AnySyncTransport | AnyAsyncTransport

_SEPARATE: Final = httpx is not httpx2  # `httpx2.alias_httpx()` makes them one module

TIMEOUT_ERRORS: Final[tuple[type[Exception], ...]] = (
    (httpx2.TimeoutException, httpx.TimeoutException) if _SEPARATE else (httpx2.TimeoutException,)
)
HTTP_ERRORS: Final[tuple[type[Exception], ...]] = (
    (httpx2.HTTPError, httpx.HTTPError) if _SEPARATE else (httpx2.HTTPError,)
)
"""Either library's transport failures, and `httpx_sse.SSEError`, an `httpx` error whatever the
response it parsed."""


@dataclass(frozen=True)
class HttpLibrary:
    """One of the two libraries: what a transport needs to answer its requests."""

    name: str
    module: ModuleType

    def response(
        self,
        status: int,
        *,
        headers: Sequence[tuple[bytes, bytes]] | Sequence[tuple[str, str]],
        stream: DualByteStream | None = None,
        content: bytes | None = None,
        extensions: dict[str, object] | None = None,
    ) -> AnyResponse:
        """A response of this library, which its clients accept."""
        response: AnyResponse = self.module.Response(
            status, headers=headers, stream=stream, content=content, extensions=extensions
        )
        return response

    def network_transport(self, *, asynchronous: bool) -> AnyTransport:
        """This library's own transport to the network (`HTTPTransport` or the async one)."""
        transport: AnyTransport = (
            self.module.AsyncHTTPTransport() if asynchronous else self.module.HTTPTransport()
        )
        return transport

    def owns_transport(self, transport: object, *, asynchronous: bool) -> bool:
        """Whether `transport` is this library's, of the given kind (sync or async)."""
        base = self.module.AsyncBaseTransport if asynchronous else self.module.BaseTransport
        return isinstance(transport, base)


HTTPX2: Final = HttpLibrary("httpx2", httpx2)
HTTPX: Final = HttpLibrary("httpx", httpx) if _SEPARATE else HTTPX2
LIBRARIES: Final = (HTTPX2, HTTPX) if _SEPARATE else (HTTPX2,)


def library_of(request: object) -> HttpLibrary:
    """The library `request` belongs to (httpx2 first: the SDKs' stack)."""
    for library in LIBRARIES:
        if isinstance(request, library.module.Request):
            return library
    raise TypeError(
        f"expected an httpx2.Request or httpx.Request but got request={request!r} "
        f"(type={type(request).__name__})"
    )


def describe_transport(transport: object) -> str:
    """`an httpx2 async transport (MyTransport)`, for messages that say what was passed."""
    for library in LIBRARIES:
        for asynchronous in (False, True):
            if library.owns_transport(transport, asynchronous=asynchronous):
                kind = "async" if asynchronous else "sync"
                return f"an {library.name} {kind} transport ({type(transport).__name__})"
    return f"{type(transport).__name__}, which is no httpx2 or httpx transport"


if TYPE_CHECKING or _SEPARATE:

    class DualByteStream(
        httpx2.SyncByteStream, httpx2.AsyncByteStream, httpx.SyncByteStream, httpx.AsyncByteStream
    ):
        """A byte stream both libraries' clients accept, sync and async."""

else:  # `httpx2.alias_httpx()` is active: `httpx` is `httpx2`, one set of bases

    class DualByteStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
        """A byte stream httpx2's clients accept, sync and async."""


SYNC_STREAMS: Final = tuple(library.module.SyncByteStream for library in LIBRARIES)
ASYNC_STREAMS: Final = tuple(library.module.AsyncByteStream for library in LIBRARIES)


class ChunkStream(DualByteStream):
    """A body delivered chunk by chunk (one per SSE event for a stream), sync or async."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk
