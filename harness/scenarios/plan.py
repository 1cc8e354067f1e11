"""One run plan: what a run of scenario cells is, decided by one set of rules for `harness run`,
`harness.run_scenarios` and the pytest plugin.

`plan_run` turns what was asked (paths or the default library, runtime profiles, stores and
`-k`, the record mode and store URL, a target or the in-process reference with
`[tool.harness]` of `pyproject.toml`, `-n`, `--shard`, `--last-failed`, the report paths) into
a `RunPlan`, refusing bad input before anything runs with the same typed `HarnessError` whichever
face was used; each message names the option as that face spells it (`OptionNames`).
`execute_plan` runs a plan (in this process on the reference, on a target, or in `-n` workers)
and `write_reports` writes what it asked for. The pytest plugin collects each file's cells
itself, as pytest items, with `RunPlan.select`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from harness.cassettes.modes import RecordMode
from harness.engines.settings import ENGINE_NAMES, EngineName, EngineSettings, EngineUnknownError
from harness.errors import HarnessError
from harness.runtimes.base import RUNTIME_NAMES
from harness.scenarios.bundled import ScenarioLibrary, bundled_library, check_recordable
from harness.scenarios.load import LoadedScenario, load_scenarios
from harness.scenarios.parallel import LAST_RUN, Shard, failed_last_time, worker_count
from harness.scenarios.project import configured_target, configured_target_env
from harness.scenarios.report import ScenarioPaths, check_report_paths, write_json, write_junit
from harness.scenarios.run import Cell, CellResult, RunOptions, expand, run_cell
from harness.scenarios.select import compile_keyword
from harness.stores.base import STORE_KINDS
from harness.stores.timeouts import StoreTimeouts
from harness.stores.urls import check_store_url

if TYPE_CHECKING:
    from harness.scenarios.on_target import TargetSpec
    from harness.targets.errors import TargetSpecError


class RunPlanError(HarnessError, ValueError):
    """Raised when a run is asked for that has nothing to run or names what does not exist: no
    scenario cell matches the given paths and filters, a runtime profile or store that is not
    one, or a single string where a list is expected. Checked before anything runs."""

    code = "run_plan_invalid"


@dataclass(frozen=True, kw_only=True)
class OptionNames:
    """How a face spells each option, so that a refusal names the one its user typed; the
    defaults are `run_scenarios`' parameter names."""

    runtimes: str = "runtimes"
    stores: str = "stores"
    record_mode: str = "record_mode"
    store_url: str = "store_url"
    keyword: str = "keyword"
    target: str = "target"
    target_cmd: str = "target_cmd"
    target_env: str = "target_env"
    compare_reference: str = "compare_reference"
    cell_timeout: str = "cell_timeout"
    workers: str = "workers"
    shard: str = "shard"
    last_failed: str = "last_failed"
    junit_xml: str = "junit_xml"
    json: str = "json"
    html: str = "html"
    engine: str = "engine"
    temporal_address: str = "temporal_address"
    engine_workers: str = "engine_workers"


PYTHON_NAMES: Final = OptionNames()
CLI_NAMES: Final = OptionNames(
    runtimes="--runtime",
    stores="--store",
    record_mode="--record-mode",
    store_url="--store-url",
    keyword="-k",
    target="--target",
    target_cmd="--target-cmd",
    target_env="--target-env",
    compare_reference="--compare-reference",
    cell_timeout="--cell-timeout",
    workers="-n",
    shard="--shard",
    last_failed="--last-failed",
    junit_xml="--junit-xml",
    json="--json",
    html="--html",
    engine="--engine",
    temporal_address="--temporal-address",
    engine_workers="--engine-workers",
)
PYTEST_NAMES: Final = OptionNames(
    runtimes="--harness-runtime",
    stores="--harness-store",
    record_mode="--harness-record-mode",
    store_url="--harness-store-url",
    target="--harness-target",
    target_cmd="--harness-target-cmd",
    target_env="--harness-target-env",
    html="--harness-html",
    engine="--harness-engine",
    temporal_address="--harness-temporal-address",
    engine_workers="--harness-engine-workers",
)
"""The plugin has no `-k`, `-n`, `--shard` or `--last-failed` of its own: pytest's (and
pytest-xdist's) apply to its items."""


