"""Reporting cell results: terminal lines, JUnit XML, and JSON."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.errors import HarnessError
from harness.files import write_atomically
from harness.json_body import JsonFileError, read_json_file
from harness.scenarios.bundled import LIBRARY_FOLDERS, LibraryNotFoundError, bundled_library
from harness.scenarios.expect import ABSENT
from harness.scenarios.run import CellResult
from harness.scrub import Scrubber, environment_scrubber, redact


class ReportPathError(HarnessError, ValueError):
    """A report file (`--json`, `--junit-xml`, `--html`) cannot be written where it was asked
    for."""

    code = "report_path_invalid"


def check_report_paths(reports: Mapping[str, Path | None]) -> None:
    """Make sure every report (option -> path) can be written before anything runs, so a typo
    never costs a whole run: each folder is created, must take a new file, and the path must not
    be a folder or a special file; two reports may not share one file. Nothing is written to the
    report paths themselves. Raises `ReportPathError` naming the option and the cause."""
    claimed: dict[Path, str] = {}
    for option, path in reports.items():
        if path is None:
            continue
        _check_writable(option, path)
        resolved = path.resolve()
        if resolved in claimed:
            raise ReportPathError(
                f"{option} {path}: {claimed[resolved]} already writes that file; give each "
                "report its own path"
            )
        claimed[resolved] = option


def _check_writable(option: str, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not path.is_file():
            raise IsADirectoryError(0, "it is a folder" if path.is_dir() else "not a regular file")
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        raise ReportPathError(
            f"{option} {path}: cannot write a report there ({reason}); choose a file path in a "
            "writable folder"
        ) from None


LIBRARY_MARK: Final = "<library>"
"""How a report names the folder of the scenario library bundled with the harness, which
`harness library path` prints: `<library>/scenarios/runtimes/temporal.yaml`."""


class ScenarioPaths:
    """How reports name scenario files, each worked out once.

    What a terminal shows (`shown`): a file inside the working folder relative to it
    (`scenarios/forced/budgets.yaml`), a file of the bundled library elsewhere (a wheel's, in
    site-packages) as `<library>/scenarios/...`, and any other file as it was given. What a
    JSON or JUnit report holds (`reported`): relative to the working folder inside it, else
    absolute, so that it names the file wherever the report is read."""

    def __init__(self, workdir: Path | None = None) -> None:
        self._workdir = Path.cwd() if workdir is None else workdir
        self._library: Path | None = None
        self._library_looked_up = False
        self._shown: dict[Path, str] = {}
        self._reported: dict[Path, str] = {}

    def shown(self, path: Path) -> str:
        known = self._shown.get(path)
        if known is None:
            known = self._shown[path] = self._show(path)
        return known

    def reported(self, path: Path) -> str:
        known = self._reported.get(path)
        if known is None:
            inside = _relative_to(path, self._workdir)
            known = os.path.abspath(path) if inside is None else inside.as_posix()
            self._reported[path] = known
        return known

    def _show(self, path: Path) -> str:
        inside = _relative_to(path, self._workdir)
        if inside is not None:
            return inside.as_posix()
        library = self._library_root()
        in_library = None if library is None else _relative_to(path, library)
        # only its scenarios/ and cassettes/: a checkout's root, the library of an editable
        # install, holds more
        if in_library is not None and in_library.parts and in_library.parts[0] in LIBRARY_FOLDERS:
            return f"{LIBRARY_MARK}/{in_library.as_posix()}"
        return str(path)

    def _library_root(self) -> Path | None:
        if not self._library_looked_up:
            self._library_looked_up = True
            try:
                self._library = bundled_library().root
            except LibraryNotFoundError:
                self._library = None
        return self._library


def _relative_to(path: Path, folder: Path) -> PurePath | None:
    """`path` relative to `folder` when it lies inside it, as written or once links are
    resolved (`/tmp` may be a link to `/private/tmp`), else None."""
    absolute, base = Path(os.path.abspath(path)), Path(os.path.abspath(folder))
    if absolute.is_relative_to(base):
        return absolute.relative_to(base)
    try:
        resolved, resolved_base = absolute.resolve(), base.resolve()
    except (OSError, RuntimeError):  # a link loop: the path is shown as given
        return None
    if resolved.is_relative_to(resolved_base):
        return resolved.relative_to(resolved_base)
    return None


def failure_lines(result: CellResult, *, paths: ScenarioPaths | None = None) -> list[str]:
    """`file:line id: expect.key: expected X, got Y` for each mismatch (or the error), with
    secrets redacted (`harness.scrub.redact`), as everywhere a report is printed. The file is
    named as a terminal shows it (`ScenarioPaths.shown`). A cell that passed or was skipped has
    none."""
    if not (result.mismatches or result.differences or result.error is not None):
        return []
    loaded = result.cell.loaded
    file = (paths or ScenarioPaths()).shown(loaded.path)
    lines = [
        f"{file}:{loaded.line_of(m.key)} {result.cell.id}: expect.{m.key}: "
        f"expected {_short(m.expected)}, got {_short(m.actual)}"
        for m in result.mismatches
    ]
    where = f"{file}:{loaded.line} {result.cell.id}"
    lines.extend(
        f"{where}: differs from the reference: {difference}" for difference in result.differences
    )
    if result.error is not None:
        lines.append(f"{where}: {result.error}")
    if lines and (result.misses or result.causes):
        # the cause first: what the target asked that the cassette or script could not answer,
        # each once, and not again where a later line quotes it (the target's error message)
        caused = [f"{where}: {cause}" for cause in result.causes]
        for miss in dict.fromkeys(result.misses):
            first, *rest = miss.splitlines()
            caused.append(f"{where}: the target's request was not answered: {first}")
            caused.extend(f"    {line}" for line in rest)
            lines = [line.replace(first, "(the request not answered, above)") for line in lines]
        lines = caused + lines
    if lines and result.stderr:
        lines.append(f"{where}: the target's stderr:")
        lines.extend(f"    {line}" for line in result.stderr.splitlines())
    if lines and result.run_id is not None:
        kept = f" ({result.kept_in})" if result.kept_in else ""
        lines.append(
            f"{where}: its run is kept in the {result.cell.store} store{kept} as run_id "
            f"{result.run_id!r}"
        )
    return [redact(line) for line in lines]


def skip_lines(results: Sequence[CellResult], *, paths: ScenarioPaths | None = None) -> list[str]:
    """`file:line id: skipped: reason` for each skipped cell and skipped expectation (what
    `harness run --verbose` prints; `skip_summary` counts them instead), the file named as a
    terminal shows it (`ScenarioPaths.shown`)."""
    paths = paths or ScenarioPaths()
    lines: list[str] = []
    for result in results:
        loaded = result.cell.loaded
        where = f"{paths.shown(loaded.path)}:{loaded.line} {result.cell.id}"
        if result.skipped is not None:
            lines.append(f"{where}: skipped: {result.skipped}")
        lines.extend(f"{where}: skipped {reason}" for reason in result.skipped_expectations)
    return [redact(line) for line in lines]


def skip_summary(results: Sequence[CellResult]) -> list[str]:
    """The skips counted, one line per reason, the most frequent first (ties in the order the
    run met them): `412 cells: the target does not declare the feature(s) faults
    (hello.features)` for skipped cells, `expect.crashes in 3 cells: the target does not report
    it (counters)` for skipped expectations. What `harness run` prints without `--verbose`."""
    cells: Counter[str] = Counter()
    expectations: Counter[tuple[str, str]] = Counter()
    for result in results:
        if result.skipped is not None:
            cells[result.skipped] += 1
        for reason in result.skipped_expectations:
            key, _, why = reason.partition(": ")
            expectations[(key, why)] += 1
    lines = [f"{_cells(count)}: {reason}" for reason, count in cells.most_common()]
    lines.extend(
        f"{key} in {_cells(count)}: {why}" if why else f"{key} in {_cells(count)}"
        for (key, why), count in expectations.most_common()
    )
    return [redact(line) for line in lines]


def _cells(count: int) -> str:
    return f"{count:,} cell" + ("" if count == 1 else "s")


def summary(results: Sequence[CellResult]) -> dict[str, int]:
    """Counts: cells, passed, failed, skipped (cells), skipped expectations, errors."""
    return _counts(
        (r.passed, r.skipped is not None, r.error is not None, len(r.skipped_expectations))
        for r in results
    )


def _counts(cells: Iterable[tuple[bool, bool, bool, int]]) -> dict[str, int]:
    """The summary of cells given as (passed, skipped, errored, skipped expectations)."""
    rows = list(cells)
    passed = sum(1 for row in rows if row[0])
    skipped = sum(1 for row in rows if row[1])
    return {
        "cells": len(rows),
        "passed": passed,
        "failed": len(rows) - passed - skipped,
        "skipped": skipped,
        "skipped_expectations": sum(row[3] for row in rows),
        "errors": sum(1 for row in rows if row[2]),
    }


def to_json(results: Sequence[CellResult]) -> dict[str, Any]:
    """The JSON report: the counts, and every cell with its file (`ScenarioPaths.reported`:
    relative to the working folder inside it, else absolute) and its failure lines as a
    terminal shows them."""
    paths = ScenarioPaths()
    return {
        "summary": summary(results),
        "cells": [
            {
                "id": r.cell.id,
                "scenario": r.cell.loaded.scenario.name,
                "file": paths.reported(r.cell.loaded.path),
                "line": r.cell.loaded.line,
                "runtime": r.cell.runtime,
                "store": r.cell.store,
                "engine": r.engine,
                "passed": r.passed,
                "skipped": r.skipped,
                "skipped_expectations": r.skipped_expectations,
                "stderr": r.stderr or None,
                "differences_from_reference": r.differences,
                "duration_seconds": round(r.duration, 6),
                "error": r.error,
                "error_code": r.error_code,
                "run_id": r.run_id,
                "kept_in": r.kept_in,
                "failure_lines": failure_lines(r, paths=paths),
                "mismatches": [
                    {
                        "key": m.key,
                        "line": r.cell.loaded.line_of(m.key),
                        "expected": _jsonable(m.expected),
                        "actual": _jsonable(m.actual),
                    }
                    for m in r.mismatches
                ],
            }
            for r in results
        ],
    }


def write_json(results: Sequence[CellResult], path: Path) -> None:
    """Write the JSON report atomically (a reader sees the previous report or this one, whole),
    with secrets redacted."""
    write_report_json(to_json(results), path)


def write_junit(results: Sequence[CellResult], path: Path) -> None:
    write_junit_report(to_json(results), path)


def write_junit_report(report: dict[str, Any], path: Path) -> None:
    """Write a JSON report (`to_json`, or shards merged) as JUnit XML, atomically. Every text
    that goes into it passes through `_xml`: secrets redacted, only characters XML allows."""
    import xml.etree.ElementTree as ElementTree  # its XML parser takes a while to load

    scrubber = environment_scrubber()

    def text(value: str) -> str:
        return _xml(value, scrubber)

    counts = report["summary"]
    suite = ElementTree.Element(
        "testsuite",
        name="harness",
        tests=str(counts["cells"]),
        skipped=str(counts["skipped"]),
        failures=str(counts["failed"] - counts["errors"]),
        errors=str(counts["errors"]),
        time=f"{sum(cell['duration_seconds'] for cell in report['cells']):.3f}",
    )
    for cell in report["cells"]:
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=text(Path(cell["file"]).stem),
            name=text(cell["id"]),
            file=text(cell["file"]),
            line=str(cell["line"]),
            time=f"{cell['duration_seconds']:.3f}",
        )
        properties = ElementTree.SubElement(case, "properties")
        ElementTree.SubElement(
            properties, "property", name="engine", value=text(cell.get("engine", "simulated"))
        )
        lines = text("\n".join(cell["failure_lines"]))
        if cell["skipped"] is not None:
            ElementTree.SubElement(case, "skipped", message=text(cell["skipped"]))
        elif cell["error"] is not None:
            first_line = (cell["error"].splitlines() or [""])[0]
            error = ElementTree.SubElement(case, "error", message=text(first_line))
            error.text = lines
        elif not cell["passed"]:
            failed = len(cell["mismatches"]) + len(cell["differences_from_reference"])
            failure = ElementTree.SubElement(
                case, "failure", message=f"{failed} expectation(s) failed"
            )
            failure.text = lines
    root = ElementTree.Element("testsuites")
    root.append(suite)
    data = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    write_atomically(path, data + b"\n")


class ReportMergeError(HarnessError, ValueError):
    """A report to merge cannot be read, is not a `harness run --json` report, or repeats a cell
    another report already has."""

    code = "report_merge_invalid"


class _ReportCell(BaseModel):
    """What `harness report merge` and the JUnit XML read of a cell of a `--json` report,
    checked before anything is merged, so a report cut short or written by hand is refused
    naming the file instead of failing half-way through the JUnit XML. The cell's other members
    are carried into the merged report as they are (extra members are allowed: a newer harness
    may write more of them)."""

    model_config = ConfigDict(strict=True, frozen=True, extra="allow")

    id: str
    file: str
    line: int
    passed: bool
    skipped: str | None
    error: str | None
    duration_seconds: float
    failure_lines: list[str]
    mismatches: list[Any]
    differences_from_reference: list[str]
    skipped_expectations: list[str] = []
    engine: Literal["simulated", "real"] = "simulated"


class _Report(BaseModel):
    """A `--json` report as `harness report merge` reads it: its cells (the summary is counted
    again)."""

    model_config = ConfigDict(strict=True, frozen=True, extra="allow")

    cells: list[_ReportCell]


def merge_reports(paths: Sequence[Path]) -> dict[str, Any]:
    """The JSON reports of several runs (shards) as one: every cell once, with the summary
    counted again, in the order one run of them all reports them (by scenario file, then by
    line; a scenario's cells are in one shard, in their own order), whatever order the reports
    are given in. Each is read by `read_json_file` (a regular file within the JSON limits) and
    checked to be a report; a problem is a `ReportMergeError` naming the file and the field."""
    cells: list[dict[str, Any]] = []
    seen: dict[str, Path] = {}
    for path in paths:
        try:
            report = read_json_file(path)
            if not isinstance(report, dict):
                raise ReportMergeError(
                    f"{path}: not a harness run --json report (it holds {_json_kind(report)}, "
                    "not an object); merge the files --json wrote"
                )
            _Report.model_validate(report)
        except JsonFileError as error:
            raise ReportMergeError(f"{error}; merge the files --json wrote") from None
        except ValidationError as error:
            problem = error.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise ReportMergeError(
                f"{path}: not a harness run --json report (at {where}: {problem['msg']}); merge "
                "the files --json wrote"
            ) from None
        found: list[dict[str, Any]] = report["cells"]
        for cell in found:
            identifier = cell["id"]
            if identifier in seen:
                raise ReportMergeError(
                    f"{path}: cell {identifier} is also in {seen[identifier]}; merge each shard's "
                    "report once"
                )
            seen[identifier] = path
            cells.append(cell)
    cells.sort(key=_run_position)  # stable: a scenario's cells keep their order
    counts = _counts(
        (
            bool(cell["passed"]),
            cell.get("skipped") is not None,
            cell.get("error") is not None,
            len(cell.get("skipped_expectations") or []),
        )
        for cell in cells
    )
    return {"summary": counts, "cells": cells}


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "a number"


def _run_position(cell: dict[str, Any]) -> tuple[PurePath, int]:
    """Where a run reports `cell`: scenario files in path order (as `harness run` loads them),
    then by line."""
    return PurePath(cell["file"]), cell["line"]


def write_report_json(report: dict[str, Any], path: Path) -> None:
    """Write a JSON report atomically, secrets redacted."""
    text = redact(json.dumps(report, indent=2, ensure_ascii=False)) + "\n"
    write_atomically(path, text.encode("utf-8"))


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str, scrubber: Scrubber) -> str:
    """`text` as the JUnit XML holds it: secrets redacted (`scrubber`), and the characters XML
    1.0 cannot hold (control characters, lone surrogates) replaced by U+FFFD, so a hostile
    scenario name never makes the JUnit file unreadable."""
    return _NOT_XML.sub("\ufffd", scrubber.text(text))


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def _short(value: Any, limit: int = 300) -> str:
    if value is ABSENT:
        return repr(value)
    text = (
        json.dumps(value, ensure_ascii=False, default=repr)
        if not isinstance(value, str)
        else repr(value)
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."
