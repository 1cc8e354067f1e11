"""A `--target-cmd` that runs only completion cells, with nothing but the standard library, so it
starts in milliseconds: `python completion_target.py FOLDER DIFFER_OVER HANG`.

It answers as the reference's completion module does (the answer copied when it is text that is
not blank to Java and at most 65,536 UTF-16 units, else `illegal_argument`), except on cells
whose message is longer than DIFFER_OVER characters (0: none), where it answers something else.
On the cell HANG (`5`: the fifth; `+2`: the second after the first it answered differently; `0`:
none) it never answers. Into FOLDER it writes, each as it happens: `pid` (its process id, at
start), `cells` (how many cell messages it has read), `differed` (the cell it first answered
differently) and `hanging`.
"""

from __future__ import annotations

import json
import os
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

LIMIT = 65_536
CONTROLS = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
NO_BREAK_SPACES = frozenset("\u00a0\u2007\u202f")
SHRINK_STEP_SECONDS = 0.05
"""Each cell after the first difference takes this long, so shrinking lasts long enough to be
interrupted at a chosen cell."""


def java_blank(text: str) -> bool:
    return all(
        character in CONTROLS
        or (
            unicodedata.category(character) in ("Zs", "Zl", "Zp")
            and character not in NO_BREAK_SPACES
        )
        for character in text
    )


def complete(state: dict[str, Any]) -> dict[str, Any]:
    value = state.get("agentFinalAnswer")
    if (
        isinstance(value, str)
        and not java_blank(value)
        and len(value.encode("utf-16-le", "surrogatepass")) // 2 <= LIMIT
    ):
        return {"outputs": {"finalAnswer": value, "agentOutcome": "final_answer"}}
    refused = {"type": "IllegalArgumentException", "code": "illegal_argument", "message": "no"}
    return {"outputs": {}, "error": refused}


def note(folder: Path, name: str, text: str) -> None:
    """`folder/name` holds `text`, whole (written beside it, then renamed)."""
    (folder / f".{name}").write_text(text)
    os.replace(folder / f".{name}", folder / name)


def main(folder: Path, differ_over: int, hang: str) -> None:
    note(folder, "pid", str(os.getpid()))
    cells, differed = 0, 0
    for line in sys.stdin:
        message = json.loads(line)
        if message["type"] == "hello":
            answer: dict[str, Any] = {
                "type": "hello",
                "protocol": 1,
                "name": "standard-library completion target",
                "kinds": ["completion"],
            }
        elif message["type"] == "cell":
            cells += 1
            note(folder, "cells", str(cells))
            executions = [complete(execution["input"]) for execution in message["executions"]]
            if differ_over and len(line) > differ_over:
                differed = differed or cells
                note(folder, "differed", str(differed))
                executions = [{"outputs": {"finalAnswer": "not the reference's"}}] * len(executions)
            if differed:
                time.sleep(SHRINK_STEP_SECONDS)
            if hang == str(cells) or (differed and hang == f"+{cells - differed}"):
                note(folder, "hanging", str(cells))
                time.sleep(600)
            answer = {"type": "result", "id": message["id"], "executions": executions}
        else:  # shutdown
            return
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