@dataclass(frozen=True, kw_only=True)
class ReportPaths:
    """The report files a run writes when it is done (each checked writable by `plan_run`)."""

    junit_xml: Path | None = None
    json: Path | None = None
    html: Path | None = None


@dataclass(frozen=True, kw_only=True)
class BundledRun:
    """A run given no paths in a folder without `scenarios/`: it runs the scenario library
    bundled with the harness."""

    library: ScenarioLibrary
    scenarios: int
    """How many scenarios the library holds (before any filter)."""

    @property
    def announcement(self) -> str:
        """What `harness run` prints first, so that nobody mistakes the run for their own."""
        return (
            f"running the bundled scenario library ({self.scenarios} scenarios) from "
            f"{self.library.root}"
        )


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    """A run, decided: the cells to run, in order, and how to run them."""

    cells: tuple[Cell, ...]
    options: RunOptions
    target: TargetSpec | None
    """The implementation under test; None runs the in-process reference."""
    workers: int
    """Worker processes (`-n`); 0 runs in this process."""
    reports: ReportPaths
    keyword: str = ""
    shard: Shard | None = None
    failed_before: frozenset[str] | None = None
    """With `--last-failed`: the ids of the cells that failed in the previous run (none failed:
    every cell runs, as with `pytest --last-failed`)."""
    bundled: BundledRun | None = None
    """Set when the plan runs the bundled library (`default_library`)."""

    def select(self, loaded: Iterable[LoadedScenario]) -> list[Cell]:
        """The cells of `loaded` this plan runs, in order: the matrix filters and `-k`
        (`select_cells`), then `narrow`."""
        return self.narrow(select_cells(loaded, self.options, self.keyword))

    def narrow(self, cells: Sequence[Cell]) -> list[Cell]:
        """`cells` in this plan's shard, and only those that failed last time with
        `--last-failed`."""
        cells = list(cells)
        if self.shard is not None:
            cells = [cell for cell in cells if self.shard.holds(cell)]
        if self.failed_before:
            cells = [cell for cell in cells if cell.id in self.failed_before]
        return cells


def default_library() -> ScenarioLibrary | None:
    """The library a run given no paths runs when it is not the working folder's: None when the
    working folder has a `scenarios/` (anything by that name, so a broken link still fails as
    one), else the library bundled with the harness (`bundled_library`, which raises
    `LibraryNotFoundError` when there is none)."""
    return None if os.path.lexists("scenarios") else bundled_library()


def default_paths(*, recording: str | None = None) -> list[Path]:
    """What a run given no paths runs: `scenarios/` of the working folder, else the bundled
    library's scenarios (`default_library`). Each scenario finds its cassettes relative to its
    own file, so the bundled scenarios replay the bundled cassettes from any working folder.

    A run that records (`recording` says how, as the user asked for it) is refused the bundled
    library (`LibraryReadOnlyError`): run from elsewhere, it would rewrite the cassettes of
    the installation, or of the checkout an editable install runs from."""
    return _default_run(recording)[0]


def _default_run(recording: str | None) -> tuple[list[Path], ScenarioLibrary | None]:
    library = default_library()
    if library is None:
        return [Path("scenarios")], None
    if recording is not None:
        raise library.read_only(recording)
    return [library.scenarios], library


def select_cells(
    loaded: Iterable[LoadedScenario], options: RunOptions, keyword: str = ""
) -> list[Cell]:
    """The cells of `loaded` the options' matrix filters and `-k keyword` select, in order."""
    selected = compile_keyword(keyword)
    return [
        cell for cell in expand(loaded, options) if selected({cell.id, *cell.loaded.scenario.tags})
    ]


