"""Reporting cell results: terminal lines, JUnit XML, and JSON."""

from __future__ import annotations

import json
import re
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.files import write_atomically
from harness.scenarios.run import CellResult
from harness.scrub import redact


class ReportPathError(HarnessError, ValueError):
    """A report file (`--json`, `--junit-xml`) cannot be written where it was asked for."""

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


def failure_lines(result: CellResult) -> list[str]:
    """`file:line id: expect.key: expected X, got Y` for each mismatch (or the error), with
    secrets redacted (`harness.scrub.redact`), as everywhere a report is printed."""
    loaded = result.cell.loaded
    lines = [
        f"{loaded.path}:{loaded.line_of(m.key)} {result.cell.id}: expect.{m.key}: "
        f"expected {_short(m.expected)}, got {_short(m.actual)}"
        for m in result.mismatches
    ]
    lines.extend(
        f"{loaded.path}:{loaded.line} {result.cell.id}: differs from the reference: {difference}"
        for difference in result.differences
    )
    if result.error is not None:
        lines.append(f"{loaded.path}:{loaded.line} {result.cell.id}: {result.error}")
    if lines and result.stderr:
        lines.append(f"{loaded.path}:{loaded.line} {result.cell.id}: the target's stderr:")
        lines.extend(f"    {line}" for line in result.stderr.splitlines())
    if lines and result.run_id is not None:
        lines.append(
            f"{loaded.path}:{loaded.line} {result.cell.id}: its run is kept in the "
            f"{result.cell.store} store as run_id {result.run_id!r}"
        )
    return [redact(line) for line in lines]


def skip_lines(results: Sequence[CellResult]) -> list[str]:
    """`file:line id: skipped: reason` for each skipped cell and skipped expectation."""
    lines: list[str] = []
    for result in results:
        loaded = result.cell.loaded
        where = f"{loaded.path}:{loaded.line} {result.cell.id}"
        if result.skipped is not None:
            lines.append(f"{where}: skipped: {result.skipped}")
        lines.extend(f"{where}: skipped {reason}" for reason in result.skipped_expectations)
    return [redact(line) for line in lines]


def summary(results: Sequence[CellResult]) -> dict[str, int]:
    passed = sum(1 for r in results if r.passed)
    skipped = sum(1 for r in results if r.skipped is not None)
    errors = sum(1 for r in results if r.error is not None)
    return {
        "cells": len(results),
        "passed": passed,
        "failed": len(results) - passed - skipped,
        "skipped": skipped,
        "skipped_expectations": sum(len(r.skipped_expectations) for r in results),
        "errors": errors,
    }


def to_json(results: Sequence[CellResult]) -> dict[str, Any]:
    return {
        "summary": summary(results),
        "cells": [
            {
                "id": r.cell.id,
                "scenario": r.cell.loaded.scenario.name,
                "file": str(r.cell.loaded.path),
                "line": r.cell.loaded.line,
                "runtime": r.cell.runtime,
                "store": r.cell.store,
                "passed": r.passed,
                "skipped": r.skipped,
                "skipped_expectations": r.skipped_expectations,
                "stderr": r.stderr or None,
                "differences_from_reference": r.differences,
                "duration_seconds": round(r.duration, 6),
                "error": r.error,
                "error_code": r.error_code,
                "run_id": r.run_id,
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
    text = redact(json.dumps(to_json(results), indent=2, ensure_ascii=False)) + "\n"
    write_atomically(path, text.encode("utf-8"))


def write_junit(results: Sequence[CellResult], path: Path) -> None:
    counts = summary(results)
    suite = ElementTree.Element(
        "testsuite",
        name="harness",
        tests=str(counts["cells"]),
        skipped=str(counts["skipped"]),
        failures=str(counts["failed"] - counts["errors"]),
        errors=str(counts["errors"]),
        time=f"{sum(r.duration for r in results):.3f}",
    )
    for result in results:
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=_xml(result.cell.loaded.path.stem),
            name=_xml(result.cell.id),
            file=_xml(str(result.cell.loaded.path)),
            line=str(result.cell.loaded.line),
            time=f"{result.duration:.3f}",
        )
        if result.skipped is not None:
            ElementTree.SubElement(case, "skipped", message=_xml(redact(result.skipped)))
        elif result.error is not None:
            first_line = (result.error.splitlines() or [""])[0]
            error = ElementTree.SubElement(case, "error", message=_xml(redact(first_line)))
            error.text = _xml("\n".join(failure_lines(result)))
        elif result.mismatches:
            failure = ElementTree.SubElement(
                case, "failure", message=f"{len(result.mismatches)} expectation(s) failed"
            )
            failure.text = _xml("\n".join(failure_lines(result)))
    root = ElementTree.Element("testsuites")
    root.append(suite)
    data = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    write_atomically(path, data + b"\n")


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """`text` with the characters XML 1.0 cannot hold (control characters, lone surrogates)
    replaced by U+FFFD, so a hostile scenario name never makes the JUnit file unreadable."""
    return _NOT_XML.sub("\ufffd", text)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def _short(value: Any, limit: int = 300) -> str:
    text = (
        json.dumps(value, ensure_ascii=False, default=repr)
        if not isinstance(value, str)
        else repr(value)
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."
