"""What a run played of each cassette, and pruning a cassette down to it.

A transport opened while `HARNESS_CASSETTE_USAGE` names a file appends one line to it as it
closes: the cassette, the interactions it played (key and occurrence) and the requests it
recorded. The pytest plugin sets the variable for every session (`.harness/cassette-usage.jsonl`
under the rootdir, started afresh by each session, its xdist workers writing to the same file)
and ends the file with a line saying whether the session ran every test and how many failed.
`harness serve`, `harness run` and any script log the same way when the variable is set.

`prune` drops from a cassette what no transport of the logged run played: the interactions of
tests deleted or changed since the recording. It refuses a log of a run that selected a part of
the suite (`-k`, node ids, `--lf`) or had failing tests, whose unplayed interactions may belong
to tests that did not run to the end, unless told that the part is what is meant.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Final, Literal

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from harness.cassettes.cassette import (
    Cassette,
    CassetteDocument,
    Interaction,
    renumber,
    write_atomically,
)
from harness.cassettes.store import lock_for
from harness.errors import CassetteError
from harness.files import read_regular_file

USAGE_VARIABLE: Final = "HARNESS_CASSETTE_USAGE"
"""The file each transport appends what it played to, as it closes (unset: nothing is logged)."""
MAX_USAGE_BYTES: Final = 256 * 1024 * 1024
"""The largest usage log `read_usage` reads: a run of a million requests stays well under it."""


class CassetteUsageError(CassetteError, ValueError):
    """Raised when a cassette usage log cannot be read (missing, not a log, a line that is no
    record), or says nothing of a cassette to prune, or comes from a run that ran only a part of
    the suite or had failures."""

    code = "cassette_usage_invalid"


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CassetteUse(_Record):
    """One transport's use of one cassette: a line of the usage log."""

    kind: Literal["cassette"] = "cassette"
    cassette: str
    """The cassette's path: relative to the working folder when inside it, else absolute."""
    played: list[tuple[str, int]]
    """Each interaction played: its key and occurrence."""
    recorded: list[str] = Field(default_factory=list)
    """The keys of the requests recorded into it."""


class RunSummary(_Record):
    """The last line of a pytest session's log: whether it ran the whole suite."""

    kind: Literal["run"] = "run"
    complete: bool
    """Every collected test of the suite was selected (no `-k`, `-m`, node ids, `--lf`, nor
    a folder or file narrower than the suite's), and none was deselected."""
    failed: int
    selection: str | None = None
    """What narrowed the run, as the user wrote it (`-k claude`), when it was narrowed."""


UsageLine = Annotated[CassetteUse | RunSummary, Field(discriminator="kind")]
_LINE: Final = TypeAdapter(UsageLine)


def shown_path(path: Path) -> str:
    """`path` as a usage log names it: relative to the working folder when inside it."""
    absolute = path.absolute()
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


def log_use(path: Path, played: Iterable[tuple[str, int]], recorded: Iterable[str]) -> None:
    """Append one transport's use of the cassette at `path` to the usage log, when
    `HARNESS_CASSETTE_USAGE` names one; a log that cannot be written is a `CassetteUsageError`
    (a pruned cassette must never rest on a log that lost lines)."""
    log = os.environ.get(USAGE_VARIABLE)
    if not log:
        return
    line = CassetteUse(
        cassette=shown_path(path), played=sorted(set(played)), recorded=sorted(set(recorded))
    )
    append_line(Path(log), line)


def append_line(log: Path, line: CassetteUse | RunSummary) -> None:
    """Append `line` under the log's lock: processes of one run (xdist workers, a server's
    sessions) write whole lines, never interleaved."""
    data = line.model_dump_json().encode("utf-8") + b"\n"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(log) + ".lock", timeout=60), log.open("ab") as file:
            file.write(data)
    except OSError as error:
        raise CassetteUsageError(
            f"the cassette usage log {log} ({USAGE_VARIABLE}) cannot be written: "
            f"{error.strerror or error}"
        ) from error


