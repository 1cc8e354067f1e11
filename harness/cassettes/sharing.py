"""Identical requests recorded once: the answers a process has recorded into a cassette, shared.

When parallel clients record into one cassette and several send the same request (every worker's
first turn, "What time is it?"), recording each answer separately leaves replay to the order the
requests arrive in: a worker may be dealt another worker's answer, embed it in its next turn, and
miss. With `identical_requests="shared"` (the default for a new recording) the first of them goes
to the provider and every identical request, arriving while it is in flight or after it was
recorded, is answered with that same recorded answer: one provider call, one interaction, and
every conversation that shares a turn shares its answer, so its later turns key on the same text.

What is shared: every `CassetteTransport` open on the same file in this process, every connection
and session of one `harness serve`, and, when the recording run is named in the environment
(`HARNESS_RECORD_RUN_ID`, or pytest-xdist's `PYTEST_XDIST_TESTRUNUID` for its workers), every
process of that run (`harness.cassettes.recording_run`): the first to send a request holds a
lock named after its key until its answer is recorded and left beside the lock for the others,
in the run's private folder; an answer left there is played only when its digest, request and run
check out. Every recorder that plays a shared answer keeps it in what it saves, so the answer
survives the death of the process that recorded it. An answer the provider gave as a transient
failure (408, 409, 429, or a 5xx status) is not shared: the SDK's retry goes to the provider and
is recorded as the next answer to that request, so replay plays the failure, then the answer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread
from filelock import FileLock, Timeout

from harness.cassettes.cassette import Interaction, interaction_digest, max_cassette_bytes
from harness.cassettes.recording_run import RecordingRun
from harness.errors import CassetteError
from harness.files import read_regular_file, write_atomically

_log = logging.getLogger(__name__)

TRANSIENT_STATUSES: Final = frozenset({408, 409, 429})
"""Statuses an SDK retries (with every 5xx): answers that are never shared."""
WAIT_SECONDS: Final = 600.0
"""How long an identical request waits for the first one's answer to be recorded (the provider
timeout `harness serve` uses); past it, it is recorded on its own."""
POLL_SECONDS: Final = 0.005


def is_transient(status: int) -> bool:
    """Whether an answer with `status` is one an SDK retries (so it is not shared)."""
    return status in TRANSIENT_STATUSES or status >= 500


Owner = tuple[int, int | None]
"""Who sends a request: the thread, and the async task in it (None for a sync client)."""


@dataclass
class Flight:
    """A request on its way to the provider; identical ones wait for it to land."""

    owner: Owner
    landed: threading.Event = field(default_factory=threading.Event)
    answer: Interaction | None = None


class Lead:
    """What `SharedAnswers.claim` returns to the request that goes to the provider: it must
    `land` it, with the recorded interaction or None when nothing was recorded."""

    def __init__(self, shared: SharedAnswers, key: str) -> None:
        self.shared = shared
        self.key = key
        self._landed = False
        self.held: FileLock | None = None
        """The run's lock on this request, across processes, when the run is shared."""

    def land(self, answer: Interaction | None) -> None:
        if self._landed:
            return
        self._landed = True
        try:
            run = self.shared.run if self.held is not None else None
            if run is not None and answer is not None and not is_transient(answer.response.status):
                run.publish(self.key, answer)
        finally:
            if self.held is not None:
                self.held.release()
            self.shared.land(self.key, answer)


