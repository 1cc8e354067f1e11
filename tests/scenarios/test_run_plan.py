"""One run plan, three faces: the same input given to `harness run`, to `run_scenarios` and to the
pytest plugin selects the same cells (with the same verdicts) or is refused with the same error,
each naming the option as that face spells it.

Each row is written once, in `run_scenarios`' parameter names; the faces' spellings come from the
plan's own `OptionNames`, and a row runs on every face that has all of its options (the plugin
has no `-k`, `-n`, `--shard`, `--last-failed`, `--compare-reference` or JSON report: pytest's own
options do that work there)."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import pytest
from click.testing import CliRunner

from harness import run_scenarios
from harness.cli import main
from harness.errors import HarnessError
from harness.scenarios.plan import (
    CLI_NAMES,
    PYTEST_NAMES,
    PYTHON_NAMES,
    OptionNames,
    RunPlanError,
    default_paths,
    plan_run,
)
from harness.targets import REFERENCE_TARGET, TargetSpecError

pytest_plugins = ["pytester"]

Face = Literal["cli", "python", "pytest"]
FACES: Final[tuple[Face, ...]] = ("cli", "python", "pytest")
NAMES: Final[Mapping[Face, OptionNames]] = {
    "cli": CLI_NAMES,
    "python": PYTHON_NAMES,
    "pytest": PYTEST_NAMES,
}

INI = """
[pytest]
harness_scenarios = scenarios
addopts = --strict-markers --strict-config -p no:cacheprovider -p no:cassetter
filterwarnings = error
"""

LIBRARY = """
- name: capital
  tags: [smoke]
  runtimes: [js, temporal]
  stores: [memory]
  script: [{text: It is Paris.}]
  agent: {user_message: Capital?}
  expect: {status: completed, outcome_record: {final_message: It is Paris.}}
- name: capital-wrong
  stores: [memory]
  script: [{text: It is Lyon.}]
  agent: {user_message: Capital?}
  expect: {outcome_record: {final_message: It is Paris.}}
- name: completion-ok
  kind: completion
  input: {agentFinalAnswer: Done.}
  expect: {status: completed}
"""

ONLY_JS = f"""
from {REFERENCE_TARGET.partition(":")[0]} import run as reference


def run(message):
    answer = reference(message)
    if message.get("type") == "hello":
        answer["runtimes"] = ["js"]  # the temporal cells are skipped, with the reason
    return answer
