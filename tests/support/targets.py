"""Targets for the conformance tests: the reference spoken to as a command (`stdio_target`),
optionally with one thing changed in its answers, so a test can show what the library does with
an implementation that crashes, hangs, breaks the protocol or gets one detail wrong."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

PROGRAM = """\
import json, sys
from harness.scenarios.reference import run

def change(message, answer):
{change}
    return answer

for line in sys.stdin:
    message = json.loads(line)
    answer = run(message)
    if answer is None:
        break
    answer = change(message, answer)
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""


def stdio_target(folder: Path, change: str = "pass") -> str:
    """A `--target-cmd` running the reference over JSON lines; `change` is the body of
    `change(message, answer)` (Python, may return another answer, exit, sleep, print)."""
    script = folder / "target.py"
    script.write_text(PROGRAM.format(change=textwrap.indent(textwrap.dedent(change), "    ")))
    return f"{sys.executable} {script}"