class RunAnswers:
    """The answers every process of one recording run shares for one cassette: a lock per
    request key, and each recorded answer in a file beside it, in the run's private folder
    (`harness.cassettes.recording_run`), removed with the run."""

    def __init__(self, path: Path, run: RecordingRun) -> None:
        self._run = run
        self.cassette_name = hashlib.sha256(
            str(path.resolve()).encode("utf-8", "surrogatepass")
        ).hexdigest()[:32]

    def lock(self, key: str) -> FileLock:
        # thread_local=False: an async client acquires it in a worker thread, lands elsewhere
        return FileLock(self._run.handoff(self.cassette_name, key)[0], thread_local=False)

    def recorded(self, key: str) -> Interaction | None:
        """The answer another process of this run recorded for `key`, if any. One that is not
        this run's, not for `key` or not the content its digest says is refused (with a
        warning): the caller sends the request itself."""
        answer_file = self._run.handoff(self.cassette_name, key)[1]
        try:
            left = json.loads(read_regular_file(answer_file, max_cassette_bytes()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            _log.warning("a shared answer could not be read, so it is recorded again: %s", error)
            return None
        try:
            answer = Interaction.model_validate(left["interaction"])
            genuine = (
                left.get("run") == self._run.token
                and answer.key == key
                and answer.digest
                == interaction_digest(key, answer.occurrence, answer.request, answer.response)
            )
        except (KeyError, TypeError, ValueError):
            genuine = False
        if not genuine:
            _log.warning(
                "a shared answer left for another process of this run does not match its digest, "
                "request or run, so it is not played: the request is recorded again"
            )
            return None
        return answer

    def publish(self, key: str, answer: Interaction) -> None:
        try:
            # ASCII JSON: a lone surrogate in a body (half an emoji) is written as its escape
            text = json.dumps(
                {"run": self._run.token, "interaction": answer.model_dump(mode="json")}
            )
            write_atomically(self._run.handoff(self.cassette_name, key)[1], text.encode("ascii"))
        except (OSError, ValueError) as error:  # the others record on their own
            _log.warning("a shared answer could not be left for other processes: %s", error)


class SharedAnswers:
    """The answers recorded in this process into one cassette, by request key; with `run`,
    those of every process of the recording run too."""

    def __init__(self, run: RunAnswers | None = None) -> None:
        self._lock = threading.Lock()
        self._answers: dict[str, Interaction] = {}
        self._flights: dict[str, Flight] = {}
        self.users = 0
        self.run = run

    def _across_processes(self, lead: Lead) -> Interaction | Lead:
        """For the lead of this process: the answer another process of the run recorded, or
        the lead holding the run's lock on the request (blocks while another process holds
        it)."""
        if self.run is None:
            return lead
        lock = self.run.lock(lead.key)
        try:
            lock.acquire(timeout=WAIT_SECONDS)
        except (Timeout, OSError) as error:  # recorded on its own: slower, never stuck
            _log.warning("recording a request without the run's lock on it: %s", error)
            return lead
        answer = self.run.recorded(lead.key)
        if answer is not None and not is_transient(answer.response.status):
            lock.release()
            lead.land(answer)
            return answer
        lead.held = lock
        return lead

    def claim(self, key: str, owner: Owner) -> Interaction | Flight | Lead | None:
        """The answer recorded for `key`, the flight to wait for, or the lead: the caller sends
        the request and lands it. None when the flight is the caller's own (a client that sends
        a request again before reading the first answer): waiting would never end, so it
        records on its own."""
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None and not is_transient(answer.response.status):
                return answer
            flight = self._flights.get(key)
            if flight is not None:
                return None if flight.owner == owner else flight
            self._flights[key] = Flight(owner)
            return Lead(self, key)

    def land(self, key: str, answer: Interaction | None) -> None:
        with self._lock:
            flight = self._flights.pop(key, None)
            if answer is not None:
                self._answers[key] = answer
        if flight is not None:
            flight.answer = answer
            flight.landed.set()

    def answer_for(self, key: str) -> Interaction | Lead | None:
        """Wait (blocking) for the shared answer to `key`: the answer, the lead, or None when
        the wait ran out (the caller records on its own)."""
        deadline = time.monotonic() + WAIT_SECONDS
        owner = (threading.get_ident(), None)
        while True:
            claimed = self.claim(key, owner)
            if isinstance(claimed, Lead):
                return self._across_processes(claimed)
            if not isinstance(claimed, Flight):
                return claimed
            if not claimed.landed.wait(max(0.0, deadline - time.monotonic())):
                return None
            if claimed.answer is not None and not is_transient(claimed.answer.response.status):
                return claimed.answer

    async def answer_for_async(self, key: str) -> Interaction | Lead | None:
        """`answer_for` without blocking the event loop."""
        deadline = time.monotonic() + WAIT_SECONDS
        owner = (threading.get_ident(), anyio.get_current_task().id)
        while True:
            claimed = self.claim(key, owner)
            if isinstance(claimed, Lead):
                if self.run is None:
                    return claimed
                return await anyio.to_thread.run_sync(self._across_processes, claimed)
            if not isinstance(claimed, Flight):
                return claimed
            while not claimed.landed.is_set():
                if time.monotonic() > deadline:
                    return None
                await anyio.sleep(POLL_SECONDS)
            if claimed.answer is not None and not is_transient(claimed.answer.response.status):
                return claimed.answer


_REGISTRY: Final[dict[Path, SharedAnswers]] = {}
_REGISTRY_LOCK: Final = threading.Lock()


def open_shared(path: Path, run: RecordingRun | None = None) -> SharedAnswers:
    """The shared answers of the cassette at `path` in this process (one more user); with
    `run`, shared with every process of that recording run too."""
    with _REGISTRY_LOCK:
        shared = _REGISTRY.get(path.resolve())
        if shared is None:
            answers = RunAnswers(path, run) if run is not None else None
            shared = _REGISTRY[path.resolve()] = SharedAnswers(answers)
        shared.users += 1
        return shared


def close_shared(path: Path) -> None:
    """One user fewer; the answers are let go with the last (they are in the file by then)."""
    with _REGISTRY_LOCK:
        resolved = path.resolve()
        shared = _REGISTRY.get(resolved)
        if shared is not None:
            shared.users -= 1
            if shared.users <= 0:
                del _REGISTRY[resolved]


class IdenticalRequestsError(CassetteError, ValueError):
    """Raised when `identical_requests` is neither `shared` nor `separate`."""

    code = "cassette_identical_requests_invalid"