"""
"""A target that declares the js profile only: a run on it is told from one on the reference."""

EVERY_CELL: Final = {
    "capital[js-memory]": "passed",
    "capital[temporal-memory]": "passed",
    "capital-wrong[js-memory]": "failed",
    "completion-ok": "passed",
}

Verdicts = dict[str, str]


@dataclass(frozen=True)
class Row:
    """One input for every face that has its options: `cells` it selects, or the `code` and
    `message` (a template over the face's `OptionNames`) it is refused with."""

    name: str
    given: dict[str, Any] = field(default_factory=dict)
    cells: Verdicts | None = None
    code: str | None = None
    message: str = ""
    pyproject: str | None = None
    before: Callable[[], object] | None = None
    """Run first, in the project: what the row needs to have happened (a previous run)."""
    faces: tuple[Face, ...] = FACES
    """Narrower than the faces that have the row's options: the CLI refuses an unknown runtime,
    store or record mode while parsing, listing click's choices, before a plan is made."""


ROWS: Final = [
    Row("the whole library", cells=EVERY_CELL),
    Row(
        "a runtime profile",
        {"runtimes": ["temporal"]},
        cells={"capital[temporal-memory]": "passed", "completion-ok": "passed"},
    ),
    Row(
        "a keyword",
        {"keyword": "smoke"},
        cells={"capital[js-memory]": "passed", "capital[temporal-memory]": "passed"},
    ),
    Row("the only shard", {"shard": "1/1"}, cells=EVERY_CELL),
    Row(
        "the cells that failed last time",
        {"last_failed": True},
        cells={"capital-wrong[js-memory]": "failed"},
        before=lambda: run_scenarios(),
    ),
    Row(
        "the [tool.harness] target when none is given",
        pyproject='[tool.harness]\ntarget = "only_js:run"\n',
        cells={**EVERY_CELL, "capital[temporal-memory]": "skipped"},
    ),
    Row(
        "a callable and a command",
        {"target": "only_js:run", "target_cmd": "node target.mjs"},
        code="target_spec_invalid",
        message="give {target} or {target_cmd}, not both",
    ),
    Row(
        "a target environment without a command",
        {"target_env": ["PATH"]},
        code="target_spec_invalid",
        message="{target_env} sets the environment of a {target_cmd}; a {target} callable",
    ),
    Row(
        "a target environment without a command, with [tool.harness] target",
        {"target_env": ["PATH"]},
        pyproject='[tool.harness]\ntarget = "only_js:run"\n',
        code="target_spec_invalid",
        message="{target_env} sets the environment of a {target_cmd}",
    ),
    Row(
        "a target environment entry that is no NAME",
        {"target_cmd": "node target.mjs", "target_env": ["BAD NAME=secret"]},
        code="target_spec_invalid",
        message="{target_env} 'BAD NAME': expected NAME",
    ),
    Row(
        "a [tool.harness] target that is not a string",
        pyproject="[tool.harness]\ntarget = 1\n",
        code="target_spec_invalid",
        message="[tool.harness] target must be a string",
    ),
    Row(
        "a comparison without a target",
        {"compare_reference": True},
        code="target_spec_invalid",
        message="{compare_reference} compares a target with the reference: give {target} or "
        "{target_cmd}",
    ),
    Row(
        "workers that are no number",
        {"workers": "abc"},
        code="workers_invalid",
        message="{workers} 'abc': expected auto (one worker per CPU core) or a whole number",
    ),
    Row(
        "a shard past the last",
        {"shard": "3/2"},
        code="shard_invalid",
        message="{shard} '3/2': expected K/N in digits with 1 <= K <= N",
    ),
    Row(
        "the last failures without a previous run",
        {"last_failed": True},
        code="last_run_unreadable",
        message="{last_failed}: no previous run in",
    ),
    Row(
        "a report under a file",
        {"html": "scenarios/library.yaml/report.html"},
        code="report_path_invalid",
        message="{html} scenarios/library.yaml/report.html: cannot write a report there",
    ),
    Row(
        "a store URL of no store",
        {"store_url": "mysql://db"},
        code="store_url_invalid",
        message="expected a store URL such as",
    ),
    Row(
        "a keyword no cell matches",
        {"keyword": "nothing-like-this"},
        code="run_plan_invalid",
        message="no scenario cell matches the given paths and filters",
    ),
    Row(
        "a runtime profile that does not exist",
        {"runtimes": ["lambda"]},
        code="run_plan_invalid",
        message="expected {runtimes} to be one of js, ",
        faces=("python", "pytest"),
    ),
    Row(
        "a record mode that does not exist",
        {"record_mode": "sometimes"},
        code="cassette_record_mode_invalid",
        message="{record_mode}: expected one of none, once, new_episodes, all",
        faces=("python", "pytest"),
    ),
]


@dataclass(frozen=True)
class Seen:
    """What a face did: the verdict of each cell it ran, or the message it refused the input
    with (and the code, where the face shows one)."""

    cells: Verdicts | None = None
    refusal: str | None = None
    code: str | None = None


def _has_options(face: Face, given: Mapping[str, Any]) -> bool:
    """Whether `face` has an option for each parameter of `given`: the plugin spells its own
    options `--harness-*` and leaves the others to pytest."""
    names = dataclasses.asdict(NAMES[face])
    return face != "pytest" or all(names[name].startswith("--harness-") for name in given)


def _arguments(names: OptionNames, given: Mapping[str, Any]) -> list[str]:
    spelt = dataclasses.asdict(names)
    arguments: list[str] = []
    for name, value in given.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            arguments += [spelt[name]] if item is True else [spelt[name], str(item)]
    return arguments


def through_cli(project: Path, given: Mapping[str, Any]) -> Seen:
    report = project / "cli.json"
    arguments = ["run", "scenarios", *_arguments(CLI_NAMES, given), "--json", str(report)]
    result = CliRunner().invoke(main, arguments)
    if result.exit_code == 2:
        assert "Traceback" not in result.output
        return Seen(refusal=result.output)
    assert result.exit_code in (0, 1), result.output
    cells = json.loads(report.read_text())["cells"]
    return Seen(
        cells={
            cell["id"]: "skipped" if cell["skipped"] else "passed" if cell["passed"] else "failed"
            for cell in cells
        }
    )


def through_python(given: Mapping[str, Any]) -> Seen:
    try:
        run = run_scenarios(["scenarios"], **given)
    except HarnessError as error:
        return Seen(refusal=str(error), code=error.code)
    return Seen(
        cells={
            result.cell.id: "skipped" if result.skipped else "passed" if result.passed else "failed"
            for result in run.results
        }
    )


def through_pytest(pytester: pytest.Pytester, given: Mapping[str, Any]) -> Seen:
    report = pytester.path / "pytest.xml"
    result = pytester.runpytest(*_arguments(PYTEST_NAMES, given), f"--junitxml={report}")
    if result.ret == pytest.ExitCode.USAGE_ERROR:
        return Seen(refusal=result.stderr.str())
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    verdicts: Verdicts = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        outcome = {child.tag for child in case} & {"skipped", "failure", "error"}
        verdict = "skipped" if "skipped" in outcome else "failed" if outcome else "passed"
        verdicts[case.get("name", "")] = verdict
    return Seen(cells=verdicts)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The scenario library in `scenarios/`, collected by the plugin, run from the project."""
    monkeypatch.chdir(pytester.path)
    pytester.makeini(INI)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "library.yaml").write_text(LIBRARY)
    (pytester.path / "only_js.py").write_text(ONLY_JS)
    return pytester


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_every_face_plans_the_same_run(project: pytest.Pytester, row: Row) -> None:
    if row.pyproject is not None:
        (project.path / "pyproject.toml").write_text(row.pyproject)
    if row.before is not None:
        row.before()
    faces = [face for face in row.faces if _has_options(face, row.given)]
    assert "python" in faces
    seen: dict[Face, Seen] = {}
    for face in faces:
        if face == "cli":
            seen[face] = through_cli(project.path, row.given)
        elif face == "python":
            seen[face] = through_python(row.given)
        else:
            seen[face] = through_pytest(project, row.given)
    for face, what in seen.items():
        if row.cells is not None:
            assert what.refusal is None, f"{face} refused: {what.refusal}"
            assert what.cells == row.cells, face
            continue
        message = row.message.format(**dataclasses.asdict(NAMES[face]))
        assert what.refusal is not None, f"{face} ran {what.cells}"
        assert message in what.refusal, face
        if face == "python":
            assert what.code == row.code
        assert "secret" not in what.refusal, "a refusal names the entry, never its value"


def test_the_faces_spell_every_option_of_the_plan() -> None:
    """Each spelling names one option of `plan_run`: a new option gets a spelling in each face,
    and the CLI's are its real option names."""
    parameters = set(plan_run.__annotations__) - {"paths", "workdir", "names", "load", "return"}
    parameters -= {"strict_cassettes"}  # a flag nothing refuses
    assert {f.name for f in dataclasses.fields(OptionNames)} == parameters
    command = main.commands["run"]
    spelt = {flag for option in command.params for flag in option.opts}
    assert set(dataclasses.asdict(CLI_NAMES).values()) <= spelt


def test_a_plan_without_paths_runs_the_default_library(
    project: pytest.Pytester,
) -> None:
    assert default_paths() == [Path("scenarios")]
    plan = plan_run()
    assert [cell.id for cell in plan.cells] == list(EVERY_CELL)
    assert plan.target is None
    assert plan.workers == 0


def test_the_plan_holds_the_target_the_workers_and_the_reports(project: pytest.Pytester) -> None:
    plan = plan_run(
        ["scenarios"],
        target="only_js:run",
        cell_timeout=5,
        workers="2",
        json="out/report.json",
        html="out/report.html",
    )
    assert plan.target is not None
    assert (plan.target.callable, plan.target.command, plan.target.cell_timeout) == (
        "only_js:run",
        None,
        5,
    )
    assert plan.workers == 2
    assert plan.reports.json == Path("out/report.json")
    assert plan.options.collect_detail, "an HTML report needs each cell's detail"
    assert plan.options.workdir == project.path


def test_a_command_gets_the_configured_environment_then_the_given_one(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FROM_PYPROJECT", "1")
    (project.path / "pyproject.toml").write_text(
        '[tool.harness]\ntarget = "only_js:run"\ntarget-env = ["FROM_PYPROJECT", "FLAG=a"]\n'
    )
    plan = plan_run(target_cmd="node target.mjs", target_env=["FLAG=b"])
    assert plan.target is not None
    assert plan.target.callable is None, "a command given wins over [tool.harness] target"
    assert plan.target.env == ("FROM_PYPROJECT", "FLAG=a", "FLAG=b")


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({"paths": "scenarios"}, RunPlanError),
        ({"runtimes": "js"}, RunPlanError),
        ({"target_cmd": "node target.mjs", "target_env": "PATH"}, TargetSpecError),
        ({"target": "only_js:run", "cell_timeout": 0}, TargetSpecError),
    ],
)
def test_python_callers_are_refused_one_str_for_a_list_and_a_timeout_of_zero(
    project: pytest.Pytester, given: dict[str, Any], error: type[HarnessError]
) -> None:
    with pytest.raises(error):
        plan_run(**given)


def test_the_reference_target_keeps_its_earlier_name(project: pytest.Pytester) -> None:
    run = run_scenarios(target="harness.targets.reference:run", runtimes=["js"])
    assert {result.cell.id: result.passed for result in run.results} == {
        "capital[js-memory]": True,
        "capital-wrong[js-memory]": False,
        "completion-ok": True,
    }
