"""Ctrl-C that is never lost: the first SIGINT ends a block, even where Python would drop it.

Python raises `KeyboardInterrupt` wherever the main thread happens to be when SIGINT arrives,
and some of those places lose it:

- a garbage-collector callback (hypothesis installs one for its timing statistics) or a
  `__del__` method, where Python prints it as "Exception ignored in ..." and goes on as if
  Ctrl-C had never been pressed, so a search of a few hundred cells runs for minutes;
- a library that turns what a callback raised into its own error (pydantic reports it as a
  `SchemaError` while it builds a validator), which a caller may take for an ordinary failure;
- `threading`'s steps between taking a lock and recording it, where it leaves the lock taken
  or lets it go twice (`RuntimeError: release unlocked lock` in place of the interruption).

`interrupts_redelivered` raises it again until it lands, never inside such a lock step, keeps
the dropped ones off the terminal, and tells the block's code that Ctrl-C was pressed, so it
can stop at its next step whatever became of the exception.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Final

REDELIVERY_SECONDS: Final = 0.25
"""How long after a SIGINT it is sent to the main thread again while the block still runs: a
`KeyboardInterrupt` Python dropped is raised again this soon."""


@dataclass
class Interrupts:
    """What a block run under `interrupts_redelivered` was sent."""

    received: bool = False
    """Whether Ctrl-C (SIGINT) was pressed, whatever became of the `KeyboardInterrupt`."""

    def stop_if_received(self) -> None:
        """Raise `KeyboardInterrupt` if Ctrl-C was pressed: at a step where the block may
        stop, so that an interruption a library dropped or turned into another error (a cell
        that failed because of it) stops it there, not later."""
        if self.received:
            raise KeyboardInterrupt


@contextmanager
def interrupts_redelivered(every: float = REDELIVERY_SECONDS) -> Iterator[Interrupts]:
    """Within the block, the first SIGINT ends it with `KeyboardInterrupt`, however often Python
    drops the exception: until the block has ended, SIGINT is sent to the main thread again every
    `every` seconds (a signal, so a blocking wait is interrupted too), a dropped
    `KeyboardInterrupt` is not printed (`sys.unraisablehook`; anything else dropped still is),
    and none is raised inside a step of `threading` that would break a lock (it comes at the
    next step instead). The block gets an `Interrupts` saying whether Ctrl-C was pressed.
    However the block ends, SIGINT and `sys.unraisablehook` are as they were before it, and no
    signal sent for the block is delivered after it.

    It changes nothing outside the main thread (Python delivers signals there alone) or where
    SIGINT does not have Python's default handler: ignored (a shell's background job), or an
    application's own handler, which keeps its meaning. `Interrupts.received` stays False then.
    """
    interrupts = Interrupts()
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield interrupts
        return
    main = threading.main_thread().ident
    assert main is not None  # the main thread is running this
    sending = threading.Lock()
    ended = threading.Event()
    ending = False
    resending: list[threading.Thread] = []
    unraisable = sys.unraisablehook

    def resend() -> None:
        while not ended.wait(every):
            with sending:  # never after the block has ended: see the `finally` below
                if ended.is_set():
                    return
                signal.pthread_kill(main, signal.SIGINT)

    def interrupted(number: int, frame: FrameType | None) -> None:
        if ending:  # one sent just before the block ended
            return
        interrupts.received = True
        if not resending:
            resender = threading.Thread(target=resend, daemon=True, name="harness-interrupts")
            resending.append(resender)
            resender.start()
        if _inside_a_lock_step(frame):
            _thread.interrupt_main(signal.SIGINT)  # again at the next step, out of it
            return
        raise KeyboardInterrupt

    def dropped(report: sys.UnraisableHookArgs) -> None:
        if report.exc_type is not None and issubclass(report.exc_type, KeyboardInterrupt):
            return  # raised again within `every` seconds
        unraisable(report)

    previous = signal.signal(signal.SIGINT, interrupted)
    sys.unraisablehook = dropped
    try:
        yield interrupts
    finally:
        ending = True
        with sending:
            ended.set()
        # `signal.signal` runs the handlers of signals already delivered first, with the handler
        # they were delivered to, which ignores them now
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = unraisable


def _inside_a_lock_step(frame: FrameType | None) -> bool:
    """Whether `frame` is one of `threading`'s steps between taking or letting go of a lock and
    recording it (`Condition._acquire_restore`, `_release_save`, `__enter__`, ...), where a
    `KeyboardInterrupt` leaves the lock taken for ever or lets it go twice. A wait
    (`Condition.wait`, `Event.wait`) is no such step: it puts its lock back however it ends."""
    return (
        frame is not None
        and frame.f_globals.get("__name__") == "threading"
        and frame.f_code.co_name != "wait"
    )
