"""The counts the documentation states are the library's, not typed in and forgotten.

docs/targets.md says how many cells the example agent targets pass ("every agent cell of the
`js` profile it declares (N)"), and the example decision module ("passes every decision cell of
the library (N)"). Here each N is compared with the cells of the scenario library that a
target with that example's hello runs (the same rule `harness run --target-cmd` skips by), so a
scenario added or removed fails this test until the page says the new number;
tests/targets/test_examples.py runs each example and checks it passes exactly N (both read the
numbers through tests/support/example_cells.py).
"""

from __future__ import annotations

import ast
import re
from typing import Final

from harness.scenarios import load_scenarios
from tests.docs.fences import ROOT, documents
from tests.support.example_cells import (
    decision_hello,
    declared_cells,
    documented_agent_cells,
    documented_decision_cells,
    example_hello,
)


def test_the_page_states_the_example_agents_cell_count() -> None:
    assert documented_agent_cells() == declared_cells(example_hello())


def test_the_page_states_the_example_decision_modules_cell_count() -> None:
    assert documented_decision_cells() == declared_cells(decision_hello())


def test_the_example_agents_declare_the_same_cells() -> None:
    # the page states one count for every agent example; a Node example's hello is JavaScript,
    # so each list is read from the line that gives it (`kinds` is left out by one written on
    # runTarget, which declares the kinds of the handlers it is given)
    python = example_hello()
    agents = [
        path
        for path in sorted((ROOT / "examples" / "targets").glob("*/target.mjs"))
        if re.search(r"^\s*runtimes: ", path.read_text("utf-8"), re.MULTILINE)
    ]
    assert len(agents) >= 2
    for path in agents:
        node = path.read_text("utf-8")
        for key in ("kinds", "runtimes", "features", "providers"):
            listed = re.findall(rf"^\s*{key}: (\[.*\]),", node, re.MULTILINE)
            if key == "kinds" and not listed:
                continue
            (values,) = listed
            assert ast.literal_eval(values) == getattr(python, key), (path, key)


FAILED_KEY: Final = re.compile(
    r"(?P<file>[\w/-]+\.yaml):(?P<line>\d+) (?P<name>[\w-]+)(?:\[[\w-]+\])?: expect\.(?P<key>\w+)"
)


def test_the_failure_lines_shown_name_the_line_of_their_expectation() -> None:
    """A page showing `contract.yaml:119 completion-...: expect.status` for a scenario of the
    library shows the line `harness run` prints today: the line of that `expect:` key."""
    library = {
        (str(loaded.path.relative_to(ROOT / "scenarios")), loaded.scenario.name): loaded
        for loaded in load_scenarios([ROOT / "scenarios"])
    }
    shown = 0
    for page in documents():
        text = page.read_text(encoding="utf-8")
        for match in FAILED_KEY.finditer(text):
            relative = match["file"].removeprefix("../").removeprefix("scenarios/")
            found = [
                loaded
                for (path, name), loaded in library.items()
                if name == match["name"] and (path == relative or path.endswith("/" + relative))
            ]
            if not found:
                continue  # a scenario of the page's own, not of the library
            (loaded,) = found
            shown += 1
            where = f"{page.relative_to(ROOT)}: {match.group(0)}"
            assert int(match["line"]) == loaded.line_of(match["key"]), where
    assert shown
