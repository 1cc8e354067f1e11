"""`CassetteTransport`: an httpx transport that replays and records LLM traffic.

Plug it into any `httpx2` client (the official SDKs' stack) or `httpx` 0.28 client, sync or async
(`transport=...`); nothing is patched.
Each request is canonicalised into its key (`canonical_request_key`) and answered by the next
unplayed interaction recorded under that key, first in first out, so lookup cost does not grow
with the cassette and requests may arrive in any order as long as each key's own order holds.

Record modes (`RecordMode`): `none` (default: replay only, a miss raises `CassetteMissError`, nothing
reaches the network), `once` (record when the file does not exist, and for the rest of the
recording run that created it; a later run replays), `new_episodes` (replay
hits, record and append misses), `all` (re-record: the file is rewritten from this run's traffic;
with `rerecord="requests"`, as when pytest runs a part of the suite, only the requests this run
sends are replaced and every other interaction is kept).

With `HARNESS_CASSETTE_USAGE` set (the pytest plugin sets it), a transport logs what it played as
it closes, for `harness cassettes prune` (`harness.cassettes.usage`).

Identical requests (`identical_requests`): `shared` (the default for a new recording) records one
answer per distinct request and plays it again for every identical request, in recording
(`harness.cassettes.sharing`) and in replay, so parallel clients never depend on the order
their requests arrive in; `separate` records each occurrence and replays them in order. A
cassette says which it is in its metadata; a file that does not say is `separate`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, overload

import httpx2

from harness.cassettes.cassette import (
    Cassette,
    ExactRequest,
    IdenticalRequests,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    cassette_exists,
    equivalent_key,
    rekey,
)
from harness.cassettes.diff import explain_miss
from harness.cassettes.key import keyed_headers, split_pointer
from harness.cassettes.modes import RecordMode, Rerecord, checked_rerecord
from harness.cassettes.pacing import PacedStream, paced_offsets, parse_pace
from harness.cassettes.record import Recorder
from harness.cassettes.recording_run import checked_run_id, given_run_id, join_run
from harness.cassettes.sharing import (
    IdenticalRequestsError,
    Lead,
    SharedAnswers,
    close_shared,
    is_transient,
    open_shared,
)
from harness.cassettes.store import (
    answer_of,
    created_in_run,
    recorded_by_run,
    recorded_in_run,
    save_recording,
)
from harness.cassettes.usage import log_use
from harness.errors import CassetteFormatError, CassetteUnplayedError, RecordModeError
from harness.http_clients import (
    AnyRequest,
    AnyResponse,
    AnyTransport,
    ByteStream,
    ChunkStream,
    HttpLibrary,
    describe_transport,
    httpx_transport_class,
    is_async_stream,
    is_sync_stream,
    libraries,
    library_of,
)
from harness.lazy import on_first_use
from harness.providers import detect_provider
from harness.scrub import DEFAULT_SCRUBBER, Scrubber
from harness.sse import event_ends

if TYPE_CHECKING:
    import httpx

_log = logging.getLogger(__name__)


class CassetteTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """Replay (and in a record mode, record) HTTP traffic through one cassette file.

    A native `httpx2` transport, sync and async, for the official SDKs' clients
    (`httpx2.Client(transport=...)`, `openai.DefaultHttpxClient(transport=...)`); it answers an
    `httpx` 0.28 client's requests too, with that library's responses (`HttpxCassetteTransport` is
    the same transport typed as an `httpx` one). `inner` is the transport that reaches the network
    when recording: an httpx2 or httpx transport, sync or async, of the library and kind of the
    client that sends through it; by default that library's `HTTPTransport()` /
    `AsyncHTTPTransport()`. It is never used in mode `none`.
    Recorded interactions are scrubbed and written on `close()` (the client closes its
    transport), atomically and under a file lock, merged with what other processes wrote; a
    streamed response the caller left unfinished (a `break` out of an SDK stream) is read to
    its end first, so it is recorded whole.

    A path where something other than a regular file exists (a folder, FIFO, socket, device)
    raises `CassetteFormatError` here, in every mode, before anything is recorded.

    In mode `all`, closing a transport that recorded nothing empties the cassette (a
    re-recording whose code no longer calls the model must say so); with `keep_when_idle` it
    leaves the cassette as it is, as `harness serve` does for its clients, who may not empty a
    cassette they did not fill.

    `pace` replays event streams with their recorded timing (`recorded`), N times faster (a
    number), or as fast as the client reads (`off`, the default; `harness.cassettes.pacing`).

    `identical_requests` (`shared` or `separate`, see the module docstring) defaults to what the
    cassette file says, and to `shared` for a new recording; a value given here is written to
    the file's metadata when it is saved. A `harness-cassette/1` file, whose keys spell numbers
    as the client sent them, is also searched by the number-canonical key (`1.0` and `1` alike),
    so a request from another language finds it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: str | RecordMode = RecordMode.NONE,
        inner: AnyTransport | None = None,
        *,
        allow_repeats: bool = False,
        strict: bool = False,
        volatile: Sequence[str] = (),
        scrubber: Scrubber = DEFAULT_SCRUBBER,
        allow_tampered: bool = False,
        provider: str | None = None,
        run_id: str | None = None,
        keep_when_idle: bool = False,
        identical_requests: IdenticalRequests | None = None,
        pace: str | float | None = None,
        rerecord: Rerecord | None = None,
    ) -> None:
        if identical_requests not in (None, "shared", "separate"):
            raise IdenticalRequestsError(
                "expected identical_requests 'shared' (one answer per distinct request, played "
                "for every identical one) or 'separate' (one answer per occurrence, in order) "
                f"but got {identical_requests!r}"
            )
        self.path = Path(path)
        self.pace = parse_pace(pace)
        self.keep_when_idle = keep_when_idle
        self.miss_advice: str | None = None
        """What a miss's message ends with instead of the advice to re-record (set by a caller
        for whom re-recording is not the fix, such as a target run of the bundled library)."""
        named = checked_run_id(run_id, "run_id") if run_id is not None else given_run_id()
        self.run_id = named or uuid.uuid4().hex
        self.mode = RecordMode.parse(mode)
        self.rerecord = checked_rerecord(rerecord)
        if inner is not None and not any(
            library.owns_transport(inner, asynchronous=kind)
            for library in libraries()
            for kind in (False, True)
        ):
            raise RecordModeError(
                f"expected an httpx2 or httpx transport as inner but got {describe_transport(inner)}"
            )
        self.inner = inner
        self._networks: dict[tuple[str, bool], AnyTransport] = {}
        self.allow_repeats = allow_repeats
        self.strict = strict
        for pointer in volatile:
            split_pointer(pointer)  # a bad pointer fails here, not at the first request
        self.provider = provider
        exists = cassette_exists(self.path)
        run = join_run(named) if named is not None and self.mode is not RecordMode.NONE else None
        self._run_token = run.token if run is not None else self.run_id
        # `once` is once per run: a cassette this run created goes on recording for its other
        # tests and workers, and a later run replays it
        self.recording = self.mode in (RecordMode.NEW_EPISODES, RecordMode.ALL) or (
            self.mode is RecordMode.ONCE
            and (not exists or created_in_run(self.path, self._run_token))
        )
        if self.mode is RecordMode.NONE and not exists:
            raise CassetteFormatError(
                f"cassette {self.path} does not exist and record mode is 'none'; record it with "
                "record mode 'once', 'new_episodes' or 'all'"
            )
        # a re-recording shares what this run recorded into the file already (other transports,
        # other tests of the run), as it shares what transports open now record
        continuing = (
            self.mode is RecordMode.ALL
            and identical_requests != "separate"
            and exists
            and recorded_in_run(self.path, self._run_token)
        )
        partly = self.mode is RecordMode.ALL and self.rerecord == "requests"
        replaying = exists and (self.mode is not RecordMode.ALL or continuing or partly)
        self.cassette = (
            Cassette.load(self.path, allow_tampered=allow_tampered, index_requests=True)
            if replaying
            else Cassette.new(self.path, provider)
        )
        self.identical_requests: IdenticalRequests = (
            identical_requests
            or (self.cassette.metadata.identical_requests if replaying else None)
            or ("separate" if replaying else "shared")
        )
        self.recorder = Recorder(
            scrubber=scrubber,
            volatile=tuple(volatile),
            provider=provider,
            key_version=self.cassette.key_version,
        )
        self._shared: SharedAnswers | None = (
            open_shared(self.path, run if self.recording else None)
            if self.recording and self.identical_requests == "shared"
            else None
        )
        self._by_value: dict[str, list[str]] | None = None
        self._by_equivalent: dict[str, list[str]] | None = None
        self._replayable: dict[str, list[int]] = self.cassette.by_key
        """The interactions this transport may replay, by key: all of them, but in a re-recording
        of a part of a suite only what this run recorded (the rest is recorded again, and kept
        for the tests that did not run)."""
        if partly and replaying:
            ours = recorded_by_run(self.path, self._run_token) if continuing else set()
            entries = self.cassette.interactions
            self._replayable = {
                key: kept
                for key, indexes in self.cassette.by_key.items()
                if (kept := [i for i in indexes if (key, answer_of(entries[i])) in ours])
            }
        self._queues: dict[str, deque[int]] = {
            key: deque(indexes) for key, indexes in self._replayable.items()
        }
        self._fast_keys = self.cassette.exact_requests
        self._played: set[int] = set()
        """Indexes of the interactions replayed, for the usage log."""
        self._last_played: dict[str, int] = {}
        self._recorded: list[Interaction] = []
        self._adopted: set[int] = set()
        """Indexes in `_recorded` of answers played from another recorder (`_adopt`)."""
        self._recorded_counts: dict[str, int] = {}
        self._saved = 0
        self._parts: dict[int, tuple[int, list[tuple[bytes, bytes]], list[bytes]]] = {}
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()
        self._closed = False
        self._streaming: list[RecordingStream] = []

    # -- replay ---------------------------------------------------------------------------------

    def key_for(self, request: AnyRequest) -> str:
        """The canonical key of an httpx request (its body must have been read).

        A request whose method, path, query, keyed headers and body bytes are identical to a
        recorded one takes that interaction's key from an index built at load (a hash of the
        body and one lookup); any other request is canonicalised in full.
        """
        key = self._fast_keys.get(_fast_signature(request))
        return key if key is not None else self.recorder.key_for(request)

    def _take(self, key: str) -> int | None:
        with self._lock:
            queue = self._queues.get(key)
            if queue:
                index = queue.popleft()
                self._last_played[key] = index
                self._played.add(index)
                return index
            if self.allow_repeats or self.identical_requests == "shared":
                recorded = self._replayable.get(key)
                again = self._last_played.get(key, recorded[-1] if recorded else None)
                if again is not None:
                    self._played.add(again)
                return again
            return None

    def _take_by_value(self, request: AnyRequest) -> int | None:
        """For a `harness-cassette/1` file: the interaction whose request has the same
        number-canonical key as `request` (recorded `1.0`, sent `1`)."""
        if self._by_value is None:
            self._by_value = self._stored_keys_by(
                lambda recorded: rekey(recorded, self.recorder.volatile, version=2)
            )
        return self._take_first_of(self._by_value.get(self.recorder.key_for(request, version=2)))

    def _take_equivalent(self, request: AnyRequest) -> int | None:
        """The interaction whose request is `request` spelt another way its provider allows
        (tool-call arguments encoded differently, a text as a string or as one text block):
        the same equivalent key (`harness.cassettes.key.equivalent_request_key`)."""
        if self._by_equivalent is None:
            self._by_equivalent = self._stored_keys_by(
                lambda recorded: equivalent_key(recorded, self.recorder.volatile)
            )
        return self._take_first_of(
            self._by_equivalent.get(self.recorder.key_for(request, version=2, equivalent=True))
        )

    def _stored_keys_by(self, keyer: Callable[[RecordedRequest], str]) -> dict[str, list[str]]:
        """Each recorded interaction's key, under another key of its request (`keyer`); built
        on the first request that misses its own key, so replay never pays for it."""
        by_key: dict[str, list[str]] = {}
        for interaction in self.cassette.interactions:
            keys = by_key.setdefault(keyer(interaction.request), [])
            if interaction.key not in keys:
                keys.append(interaction.key)
        return by_key

    def _take_first_of(self, stored_keys: list[str] | None) -> int | None:
        """The next unplayed interaction of the first of `stored_keys` that has one, else what
        `_take` gives for the last of them (a repeat, when repeats are replayed)."""
        if not stored_keys:
            return None
        for stored in stored_keys:
            with self._lock:
                has_unplayed = bool(self._queues.get(stored))
            if has_unplayed:
                return self._take(stored)
        return self._take(stored_keys[-1])

    def _replay(self, index: int, library: HttpLibrary) -> AnyResponse:
        parts = self._parts.get(index)
        if parts is None:
            parts = self.cassette.replay_parts(index)
            self._parts[index] = parts
        status, headers, chunks = parts
        offsets = self.cassette.interactions[index].offsets_ms if self.pace else None
        return library.response(
            status, headers=headers, stream=self._stream(chunks, offsets, library)
        )

    def _stream(
        self, chunks: list[bytes], offsets_ms: list[int] | None, library: HttpLibrary
    ) -> Any:
        """A replayed body, paced (`pace`) when its events' timing was recorded."""
        due = paced_offsets(len(chunks), offsets_ms, self.pace)
        if due is None:
            return library.stream_class(ChunkStream)(chunks)
        return library.stream_class(PacedStream)(chunks, due)

    def _miss(self, request: AnyRequest, key: str) -> Exception:
        return explain_miss(
            cassette=self.cassette,
            method=request.method,
            url=str(request.url),
            body=request.content,
            key=key,
            mode=self.mode.value,
            recorded_for_key=len(self.cassette.by_key.get(key, ())),
            scrubber=self.recorder.scrubber,
            headers=request.headers.multi_items(),
            advice=self.miss_advice,
        )

    def _answer(self, request: AnyRequest, library: HttpLibrary) -> tuple[AnyResponse | None, str]:
        """The replayed response and the key; None when the request must be recorded."""
        key = self.key_for(request)
        index = self._take(key)
        if index is None and self.cassette.key_version == 1:
            index = self._take_by_value(request)
        if index is None:
            index = self._take_equivalent(request)
        if index is not None:
            return self._replay(index, library), key
        if not self.recording:
            raise self._miss(request, key)
        return None, key

    def _shared_answer(self, answer: Interaction, library: HttpLibrary) -> AnyResponse:
        """The answer an identical request recorded in this process, replayed."""
        status, headers, chunks = answer.response.replay_parts()
        return library.response(
            status, headers=headers, stream=self._stream(chunks, answer.offsets_ms, library)
        )

    def _network(self, library: HttpLibrary, *, asynchronous: bool) -> Any:
        """The transport a miss is recorded through: `inner`, which must be of the client's
        library and kind, or that library's network transport."""
        if self.inner is None:
            network = self._networks.get((library.name, asynchronous))
            if network is None:
                network = library.network_transport(asynchronous=asynchronous)
                self._networks[(library.name, asynchronous)] = network
            return network
        if not library.owns_transport(self.inner, asynchronous=asynchronous):
            kind = "async" if asynchronous else "sync"
            raise RecordModeError(
                f"an {library.name} {kind} client sent this request, so recording needs an "
                f"{library.name} {kind} transport as inner, but inner is "
                f"{describe_transport(self.inner)}; pass {library.name}."
                f"{'AsyncHTTPTransport' if asynchronous else 'HTTPTransport'}() or leave inner unset"
            )
        return self.inner

    @overload
    def handle_request(self, request: httpx2.Request) -> httpx2.Response: ...
    @overload
    def handle_request(self, request: httpx.Request) -> httpx.Response: ...
    def handle_request(self, request: AnyRequest) -> AnyResponse:
        library = library_of(request)
        request.read()
        replayed, key = self._answer(request, library)
        if replayed is not None:
            return replayed
        lead = None
        if self._shared is not None:
            shared = self._shared.answer_for(key)
            if isinstance(shared, Interaction):
                self._adopt(shared)
                return self._shared_answer(shared, library)
            lead = shared
        try:
            response = self._network(library, asynchronous=False).handle_request(request)
        except BaseException:
            if lead is not None:
                lead.land(None)
            raise
        return self._recording_response(request, key, response, library, lead)

    @overload
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response: ...
    @overload
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response: ...
    async def handle_async_request(self, request: AnyRequest) -> AnyResponse:
        library = library_of(request)
        await request.aread()
        replayed, key = self._answer(request, library)
        if replayed is not None:
            return replayed
        lead = None
        if self._shared is not None:
            shared = await self._shared.answer_for_async(key)
            if isinstance(shared, Interaction):
                self._adopt(shared)
                return self._shared_answer(shared, library)
            lead = shared
        try:
            network = self._network(library, asynchronous=True)
            response = await network.handle_async_request(request)
        except BaseException:
            if lead is not None:
                lead.land(None)
            raise
        return self._recording_response(request, key, response, library, lead)

    # -- record ---------------------------------------------------------------------------------

    def _recording_response(
        self,
        request: AnyRequest,
        key: str,
        response: AnyResponse,
        library: HttpLibrary,
        lead: Lead | None = None,
    ) -> AnyResponse:
        def commit(raw: bytes | None) -> None:
            recorded = None
            try:
                if raw is not None:
                    recorded = self._record(request, key, response, raw, library, stream.marks)
            finally:
                if lead is not None:
                    lead.land(recorded)

        stream = library.stream_class(RecordingStream)(response, commit)
        with self._lock:
            self._streaming = [*(s for s in self._streaming if not s.committed), stream]
        return library.response(
            response.status_code,
            headers=response.headers.raw,
            stream=stream,
            extensions=dict(response.extensions),
        )

    def _unfinished_streams(self) -> list[RecordingStream]:
        """Recorded responses the client has not read to the end nor closed (yet).

        An SDK stream left after a `break` without `with` is only closed when the garbage
        collector gets to it, often after the client (and its connection pool) has closed:
        `close` reads these to the end first, so the interaction is recorded, not lost.
        """
        with self._lock:
            streams, self._streaming = self._streaming, []
        return [stream for stream in streams if not stream.committed]

    def _record(
        self,
        request: AnyRequest,
        key: str,
        response: AnyResponse,
        raw: bytes,
        library: HttpLibrary,
        marks: Sequence[tuple[int, int]] = (),
    ) -> Interaction:
        # the body as the client reads it: content-encoding removed by the library itself
        decoded = library.response(response.status_code, headers=response.headers.raw, content=raw)
        recorded_request = self.recorder.record_request(request)
        recorded_response = self.recorder.record_response(
            request, response.status_code, response.headers.multi_items(), decoded.content
        )
        with self._lock:
            count = len(self.cassette.by_key.get(key, ())) if self.mode is not RecordMode.ALL else 0
            occurrence = count + self._recorded_counts.get(key, 0) + 1
            self._recorded_counts[key] = self._recorded_counts.get(key, 0) + 1
            interaction = Interaction.build(
                key,
                occurrence,
                recorded_request,
                recorded_response,
                _event_offsets(recorded_response, decoded.content, marks),
            )
            self._recorded.append(interaction)
        if self.provider is None:
            self.provider = detect_provider(request.url.path)
        return interaction

    def _adopt(self, answer: Interaction) -> None:
        """Keep a shared answer this transport played, to be saved with what it recorded: if the
        recorder that recorded it never saves (its process was killed), the answer this
        conversation went on from is still in the cassette. A save writes it once."""
        with self._lock:
            self._adopted.add(len(self._recorded))
            self._recorded.append(answer)
        if self.provider is None:
            self.provider = detect_provider(answer.request.path)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def unplayed(self) -> list[Interaction]:
        """Recorded interactions this transport has not replayed (yet), in file order."""
        with self._lock:
            indexes = sorted(index for queue in self._queues.values() for index in queue)
        return [self.cassette.interactions[index] for index in indexes]

    @property
    def recorded(self) -> list[Interaction]:
        """Interactions this transport recorded from the provider (not the shared answers it
        played from other recorders), saved or not."""
        with self._lock:
            return [i for n, i in enumerate(self._recorded) if n not in self._adopted]

    def save(self) -> None:
        """Write what was recorded since the last save, merged with the file on disk.

        Each recorded interaction is written once, however often `save` is called (`close`
        saves too). In mode `all` the first save of the run replaces the file and later ones
        merge into it (see `harness.cassettes.store`), so a re-recording that sent nothing
        empties the cassette, unless the transport was made with `keep_when_idle`; otherwise
        nothing new means no write.
        """
        with self._save_lock:
            with self._lock:
                recorded = list(self._recorded)
                once_each = (
                    {i for i, x in enumerate(recorded) if not is_transient(x.response.status)}
                    if self.identical_requests == "shared"
                    else self._adopted.copy()
                )
            replaces = self.mode is RecordMode.ALL and not self.keep_when_idle
            if replaces or len(recorded) > self._saved:
                save_recording(
                    self.path,
                    recorded,
                    saved=self._saved,
                    replace=self.mode is RecordMode.ALL,
                    provider=self.provider,
                    run_token=self._run_token,
                    identical_requests=self.identical_requests,
                    once_each=once_each,
                    replace_requests=self.rerecord == "requests",
                )
            self._saved = len(recorded)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for stream in self._unfinished_streams():
            try:
                stream.close()
            except Exception as error:  # the provider broke it off: not recorded, others are
                _log.warning("an abandoned answer was not recorded: %s", type(error).__name__)
        if self.recording:
            self._release_shared()
            self.save()
        for network in self._inner_transports():
            if any(library.owns_transport(network, asynchronous=False) for library in libraries()):
                network.close()  # type: ignore[union-attr]  # a sync transport, checked above
        self._log_use()
        self._check_unplayed()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for stream in self._unfinished_streams():
            try:
                await stream.aclose()
            except Exception as error:  # the provider broke it off: not recorded, others are
                _log.warning("an abandoned answer was not recorded: %s", type(error).__name__)
        if self.recording:
            self._release_shared()
            self.save()
        for network in self._inner_transports():
            if any(library.owns_transport(network, asynchronous=True) for library in libraries()):
                await network.aclose()  # type: ignore[union-attr]  # an async one, checked above
        self._log_use()
        self._check_unplayed()

    def _log_use(self) -> None:
        """What this transport played and recorded, to the usage log (when one is set)."""
        entries = self.cassette.entries
        with self._lock:
            played = [(entries[i].key, entries[i].occurrence) for i in self._played]
            recorded = [interaction.key for interaction in self._recorded]
        log_use(self.path, played, recorded)

    def _release_shared(self) -> None:
        if self._shared is not None:
            self._shared = None
            close_shared(self.path)

    def _inner_transports(self) -> list[AnyTransport]:
        return [*([self.inner] if self.inner is not None else []), *self._networks.values()]

    def _check_unplayed(self) -> None:
        with self._lock:
            indexes = sorted(index for queue in self._queues.values() for index in queue)
        if not indexes:
            return
        unplayed = [(index, self.cassette.entries[index]) for index in indexes]
        lines = [
            f"  #{index} {entry.method} {entry.path} "
            f"(key {entry.key}, occurrence {entry.occurrence})"
            for index, entry in unplayed
        ]
        message = (
            f"cassette {self.path}: {len(unplayed)} recorded interaction(s) were never "
            "requested:\n" + "\n".join(lines)
        )
        if self.strict:
            raise CassetteUnplayedError(message)
        _log.info("%s", message)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        if exc is None:
            self.close()
        else:
            self._closed = True
            if self.recording:
                self._release_shared()
                self.save()
            self._log_use()


