"""Recording runs: which transports and processes record cassettes together, and where the answers
they share are handed over.

A *run* is named by `HARNESS_RECORD_RUN_ID` (else pytest-xdist's `PYTEST_XDIST_TESTRUNUID`, or a
transport's `run_id=`); a transport given no name records in a run of its own. Every process
recording under one name at the same time is one run: in mode `all` the first save of a cassette
replaces it and later saves merge into it, and identical requests are answered once for all of
them (`harness.cassettes.sharing`).

A name alone does not make a run: a nightly job that always calls itself `nightly` records a new
run every night. A process joins the run when it first records under its name and stays in it
until it exits; the first process to join draws a fresh nonce, and the run lasts while any process
that joined it is alive (each holds a lock only the operating system releases, at its death, even
by SIGKILL), and `grace_seconds()` (30 s) after the last one left, so that workers a parent starts
one after another are one run. When the last process leaves, the answers handed over in the run
are removed; a run over for longer than the grace, or whose processes were all killed, is swept
by the next process that joins a run. What a run keeps (its nonce,
the answers its processes hand each other, the lock on each request in flight) is in a folder of
the user's own (`private_folder()`: 0700, refused when anyone else owns it), so no other user can
read an answer or plant one.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final

from filelock import FileLock, Timeout

from harness.errors import CassetteError, CassetteWriteError

RUN_ID_VARIABLES: Final = ("HARNESS_RECORD_RUN_ID", "PYTEST_XDIST_TESTRUNUID")
"""Where a run's name is read from, first set first."""
RUN_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,127}")
"""One safe form: 1 to 128 ASCII letters, digits and `. _ : @ + = -`, starting with a letter or
digit, so a name is the same text in every file, process and language that reads it."""
LOCK_TIMEOUT_SECONDS: Final = 120.0
GRACE_VARIABLE: Final = "HARNESS_RECORD_RUN_GRACE_SECONDS"
GRACE_SECONDS: Final = 30.0


class RecordRunIdError(CassetteError, ValueError):
    """Raised when a recording run's name (`HARNESS_RECORD_RUN_ID`, `PYTEST_XDIST_TESTRUNUID` or a
    transport's `run_id=`) is not 1 to 128 ASCII letters, digits and `. _ : @ + = -` starting with
    a letter or digit: a carriage return, a space or a non-ASCII byte would make two processes of
    one run disagree about its name."""

    code: ClassVar[str] = "cassette_record_run_id_invalid"


def checked_run_id(value: str, source: str) -> str:
    """`value` when it is a run name in the one safe form (`RUN_ID_PATTERN`); raises
    `RecordRunIdError` naming `source` (the variable or argument it came from) otherwise."""
    if RUN_ID_PATTERN.fullmatch(value):
        return value
    shown = ascii(value) if len(value) <= 80 else ascii(value[:80]) + " ..."
    unsafe = next((f"character {i + 1} is {c!a}" for i, c in enumerate(value) if not _safe(c)), "")
    problem = (
        unsafe
        or (f"it is {len(value)} characters long" if len(value) > 128 else "")
        or f"it starts with {value[:1]!a}"
    )
    raise RecordRunIdError(
        f"expected {source} to be 1 to 128 ASCII letters, digits and . _ : @ + = - starting with "
        f"a letter or digit, such as nightly-2026-12-04, but got {shown} ({problem}); set it to "
        "such a name, or unset it to record in a run of its own"
    )


def _safe(character: str) -> bool:
    return character.isascii() and (character.isalnum() or character in "._:@+=-")


def given_run_id() -> str | None:
    """The run name set in the environment (`RUN_ID_VARIABLES`), checked; None when unset."""
    for variable in RUN_ID_VARIABLES:
        value = os.environ.get(variable)
        if value:
            return checked_run_id(value, variable)
    return None