def plan_run(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    runtimes: Sequence[str] = (),
    stores: Sequence[str] = (),
    keyword: str = "",
    record_mode: str | RecordMode = RecordMode.NONE,
    store_url: str | None = None,
    strict_cassettes: bool = False,
    target: str | None = None,
    target_cmd: str | None = None,
    target_env: Sequence[str] = (),
    compare_reference: bool = False,
    cell_timeout: float | None = None,
    workers: int | str = 0,
    shard: str | None = None,
    last_failed: bool = False,
    junit_xml: str | os.PathLike[str] | None = None,
    json: str | os.PathLike[str] | None = None,
    html: str | os.PathLike[str] | None = None,
    workdir: Path | None = None,
    names: OptionNames = PYTHON_NAMES,
    load: bool = True,
    engine: str = "simulated",
    temporal_address: str | None = None,
    engine_workers: int = 1,
) -> RunPlan:
    """The plan of a run, every option checked before anything runs (the first problem raises
    its typed `HarnessError`, naming the option as `names` spells it).

    `paths` (files or folders; none: `default_paths()`, and when that is the bundled library
    the plan's `bundled` says so) are loaded, and the plan holds the cells that the runtime
    profiles, stores and `keyword` select (`RunPlanError` when none does), then those of the
    `shard` (`K/N`) and, with `last_failed`, those that failed in the previous run in `workdir`
    (default: the working folder). A `record_mode` other than `none` on the bundled library,
    or on any file of the library installed with the harness, is refused
    (`LibraryReadOnlyError`). With `load=False` nothing is loaded and the plan holds no cells:
    the caller (the pytest plugin) selects each file's with `select`.

    The target is `target` (a `module:function`) or `target_cmd` (a command), never both; with
    neither, `[tool.harness] target` of `workdir/pyproject.toml`, else the in-process
    reference. `target_env` (`NAME` or `NAME=VALUE`) and `[tool.harness] target-env` reach a
    command only, so `target_env` without `target_cmd` is refused rather than ignored, as is
    `compare_reference` without a target. `workers` is `auto` or a count (`worker_count`);
    `junit_xml`, `json` and `html` must be writable, each its own file (`check_report_paths`).

    `engine` is `simulated` or `real` (the `temporal` and `dbos` cells on the engine itself,
    the reference only, so not with a target); `temporal_address` (`HOST:PORT`) and
    `engine_workers` go with `real` only. DBOS keeps its system database in the PostgreSQL of
    `store_url` when it is one.
    """
    folder = Path.cwd() if workdir is None else workdir
    for name, given in (("paths", paths), (names.runtimes, runtimes), (names.stores, stores)):
        _one_given(given, name)
    mode = _record_mode(record_mode, names.record_mode)
    _known(runtimes, stores, names)
    compile_keyword(keyword)  # a bad -k fails before anything loads
    worker_total = worker_count(str(workers), option=names.workers)
    chosen_shard = None if shard is None else Shard.parse(shard, option=names.shard)
    if store_url:
        check_store_url(store_url)
    StoreTimeouts.from_environment()
    reports = ReportPaths(junit_xml=_path(junit_xml), json=_path(json), html=_path(html))
    check_report_paths(
        {names.junit_xml: reports.junit_xml, names.json: reports.json, names.html: reports.html}
    )
    spec = resolve_target(
        target,
        target_cmd,
        target_env,
        compare_reference=compare_reference,
        cell_timeout=cell_timeout,
        pyproject=folder / "pyproject.toml",
        names=names,
    )
    engine_name, settings = _engine(
        engine, temporal_address, engine_workers, store_url, spec is not None, names
    )
    options = RunOptions(
        record_mode=mode,
        runtimes=tuple(runtimes),
        stores=tuple(stores),
        store_url=store_url,
        strict_cassettes=strict_cassettes,
        workdir=folder,
        collect_detail=reports.html is not None,
        engine=engine_name,
        engine_settings=settings,
    )
    failed = frozenset(failed_last_time(folder, option=names.last_failed)) if last_failed else None
    plan = RunPlan(
        cells=(),
        options=options,
        target=spec,
        workers=worker_total,
        reports=reports,
        keyword=keyword,
        shard=chosen_shard,
        failed_before=failed,
    )
    if not load:
        return plan
    recording = None if mode is RecordMode.NONE else f"{names.record_mode}={mode.value}"
    named = [Path(path) for path in paths]
    folders, library = (named, None) if named else _default_run(recording)
    loaded = load_scenarios(folders)
    if recording is not None:
        check_recordable((item.path for item in loaded), recording=recording)
    matching = select_cells(loaded, options, keyword)
    if not matching:  # an empty shard is a pass; a filter that matches nothing is a mistake
        raise RunPlanError("no scenario cell matches the given paths and filters")
    bundled = None if library is None else BundledRun(library=library, scenarios=len(loaded))
    return replace(plan, cells=tuple(plan.narrow(matching)), bundled=bundled)


