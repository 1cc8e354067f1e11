"""`harness fuzz`: no difference on the reference; a one-line mutant of it is found within a small
budget (50 cells, on a seed that finds them there; the default 200 find both on every seed from
0 to 5), shrunk, and written as a
scenario file that loads, fails on the mutant and passes on the reference."""

from __future__ import annotations

import errno
import importlib
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, find, given, settings

from harness import files
from harness.cli import main
from harness.fuzz import (
    FuzzOptionError,
    FuzzWriteError,
    fuzz,
    fuzz_scenarios,
    fuzz_target,
    reference_expect,
    tool_choice_refusal,
    write_scenario,
)
from harness.llm.script import ScriptedReply
from harness.providers import PROVIDERS, Provider
from harness.scenarios.format import Scenario
from harness.scenarios.load import load_file
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.scenarios.run import Cell, RunOptions, run_cell
from harness.strategies import MODELS
from harness.targets import REFERENCE_TARGET
from harness.targets.errors import TargetSpecError
from harness.targets.protocol import FEATURES, ScenarioKind
from tests.support.targets import stdio_target

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

BUDGET: Final = 50
SEED: Final = 3
"""Finds the wrong code at cell 11 and the wrong default budget at 11, within `BUDGET`."""
WRONG_CODE: Final = "tests.support.fuzz_mutants:wrong_code_after_max_tokens"
DROPPED_CHUNK: Final = "tests.support.fuzz_mutants:drops_second_attempt_started"


def _fails_on(target: str, path: Path) -> bool:
    (loaded,) = load_file(path)
    with target_runner(TargetSpec(callable=target)) as runner:
        result = runner.run_cell(Cell(loaded, "js", "memory"), RunOptions())
    assert result.error is None, result.error
    return result.failed


@pytest.fixture(scope="module")
def wrong_code_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    out = tmp_path_factory.mktemp("fuzz")
    result = CliRunner().invoke(
        main,
        [
            "fuzz",
            "--target",
            WRONG_CODE,
            "--kind",
            "agent",
            "--cells",
            str(BUDGET),
            "--seed",
            str(SEED),
            "--out",
            str(out),
        ],
    )
    (written,) = out.glob("*.yaml")
    return result.exit_code, result.output, written


