"""Reading and writing the harness's own files safely.

Reads take regular files only, within a size limit, and never block: a FIFO with no writer is
refused at once instead of hanging the run. Writes are atomic (the old file or the new one, never
a mix), durable, and keep the file's permission bits. Callers turn the `OSError`s raised here into
their own typed errors, which name the file and what to do.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from contextlib import suppress
from pathlib import Path
from typing import Final

_FILE_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotARegularFileError(OSError):
    """The path is a folder, FIFO, socket or device; `kind` says which, for the message."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(f"{path} is {kind}, not a regular file")
        self.kind = kind


class FileTooLargeError(OSError):
    """The file holds more than the caller's limit; `size` is what it held when refused."""

    def __init__(self, path: Path, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size:,} bytes, over the {limit:,}-byte limit")
        self.size = size
        self.limit = limit


def file_kind(mode: int) -> str:
    """`a folder`, `a FIFO (named pipe)`, ... for a `st_mode` that is not a regular file."""
    return next((name for is_kind, name in _FILE_KINDS if is_kind(mode)), "not a regular file")


def regular_file_exists(path: Path) -> bool:
    """Whether a regular file is at `path`; False when nothing is. Anything else there raises
    `NotARegularFileError`; a path that cannot be looked at raises its `OSError`."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(mode):
        raise NotARegularFileError(path, file_kind(mode))
    return True


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path`, at most `max_bytes` of them.

    The file is opened without blocking and checked before the first read; a folder, FIFO,
    socket or device raises `NotARegularFileError`, a larger file `FileTooLargeError` (also when
    it grows while being read), anything the system refuses its `OSError`.
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        mode = stat.S_IFREG
        with suppress(OSError):  # a socket cannot be opened at all: say what it is instead
            mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFileError(path, file_kind(mode)) from None
        raise
    try:
        info = os.fstat(descriptor)  # before open(), which refuses a folder its own way
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFileError(path, file_kind(info.st_mode))
    except BaseException:
        os.close(descriptor)
        raise
    with open(descriptor, "rb") as stream:
        if info.st_size > max_bytes:
            raise FileTooLargeError(path, info.st_size, max_bytes)
        # One byte more than fstat saw notices a file still growing; never `read(max_bytes)`,
        # which would allocate the whole limit up front.
        data = stream.read(info.st_size + 1)
        if len(data) > info.st_size:
            data += stream.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise FileTooLargeError(path, len(data), max_bytes)
    return data


def write_atomically(path: Path, data: bytes, *, remove_stale: bool = False) -> None:
    """Write `data` to `path` so a crash leaves the old file or the new one, never a mix.

    A temporary file in the same folder (`.<name>.<16 hex>.tmp`) is written and fsynced, renamed
    over `path`, and the folder is fsynced so the rename itself is durable. An existing file
    keeps its permission bits; a new one gets the usual mode for the process's umask. A failure
    raises its `OSError` and leaves no temporary file behind. With `remove_stale`, temporary
    files of `path` that killed processes left are removed first: only for callers that hold a
    lock every writer of `path` takes, since otherwise one may belong to a live writer.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if remove_stale:
        _remove_stale_temporaries(path)
    try:
        kept_mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        kept_mode = None
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with open(descriptor, "wb") as stream:
            if kept_mode is not None:
                os.fchmod(descriptor, kept_mode)
            stream.write(data)
            stream.flush()
            os.fsync(descriptor)
        os.replace(temporary, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _remove_stale_temporaries(path: Path) -> None:
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{16}}\.tmp")
    with os.scandir(path.parent) as entries:
        for entry in entries:
            if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                with suppress(FileNotFoundError):
                    os.unlink(entry.path)