def private_folder() -> Path:
    """This user's folder for what recording keeps outside the repository: the cassettes' locks
    and the runs' hand-offs. Created 0700; raises `CassetteWriteError` when it is not a folder,
    is a link, belongs to another user or is open to others (someone could read or plant the
    answers in it), naming the fix."""
    folder = Path(tempfile.gettempdir()) / f"harness-{_user()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError as error:
        raise CassetteWriteError(
            f"the recording folder {folder} cannot be created: {error.strerror or error}; set "
            "TMPDIR to a folder you can write to"
        ) from error
    problem = (
        "is not a folder"
        if not stat.S_ISDIR(info.st_mode)
        else f"belongs to user {info.st_uid}"
        if hasattr(os, "getuid") and info.st_uid != os.getuid()
        else f"is open to other users (mode {stat.S_IMODE(info.st_mode):o})"
        if os.name == "posix" and info.st_mode & 0o077
        else None
    )
    if problem is not None:
        raise CassetteWriteError(
            f"the recording folder {folder} {problem}: other users could read or plant the "
            "answers recorded there; remove it (it is made again, private), or set TMPDIR to a "
            "folder of your own"
        )
    return folder


def _user() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")


def _digest(text: str, length: int = 32) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


@dataclass(frozen=True, kw_only=True)
class RecordingRun:
    """A run this process has joined: its folder, and the nonce that tells it from an earlier run
    of the same name."""

    run_id: str
    folder: Path
    nonce: str

    @property
    def token(self) -> str:
        """What a cassette's save marker holds for this run: the name and the nonce hashed."""
        return _digest(f"{self.run_id}\n{self.nonce}")

    def handoff(self, cassette_name: str, key: str) -> tuple[Path, Path]:
        """The lock on one request to one cassette, and the file its answer is left in."""
        name = f"{cassette_name}.{key.removeprefix('sha256:')[:32]}"
        return self.folder / "locks" / f"{name}.lock", self.folder / "answers" / f"{name}.json"


@dataclass
class _Membership:
    run: RecordingRun
    member: FileLock
    pid: int


_JOINED: Final[dict[str, _Membership]] = {}
_JOINED_LOCK: Final = threading.Lock()
_swept: list[int] = []


def join_run(run_id: str) -> RecordingRun:
    """This process in the run named `run_id` (which must be checked), joined now if it was not.

    Joining is once per process (a forked child joins on its own); the process stays a member
    until it exits or calls `leave_runs()`. Raises `CassetteWriteError` when the run's folder
    cannot be made or its lock is held by a stuck process for `LOCK_TIMEOUT_SECONDS`.
    """
    with _JOINED_LOCK:
        joined = _JOINED.get(run_id)
        if joined is not None and joined.pid == os.getpid():
            return joined.run
        runs = private_folder() / "runs"
        runs.mkdir(mode=0o700, exist_ok=True)
        if os.getpid() not in _swept:
            _swept.append(os.getpid())
            _sweep(runs)
        folder = runs / _digest(run_id)
        with _run_lock(folder):
            if folder.exists() and not _has_live_members(folder) and not _resumable(folder):
                shutil.rmtree(folder, ignore_errors=True)  # a run over or killed: a new one
            (folder / "ended").unlink(missing_ok=True)
            nonce = _read_nonce(folder)
            if nonce is None:
                shutil.rmtree(folder, ignore_errors=True)
                for part in ("members", "locks", "answers"):
                    (folder / part).mkdir(mode=0o700, parents=True, exist_ok=True)
                nonce = uuid.uuid4().hex
                (folder / "nonce").write_text(nonce, encoding="ascii")
            member = FileLock(
                folder / "members" / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.lock",
                thread_local=False,
            )
            member.acquire(timeout=0)
        run = RecordingRun(run_id=run_id, folder=folder, nonce=nonce)
        _JOINED[run_id] = _Membership(run, member, os.getpid())
        return run


def leave_run(run_id: str) -> None:
    """Leave the run `run_id` if this process joined it. When it was the run's last process, the
    answers handed over in the run are removed at once; the run itself ends `grace_seconds()`
    later, unless a process joins it before then."""
    with _JOINED_LOCK:
        membership = _JOINED.get(run_id)
        if membership is None or membership.pid != os.getpid():
            return
        del _JOINED[run_id]
    _leave([membership])


