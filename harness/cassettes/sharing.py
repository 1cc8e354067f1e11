"""Identical requests recorded once: the answers a process has recorded into a cassette, shared.

When parallel clients record into one cassette and several send the same request (every worker's
first turn, "What time is it?"), recording each answer separately leaves replay to the order the
requests arrive in: a worker may be dealt another worker's answer, embed it in its next turn, and
miss. With `identical_requests="shared"` (the default for a new recording) the first of them goes
to the provider and every identical request, arriving while it is in flight or after it was
recorded, is answered with that same recorded answer: one provider call, one interaction, and
every conversation that shares a turn shares its answer, so its later turns key on the same text.

What is shared is the process's: every `CassetteTransport` open on the same file in this process,
every connection and session of one `harness serve`. An answer the provider gave as a transient
failure (408, 409, 429, or a 5xx status) is not shared: the SDK's retry goes to the provider and
is recorded as the next answer to that request, so replay plays the failure, then the answer.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio

from harness.cassettes.cassette import Interaction
from harness.errors import CassetteError

TRANSIENT_STATUSES: Final = frozenset({408, 409, 429})
"""Statuses an SDK retries (with every 5xx): answers that are never shared."""
WAIT_SECONDS: Final = 600.0
"""How long an identical request waits for the first one's answer to be recorded (the provider
timeout `harness serve` uses); past it, it is recorded on its own."""
POLL_SECONDS: Final = 0.005


def is_transient(status: int) -> bool:
    """Whether an answer with `status` is one an SDK retries (so it is not shared)."""
    return status in TRANSIENT_STATUSES or status >= 500


@dataclass
class Flight:
    """A request on its way to the provider; identical ones wait for it to land."""

    landed: threading.Event = field(default_factory=threading.Event)
    answer: Interaction | None = None


class Lead:
    """What `SharedAnswers.claim` returns to the request that goes to the provider: it must
    `land` it, with the recorded interaction or None when nothing was recorded."""

    def __init__(self, shared: SharedAnswers, key: str) -> None:
        self.shared = shared
        self.key = key
        self._landed = False

    def land(self, answer: Interaction | None) -> None:
        if not self._landed:
            self._landed = True
            self.shared.land(self.key, answer)


class SharedAnswers:
    """The answers recorded in this process into one cassette, by request key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[str, Interaction] = {}
        self._flights: dict[str, Flight] = {}
        self.users = 0

    def claim(self, key: str) -> Interaction | Flight | Lead:
        """The answer recorded for `key`, the flight to wait for, or the lead: the caller sends
        the request and lands it."""
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None and not is_transient(answer.response.status):
                return answer
            flight = self._flights.get(key)
            if flight is not None:
                return flight
            self._flights[key] = Flight()
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
        while True:
            claimed = self.claim(key)
            if not isinstance(claimed, Flight):
                return claimed
            if not claimed.landed.wait(max(0.0, deadline - time.monotonic())):
                return None
            if claimed.answer is not None and not is_transient(claimed.answer.response.status):
                return claimed.answer

    async def answer_for_async(self, key: str) -> Interaction | Lead | None:
        """`answer_for` without blocking the event loop."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            claimed = self.claim(key)
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


def open_shared(path: Path) -> SharedAnswers:
    """The shared answers of the cassette at `path` in this process (one more user)."""
    with _REGISTRY_LOCK:
        shared = _REGISTRY.setdefault(path.resolve(), SharedAnswers())
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
