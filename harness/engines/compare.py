"""Compare the verdicts of two `harness run --json` reports of the same cells:
`python -m harness.engines.compare SIMULATED.json REAL.json`.

`make test-engines` runs the library's `temporal` and `dbos` cells simulated and on the real
engines and hands both reports here: every cell must pass or fail alike. Where they disagree, the
simulation is what is wrong. Prints one line per disagreement and exits 1 if there is any.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.files import read_regular_file


def verdicts(report: Mapping[str, Any]) -> dict[str, str]:
    """Cell id -> `passed`, `failed`, `error` or `skipped`, from a `--json` report."""
    result: dict[str, str] = {}
    for cell in report["cells"]:
        verdict = (
            "skipped"
            if cell.get("skipped")
            else "passed"
            if cell["passed"]
            else "error"
            if cell.get("error")
            else "failed"
        )
        result[cell["id"]] = verdict
    return result


def disagreements(simulated: Mapping[str, Any], real: Mapping[str, Any]) -> list[str]:
    """One line per cell the two reports judge differently (or hold only one of)."""
    left, right = verdicts(simulated), verdicts(real)
    lines = []
    for cell in sorted(set(left) | set(right)):
        a, b = left.get(cell, "absent"), right.get(cell, "absent")
        if a != b:
            failure = next(
                (
                    c.get("failure_lines") or [c.get("error")]
                    for c in real["cells"]
                    if c["id"] == cell
                ),
                [],
            )
            cause = f": {failure[0]}" if failure and failure[0] else ""
            lines.append(f"{cell}: simulated {a}, real engine {b}{cause}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    import json

    paths = list(sys.argv[1:] if argv is None else argv)
    if len(paths) != 2:
        print("usage: python -m harness.engines.compare SIMULATED.json REAL.json", file=sys.stderr)
        return 2
    simulated, real = (json.loads(read_regular_file(Path(p), 64 * 1024 * 1024)) for p in paths)
    lines = disagreements(simulated, real)
    for line in lines:
        print(line)
    engines = {cell.get("engine", "simulated") for cell in real["cells"]}
    print(
        f"{len(verdicts(real))} cells, engines {', '.join(sorted(engines))}: "
        f"{len(lines)} disagreement(s) with the simulated runtime"
    )
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