def leave_runs() -> None:
    """Leave every run this process joined (`leave_run`). Called at exit."""
    with _JOINED_LOCK:
        mine = [m for m in _JOINED.values() if m.pid == os.getpid()]
        _JOINED.clear()
    _leave(mine)


def _leave(memberships: list[_Membership]) -> None:
    for membership in memberships:
        folder = membership.run.folder
        try:
            with _run_lock(folder):
                membership.member.release()
                Path(membership.member.lock_file).unlink(missing_ok=True)
                if not _has_live_members(folder):
                    for part in ("answers", "locks"):
                        for path in (folder / part).iterdir():
                            path.unlink(missing_ok=True)
                    # until when a process may still join: the leaver's grace, not the sweeper's
                    deadline = time.time() + grace_seconds()
                    (folder / "ended").write_text(f"{deadline:.3f}", encoding="ascii")
        except (OSError, CassetteError):  # swept by the next process to join a run
            continue


atexit.register(leave_runs)


@contextmanager
def _run_lock(folder: Path) -> Iterator[None]:
    """Hold the lock under which processes join and leave the run at `folder`."""
    lock = FileLock(f"{folder}.lock", thread_local=False)
    try:
        lock.acquire(timeout=LOCK_TIMEOUT_SECONDS)
    except Timeout:
        raise CassetteWriteError(
            f"the recording run folder {folder} has been locked by another process for "
            f"{LOCK_TIMEOUT_SECONDS:.0f} seconds; retry when it has finished"
        ) from None
    except OSError as error:
        raise CassetteWriteError(
            f"the recording run folder {folder} cannot be locked: {error.strerror or error}"
        ) from error
    try:
        yield
    finally:
        lock.release()


def _has_live_members(folder: Path) -> bool:
    """Whether a process holds its member lock in the run at `folder`; the locks of dead members
    are removed on the way."""
    live = False
    for path in (folder / "members").glob("*.lock"):
        probe = FileLock(path, thread_local=False)
        try:
            probe.acquire(timeout=0)
        except Timeout:
            live = True
            continue
        except OSError:
            continue
        probe.release()
        path.unlink(missing_ok=True)
    return live


def grace_seconds() -> float:
    """How long a run outlives its last process (`HARNESS_RECORD_RUN_GRACE_SECONDS`, default
    `GRACE_SECONDS`): a process started a moment after its siblings ended (workers started one
    after another, a parent that never records) still joins their run."""
    value = os.environ.get(GRACE_VARIABLE, "").strip()
    if not value:
        return GRACE_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 24 * 3600:
        raise CassetteWriteError(
            f"expected {GRACE_VARIABLE} to be a number of seconds from 0 to 86400 but got "
            f"{value[:40]!a}"
        )
    return seconds


def _resumable(folder: Path) -> bool:
    """Whether the run at `folder`, with no process in it, ended cleanly and is still within
    the grace its last process gave it."""
    try:
        deadline = float((folder / "ended").read_text(encoding="ascii"))
    except (OSError, ValueError):
        return False  # its processes were killed, or it is not a run's folder
    return time.time() <= deadline


def _read_nonce(folder: Path) -> str | None:
    try:
        nonce = (folder / "nonce").read_text(encoding="ascii")
    except (OSError, ValueError):
        return None
    return nonce if re.fullmatch(r"[0-9a-f]{32}", nonce) else None


def _sweep(runs: Path) -> None:
    """Remove the runs whose processes are all gone (killed before they could leave), once per
    process; a run whose lock another process holds is left for it."""
    for folder in runs.iterdir():
        if not folder.is_dir() or folder.is_symlink():
            continue
        lock = FileLock(f"{folder}.lock", thread_local=False)
        try:
            lock.acquire(timeout=0)
        except (Timeout, OSError):
            continue
        try:
            if not _has_live_members(folder) and not _resumable(folder):
                shutil.rmtree(folder, ignore_errors=True)
        finally:
            lock.release()
