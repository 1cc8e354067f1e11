"""Saving recordings safely: a file lock, a merge with what is on disk, an atomic write.

Several processes (pytest-xdist workers) may record into the same cassette at once. Each save
takes an inter-process lock, re-reads the file, appends its own new interactions (occurrences
renumbered per key), and writes the result atomically, so no process loses another's work.

Mode `all` replaces the file with this run's traffic alone. A *run* may span transports and
processes (`harness.cassettes.recording_run`): the first `all` save of a run replaces what an
earlier run left, even one of the same name; later `all` saves of the same run (other tests,
other workers) merge into it. A re-recording of a part of a suite (`replace_requests`: `-k`,
a list of tests) replaces only the requests the run sends: each request it records loses what
an earlier run recorded for it, and every other interaction is kept.

An answer a recorder played from another (an identical request, `harness.cassettes.sharing`) is
saved by every recorder that played it, so no answer is lost when the one that recorded it dies
before it saves; a merge writes it once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator, Sequence
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
from harness.cassettes.recording_run import private_folder
from harness.errors import CassetteError, CassetteWriteError

LOCK_TIMEOUT_SECONDS: Final = 120.0


def lock_base(path: Path) -> Path:
    """Where the cassette at `path` keeps its lock and save marker: in this user's private
    recording folder, outside the repository, so no lock file is ever committed by accident (a
    name, to which each use adds a suffix)."""
    folder = private_folder() / "cassettes"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as error:
        raise CassetteWriteError(
            f"cassette {path}: its lock folder {folder} cannot be created: "
            f"{error.strerror or error}"
        ) from error
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
    run_token: str,
    saved: int = 0,
    identical_requests: IdenticalRequests | None = None,
    once_each: Collection[int] = (),
    replace_requests: bool = False,
) -> None:
    """Merge `recorded` into the cassette at `path` (or replace it, see the module docstring).

    `recorded` is everything one recorder recorded, of which an earlier save wrote the first
    `saved`: a merge appends only the rest, so saving twice never writes an interaction twice,
    and a replace writes them all. Unchanged content is not rewritten, so re-recording
    identical traffic leaves the file byte-identical, `recorded_at` included. A merge keeps the
    file's format (and so its request keys, which `recorded` must be keyed with); a replaced or
    new file is written in the current format. `identical_requests` is written to the metadata
    (a merge without it keeps the file's).

    `once_each` are the indexes in `recorded` of interactions written only where the file (or
    this save) does not hold the same request and answer already: the answers of a shared
    cassette, which every recorder that played one keeps.
    `run_token` is the run's (`RecordingRun.token`), kept beside the file as the save marker.
    With `replace` and `replace_requests`, the file is not replaced but each request in
    `recorded` replaces what runs before this one recorded for it (a part of a suite
    re-recorded); the marker lists what this run wrote (`recorded_by_run`).

    Raises `CassetteFormatError` when the path is not a regular file or (merging) the file on
    disk is invalid, `CassetteTamperedError` when it does not verify, and `CassetteWriteError`
    when it cannot be written.
    """
    with lock_for(path):
        creates = not cassette_exists(path)
        marker = Path(str(lock_base(path)) + ".run")
        same_run = _marker_token(marker) == run_token
        base: Sequence[Interaction]
        if replace and replace_requests:
            existing = _merged_into(path)
            ours = _run_answers(marker) if same_run else set()
            sent = {interaction.key for interaction in recorded}
            base = [
                interaction
                for interaction in (existing.interactions if existing is not None else [])
                if interaction.key not in sent or (interaction.key, answer_of(interaction)) in ours
            ]
            first = saved if same_run else 0
            format = existing.format if existing is not None else FORMAT
        elif replace and not same_run:
            existing, base, first = _replaced(path), [], 0
            format = FORMAT
        else:
            existing = _merged_into(path)
            base = existing.interactions if existing is not None else []
            first = saved
            format = existing.format if existing is not None else FORMAT
        new = _without_known_answers(base, recorded, first, once_each)
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
            answers = (_run_answers(marker) if same_run else set()) | {
                (interaction.key, answer_of(interaction)) for interaction in new
            }
            marker.write_bytes(
                "\n".join(
                    [run_token, *(f"{key} {answer}" for key, answer in sorted(answers))]
                ).encode("ascii")
            )
        else:
            marker.unlink(missing_ok=True)
        if creates:  # mode `once` goes on recording into it for the rest of this run
            Path(str(lock_base(path)) + ".created").write_bytes(run_token.encode("ascii"))


def _without_known_answers(
    base: Sequence[Interaction],
    recorded: Sequence[Interaction],
    first: int,
    once_each: Collection[int],
) -> list[Interaction]:
    """`recorded[first:]`, less each of `once_each` that `base` or an earlier one holds already."""
    keys = {recorded[index].key for index in once_each if index >= first}
    if not keys:
        return list(recorded[first:])
    known = {(i.key, answer_of(i)) for i in base if i.key in keys}
    new: list[Interaction] = []
    for index in range(first, len(recorded)):
        interaction = recorded[index]
        if interaction.key in keys:
            answer = (interaction.key, answer_of(interaction))
            if index in once_each and answer in known:
                continue
            known.add(answer)
        new.append(interaction)
    return new


def answer_of(interaction: Interaction) -> str:
    """What makes two recordings of one request the same answer (the digest leaves out the
    occurrence, which a merge renumbers)."""
    return interaction.with_occurrence(1).digest


def _marker_token(marker: Path) -> str | None:
    """The run token a marker names (its first line)."""
    try:
        return marker.read_bytes().decode("ascii").split("\n", 1)[0]
    except (OSError, ValueError):
        return None


def _run_answers(marker: Path) -> set[tuple[str, str]]:
    """What the run of a re-recording marker wrote: (key, answer) of each interaction."""
    try:
        lines = marker.read_bytes().decode("ascii").split("\n")[1:]
    except (OSError, ValueError):
        return set()
    return {(key, answer) for key, _, answer in (line.partition(" ") for line in lines) if answer}


def recorded_by_run(path: Path, run_token: str) -> set[tuple[str, str]]:
    """The (key, answer) of each interaction the re-recording run `run_token` wrote into the
    cassette at `path` (none when another run, or none, wrote it last): what a transport of the
    same run replays of it, while every other interaction is re-recorded."""
    marker = Path(str(lock_base(path)) + ".run")
    return _run_answers(marker) if _marker_token(marker) == run_token else set()


def created_in_run(path: Path, run_token: str) -> bool:
    """Whether the cassette at `path` was created by a save of the run whose token is
    `run_token` (so mode `once` records into it for the rest of that run, and never after)."""
    return _marker_token(Path(str(lock_base(path)) + ".created")) == run_token


def recorded_in_run(path: Path, run_token: str) -> bool:
    """Whether a re-recording (mode `all`) of the run whose token is `run_token` has written the
    cassette at `path`."""
    return _marker_token(Path(str(lock_base(path)) + ".run")) == run_token
