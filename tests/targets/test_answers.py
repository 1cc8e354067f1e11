"""Each answer carries the id of the cell it answers, and comes once: an answer with another id,
or a line no message asked for, fails the cell it arrives in with `target_protocol_invalid`, and
is never taken as that cell's answer."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.scenarios import RunOptions, expand, load_scenarios
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.scenarios.report import failure_lines
from harness.scenarios.run import CellResult
from tests.support.targets import stdio_target

THREE_CELLS = """\
- name: capital
  stores: [memory]
  script:
    - text: It is Paris.
  agent: {user_message: "Capital?"}
  expect: {status: completed, outcome_record: {final_message: It is Paris.}}
- name: capital-again
  stores: [memory]
  script:
    - text: It is Rome.
  agent: {user_message: "Capital?"}
  expect: {status: completed, outcome_record: {final_message: It is Rome.}}
- name: capital-once-more
  stores: [memory]
  script:
    - text: It is Bern.
  agent: {user_message: "Capital?"}
  expect: {status: completed, outcome_record: {final_message: It is Bern.}}
"""


@pytest.fixture
def three_cells(tmp_path: Path) -> Path:
    path = tmp_path / "capital.yaml"
    path.write_text(THREE_CELLS)
    return path


def run_on(spec: TargetSpec, path: Path) -> list[CellResult]:
    with target_runner(spec) as runner:
        return [
            runner.run_cell(cell, RunOptions())
            for cell in expand(load_scenarios([path]), RunOptions())
        ]


def test_an_answer_with_another_cells_id_fails_the_cell_naming_both_ids(
    tmp_path: Path, three_cells: Path
) -> None:
    wrong = """
    if message.get("scenario") == "capital":
        answer["id"] = "capital-again[js-memory]"
    """
    first, second, _ = run_on(TargetSpec(command=stdio_target(tmp_path, wrong)), three_cells)
    assert first.error_code == "target_protocol_invalid"
    assert (
        "answered cell capital[js-memory] with id 'capital-again[js-memory]'; expected id "
        "'capital[js-memory]'"
    ) in (first.error or "")
    assert second.passed, failure_lines(second)


def test_an_answer_without_an_id_fails_the_cell(tmp_path: Path, three_cells: Path) -> None:
    anonymous = """
    if message.get("scenario") == "capital":
        del answer["id"]
    """
    first, second, _ = run_on(TargetSpec(command=stdio_target(tmp_path, anonymous)), three_cells)
    assert first.error_code == "target_protocol_invalid"
    assert "answered cell capital[js-memory] with an answer without an id" in (first.error or "")
    assert second.passed, failure_lines(second)


@pytest.mark.parametrize(
    "twice",
    [
        # right after the first answer: it waits in the pipe before the next cell is sent
        """
        if message.get("scenario") == "capital":
            sys.stdout.write(json.dumps(answer) + "\\n")
        """,
        # only once the next cell has been sent: it arrives where that cell's answer is due
        """
        if message.get("scenario") == "capital":
            change.previous = answer
        if message.get("scenario") == "capital-again":
            sys.stdout.write(json.dumps(change.previous) + "\\n")
        """,
    ],
    ids=["before-the-next-cell", "after-the-next-cell-was-sent"],
)
def test_a_second_answer_fails_the_next_cell_and_is_never_taken_as_its_answer(
    tmp_path: Path, three_cells: Path, twice: str
) -> None:
    first, second, third = run_on(
        TargetSpec(command=stdio_target(tmp_path, textwrap.dedent(twice))), three_cells
    )
    assert first.passed, failure_lines(first)
    assert second.error_code == "target_protocol_invalid"
    assert "a second answer for 'capital[js-memory]'" in (second.error or "")
    assert "answer each message exactly once" in (second.error or "")
    assert second.mismatches == [], "the stale answer is not checked as this cell's"
    assert third.passed, failure_lines(third)


def test_a_second_answer_to_hello_fails_the_first_cell(tmp_path: Path, three_cells: Path) -> None:
    twice = """
    if message.get("type") == "hello":
        sys.stdout.write(json.dumps(answer) + "\\n")
    """
    first, second, third = run_on(TargetSpec(command=stdio_target(tmp_path, twice)), three_cells)
    assert first.error_code == "target_protocol_invalid"
    assert "a second answer to hello" in (first.error or "")
    assert second.passed, failure_lines(second)
    assert third.passed, failure_lines(third)


def test_an_error_answer_may_leave_the_id_out(tmp_path: Path, three_cells: Path) -> None:
    """A target that cannot read a message may not know its id: its error still fails the
    cell with the target's own message, not a protocol error."""
    refuses = """
    if message.get("scenario") == "capital":
        return {"type": "error", "message": "this runtime cannot run capital"}
    """
    first, second, _ = run_on(TargetSpec(command=stdio_target(tmp_path, refuses)), three_cells)
    assert first.error_code == "target_failed"
    assert "could not run the cell: this runtime cannot run capital" in (first.error or "")
    assert second.passed, failure_lines(second)


def test_an_error_answer_with_another_cells_id_is_a_protocol_error(
    tmp_path: Path, three_cells: Path
) -> None:
    misplaced = """
    if message.get("scenario") == "capital":
        return {"type": "error", "id": "elsewhere", "message": "cannot"}
    """
    first, _, _ = run_on(TargetSpec(command=stdio_target(tmp_path, misplaced)), three_cells)
    assert first.error_code == "target_protocol_invalid"
    assert "with id 'elsewhere'; expected id 'capital[js-memory]'" in (first.error or "")


def test_an_id_that_is_no_cell_id_is_described_not_quoted(
    tmp_path: Path, three_cells: Path
) -> None:
    odd = """
    if message.get("scenario") == "capital":
        answer["id"] = "line one\\nline two " + "x" * 500
    if message.get("scenario") == "capital-again":
        answer["id"] = 7
    """
    first, second, _ = run_on(TargetSpec(command=stdio_target(tmp_path, odd)), three_cells)
    assert "with an id of 518 characters (not shown)" in (first.error or "")
    assert "line one" not in (first.error or "")
    assert "with an id of type int (ids are strings)" in (second.error or "")


def test_a_python_callable_is_held_to_the_id_rule(
    tmp_path: Path, three_cells: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "misnumbered_target.py").write_text(
        textwrap.dedent(
            """
            from harness.scenarios.reference import run as reference

            def run(message):
                answer = reference(message)
                if message.get("scenario") == "capital":
                    answer["id"] = "capital-once-more[js-memory]"
                return answer
            """
        )
    )
    monkeypatch.syspath_prepend(tmp_path)
    first, second, _ = run_on(TargetSpec(callable="misnumbered_target:run"), three_cells)
    assert first.error_code == "target_protocol_invalid"
    assert (
        "misnumbered_target:run answered cell capital[js-memory] with id "
        "'capital-once-more[js-memory]'"
    ) in (first.error or "")
    assert second.passed, failure_lines(second)


def test_a_line_that_is_not_the_protocol_never_shifts_the_answers_of_later_cells(
    tmp_path: Path, three_cells: Path
) -> None:
    """Its real answer follows the stray line; the target is started again, so no later cell
    reads that answer as its own."""
    chatty = """
    if message.get("scenario") == "capital":
        print("debug: about to answer", flush=True)
    """
    first, second, third = run_on(TargetSpec(command=stdio_target(tmp_path, chatty)), three_cells)
    assert first.error_code == "target_protocol_invalid"
    assert "write diagnostics to stderr" in (first.error or "")
    assert "started again for the next cell" in (first.error or "")
    assert second.passed, failure_lines(second)
    assert third.passed, failure_lines(third)
