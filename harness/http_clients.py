"""The two HTTP client libraries users run: `httpx2` and `httpx` 0.28.

The official SDKs (`openai` 3, `anthropic` 2, pydantic-ai) are built on `httpx2`, the continuation
of httpx; much user code still runs `httpx` 0.28. Their APIs match, but no class is shared: a
client asserts that a response's stream is *its own* library's byte stream, a network transport
only sends its own library's requests, and their exceptions are unrelated. This module is the thin
glue the harness's transports and gateway use to serve either: the replay and record logic never
names a library.

- `library_of(request)` says which library a request came from; `HttpLibrary.response(...)`
  builds a response of that library, and `HttpLibrary.stream_class(ChunkStream)` the byte
  stream its clients accept.
- `timeout_errors()` and `http_errors()` catch either library's failures.

`httpx` 0.28 is imported only by code that uses it: until then every request, response and
transport is httpx2's, so a scripted run does not load a second HTTP library.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Final, TypeAlias, TypeVar, cast

import httpx2
from typing_extensions import TypeIs

if TYPE_CHECKING:
    import httpx

AnyRequest: TypeAlias = "httpx2.Request | httpx.Request"
AnyResponse: TypeAlias = "httpx2.Response | httpx.Response"
AnySyncTransport: TypeAlias = "httpx2.BaseTransport | httpx.BaseTransport"
AnyAsyncTransport: TypeAlias = "httpx2.AsyncBaseTransport | httpx.AsyncBaseTransport"
AnyTransport: TypeAlias = "AnySyncTransport | AnyAsyncTransport"

_Stream = TypeVar("_Stream", bound="ByteStream")


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
        stream: ByteStream | None = None,
        content: bytes | None = None,
        extensions: dict[str, object] | None = None,
    ) -> AnyResponse:
        """A response of this library, which its clients accept."""
        response: AnyResponse = self.module.Response(
            status, headers=headers, stream=stream, content=content, extensions=extensions
        )
        return response

    def stream_class(self, stream: type[_Stream]) -> type[_Stream]:
        """`stream` as this library's clients accept it: for `httpx` 0.28, a subclass that adds
        its byte-stream bases (made once)."""
        if self.module is httpx2:
            return stream
        key = (stream, self.module)
        made = _STREAM_CLASSES.get(key)
        if made is None:
            bases = (stream, self.module.SyncByteStream, self.module.AsyncByteStream)
            namespace = {"__module__": stream.__module__, "__qualname__": stream.__qualname__}
            made = _STREAM_CLASSES.setdefault(key, type(stream.__name__, bases, namespace))
        return cast("type[_Stream]", made)

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


@functools.cache
def _httpx_library(module: ModuleType) -> HttpLibrary:
    return HttpLibrary("httpx", module)


def libraries() -> tuple[HttpLibrary, ...]:
    """httpx2, then `httpx` 0.28 once this process has imported it.

    No `httpx` request, response or transport can exist before `httpx` is imported, so a run that
    never touches it does not pay for loading it. Under `httpx2.alias_httpx()` the two are one
    module, so one library.
    """
    if "httpx" not in sys.modules:
        return (HTTPX2,)
    # Importing what `sys.modules` holds waits while another thread is still importing it: read
    # from `sys.modules` directly, a module half imported has no classes yet.
    import httpx

    return (HTTPX2,) if httpx is httpx2 else (HTTPX2, _httpx_library(httpx))


def httpx_library() -> HttpLibrary:
    """`httpx` 0.28 (imported now if it was not), or httpx2 under `httpx2.alias_httpx()`."""
    import httpx

    return HTTPX2 if httpx is httpx2 else _httpx_library(httpx)


_Transport = TypeVar("_Transport", bound=type)


@functools.cache
def httpx_transport_class(transport: _Transport, doc: str) -> _Transport:
    """`Httpx<transport>`: `transport` typed as an `httpx` 0.28 transport too (sync and async),
    for code that type-checks `httpx.Client(transport=...)`; made once, on first use."""
    import httpx

    bases = (transport, httpx.BaseTransport, httpx.AsyncBaseTransport)
    namespace = {"__module__": transport.__module__, "__doc__": doc}
    return cast("_Transport", type(f"Httpx{transport.__name__}", bases, namespace))


def timeout_errors() -> tuple[type[Exception], ...]:
    """Either library's timeouts."""
    return tuple(library.module.TimeoutException for library in libraries())


def http_errors() -> tuple[type[Exception], ...]:
    """Either library's transport failures, and `httpx_sse.SSEError`, an `httpx` error whatever
    the response it parsed."""
    return tuple(library.module.HTTPError for library in libraries())


def is_sync_stream(stream: object) -> TypeIs[httpx2.SyncByteStream | httpx.SyncByteStream]:
    """Whether `stream` is either library's sync byte stream."""
    return isinstance(stream, tuple(library.module.SyncByteStream for library in libraries()))


def is_async_stream(stream: object) -> TypeIs[httpx2.AsyncByteStream | httpx.AsyncByteStream]:
    """Whether `stream` is either library's async byte stream."""
    return isinstance(stream, tuple(library.module.AsyncByteStream for library in libraries()))


def library_of(request: object) -> HttpLibrary:
    """The library `request` belongs to (httpx2 first: the SDKs' stack)."""
    for library in libraries():
        if isinstance(request, library.module.Request):
            return library
    raise TypeError(
        f"expected an httpx2.Request or httpx.Request but got request={request!r} "
        f"(type={type(request).__name__})"
    )


def describe_transport(transport: object) -> str:
    """`an httpx2 async transport (MyTransport)`, for messages that say what was passed."""
    for library in libraries():
        for asynchronous in (False, True):
            if library.owns_transport(transport, asynchronous=asynchronous):
                kind = "async" if asynchronous else "sync"
                return f"an {library.name} {kind} transport ({type(transport).__name__})"
    return f"{type(transport).__name__}, which is no httpx2 or httpx transport"


class ByteStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A byte stream httpx2's clients accept, sync and async; `HttpLibrary.stream_class` makes
    the `httpx` 0.28 version of a subclass."""


_STREAM_CLASSES: dict[tuple[type, ModuleType], type] = {}
"""`HttpLibrary.stream_class`'s subclasses, one per stream class and library."""


class ChunkStream(ByteStream):
    """A body delivered chunk by chunk (one per SSE event for a stream), sync or async."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk
