"""The scenario library that ships with the harness: where it is, and a copy of it to extend.

The library is the repository's `scenarios/` and `cassettes/`. A wheel carries both as package
data in `harness/_library/` (the build's force-include, see `pyproject.toml`), laid out as in the
repository, so a scenario's `cassette: ../../cassettes/...` (relative to the scenario file) finds
the bundled cassette wherever the user runs it. An editable or development install has no
package data and reads the checkout's own folders instead. `bundled_library()` is the one place
that knows which.
"""

from __future__ import annotations

import importlib.resources
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final

from harness.errors import HarnessError
from harness.files import write_atomically

PACKAGED_FOLDER: Final = "_library"
"""The folder of the `harness` package that holds the library in an installed wheel."""
LIBRARY_FOLDERS: Final = ("scenarios", "cassettes")
"""What the library is made of, each a folder of its root, as in the repository."""
_SHOWN_CONFLICTS: Final = 3


class LibraryNotFoundError(HarnessError, FileNotFoundError):
    """Raised by `bundled_library()` (so by `harness library`, and by `harness run` or
    `run_scenarios` given no paths in a folder without `scenarios/`) when this installation of
    the harness holds no scenario library: a wheel built without it, or a checkout's `harness`
    package used away from the checkout's `scenarios/` and `cassettes/`."""

    code: ClassVar[str] = "library_not_found"


class LibraryCopyError(HarnessError, OSError):
    """Raised by `harness library copy` (`ScenarioLibrary.copy_to`) when a file of the library
    cannot be written into the destination folder; the message names the file and the reason."""

    code: ClassVar[str] = "library_copy_failed"


class LibraryCopyRefusedError(LibraryCopyError, FileExistsError):
    """Raised by `harness library copy` (`ScenarioLibrary.copy_to`) before it copies anything,
    when the destination already holds a file the library would write (allowed with `--force`),
    or holds something no copy may replace: a folder or file where the library needs the other,
    or the library's own files."""

    code: ClassVar[str] = "library_copy_refused"


class LibraryReadOnlyError(HarnessError, PermissionError):
    """Raised before anything runs when a run would record into the scenario library bundled
    with the harness: given no paths in a folder without `scenarios/` (`harness run` or
    `run_scenarios` with a record mode other than `none`, or `harness record`), or naming the
    library of an installed harness, which is part of the installation. Record into a copy
    (`harness library copy DIR`)."""

    code: ClassVar[str] = "library_read_only"


@dataclass(frozen=True, kw_only=True)
class LibraryCopy:
    """What `ScenarioLibrary.copy_to` wrote."""

    destination: Path
    files: tuple[Path, ...]
    """Every file written, under `destination`, in order."""
    overwritten: int
    """How many of them replaced a file that was there (only with `force`)."""


@dataclass(frozen=True, kw_only=True)
class ScenarioLibrary:
    """A scenario library: `root/scenarios/` and the cassettes its scenarios replay,
    `root/cassettes/`."""

    root: Path
    installed: bool
    """True for the package data of an installed wheel, which is part of the installation and
    never written; False for a checkout's own folders."""

    @property
    def scenarios(self) -> Path:
        return self.root / "scenarios"

    @property
    def cassettes(self) -> Path:
        return self.root / "cassettes"

    def files(self) -> list[Path]:
        """Every file of the library, relative to `root`, sorted."""
        return sorted(
            path.relative_to(self.root)
            for folder in LIBRARY_FOLDERS
            for path in (self.root / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        )

    def holds(self, path: Path) -> bool:
        """Whether `path` (resolved) lies inside this library."""
        return path.resolve().is_relative_to(self.root.resolve())

    def read_only(self, recording: str, path: Path | None = None) -> LibraryReadOnlyError:
        """The refusal of `recording` (what would write, as the user asked for it) into this
        library, or into its file `path`."""
        where = "" if path is None else f"{path}, in "
        kept = (
            "is part of the installed harness"
            if self.installed
            else "runs read-only from a folder without scenarios/"
        )
        return LibraryReadOnlyError(
            f"{recording} would record into {where}the bundled scenario library ({self.root}), "
            f"which {kept}: copy it with `harness library copy DIR` and record into the copy"
        )

    def copy_to(self, destination: Path, *, force: bool = False) -> LibraryCopy:
        """Copy the library into `destination` (created if missing) as `destination/scenarios/`
        and `destination/cassettes/`, so each scenario still finds its cassettes and
        `harness run` in `destination` runs the copy.

        Refuses with `LibraryCopyRefusedError`, before writing anything, when `destination`
        already holds a file the copy would write (unless `force`, which replaces it), or holds
        what no copy may replace: a folder where a file goes, a file where a folder goes, or the
        library's own files (copying it onto itself). Each file is written atomically; one that
        cannot be written raises `LibraryCopyError` naming it."""
        relative = self.files()
        conflicts = _conflicts(self.root, destination, relative)
        if conflicts and not force:
            shown = ", ".join(str(path) for path in conflicts[:_SHOWN_CONFLICTS])
            more = len(conflicts) - _SHOWN_CONFLICTS
            raise LibraryCopyRefusedError(
                f"{destination} already holds {len(conflicts)} of the library's files ({shown}"
                + (f" and {more} more" if more > 0 else "")
                + "): give --force (force=True) to overwrite them, or choose another folder"
            )
        written: list[Path] = []
        for path in relative:
            target = destination / path
            try:
                write_atomically(target, (self.root / path).read_bytes())
            except OSError as error:
                raise LibraryCopyError(
                    f"cannot write {target} ({error.strerror or error}); "
                    f"{len(written)} of the library's {len(relative)} files were copied"
                ) from None
            written.append(target)
        return LibraryCopy(
            destination=destination, files=tuple(written), overwritten=len(conflicts)
        )


def bundled_library() -> ScenarioLibrary:
    """The scenario library that came with this harness: `harness/_library/` of an installed
    wheel (package data, found with `importlib.resources`), else the `scenarios/` and
    `cassettes/` of the checkout an editable or development install runs from.

    Raises `LibraryNotFoundError` when neither holds it, or when the package is imported from an
    archive, where the library's files cannot be read as files."""
    package = importlib.resources.files("harness")
    if not isinstance(package, Path):
        raise LibraryNotFoundError(
            f"the harness package is imported from an archive ({package}); the bundled scenario "
            "library is read as files: install the harness as a wheel or from a checkout"
        )
    packaged = package / PACKAGED_FOLDER
    if packaged.is_dir():
        return ScenarioLibrary(root=packaged, installed=True)
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file() and all(
        (checkout / folder).is_dir() for folder in LIBRARY_FOLDERS
    ):
        return ScenarioLibrary(root=checkout, installed=False)
    raise LibraryNotFoundError(
        f"this harness bundles no scenario library: neither {packaged} (an installed wheel's) "
        f"nor {checkout / 'scenarios'} and {checkout / 'cassettes'} (a checkout's) exist; "
        "give the scenario files or folders to run"
    )


def check_recordable(paths: Iterable[Path], *, recording: str) -> None:
    """Raise `LibraryReadOnlyError` when one of `paths` lies in the scenario library of an
    installed harness (`ScenarioLibrary.refuse_recording`); a checkout's library, or none, is
    recorded into as any folder is."""
    try:
        library = bundled_library()
    except LibraryNotFoundError:
        return
    if library.installed:
        for path in paths:
            if library.holds(path):
                raise library.read_only(recording, path)


def _conflicts(root: Path, destination: Path, relative: list[Path]) -> list[Path]:
    """The files of `destination` a copy of the library would replace, in order; raises
    `LibraryCopyRefusedError` for what it may not replace."""
    if destination.resolve() == root.resolve():
        raise LibraryCopyRefusedError(
            f"{destination} is the bundled scenario library itself: copy it into another folder"
        )
    folders = {destination} | {(destination / path).parent for path in relative}
    for folder in sorted(folders):
        if os.path.lexists(folder) and not folder.is_dir():
            raise LibraryCopyRefusedError(
                f"{folder} is a file, where the library's copy needs a folder; remove it or "
                "choose another folder"
            )
    conflicts: list[Path] = []
    for path in relative:
        target = destination / path
        if not os.path.lexists(target):
            continue
        if target.is_dir():
            raise LibraryCopyRefusedError(
                f"{target} is a folder, where the library's copy needs its file {path}; remove "
                "it or choose another folder"
            )
        if target.exists() and os.path.samefile(target, root / path):
            raise LibraryCopyRefusedError(
                f"{target} is the library's own {path}: copy it into another folder than "
                f"{root}, the library itself"
            )
        conflicts.append(target)
    return conflicts