class RecordingStream(ByteStream):
    """Pass the live body through to the client, chunk by chunk, and record it once complete.

    If the client stops reading early, closing the stream reads the rest, so what is recorded is
    always the whole response. A body the provider breaks off (the connection drops mid-stream)
    is never recorded: a partial answer replayed as a whole one would be a lie. `commit` is
    called once, with the whole body or, for a broken one, None. Closing twice closes the inner
    stream once.
    """

    def __init__(self, response: AnyResponse, commit: Callable[[bytes | None], None]) -> None:
        self._stream = response.stream
        self._commit = commit
        self._buffer: list[bytes] = []
        self._started = time.monotonic()
        self.marks: list[tuple[int, int]] = []
        """Each chunk as it arrived: the body's length with it, and milliseconds since the
        answer's headers."""
        self._size = 0
        self._sync: Iterator[bytes] | None = None
        self._async: AsyncIterator[bytes] | None = None
        self._committed = False
        self._closed = False
        self._broken = False

    @property
    def committed(self) -> bool:
        """Whether the whole body has been read and handed to the recorder."""
        return self._committed

    def __iter__(self) -> Iterator[bytes]:
        if not is_sync_stream(self._stream):
            raise RecordModeError("a sync client needs a sync inner transport to record")
        self._sync = iter(self._stream)
        try:
            for chunk in self._sync:
                self._keep(chunk)
                yield chunk
        except Exception:
            self._break()
            raise
        self._finish()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if not is_async_stream(self._stream):
            raise RecordModeError("an async client needs an async inner transport to record")
        self._async = aiter(self._stream)
        try:
            async for chunk in self._async:
                self._keep(chunk)
                yield chunk
        except Exception:
            self._break()
            raise
        self._finish()

    def _keep(self, chunk: bytes) -> None:
        self._buffer.append(chunk)
        self._size += len(chunk)
        self.marks.append((self._size, int((time.monotonic() - self._started) * 1000)))

    def _break(self) -> None:
        if not self._broken and not self._committed:
            self._broken = True
            self._buffer = []
            self._commit(None)

    def _finish(self) -> None:
        if not self._committed and not self._broken:
            self._committed = True
            body, self._buffer = b"".join(self._buffer), []
            self._commit(body)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._committed and not self._broken and is_sync_stream(self._stream):
            # The client stopped early: read the rest from where it stopped.
            try:
                for chunk in self._sync if self._sync is not None else self._stream:
                    self._keep(chunk)
            except Exception:
                self._break()
                raise
            self._finish()
        if is_sync_stream(self._stream):
            self._stream.close()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._committed and not self._broken and is_async_stream(self._stream):
            remaining = self._async if self._async is not None else aiter(self._stream)
            try:
                async for chunk in remaining:
                    self._keep(chunk)
            except Exception:
                self._break()
                raise
            self._finish()
        if is_async_stream(self._stream):
            await self._stream.aclose()