def test_the_reference_agrees_with_itself(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["fuzz", "--target", REFERENCE_TARGET, "--cells", "25", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "25 cells (--seed 0): no difference from the reference" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_wrong_error_code_is_found_and_written(wrong_code_run: tuple[int, str, Path]) -> None:
    exit_code, output, written = wrong_code_run
    assert exit_code == 1, output
    assert f"the smallest cell is in {written}" in output
    assert (
        'answer.error_code: "framework_forced_completion_exhausted" -> '
        '"framework_llm_call_failed"' in output
    )
    (loaded,) = load_file(written)
    scenario = loaded.scenario
    assert scenario.expect.error_code == "framework_forced_completion_exhausted"
    assert scenario.script is not None
    assert len(scenario.script) == 1  # shrunk: one reply cut off by the token limit
    assert scenario.script[0].truncated


def test_the_written_scenario_fails_on_the_mutant_and_passes_on_the_reference(
    wrong_code_run: tuple[int, str, Path],
) -> None:
    _, _, written = wrong_code_run
    assert _fails_on(WRONG_CODE, written)
    assert not _fails_on(REFERENCE_TARGET, written)
    (loaded,) = load_file(written)
    assert run_cell(Cell(loaded, "js", "memory"), RunOptions()).passed  # in process, too


def test_the_same_seed_finds_the_same_cell(
    wrong_code_run: tuple[int, str, Path], tmp_path: Path
) -> None:
    _, _, written = wrong_code_run
    outcome = fuzz(
        TargetSpec(callable=WRONG_CODE), cells=BUDGET, seed=SEED, out=tmp_path, kinds=["agent"]
    )
    assert outcome.finding is not None
    assert outcome.finding.path.name == written.name
    assert outcome.finding.path.read_text() == written.read_text()


def test_without_shrinking_the_first_differing_cell_is_written_as_generated(
    wrong_code_run: tuple[int, str, Path], tmp_path: Path
) -> None:
    _, shrunk_output, shrunk = wrong_code_run
    arguments = ["--kind", "agent", "--cells", str(BUDGET), "--seed", str(SEED), "--no-shrink"]
    arguments += ["--out", str(tmp_path)]
    result = CliRunner().invoke(main, ["fuzz", "--target", WRONG_CODE, *arguments])
    assert result.exit_code == 1, result.output
    (written,) = tmp_path.glob("*.yaml")
    found_at = shrunk_output.split("on cell ", 1)[1].split(" ", 1)[0]
    assert f"on cell {found_at} (--seed {SEED}; not shrunk); the cell is in {written}" in (
        result.output
    )
    (loaded,) = load_file(written)
    (smallest,) = load_file(shrunk)
    assert loaded.scenario.expect.error_code == "framework_forced_completion_exhausted"
    assert len(loaded.scenario.script or []) >= len(smallest.scenario.script or [])
    assert _fails_on(WRONG_CODE, written)
    assert not _fails_on(REFERENCE_TARGET, written)


def test_a_dropped_chunk_is_caught_by_the_written_chunk_sequence(tmp_path: Path) -> None:
    outcome = fuzz(
        TargetSpec(callable=DROPPED_CHUNK), cells=BUDGET, seed=1, out=tmp_path, kinds=["agent"]
    )
    finding = outcome.finding
    assert finding is not None
    assert finding.caught_by_expect
    assert any(
        "missing {kind: forced_completion, phase: attempt_started}" in line
        for line in finding.differences
    )
    assert finding.scenario.expect.chunk_sequence is not None
    assert _fails_on(DROPPED_CHUNK, finding.path)
    assert not _fails_on(REFERENCE_TARGET, finding.path)


def test_a_seed_tries_the_same_cells_whatever_the_process_imported_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hypothesis now and then draws a constant from the source of the modules loaded in the
    process, outside the standard library and site-packages: a module loaded between two
    searches (as in a test worker that has run other tests) made the same seed try other cells
    from the 15th on, and miss the mutant it had found at the 17th."""

    def search(out: Path) -> tuple[int, int, str | None]:
        outcome = fuzz(
            TargetSpec(callable=DROPPED_CHUNK),
            cells=BUDGET,
            seed=1,
            out=out,
            kinds=["agent"],
            shrink=False,
        )
        written = outcome.finding.path.read_text() if outcome.finding is not None else None
        return outcome.found_at, outcome.cells_run, written

    first = search(tmp_path / "first")
    assert first[2] is not None
    loaded_later = tmp_path / "loaded" / "constants_loaded_later.py"
    loaded_later.parent.mkdir()
    numbers = tuple(range(-997, 1000, 7))
    words = tuple(f"w{n}" for n in range(200))
    loaded_later.write_text(f"NUMBERS = {numbers!r}\nWORDS = {words!r}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(loaded_later.parent)
    importlib.import_module(loaded_later.stem)  # from tmp_path: hypothesis reads its constants
    try:
        assert search(tmp_path / "second") == first
    finally:
        del sys.modules[loaded_later.stem]


def test_a_wrong_default_budget_is_found_through_a_cell_that_sets_none(tmp_path: Path) -> None:
    mutant = "tests.support.fuzz_mutants:default_budget_of_three"
    outcome = fuzz(
        TargetSpec(callable=mutant), cells=BUDGET, seed=SEED, out=tmp_path, kinds=["agent"]
    )
    finding = outcome.finding
    assert finding is not None
    assert finding.scenario.agent is not None
    assert finding.scenario.agent.max_completion_retries is None
    assert finding.scenario.expect.chunk_sequence is not None
    assert finding.scenario.expect.chunk_sequence[0].max_attempts == 2
    assert _fails_on(mutant, finding.path)
    assert not _fails_on(REFERENCE_TARGET, finding.path)


def test_cells_use_only_what_the_target_declares(tmp_path: Path) -> None:
    plain = "tests.support.fuzz_mutants:without_features"
    outcome = fuzz(TargetSpec(callable=plain), cells=20, seed=3, out=tmp_path)
    assert outcome.finding is None
    assert outcome.skipped == 0
    with pytest.raises(FuzzOptionError, match="runtime profile the target declares \\(js\\)"):
        fuzz(TargetSpec(callable=plain), runtime="temporal", cells=1, out=tmp_path)


def test_a_counter_the_target_does_not_report_is_no_difference(tmp_path: Path) -> None:
    """Counters are optional: one the target leaves out is unknown, as in a plain run, so the
    search goes on past it (it used to stop at the first cell on `llm_config_override_calls`)."""
    silent = "tests.support.fuzz_mutants:without_counters"
    outcome = fuzz(TargetSpec(callable=silent), cells=25, out=tmp_path)
    assert outcome.finding is None, outcome.finding
    assert outcome.cells_run == 25
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("mutant", "kind", "seed", "difference"),
    [
        (
            "tests.support.fuzz_mutants:completion_blank_is_strip",
            "completion",
            1,
            'answer.executions[0].error: null -> {"type": "IllegalArgumentException"',
        ),
        (
            "tests.support.fuzz_mutants:approval_kept_granted",
            "decision",
            3,  # found at cell 17 (and at 23 to 42 on seeds 0, 1, 4 and 5)
            "answer.executions[0].outputs.agentApprovalGranted: false -> true",
        ),
    ],
)
def test_a_module_mutant_is_found_and_written_with_the_module_s_expect(
    mutant: str, kind: ScenarioKind, seed: int, difference: str, tmp_path: Path
) -> None:
    outcome = fuzz(TargetSpec(callable=mutant), cells=BUDGET, seed=seed, out=tmp_path, kinds=[kind])
    finding = outcome.finding
    assert finding is not None, "no difference found"
    assert any(line.startswith(difference) for line in finding.differences), finding.differences
    assert finding.scenario.kind == kind
    assert finding.path.name.startswith(f"fuzz-{kind}-")
    assert finding.caught_by_expect
    assert _fails_on(mutant, finding.path)
    assert not _fails_on(REFERENCE_TARGET, finding.path)


def test_a_completion_only_target_is_searched_with_completion_cells_whatever_the_runtime(
    tmp_path: Path,
) -> None:
    """The check a CI runs on every target, `--runtime js` included, works on a module target:
    its cells run once, on no runtime."""
    result = CliRunner().invoke(
        main,
        [
            "fuzz",
            "--target",
            "tests.support.fuzz_mutants:completion_only",
            "--runtime",
            "js",
            "--cells",
            "40",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "40 cells (--seed 0): no difference from the reference" in result.output


def test_kinds_the_target_does_not_run_are_refused(tmp_path: Path) -> None:
    target = TargetSpec(callable="tests.support.fuzz_mutants:agent_only")
    with pytest.raises(FuzzOptionError, match=r"kinds of cell the target declares \(agent\)"):
        fuzz(target, cells=1, out=tmp_path, kinds=["completion"])
    result = CliRunner().invoke(
        main, ["fuzz", "--target", REFERENCE_TARGET, "--kind", "workflow", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "'--kind'" in result.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "harness fuzz compares a target with the reference: give --target or --target-cmd"),
        (["--target", "a:b", "--target-cmd", "c"], "give --target or --target-cmd, not both"),
        (["--target", REFERENCE_TARGET, "--cells", "0"], "'--cells': 0 is not in the range"),
        (["--target", REFERENCE_TARGET, "--seed", "-1"], "'--seed': -1 is not in the range"),
        (["--target", REFERENCE_TARGET, "--runtime", "nope"], "'--runtime'"),
        (["--target", "no_such_module_here:run", "--cells", "1"], "cannot import"),
        (["--target", REFERENCE_TARGET, "--out", "{tmp}/file"], "a file"),
        (
            ["--target", REFERENCE_TARGET, "--out", ""],
            "Invalid value for '--out': '' is empty, which names no file or folder; give a path "
            "(or leave the option out: .harness/fuzz)",
        ),
    ],
)
def test_bad_options_exit_2(arguments: list[str], message: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    out = [] if "--out" in arguments else ["--out", str(tmp_path)]
    result = CliRunner().invoke(main, ["fuzz", *arguments, *out])
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.mark.parametrize(
    ("cells", "seed", "named"),
    [(0, 0, "cells=0 (type=int)"), (True, 0, "cells=True"), (1, -1, "seed=-1 (type=int)")],
)
def test_fuzz_refuses_a_count_or_seed_it_cannot_search_with(
    cells: int, seed: int, named: str, tmp_path: Path
) -> None:
    with pytest.raises(FuzzOptionError, match=named.replace("(", "\\(").replace(")", "\\)")):
        fuzz(TargetSpec(callable=REFERENCE_TARGET), cells=cells, seed=seed, out=tmp_path)


class _FullDisk(io.FileIO):
    """A file on a disk that fills up halfway through what is written to it."""

    def write(self, data: ReadableBuffer, /) -> int:
        written = bytes(data)
        super().write(written[: len(written) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file the harness writes atomically (`harness.files.write_atomically`) fills the
    disk."""
    monkeypatch.setattr(files, "open", lambda fd, mode: _FullDisk(fd, "wb"), raising=False)


@pytest.mark.usefixtures("full_disk")
def test_a_full_disk_leaves_no_scenario_file_and_says_why(tmp_path: Path) -> None:
    scenario = Scenario.model_validate(
        {"name": "fuzz", "kind": "completion", "executions": [{"input": {}, "expect": {}}]}
    )
    with pytest.raises(FuzzWriteError) as refused:
        write_scenario(scenario, tmp_path / "out", description="a found cell")
    assert isinstance(refused.value, OSError)
    assert refused.value.code == "fuzz_write_failed"
    message = str(refused.value)
    assert message.startswith(f"cannot write the scenario file {tmp_path / 'out'}/fuzz-completion-")
    assert ".yaml: No space left on device; free some space or give --out a folder" in message
    assert list((tmp_path / "out").iterdir()) == []  # no empty, partial or temporary file


@pytest.mark.usefixtures("full_disk")
def test_harness_fuzz_on_a_full_disk_exits_2_naming_the_file_and_the_reason(
    tmp_path: Path,
) -> None:
    mutant = "tests.support.fuzz_mutants:completion_blank_is_strip"
    arguments = ["--kind", "completion", "--seed", "1", "--no-shrink", "--out", str(tmp_path)]
    result = CliRunner().invoke(main, ["fuzz", "--target", mutant, *arguments])
    assert result.exit_code == 2, result.output
    assert f"error: cannot write the scenario file {tmp_path}/fuzz-completion-" in result.output
    assert "No space left on device" in result.output
    assert list(tmp_path.iterdir()) == []


def test_target_env_with_a_callable_is_refused() -> None:
    with pytest.raises(
        TargetSpecError, match="--target-env sets the environment of a --target-cmd"
    ):
        fuzz_target(REFERENCE_TARGET, None, ["FOO=1"])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=fuzz_scenarios(kinds=("agent", "decision", "completion")))
def test_every_generated_cell_is_written_as_it_was_generated(
    scenario: Scenario, tmp_path: Path
) -> None:
    """Java blanks, emoji, cut-off JSON and deep workflow states survive the YAML; the file
    holds the cell as generated, and its expect passes on the reference in process."""
    path = write_scenario(scenario, tmp_path, description="a generated cell")
    (loaded,) = load_file(path)
    written = loaded.scenario
    assert written.kind == scenario.kind
    assert written.script == scenario.script
    assert written.agent == scenario.agent
    assert written.input == scenario.input
    assert [e.input for e in written.executions or []] == [
        e.input for e in scenario.executions or []
    ]
    assert (written.models, written.session, written.config, written.tool_policy) == (
        scenario.models,
        scenario.session,
        scenario.config,
        scenario.tool_policy,
    )
    if written.kind == "agent":
        assert written.provider == scenario.provider
        assert written.expect.chunks_in_order is not None
    result = run_cell(Cell(loaded, *written.cells()[0]), RunOptions())
    assert result.passed, result.mismatches


def _numbers(value: object) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [number for item in value.values() for number in _numbers(item)]
    if isinstance(value, list | tuple):
        return [number for item in value for number in _numbers(item)]
    return []


@settings(max_examples=30, deadline=None)
@given(scenario=fuzz_scenarios())
def test_generated_arguments_hold_only_numbers_javascript_and_python_write_alike(
    scenario: Scenario,
) -> None:
    """`json.dumps` and `JSON.stringify` agree on every number a cell's script holds (no `1.0`,
    no `1.5e-05`), so the output's hash is the same whichever a runtime uses."""
    for reply in scenario.script or []:
        for call in reply.tool_calls:
            for number in _numbers(call.arguments):
                assert not number.is_integer(), number
                assert abs(number) >= 1e-4, number


_FIND: Final = settings(
    database=None, max_examples=300, deadline=None, phases=(Phase.generate,), derandomize=True
)
"""The first generated cell that shows what a test looks for (not shrunk: each try of some runs
the reference)."""


def _refuses_tool_choice(reply: ScriptedReply) -> bool:
    return reply.error is not None and any(
        reply.error == tool_choice_refusal(provider) for provider in PROVIDERS
    )


def test_plain_agents_without_an_output_schema_are_generated() -> None:
    """A plain run: no output schema, so no forced phase, whatever the script says."""
    plain = find(
        fuzz_scenarios(),
        lambda cell: cell.agent is not None and cell.agent.output_schema is None,
        settings=_FIND,
    )
    (expect,) = reference_expect(plain)
    assert expect["forced_calls"] == 0
    assert expect["chunk_sequence"] == []


@settings(max_examples=60, deadline=None, database=None)
@given(scenario=fuzz_scenarios(features=()))
def test_nothing_a_target_does_not_declare_is_generated(scenario: Scenario) -> None:
    assert scenario.agent is not None
    assert scenario.agent.llm_config_override is None
    assert scenario.faults == []
    assert scenario.cancel is None
    assert not scenario.agent.stream
    assert scenario.agent.memory is None


def test_an_override_is_generated_for_a_target_that_declares_it() -> None:
    """The forced phase's override changes the forced request, never the work requests: a
    target passing the wrong execution phase to it differs in `work_request`, one that ignores
    it in `forced_request`."""
    cell = find(
        fuzz_scenarios(features=["llm_config_override"]),
        lambda cell: (
            cell.agent is not None
            and cell.agent.llm_config_override is not None
            and cell.agent.llm_config_override.temperature is not None
            and reference_expect(cell)[0]["forced_calls"] > 0
        ),
        settings=_FIND,
    )
    assert cell.agent is not None
    assert cell.agent.llm_config_override is not None
    (expect,) = reference_expect(cell)
    assert expect["forced_request"]["temperature"] == cell.agent.llm_config_override.temperature
    assert expect.get("work_request", {}).get("temperature") is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_provider_s_refusal_is_generated_and_read_as_one(provider: Provider) -> None:
    """Each provider's refusal is among its replies, in words its adapter reads as a refusal of
    the forced tool choice: answering a forced call, the run fails at once with
    `framework_completion_tool_choice_unsupported` (as in the library's hand-written cell)."""
    find(
        fuzz_scenarios(providers=[provider]),
        lambda cell: any(_refuses_tool_choice(reply) for reply in cell.script or []),
        settings=_FIND,
    )
    refusal = tool_choice_refusal(provider)
    assert refusal is not None
    refused = Scenario.model_validate(
        {
            "name": "refused",
            "provider": provider,
            "model": MODELS[provider][0],
            "stores": ["memory"],
            "script": [
                {"text": "Paris."},
                {"error": refusal.model_dump()},
            ],
            "agent": {
                "system_prompt": "You find capitals.",
                "output_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    )
    (expect,) = reference_expect(refused)
    assert expect["error_code"] == "framework_completion_tool_choice_unsupported"
    assert expect["forced_calls"] == 1


def test_reasoning_and_thinking_agents_are_generated() -> None:
    """OpenAI reasoning and Anthropic extended thinking (which no forced call may keep on)."""
    for provider in ("openai", "anthropic"):
        cell = find(
            fuzz_scenarios(providers=[provider]),
            lambda cell: cell.agent is not None and cell.agent.reasoning not in (None, "disabled"),
            settings=_FIND,
        )
        assert cell.provider == provider


@pytest.mark.parametrize("feature", ["faults", "cancel"])
def test_crash_points_and_cancellations_are_generated_where_the_run_reaches_them(
    feature: str,
) -> None:
    """Only when the target declares the feature; each after a persistence the run reaches, so
    the written cell passes on the reference (no `fault_not_reached`, no `cancel_not_reached`)."""
    cell = find(
        fuzz_scenarios(features=[feature]),
        lambda cell: bool(cell.faults if feature == "faults" else cell.cancel),
        settings=_FIND,
    )
    assert (cell.cancel is None) if feature == "faults" else (cell.faults == [])
    (expect,) = reference_expect(cell)
    if feature == "cancel":
        assert expect["status"] == "cancelled"


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=fuzz_scenarios(features=FEATURES))
def test_cells_with_every_feature_pass_their_written_expect_on_the_reference(
    scenario: Scenario, tmp_path: Path
) -> None:
    path = write_scenario(scenario, tmp_path, description="a generated cell")
    (loaded,) = load_file(path)
    written = loaded.scenario
    assert (written.agent, written.faults, written.cancel) == (
        scenario.agent,
        scenario.faults,
        scenario.cancel,
    )
    result = run_cell(Cell(loaded, *written.cells()[0]), RunOptions())
    assert result.passed, result.mismatches


@pytest.mark.parametrize(
    ("mutant", "seed", "difference"),
    [
        (
            "tests.support.fuzz_mutants:ignores_config_override",
            0,
            ("answer.requests", "answer.counters.llm_config_override_calls"),
        ),
        ("tests.support.fuzz_mutants:ignores_cancel", 0, ("answer.status",)),
    ],
)
def test_a_target_getting_a_generated_feature_wrong_is_found(
    mutant: str, seed: int, difference: tuple[str, ...], tmp_path: Path
) -> None:
    """Found on a target declaring every feature, among cells of every kind."""
    outcome = fuzz(TargetSpec(callable=mutant), cells=BUDGET, seed=seed, out=tmp_path)
    finding = outcome.finding
    assert finding is not None, "no difference found"
    assert any(line.startswith(difference) for line in finding.differences), finding.differences
    assert _fails_on(mutant, finding.path)
    assert not _fails_on(REFERENCE_TARGET, finding.path)


@pytest.mark.subprocess
def test_a_command_target_is_searched_the_same_way(tmp_path: Path) -> None:
    wrong_code = """
    if answer.get("status") == "failed":
        answer["error_code"] = "framework_llm_call_failed"
    """
    command = stdio_target(tmp_path, wrong_code)
    result = CliRunner().invoke(
        main,
        ["fuzz", "--target-cmd", command, "--cells", str(BUDGET), "--out", str(tmp_path / "out")],
    )
    assert result.exit_code == 1, result.output
    (written,) = (tmp_path / "out").glob("*.yaml")
    (loaded,) = load_file(written)
    assert loaded.scenario.expect.status == "failed"
    assert loaded.scenario.expect.error_code != "framework_llm_call_failed"


pytest_plugins = ["pytester"]


@pytest.mark.subprocess
def test_the_pytest_plugin_runs_the_fuzzer_on_the_session_s_target(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`harness_fuzz` searches the `--harness-target`: a pass on the reference, a failure that
    names the written scenario on a mutant."""
    pytester.makepyfile(
        test_contract="""
        def test_my_runtime_agrees_with_the_reference(harness_fuzz):
            outcome = harness_fuzz(cells=20, seed=0, kinds=["agent"], shrink=False)
            assert outcome.cells_run >= 20
        """
    )
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    options = ("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:cassetter")
    agreed = pytester.runpytest_subprocess(*options, f"--harness-target={REFERENCE_TARGET}")
    agreed.assert_outcomes(passed=1)
    differs = pytester.runpytest_subprocess(*options, f"--harness-target={WRONG_CODE}")
    differs.assert_outcomes(failed=1)
    differs.stdout.fnmatch_lines(["*the target differs from the reference; *.yaml*"])