def _engine(
    engine: str,
    temporal_address: str | None,
    workers: int,
    store_url: str | None,
    on_target: bool,
    names: OptionNames,
) -> tuple[EngineName, EngineSettings]:
    if engine not in ENGINE_NAMES:
        raise RunPlanError(
            f"expected {names.engine} to be one of {', '.join(ENGINE_NAMES)} but got {engine!r}"
        )
    if engine == "simulated":
        for name, given in (
            (names.temporal_address, temporal_address is not None),
            (names.engine_workers, workers != 1),
        ):
            if given:
                raise RunPlanError(f"{name} goes with {names.engine} real, not simulated")
        return "simulated", EngineSettings()
    if on_target:
        raise RunPlanError(
            f"{names.engine} real runs the reference on Temporal and DBOS; a target runs on its "
            f"own engine, so leave out {names.engine} or the target"
        )
    try:
        settings = EngineSettings(
            temporal_address=temporal_address,
            workers=workers,
            dbos_database_url=store_url if store_url and store_url.startswith("postgres") else None,
        )
    except EngineUnknownError as error:
        message = str(error).replace("temporal_address=", f"{names.temporal_address} ")
        raise RunPlanError(message.replace("workers=", f"{names.engine_workers} ")) from None
    return "real", settings


def execute_plan(
    plan: RunPlan, *, on_result: Callable[[CellResult], None] = lambda result: None
) -> Iterator[CellResult]:
    """Run the plan's cells, yielding each result in the plan's order, and calling `on_result`
    as each cell finishes (with workers, in the order they finish). Serially in this process on
    the reference or on the plan's target (opened first, closed when the iteration ends, also by
    Ctrl-C), or in `plan.workers` forked processes (`run_in_workers`). A cell's failure is in its
    result, never raised; a target that cannot be started raises its `HarnessError`."""
    if plan.workers:
        from harness.scenarios.parallel import run_in_workers  # a serial run loads no pool

        yield from run_in_workers(
            plan.cells, plan.options, plan.workers, target=plan.target, on_result=on_result
        )
        return
    with contextlib.ExitStack() as stack:
        run_one = run_cell
        if plan.target is not None:
            from harness.scenarios.on_target import target_runner  # only when a target runs

            run_one = stack.enter_context(target_runner(plan.target)).run_cell
        for cell in plan.cells:
            result = run_one(cell, plan.options)
            on_result(result)
            yield result


def write_reports(plan: RunPlan, results: Sequence[CellResult]) -> None:
    """Record the run for `--last-failed` (`.harness/last-run.json` in the plan's working folder;
    skipped where it cannot be written), then write the reports the plan asks for; those raise
    `OSError` when they cannot be written after all."""
    with contextlib.suppress(OSError):  # `--last-failed` reads it; a read-only folder skips it
        write_json(results, plan.options.workdir / LAST_RUN)
    reports = plan.reports
    if reports.junit_xml is not None:
        write_junit(results, reports.junit_xml)
    if reports.json is not None:
        write_json(results, reports.json)
    if reports.html is not None:
        from harness.scenarios.html import cell_view, write_html

        paths = ScenarioPaths()
        write_html([cell_view(result, paths=paths) for result in results], reports.html)


