"""How many cells of the scenario library a target runs, and how many the documentation says the
example agent targets and the example decision module pass: shared by the documentation's tests
and the examples' tests, so a scenario added or removed fails both until docs/targets.md states
the new number."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Final

from harness.scenarios import RunOptions, expand, load_scenarios
from harness.scenarios.on_target import _unsupported
from harness.targets.protocol import TargetHello

ROOT: Final = Path(__file__).resolve().parents[2]
TARGETS_PAGE: Final = ROOT / "docs" / "targets.md"
AGENT_CELLS: Final = re.compile(r"every agent cell of the `js` profile it declares \((\d+)\)")
DECISION_CELLS: Final = re.compile(r"passes every decision cell of the library \((\d+)\)")
PYTHON_AGENT_TARGET: Final = ROOT / "examples" / "targets" / "python_openai_sdk" / "target.py"


def documented_agent_cells() -> int:
    """The number of cells docs/targets.md says each example agent passes."""
    text = " ".join(TARGETS_PAGE.read_text(encoding="utf-8").split())
    (count,) = AGENT_CELLS.findall(text)
    return int(count)


def documented_decision_cells() -> int:
    """The number of cells docs/targets.md says the example decision module passes."""
    text = " ".join(TARGETS_PAGE.read_text(encoding="utf-8").split())
    (count,) = DECISION_CELLS.findall(text)
    return int(count)


def example_hello(target: Path = PYTHON_AGENT_TARGET) -> TargetHello:
    """The `HELLO` a Python example target answers, read from its source without running it."""
    for node in ast.parse(target.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["HELLO"]:
            return TargetHello.model_validate(ast.literal_eval(node.value))
    raise AssertionError(f"{target} assigns no HELLO")


def completion_hello() -> TargetHello:
    """The hello of a target that runs the completion module and nothing else."""
    return TargetHello(type="hello", protocol=1, name="completion", kinds=["completion"])


def decision_hello() -> TargetHello:
    """The hello of a target that runs the decision module and nothing else (on runTarget, the
    example's declares the kind of its one handler)."""
    return TargetHello(type="hello", protocol=1, name="decision", kinds=["decision"])


def declared_cells(hello: TargetHello, runtime: str = "js") -> int:
    """How many cells of the scenario library, on `runtime`, a target with `hello` runs: those of
    a kind, runtime profile and features it declares (every other cell is skipped)."""
    library = load_scenarios([ROOT / "scenarios"])
    cells = expand(library, RunOptions(runtimes=(runtime,)))
    return sum(
        1
        for cell in cells
        if cell.loaded.scenario.kind != "store_check" and _unsupported(hello, cell) is None
    )
