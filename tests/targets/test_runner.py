"""`harness run --target` / `--target-cmd`: cells run on an implementation under test, checked from
its answers and its traffic, whatever the target does wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.scenarios import RunOptions, expand, load_scenarios, run_cell
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.scenarios.report import failure_lines, skip_lines, skip_summary, summary
from harness.targets import REFERENCE_TARGET, json_schema
from tests.support.targets import PROGRAM, stdio_target

ROOT = Path(__file__).resolve().parents[2]
FORCED = ROOT / "scenarios" / "forced"

ONE_CELL = """\
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
"""


def cells_of(path: Path) -> list:  # type: ignore[type-arg]
    return expand(load_scenarios([path]), RunOptions())


def run_on(spec: TargetSpec, path: Path) -> list:  # type: ignore[type-arg]
    with target_runner(spec) as runner:
        return [runner.run_cell(cell, RunOptions()) for cell in cells_of(path)]


@pytest.fixture
def two_cells(tmp_path: Path) -> Path:
    path = tmp_path / "capital.yaml"
    path.write_text(ONE_CELL)
    return path


def test_the_reference_as_a_target_gives_the_in_process_results_on_the_whole_library() -> None:
    cells = cells_of(ROOT / "scenarios")
    with target_runner(TargetSpec(callable=REFERENCE_TARGET)) as runner:
        through_target = {cell.id: runner.run_cell(cell, RunOptions()) for cell in cells}
    for cell in cells:
        in_process = run_cell(cell, RunOptions())
        via = through_target[cell.id]
        if cell.loaded.scenario.kind == "store_check":
            assert via.skipped == "a store check runs on the harness, not on a target"
            continue
        assert (via.passed, via.mismatches, via.error) == (
            in_process.passed,
            in_process.mismatches,
            in_process.error,
        ), cell.id
        assert via.skipped_expectations == [], cell.id
    assert sum(result.passed for result in through_target.values()) > 300


def test_a_command_target_runs_every_cell_in_one_process(tmp_path: Path) -> None:
    spec = TargetSpec(command=stdio_target(tmp_path))
    with target_runner(spec) as runner:
        results = [
            runner.run_cell(cell, RunOptions()) for cell in cells_of(FORCED / "budgets.yaml")
        ]
        starts = runner.under_test.target.starts  # type: ignore[attr-defined]
    assert results
    assert all(result.passed for result in results), [failure_lines(r) for r in results]
    assert starts == 1


def test_a_wrong_forced_prompt_fails_with_the_reference_line(tmp_path: Path) -> None:
    """The target sends what the reference sends, but its answer claims the forced call it made
    was not the trimmed one: here the target is honest and the traffic is what is checked."""
    wrong = """
    if message.get("type") == "cell" and message.get("kind") == "agent":
        answer["outcome_record"]["stop_reason"] = "canceled"
    """
    results = run_on(TargetSpec(command=stdio_target(tmp_path, wrong)), FORCED / "triggers.yaml")
    failing = [line for result in results for line in failure_lines(result)]
    # a misspelt stop reason is not a stop reason: the answer breaks the protocol, by name
    assert any(
        "trigger-terminal-text[js-sqlite]: TargetProtocolError" in line
        and "outcome_record.stop_reason: Input should be 'end_turn', 'tool_use'" in line
        for line in failing
    ), failing


def test_every_request_counts_and_one_the_harness_cannot_read_fails_the_cell_naming_it(
    tmp_path: Path,
) -> None:
    """After its run the target sends one more request, with a message role no provider has: the
    server answers it (with an error: the script is used up), it counts as a call, and an
    expectation that reads it fails the cell naming the field, never dropping it silently."""
    extra = """
    if message.get("type") == "cell":
        import httpx2
        httpx2.post(
            message["base_urls"]["openai"] + "/chat/completions",
            json={"model": "m", "messages": [{"role": "robot", "content": "beep"}]},
        )
    """
    path = tmp_path / "capital.yaml"
    path.write_text(
        ONE_CELL.replace(
            "expect: {status: completed, outcome_record: {final_message: It is Paris.}}",
            "expect: {status: completed, llm_calls: 2}",
        ).replace(
            "expect: {status: completed, outcome_record: {final_message: It is Rome.}}",
            "expect: {status: completed, work_request: {tools: []}}",
        )
    )
    counted, read = run_on(TargetSpec(command=stdio_target(tmp_path, extra)), path)
    assert counted.passed, failure_lines(counted)
    assert read.error_code == "llm_request_invalid", read.error
    assert "`messages[0].role`" in (read.error or "")
    assert "beep" not in (read.error or "")


def test_a_crashing_target_fails_its_cell_with_its_stderr_and_the_next_cell_runs(
    tmp_path: Path, two_cells: Path
) -> None:
    crash = """
    if message.get("scenario") == "capital":
        sys.stderr.write("boom: the runtime fell over\\n")
        sys.stderr.flush()
        sys.exit(3)
    """
    first, second = run_on(TargetSpec(command=stdio_target(tmp_path, crash)), two_cells)
    assert first.error_code == "target_crashed"
    assert "exited before answering with exit code 3" in (first.error or "")
    assert "boom: the runtime fell over" in "\n".join(failure_lines(first))
    assert second.passed, failure_lines(second)


def test_a_hanging_target_fails_its_cell_at_the_timeout_and_is_started_again(
    tmp_path: Path, two_cells: Path
) -> None:
    hang = """
    if message.get("scenario") == "capital":
        import time
        time.sleep(60)
    """
    spec = TargetSpec(command=stdio_target(tmp_path, hang), cell_timeout=2)
    first, second = run_on(spec, two_cells)
    assert first.error_code == "target_timeout"
    assert "did not answer within 2s (--cell-timeout)" in (first.error or "")
    assert second.passed, failure_lines(second)


def test_printing_to_stdout_is_a_protocol_error_that_says_to_use_stderr(
    tmp_path: Path, two_cells: Path
) -> None:
    chatty = """
    if message.get("type") == "cell":
        print("debug: about to answer", flush=True)
    """
    first, _ = run_on(TargetSpec(command=stdio_target(tmp_path, chatty)), two_cells)
    assert first.error_code == "target_protocol_invalid"
    assert "write diagnostics to stderr" in (first.error or "")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            'answer["outcome_record"]["extra"] = "x"',
            "outcome_record.extra: Extra inputs are not permitted",
        ),
        ('del answer["outcome_record"]["session_id"]', "outcome_record.session_id: Field required"),
        ('answer["chunks"].append({"kind": "telemetry"})', "chunks.4: Input tag 'telemetry'"),
        ('answer["status"] = "done"', "status: Input should be 'completed', 'failed' or"),
    ],
)
def test_answers_are_validated_strictly_by_the_wire_records(
    tmp_path: Path, two_cells: Path, change: str, problem: str
) -> None:
    code = f"""
    if message.get("type") == "cell":
        {change}
    """
    first, _ = run_on(TargetSpec(command=stdio_target(tmp_path, code)), two_cells)
    assert first.error_code == "target_protocol_invalid"
    assert problem in (first.error or ""), first.error
    assert "Paris" not in (first.error or ""), "the answer's content is never quoted"


def test_a_cell_needing_an_undeclared_feature_is_skipped_and_counted(tmp_path: Path) -> None:
    modest = """
    if message.get("type") == "hello":
        answer["features"] = []
        answer["runtimes"] = ["js"]
    """
    results = run_on(TargetSpec(command=stdio_target(tmp_path, modest)), FORCED / "memory.yaml")
    skipped = [result for result in results if result.skipped is not None]
    reasons = {result.skipped for result in skipped}
    assert "the target does not declare the feature(s) memory (hello.features)" in reasons
    assert any("runtime profile (hello.runtimes)" in (reason or "") for reason in reasons)
    assert all(result.cell.runtime == "js" for result in results if result.skipped is None)
    assert summary(results)["skipped"] == len(skipped)
    assert summary(results)["failed"] == 0
    assert any("skipped: the target does not declare" in line for line in skip_lines(results))


def test_an_unreported_counter_skips_its_expectation_instead_of_passing_it(
    tmp_path: Path,
) -> None:
    silent = """
    if message.get("type") == "cell":
        answer["counters"] = {}
    """
    results = run_on(TargetSpec(command=stdio_target(tmp_path, silent)), FORCED / "budgets.yaml")
    reasons = [reason for result in results for reason in result.skipped_expectations]
    assert "expect.store: the target does not report forced_state (counters)" in reasons
    assert summary(results)["skipped_expectations"] == len(reasons)
    stores = sum(1 for reason in reasons if reason.startswith("expect.store: "))
    assert (
        f"expect.store in {stores} cells: the target does not report forced_state (counters)"
        in skip_summary(results)
    )


def test_compare_reference_reports_a_difference_the_expectations_are_silent_on(
    tmp_path: Path, two_cells: Path
) -> None:
    different = """
    if message.get("type") == "cell":
        answer["chunks"][0]["step"] = 7
    """
    spec = TargetSpec(command=stdio_target(tmp_path, different), compare_reference=True)
    first, _ = run_on(spec, two_cells)
    lines = failure_lines(first)
    assert any(
        line.endswith(
            "capital[js-memory]: differs from the reference: answer.chunks[0].step: 0 -> 7"
        )
        for line in lines
    ), lines
    assert first.mismatches == [], "the scenario's own expectations still pass"


@pytest.mark.subprocess
def test_compare_reference_reads_a_counter_the_target_does_not_report_as_unknown(
    tmp_path: Path,
) -> None:
    """As a plain run skips an expectation on it, so --compare-reference leaves out a counter the
    target does not report, instead of failing every cell on it."""
    no_override_counter = """
    if message.get("type") == "cell":
        answer["counters"].pop("llm_config_override_calls")
    """
    spec = TargetSpec(command=stdio_target(tmp_path, no_override_counter), compare_reference=True)
    results = run_on(spec, ROOT / "scenarios" / "runtimes" / "config-override.yaml")
    assert results, "the file has cells"
    assert [line for result in results for line in failure_lines(result)] == []
    reasons = {reason for result in results for reason in result.skipped_expectations}
    assert reasons == {"expect.llm_config_override_calls: the target does not report it (counters)"}


def test_the_protocol_schema_accepts_the_reference_hello_and_refuses_a_bad_one() -> None:
    from harness.scenarios.reference import run

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(run({"type": "hello", "protocol": 1}))
    assert not validator.is_valid({"type": "hello", "protocol": 1, "name": "x", "kinds": ["robot"]})


def test_every_cell_message_the_library_sends_gives_every_field_its_schema_names() -> None:
    """The schema of what the harness sends requires every field, defaults included (a typed
    target reads `cell.agent.tools` unchecked), and types the agent cell's input: each cell of
    the library, as it is sent, validates against it, and a misspelt field would not."""
    from harness.scenarios.on_target import _cell_message

    validator = jsonschema.Draft202012Validator(json_schema())
    base_urls = {"openai": "http://127.0.0.1:1/s/x/v1", "anthropic": "http://127.0.0.1:1/s/x"}
    kinds = set()
    for cell in cells_of(ROOT / "scenarios"):
        if cell.loaded.scenario.kind == "store_check":
            continue
        message = _cell_message(cell, RunOptions(), base_urls, "run-1")
        problems = [error.message for error in validator.iter_errors(message)]
        assert problems == [], (cell.id, problems[:3])
        kinds.add(message["kind"])
        if message["kind"] == "agent":
            misspelt = {**message, "agent": {**message["agent"], "sytem_prompt": "x"}}
            assert not validator.is_valid(misspelt)
    assert kinds == {"agent", "decision", "completion"}


def test_cli_target_options(
    tmp_path: Path, two_cells: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    both = runner.invoke(main, ["run", str(two_cells), "--target", "a:b", "--target-cmd", "x"])
    assert both.exit_code == 2
    assert "give --target or --target-cmd, not both" in both.output
    alone = runner.invoke(main, ["run", str(two_cells), "--compare-reference"])
    assert alone.exit_code == 2
    assert (
        "give --target or\n--target-cmd" in alone.output
        or "give --target or --target-cmd" in alone.output
    )
    missing = runner.invoke(main, ["run", str(two_cells), "--target", "no_such_module:run"])
    assert missing.exit_code == 2
    assert "cannot import no_such_module" in missing.output
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(f'[tool.harness]\ntarget = "{REFERENCE_TARGET}"\n')
    configured = runner.invoke(main, ["run", str(two_cells), "--json", "report.json"])
    assert configured.exit_code == 0, configured.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summary"]["passed"] == 2


def test_cli_schema_target_prints_the_protocol() -> None:
    result = CliRunner().invoke(main, ["schema", "target"])
    assert result.exit_code == 0
    assert json.loads(result.output)["title"] == "harness target protocol, version 1"


def test_a_request_the_session_could_not_answer_is_the_first_failure_line(
    tmp_path: Path, two_cells: Path
) -> None:
    """The target asks once more than the script answers (a forced call the reference would not
    make): the session's 404 diagnosis is the cell's first failure line, before the expectation
    it broke, so the cause is read first."""
    extra = """
    if message.get("type") == "cell":
        import httpx2
        httpx2.post(
            message["base_urls"]["openai"] + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "once more"}]},
        )
    """
    path = tmp_path / "capital.yaml"
    path.write_text(
        ONE_CELL.replace(
            "expect: {status: completed, outcome_record: {final_message: It is Paris.}}",
            "expect: {status: completed, llm_calls: 1}",
        )
    )
    first, _ = run_on(TargetSpec(command=stdio_target(tmp_path, extra)), path)
    lines = failure_lines(first)
    assert "the target's request was not answered:" in lines[0], lines
    assert (
        "the target made one call more than the reference: call #2, a work call "
        "(POST /v1/chat/completions), after the 1 repl(ies) of the script" in lines[0]
    ), lines
    assert "add a reply" not in "\n".join(lines)
    assert any("expect.llm_calls: expected 1, got 2" in line for line in lines[1:]), lines


FORCED_CELL = """\
- name: forced
  stores: [memory]
  runtimes: [js]
  script:
    - text: It is Paris.
    - tool_calls: [{name: __finish__, arguments: {city: Paris}}]
  agent:
    user_message: "Capital?"
    output_schema: {type: object, properties: {city: {type: string}}, required: [city]}
  expect: {status: completed, forced_calls: 1}
"""


def test_a_forced_attempt_sent_with_tool_choice_auto_is_the_first_failure_line(
    tmp_path: Path,
) -> None:
    """A target that sends its forced attempt (the `[completion]` message, the completion tool)
    without forcing the tool: the first line says so, before the counts it then gets wrong."""
    program = tmp_path / "auto.py"
    program.write_text(
        "import harness.agent.loop as loop\n"
        "loop.NamedToolChoice = lambda name: 'auto'  # the forced call left to the model\n"
        + PROGRAM.format(change="    pass")
    )
    path = tmp_path / "forced.yaml"
    path.write_text(FORCED_CELL)
    (result,) = run_on(TargetSpec(command=f"{sys.executable} {program}"), path)
    lines = failure_lines(result)
    assert (
        "the target's call #2 carries the [completion] message of a forced attempt but went out "
        "with tool_choice auto: a forced call names the completion tool (__finish__)" in lines[0]
    ), lines
    assert any("expect.forced_calls: expected 1, got 0" in line for line in lines[1:]), lines