def _event_offsets(
    response: RecordedResponse, body: bytes, marks: Sequence[tuple[int, int]]
) -> list[int] | None:
    """When each recorded event arrived (ms from the answer's start): the arrival of the chunk
    holding its last byte. None for a body that is not an event stream, or whose bytes the
    client was given otherwise than they arrived (decoded from a compressed stream)."""
    if response.events is None or not marks or marks[-1][0] != len(body):
        return None
    ends = event_ends(body)
    if len(ends) != len(response.events):
        return None
    offsets: list[int] = []
    chunk = 0
    for end in ends:
        while marks[chunk][0] < end:
            chunk += 1
        offsets.append(marks[chunk][1])
    return offsets


def _fast_signature(request: AnyRequest) -> ExactRequest:
    return (
        request.method,
        request.url.path,
        request.url.query.decode("ascii", "replace"),
        tuple(sorted(keyed_headers(request.headers.multi_items()).items())),
        hashlib.sha256(request.content).digest(),
    )


if TYPE_CHECKING:

    class HttpxCassetteTransport(CassetteTransport, httpx.BaseTransport, httpx.AsyncBaseTransport):
        pass

else:  # made on first use: it imports `httpx` 0.28
    __getattr__, __dir__ = on_first_use(
        __name__,
        {
            "HttpxCassetteTransport": lambda: httpx_transport_class(
                CassetteTransport,
                """`CassetteTransport`, typed as an `httpx` 0.28 transport too, for code that
                type-checks `httpx.Client(transport=...)`. It behaves exactly the same (either
                library's clients work); use `CassetteTransport` with the official SDKs:
                `anthropic.DefaultHttpxClient` refuses any transport that is an `httpx` class.""",
            )
        },
    )