def _path(value: str | os.PathLike[str] | None) -> Path | None:
    return None if value is None else Path(value)


def _one_given(value: object, name: str) -> None:
    """Refuse one str or path where a list of them is expected (a str would be read as a list of
    letters)."""
    if isinstance(value, str | os.PathLike):
        raise RunPlanError(
            f"expected {name} as a list, but got one {type(value).__name__} {str(value)[:60]!r}"
        )


def _record_mode(value: str | RecordMode, name: str) -> RecordMode:
    try:
        return RecordMode.parse(value)
    except HarnessError as error:
        raise type(error)(f"{name}: {error}") from None


def _known(runtimes: Sequence[str], stores: Sequence[str], names: OptionNames) -> None:
    """Refuse a runtime profile or store that does not exist (it would silently select no cell),
    listing the allowed ones."""
    allowed: tuple[str, ...]
    for option, given, allowed in (
        (names.runtimes, runtimes, RUNTIME_NAMES),
        (names.stores, stores, STORE_KINDS),
    ):
        for value in given:
            if value not in allowed:
                raise RunPlanError(
                    f"expected {option} to be one of {', '.join(allowed)} but got "
                    f"{option}={value!r} (type={type(value).__name__})"
                )


def resolve_target(
    target: str | None,
    target_cmd: str | None,
    target_env: Sequence[str],
    *,
    compare_reference: bool,
    cell_timeout: float | None,
    pyproject: Path,
    names: OptionNames,
) -> TargetSpec | None:
    """The implementation the cells run on: `target`, `target_cmd`, else `[tool.harness]
    target` of `pyproject`; None for the in-process reference. A command gets `[tool.harness]
    target-env`, then `target_env`."""
    if isinstance(target_env, str):
        raise _target_refusal(
            f"expected {names.target_env} as a list of NAME or NAME=VALUE strings, but got one str"
        )
    if target is not None and target_cmd is not None:
        raise _target_refusal(f"give {names.target} or {names.target_cmd}, not both")
    if target_env and target_cmd is None:
        raise _target_refusal(
            f"{names.target_env} sets the environment of a {names.target_cmd}; a {names.target} "
            "callable (and the in-process reference) runs inside the harness and sees its "
            "environment"
        )
    if cell_timeout is not None and not cell_timeout > 0:
        raise _target_refusal(
            f"{names.cell_timeout} {cell_timeout!r}: expected the seconds a target may take for "
            "one cell, a number above 0"
        )
    if target is None and target_cmd is None:
        target = configured_target(pyproject)
    if target is None and target_cmd is None:
        if compare_reference:
            raise _target_refusal(
                f"{names.compare_reference} compares a target with the reference: give "
                f"{names.target} or {names.target_cmd}"
            )
        return None
    from harness.scenarios.on_target import TargetSpec  # only when a target runs
    from harness.targets.base import DEFAULT_CELL_TIMEOUT
    from harness.targets.environment import target_environment

    env: tuple[str, ...] = ()
    if target_cmd is not None:
        target_environment(target_env, origin=names.target_env)  # named as the user spelt it
        env = (*configured_target_env(pyproject), *target_env)
    return TargetSpec(
        callable=target,
        command=target_cmd,
        cell_timeout=DEFAULT_CELL_TIMEOUT if cell_timeout is None else cell_timeout,
        compare_reference=compare_reference,
        env=env,
    )


def _target_refusal(message: str) -> TargetSpecError:
    from harness.targets.errors import TargetSpecError  # the target machinery loads on a refusal

    return TargetSpecError(message)