@dataclass
class Usage:
    """What one or more usage logs say: per cassette (as the log names it), the interactions
    played and the requests recorded; and the runs' summaries."""

    played: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    recorded: dict[str, set[str]] = field(default_factory=dict)
    runs: list[tuple[Path, RunSummary]] = field(default_factory=list)

    def of(self, cassette: Path) -> tuple[set[tuple[str, int]], set[str]] | None:
        """What the logs say of `cassette`, named as `shown_path` names it or by the same
        absolute path; None when no transport of theirs opened it."""
        names = {shown_path(cassette), cassette.absolute().as_posix()}
        found = [name for name in self.played if name in names]
        if not found:
            return None
        played = set().union(*(self.played[name] for name in found))
        recorded = set().union(*(self.recorded[name] for name in found))
        return played, recorded


def read_usage(logs: Sequence[Path]) -> Usage:
    """The usage the logs record together (a run's log, or several runs' that share a cassette).

    Raises `CassetteUsageError` naming the file and line for a log that is missing, too large,
    not UTF-8 or holds a line that is no usage record."""
    usage = Usage()
    for log in logs:
        try:
            text = read_regular_file(log, MAX_USAGE_BYTES).decode("utf-8")
        except OSError as error:
            raise CassetteUsageError(
                f"the cassette usage log {log} cannot be read: {error.strerror or error}; a "
                f"replay run leaves it where {USAGE_VARIABLE} points (the pytest plugin: "
                ".harness/cassette-usage.jsonl)"
            ) from error
        except UnicodeDecodeError as error:
            raise CassetteUsageError(
                f"the cassette usage log {log} is not UTF-8 (byte {error.start}): not a log a "
                "run left"
            ) from None
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                line = _LINE.validate_json(raw)
            except ValidationError as error:
                problem = error.errors()[0]["msg"]
                raise CassetteUsageError(
                    f"{log}:{number}: not a cassette usage record ({problem}); give the file "
                    f"a replay run left ({USAGE_VARIABLE})"
                ) from None
            if isinstance(line, RunSummary):
                usage.runs.append((log, line))
            else:
                usage.played.setdefault(line.cassette, set()).update(
                    (key, occurrence) for key, occurrence in line.played
                )
                usage.recorded.setdefault(line.cassette, set()).update(line.recorded)
    return usage


def partial_runs(usage: Usage) -> list[str]:
    """Why the logged runs do not show what the whole suite plays: one line per run that
    selected a part of the suite or had failing tests."""
    reasons = []
    for log, run in usage.runs:
        why = []
        if not run.complete:
            why.append(f"it ran a part of the suite ({run.selection or 'tests deselected'})")
        if run.failed:
            why.append(f"{run.failed} test(s) failed")
        if why:
            reasons.append(f"{log}: " + " and ".join(why))
    return reasons


@dataclass(frozen=True)
class Pruned:
    """What `prune` dropped (or, dry, would drop) from one cassette."""

    cassette: Path
    held: int
    dropped: list[Interaction]


def prune(cassette: Path, usage: Usage, *, dry_run: bool = False) -> Pruned:
    """Drop the interactions of `cassette` that no transport of the logged runs played or
    recorded; renumber what is left per request and write it atomically under the cassette's
    lock (a signing key in the environment signs it again). Nothing is written when nothing
    would be dropped, or with `dry_run`.

    Raises `CassetteUsageError` when no transport of the logs opened the cassette (pruning by
    them would empty it), and what `Cassette.load` raises for a cassette that does not verify:
    a tampered recording is never rewritten as if it were sound."""
    used = usage.of(cassette)
    if used is None:
        raise CassetteUsageError(
            f"cassette {cassette}: no test of the logged run opened it, so every interaction "
            "would be dropped; give the usage log of a run that replays it (a cassette no test "
            "uses any more is deleted, not pruned)"
        )
    played, recorded = used
    with lock_for(cassette):
        loaded = Cassette.load(cassette)
        kept: list[Interaction] = []
        dropped: list[Interaction] = []
        for interaction in loaded.interactions:
            if (interaction.key, interaction.occurrence) in played or interaction.key in recorded:
                kept.append(interaction)
            else:
                dropped.append(interaction)
        if dropped and not dry_run:
            document = CassetteDocument(
                format=loaded.format, metadata=loaded.metadata, interactions=renumber(kept)
            )
            write_atomically(cassette, Cassette.from_document(cassette, document).dumps())
    return Pruned(cassette, len(loaded.interactions), dropped)
