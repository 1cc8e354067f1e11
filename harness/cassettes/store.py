"""Saving recordings safely: a file lock, a merge with what is on disk, an atomic write.

Several processes (pytest-xdist workers) may record into the same cassette at once. Each save
takes an inter-process lock, re-reads the file, appends its own new interactions (occurrences
renumbered per key), and writes the result atomically, so no process loses another's work.

Mode `all` replaces the file with this run's traffic alone. A *run* may span transports and
processes: its id is `HARNESS_RECORD_RUN_ID`, else pytest-xdist's `PYTEST_XDIST_TESTRUNUID`, else
one id per transport. The first `all` save of a run replaces what an earlier run left; later
`all` saves of the same run (other tests, other workers) merge into it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from filelock import FileLock, Timeout

from harness.cassettes.cassette import (
    FORMAT,
    Cassette,
    CassetteDocument,
    IdenticalRequests,
    Interaction,
    cassette_exists,
    new_metadata,
    renumber,
    write_atomically,
)
from harness.errors import CassetteError, CassetteWriteError

RUN_ID_VARIABLES: Final = ("HARNESS_RECORD_RUN_ID", "PYTEST_XDIST_TESTRUNUID")
LOCK_TIMEOUT_SECONDS: Final = 120.0


def current_run_id() -> str:
    """The id shared by every transport and process of this recording run (a new one if unset)."""
    for variable in RUN_ID_VARIABLES:
        value = os.environ.get(variable)
        if value:
            return value
    return uuid.uuid4().hex


def shared_run() -> bool:
    """Whether the recording run may span processes: its id is named in the environment
    (`RUN_ID_VARIABLES`)."""
    return any(os.environ.get(name) for name in RUN_ID_VARIABLES)


def lock_base(path: Path) -> Path:
    """Where the cassette at `path` keeps its locks and markers: outside the repository, so no
    lock file is ever committed by accident (a name, to which each use adds a suffix)."""
    folder = Path(tempfile.gettempdir()) / "harness-cassette-locks"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogatepass")).hexdigest()
    return folder / digest[:32]


@contextmanager
def lock_for(path: Path) -> Iterator[None]:
    """Hold the inter-process lock guarding writes to the cassette at `path`.

    Raises `CassetteWriteError` when the lock cannot be created, or another process holds it
    for longer than `LOCK_TIMEOUT_SECONDS`.
    """
    try:
        lock = FileLock(str(lock_base(path)) + ".lock", timeout=LOCK_TIMEOUT_SECONDS)
        lock.acquire()
    except Timeout:
        raise CassetteWriteError(
            f"cassette {path}: another process has held its lock for {LOCK_TIMEOUT_SECONDS:.0f} "
            "seconds; retry when it has finished saving"
        ) from None
    except OSError as error:
        raise CassetteWriteError(
            f"cassette {path}: its lock cannot be created: {error.strerror or error}"
        ) from error
    try:
        yield
    finally:
        lock.release()


def _merged_into(path: Path) -> Cassette | None:
    """The cassette new interactions are merged into: it must verify, or nothing is written."""
    return Cassette.load(path) if cassette_exists(path) else None


def _replaced(path: Path) -> Cassette | None:
    """The cassette a re-recording replaces, read only to leave identical content untouched.

    A corrupt or tampered file is what re-recording is for (the error said so), so it is simply
    replaced instead of failing after the live calls were made; a folder, FIFO or device at the
    path is not a cassette and is refused.
    """
    if not cassette_exists(path):
        return None
    try:
        return Cassette.load(path)
    except CassetteError:
        return None


def save_recording(
    path: Path,
    recorded: Sequence[Interaction],
    *,
    replace: bool,
    provider: str | None,
    run_id: str,
    saved: int = 0,
    identical_requests: IdenticalRequests | None = None,
) -> None:
    """Merge `recorded` into the cassette at `path` (or replace it, see the module docstring).

    `recorded` is everything one recorder recorded, of which an earlier save wrote the first
    `saved`: a merge appends only the rest, so saving twice never writes an interaction twice,
    and a replace writes them all. Unchanged content is not rewritten, so re-recording
    identical traffic leaves the file byte-identical, `recorded_at` included. A merge keeps the
    file's format (and so its request keys, which `recorded` must be keyed with); a replaced or
    new file is written in the current format. `identical_requests` is written to the metadata
    (a merge without it keeps the file's).

    Raises `CassetteFormatError` when the path is not a regular file or (merging) the file on
    disk is invalid, `CassetteTamperedError` when it does not verify, and `CassetteWriteError`
    when it cannot be written.
    """
    with lock_for(path):
        marker = Path(str(lock_base(path)) + ".run")
        same_run = marker.exists() and marker.read_text(encoding="utf-8") == run_id
        base: Sequence[Interaction]
        if replace and not same_run:
            existing, base, new = _replaced(path), [], recorded
            format = FORMAT
        else:
            existing = _merged_into(path)
            base = existing.interactions if existing is not None else []
            new = recorded[saved:]
            format = existing.format if existing is not None else FORMAT
        merged = renumber([*base, *new])
        previous = existing.metadata if existing is not None else None
        identical = identical_requests or (previous.identical_requests if previous else None)
        if (
            existing is None
            or [i.digest for i in merged] != [i.digest for i in existing.interactions]
            or identical != existing.metadata.identical_requests
        ):
            document = CassetteDocument(
                format=format,
                metadata=new_metadata(
                    provider or (previous.provider if previous else None), identical
                ),
                interactions=merged,
            )
            write_atomically(path, Cassette.from_document(path, document).dumps())
        if replace:
            marker.write_text(run_id, encoding="utf-8")
        else:
            marker.unlink(missing_ok=True)


def recorded_in_run(path: Path, run_id: str) -> bool:
    """Whether a re-recording (mode `all`) of this run has written the cassette at `path`."""
    marker = Path(str(lock_base(path)) + ".run")
    try:
        return marker.read_text(encoding="utf-8") == run_id
    except OSError:
        return False
