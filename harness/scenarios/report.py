"""Reporting cell results: terminal lines, JUnit XML, and JSON."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.scenarios.run import CellResult


class ReportPathError(HarnessError, ValueError):
    """A report file (`--json`, `--junit-xml`) cannot be written where it was asked for."""

    code = "report_path_invalid"


def check_report_path(option: str, path: Path) -> None:
    """Make sure `path` can be written before anything runs (its folder is created), so a typo
    never costs a whole run; raises `ReportPathError` naming the option and the cause."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder")
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        raise ReportPathError(
            f"{option} {path}: cannot write a report there ({reason}); choose a file path in a "
            "writable folder"
        ) from None


def failure_lines(result: CellResult) -> list[str]:
    """`file:line id: expect.key: expected X, got Y` for each mismatch (or the error)."""
    loaded = result.cell.loaded
    lines = [
        f"{loaded.path}:{loaded.line_of(m.key)} {result.cell.id}: expect.{m.key}: "
        f"expected {_short(m.expected)}, got {_short(m.actual)}"
        for m in result.mismatches
    ]
    if result.error is not None:
        lines.append(f"{loaded.path}:{loaded.line} {result.cell.id}: {result.error}")
    if lines and result.run_id is not None:
        lines.append(
            f"{loaded.path}:{loaded.line} {result.cell.id}: its run is kept in the "
            f"{result.cell.store} store as run_id {result.run_id!r}"
        )
    return lines


def summary(results: Sequence[CellResult]) -> dict[str, int]:
    passed = sum(1 for r in results if r.passed)
    errors = sum(1 for r in results if r.error is not None)
    return {
        "cells": len(results),
        "passed": passed,
        "failed": len(results) - passed,
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
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(results), indent=2, ensure_ascii=False) + "\n", "utf-8")


def write_junit(results: Sequence[CellResult], path: Path) -> None:
    counts = summary(results)
    suite = ElementTree.Element(
        "testsuite",
        name="harness",
        tests=str(counts["cells"]),
        failures=str(counts["failed"] - counts["errors"]),
        errors=str(counts["errors"]),
        time=f"{sum(r.duration for r in results):.3f}",
    )
    for result in results:
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=result.cell.loaded.path.stem,
            name=result.cell.id,
            file=str(result.cell.loaded.path),
            line=str(result.cell.loaded.line),
            time=f"{result.duration:.3f}",
        )
        if result.error is not None:
            error = ElementTree.SubElement(case, "error", message=result.error.splitlines()[0])
            error.text = "\n".join(failure_lines(result))
        elif result.mismatches:
            failure = ElementTree.SubElement(
                case, "failure", message=f"{len(result.mismatches)} expectation(s) failed"
            )
            failure.text = "\n".join(failure_lines(result))
    path.parent.mkdir(parents=True, exist_ok=True)
    root = ElementTree.Element("testsuites")
    root.append(suite)
    ElementTree.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


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
