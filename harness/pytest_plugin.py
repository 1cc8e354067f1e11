"""The pytest plugin (entry point `pytest11`): scenario files as test items, and fixtures.

It only declares options, markers, fixtures and the scenario collector; the work is done by
`harness.scenarios`, `harness.cassettes` and `harness.llm`, imported inside the hooks and
fixtures that need them. Nothing is collected until the ini option `harness_scenarios` names the
folders (or files) that hold scenarios, so other test suites are unaffected.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, get_args, overload

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from harness.cassettes import CassetteTransport, HttpxCassetteTransport, RecordMode
    from harness.fuzz import FuzzOutcome
    from harness.http_clients import AnySyncTransport
    from harness.llm.gateway import LlmGateway
    from harness.llm.script import HttpxScriptTransport, ScriptedReply, ScriptTransport
    from harness.scenarios.on_target import TargetRunner
    from harness.scenarios.plan import RunPlan
    from harness.scenarios.run import Cell, RunOptions
    from harness.targets.protocol import ScenarioKind

SCENARIO_SUFFIXES = (".yaml", ".yml")
CASSETTE_MARKER = "harness_cassette"

_SCENARIO_ROOTS = pytest.StashKey[tuple[Path, ...]]()
_PLAN = pytest.StashKey["RunPlan | None"]()
_TARGET_RUNNER = pytest.StashKey["TargetRunner | None"]()
_REGISTERED_TAGS = pytest.StashKey[set[str]]()
_USAGE_LOG = pytest.StashKey[Path]()
_NARROWED = pytest.StashKey["str | None"]()


HttpLibraryName = Literal["httpx2", "httpx"]
HTTP_LIBRARY_NAMES: tuple[HttpLibraryName, ...] = get_args(HttpLibraryName)


class FuzzRunner(Protocol):
    """What the `harness_fuzz` fixture returns."""

    def __call__(
        self,
        *,
        cells: int = ...,
        seed: int = ...,
        runtime: str | None = ...,
        out: Path | None = ...,
        kinds: Sequence[ScenarioKind] | None = ...,
        shrink: bool = ...,
    ) -> FuzzOutcome: ...


class CassetteFactory(Protocol):
    """`harness_cassette(path=None, /, *, library="httpx2", **transport_options)`: see the
    fixture."""

    @overload
    def __call__(
        self,
        path: str | os.PathLike[str] | None = None,
        /,
        *,
        library: Literal["httpx2"] = "httpx2",
        **transport_options: Any,
    ) -> CassetteTransport: ...
    @overload
    def __call__(
        self,
        path: str | os.PathLike[str] | None = None,
        /,
        *,
        library: Literal["httpx"],
        **transport_options: Any,
    ) -> HttpxCassetteTransport: ...


class ScriptFactory(Protocol):
    """`harness_script(provider, replies, *, library="httpx2")`: see the fixture."""

    @overload
    def __call__(
        self,
        provider: str,
        replies: Iterable[ScriptedReply | Mapping[str, Any]],
        *,
        library: Literal["httpx2"] = "httpx2",
    ) -> ScriptTransport: ...
    @overload
    def __call__(
        self,
        provider: str,
        replies: Iterable[ScriptedReply | Mapping[str, Any]],
        *,
        library: Literal["httpx"],
    ) -> HttpxScriptTransport: ...


class GatewayFactory(Protocol):
    """`harness_gateway(provider, transport)`: see the fixture."""

    def __call__(self, provider: str, transport: AnySyncTransport) -> LlmGateway: ...


def _checked_library(name: object) -> HttpLibraryName:
    for allowed in HTTP_LIBRARY_NAMES:
        if name == allowed:
            return allowed
    raise pytest.UsageError(
        f"expected library= one of {', '.join(HTTP_LIBRARY_NAMES)} but got library={name!r} "
        f"(type={type(name).__name__}): httpx2 for the official SDKs, httpx for httpx 0.28 code"
    )


# -- options and configuration ----------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "scenario files and LLM cassettes")
    group.addoption(
        "--harness-record-mode",
        default="none",
        metavar="MODE",
        help="When cassettes may reach the network: none (default: replay only), once, "
        "new_episodes or all.",
    )
    group.addoption(
        "--harness-runtime",
        action="append",
        default=[],
        metavar="RUNTIME",
        help="Run scenario cells of this runtime profile only (repeatable).",
    )
    group.addoption(
        "--harness-store",
        action="append",
        default=[],
        metavar="STORE",
        help="Run scenario cells of this store only (repeatable).",
    )
    group.addoption(
        "--harness-target",
        default=None,
        metavar="MODULE:FUNCTION",
        help="Run the scenario cells on this Python implementation under test (default: "
        "[tool.harness] target in pyproject.toml, else the in-process reference).",
    )
    group.addoption(
        "--harness-target-cmd",
        default=None,
        metavar="COMMAND",
        help="Run the scenario cells on this command, spoken to in JSON lines.",
    )
    group.addoption(
        "--harness-target-env",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="Give the --harness-target-cmd this environment variable: NAME copies it, "
        "NAME=VALUE sets it (repeatable; also [tool.harness] target-env).",
    )
    group.addoption(
        "--harness-store-url",
        default=None,
        metavar="URL",
        help="URL of the SQLite, PostgreSQL or Redis store the scenario cells use.",
    )
    group.addoption(
        "--harness-html",
        default=None,
        metavar="PATH",
        help="Write a self-contained HTML report of the scenario cells: every cell's calls, "
        "diffs and records.",
    )
    group.addoption(
        "--harness-engine",
        default=None,
        metavar="ENGINE",
        help="real: run the temporal and dbos scenario cells on Temporal and DBOS themselves; "
        "simulated (default): on the in-process loop.",
    )
    group.addoption(
        "--harness-temporal-address",
        default=None,
        metavar="HOST:PORT",
        help="With --harness-engine real: the Temporal server (default: a dev server).",
    )
    group.addoption(
        "--harness-engine-workers",
        default=None,
        type=int,
        metavar="N",
        help="With --harness-engine real: worker processes per engine (default 1).",
    )
    parser.addini(
        "harness_scenarios",
        type="linelist",
        default=[],
        help="Folders or files (relative to rootdir) whose *.yaml / *.yml scenario files are "
        "collected; unset, none are.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{CASSETTE_MARKER}(path): the cassette `harness_cassette()` opens when called without "
        "a path (relative to the test file's folder).",
    )
    config.stash[_SCENARIO_ROOTS] = tuple(
        (config.rootpath / entry).resolve() for entry in config.getini("harness_scenarios")
    )
    config.stash[_PLAN] = _plan(config)
    if config.getoption("harness_record_mode") != "none":
        _one_recording_run(config)
    _cassette_usage(config)
    config.stash[_REGISTERED_TAGS] = set()
    _html_report(config)


_SCENARIO_OPTIONS = (
    "harness_runtime",
    "harness_store",
    "harness_store_url",
    "harness_target",
    "harness_target_cmd",
    "harness_target_env",
    "harness_html",
    "harness_engine",
    "harness_temporal_address",
    "harness_engine_workers",
)


def _plan(config: pytest.Config) -> RunPlan | None:
    """The run plan of the scenario cells, made by `harness run`'s own rules
    (`harness.scenarios.plan.plan_run`: the matrix filters, the store URL, the target with
    `[tool.harness]` of the rootdir's `pyproject.toml`, the HTML report's path), so a bad option
    is a usage error before anything is collected. Pytest collects the files itself; the plan
    selects each one's cells. None when the session has no scenarios and no scenario option:
    then only the fixtures' record mode is checked, and the scenario machinery is not loaded."""
    if not config.stash[_SCENARIO_ROOTS] and not any(
        config.getoption(option) for option in _SCENARIO_OPTIONS
    ):
        mode = config.getoption("harness_record_mode")
        if mode != "none":
            from harness.cassettes import RecordMode

            try:
                RecordMode.parse(mode)
            except ValueError as error:
                raise pytest.UsageError(f"--harness-record-mode: {error}") from None
        return None
    from harness.errors import HarnessError
    from harness.scenarios.plan import PYTEST_NAMES, plan_run
    from harness.scrub import redact

    try:
        return plan_run(
            runtimes=config.getoption("harness_runtime"),
            stores=config.getoption("harness_store"),
            record_mode=config.getoption("harness_record_mode"),
            store_url=config.getoption("harness_store_url"),
            target=config.getoption("harness_target"),
            target_cmd=config.getoption("harness_target_cmd"),
            target_env=config.getoption("harness_target_env"),
            html=config.getoption("harness_html"),
            workdir=config.rootpath,
            names=PYTEST_NAMES,
            load=False,
            engine=config.getoption("harness_engine") or "simulated",
            temporal_address=config.getoption("harness_temporal_address"),
            engine_workers=config.getoption("harness_engine_workers") or 1,
        )
    except HarnessError as error:  # it may quote a value of pyproject.toml
        raise pytest.UsageError(redact(str(error))) from None


def _html_report(config: pytest.Config) -> None:
    """`--harness-html` (its path checked by the plan): on the controller (or a run without
    xdist), register the report that gathers the cells and writes it at the end."""
    plan = config.stash[_PLAN]
    if plan is None or plan.reports.html is None or hasattr(config, "workerinput"):
        return
    from harness.scenarios.html import PytestHtmlReport

    config.pluginmanager.register(PytestHtmlReport(plan.reports.html), "harness-html-report")


def _one_recording_run(config: pytest.Config) -> None:
    """Make the session one recording run, so that in mode `all` the first save of a cassette
    replaces it and later saves (other tests, scenarios or xdist workers) merge into it instead
    of each replacing the one before, and in mode `once` every test of the session records into
    a cassette the session created (a later session replays it). Set before xdist starts its workers, which inherit it.
    The controller joins the run, so it lasts as long as the session, whichever workers come and
    go (`harness.cassettes.recording_run`); a name in the environment is checked first.
    """
    from harness.cassettes.recording_run import given_run_id
    from harness.errors import HarnessError

    if hasattr(config, "workerinput"):
        return
    try:
        run_id = given_run_id()
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from None
    if run_id is None:
        run_id = f"pytest-{uuid.uuid4().hex}"
        environment = pytest.MonkeyPatch()
        environment.setenv("HARNESS_RECORD_RUN_ID", run_id)
        config.add_cleanup(environment.undo)
    _hold_run(config, run_id)


def _cassette_usage(config: pytest.Config) -> None:
    """On the controller (or a run without xdist): have every cassette transport of the session
    log what it played (`harness.cassettes.usage`) to `.harness/cassette-usage.jsonl` under the
    rootdir, started afresh, unless `HARNESS_CASSETTE_USAGE` names another log already; and in
    mode `all`, re-record only the requests of a session that runs a part of the suite. Both
    set before xdist starts its workers, which inherit them. Nothing is created until a
    transport closes."""
    if hasattr(config, "workerinput"):
        return
    from harness.cassettes.modes import RERECORD_VARIABLE
    from harness.cassettes.usage import USAGE_VARIABLE

    environment = pytest.MonkeyPatch()
    config.add_cleanup(environment.undo)
    narrowed = _narrowed(config)
    config.stash[_NARROWED] = narrowed
    log = os.environ.get(USAGE_VARIABLE)
    if not log:
        default = config.rootpath / ".harness" / "cassette-usage.jsonl"
        default.unlink(missing_ok=True)
        environment.setenv(USAGE_VARIABLE, str(default))
        log = str(default)
    config.stash[_USAGE_LOG] = Path(log)
    if narrowed is not None and not os.environ.get(RERECORD_VARIABLE):
        environment.setenv(RERECORD_VARIABLE, "requests")


def _narrowed(config: pytest.Config) -> str | None:
    """How the session narrows the suite, as written (`-k claude`, a node id, a file narrower
    than the suite's folders); None when it runs every test."""
    option = config.option
    parts = []
    if getattr(option, "keyword", ""):
        parts.append(f"-k {option.keyword}")
    if getattr(option, "markexpr", ""):
        parts.append(f"-m {option.markexpr}")
    if getattr(option, "lf", False):
        parts.append("--lf")
    if getattr(option, "deselect", None):
        parts.append("--deselect")
    if config.args_source is pytest.Config.ArgsSource.ARGS:
        base = config.invocation_params.dir
        suite = [(config.rootpath / entry).resolve() for entry in config.getini("testpaths")] or [
            config.rootpath.resolve()
        ]
        for argument in config.args:
            path = (base / argument.split("::", 1)[0]).resolve()
            if "::" in argument or not any(path == root or path in root.parents for root in suite):
                parts.append(argument)
    return " ".join(parts) or None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """End the session's cassette usage log with whether it ran the whole suite, when a
    transport wrote to it."""
    config = session.config
    log = config.stash.get(_USAGE_LOG, None)
    if log is None or not log.is_file():
        return
    from harness.cassettes.usage import RunSummary, append_line

    narrowed = config.stash.get(_NARROWED, None)
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        narrowed = "interrupted" if narrowed is None else f"{narrowed}, interrupted"
    append_line(
        log,
        RunSummary(complete=narrowed is None, failed=session.testsfailed, selection=narrowed),
    )


def _hold_run(config: pytest.Config, run_id: str) -> None:
    """Join the run `run_id` for the session; lazily, only once a cassette records, would let
    the run end between two xdist workers' recordings."""
    from harness.cassettes.recording_run import join_run, leave_run
    from harness.errors import HarnessError

    try:
        join_run(run_id)
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from None
    config.add_cleanup(lambda: leave_run(run_id))


def _planned(config: pytest.Config) -> RunPlan:
    plan = config.stash[_PLAN]
    assert plan is not None, "scenario files are collected only when the session has a plan"
    return plan


def _run_options(config: pytest.Config) -> RunOptions:
    return _planned(config).options


def _target_runner(config: pytest.Config) -> TargetRunner | None:
    """The implementation under test the scenario cells run on (the plan's target, opened once
    per process, so once per pytest-xdist worker), or None for the in-process reference."""
    if _TARGET_RUNNER in config.stash:
        return config.stash[_TARGET_RUNNER]
    spec = _planned(config).target
    runner = None
    if spec is not None:
        from harness.scenarios.on_target import target_runner

        stack = ExitStack()
        runner = stack.enter_context(target_runner(spec))
        config.add_cleanup(stack.close)
    config.stash[_TARGET_RUNNER] = runner
    return runner


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):
        # A UsageError would crash a pytest-xdist worker; the fixture reports the marker instead.
        return
    for item in items:
        for marker in item.iter_markers(CASSETTE_MARKER):
            problem = _marker_problem(marker)
            if problem is not None:
                raise pytest.UsageError(problem)


def _marker_problem(marker: pytest.Mark) -> str | None:
    """What is wrong with a `harness_cassette` marker, saying what is allowed; None if valid."""
    if len(marker.args) == 1 and not marker.kwargs:
        path = marker.args[0]
        if isinstance(path, str | os.PathLike) and str(path):
            return None
    given = ", ".join(
        [repr(a) for a in marker.args] + [f"{k}={v!r}" for k, v in marker.kwargs.items()]
    )
    types = ", ".join(type(a).__name__ for a in [*marker.args, *marker.kwargs.values()])
    return (
        f"expected @pytest.mark.{CASSETTE_MARKER}(path) with one non-empty str or os.PathLike "
        f"path but got {CASSETTE_MARKER}({given}) (type={types or 'nothing'})"
    )


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """When recording under `--dist load` or `worksteal`, run every scenario cell on one worker.

    The first cell of a scenario records its cassette and the other cells (and other scenarios
    sharing the cassette) replay it, so they must run after it, in collection order, as `harness
    run` does. Ordinary tests are still spread over the workers, one by one.
    """
    recording = config.getoption("harness_record_mode") != "none"
    if not recording or config.getoption("dist") not in ("load", "worksteal"):
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class ScenarioScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            is_scenario = nodeid.split("::", 1)[0].endswith(SCENARIO_SUFFIXES)
            return "harness-scenarios" if is_scenario else nodeid

    return ScenarioScheduling(config, log)


# -- scenario files ---------------------------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    roots = parent.config.stash.get(_SCENARIO_ROOTS, ())
    if not roots or file_path.suffix not in SCENARIO_SUFFIXES:
        return None
    resolved = file_path.resolve()
    if not any(resolved == root or root in resolved.parents for root in roots):
        return None
    return ScenarioFile.from_parent(parent, path=file_path)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Collect the scenario files of a folder that are not regular files too (a FIFO, a socket,
    a broken link), which pytest passes over in silence: each becomes a collection error naming
    the file and what it is, as `harness run` refuses it."""
    report = yield
    if (
        isinstance(collector, pytest.Directory)
        and report.passed
        and collector.config.stash.get(_SCENARIO_ROOTS, ())
    ):
        for entry in sorted(os.scandir(collector.path), key=lambda entry: entry.name):
            if entry.is_dir() or entry.is_file():
                continue  # pytest collects these itself
            special = pytest_collect_file(file_path=Path(entry.path), parent=collector)
            if special is not None:
                report.result.append(special)
    return report


class ScenarioFile(pytest.File):
    """One scenario file: an item per matrix cell, or one collection error at `file:line:col`."""

    def collect(self) -> Iterator[ScenarioItem]:
        from harness.scenarios.load import ScenarioFileError, load_file
        from harness.scrub import redact

        try:
            loaded = load_file(self.path)
        except ScenarioFileError as error:  # it may quote a value of the file
            raise self.CollectError(redact(str(error))) from None
        registered = self.config.stash[_REGISTERED_TAGS]
        for cell in _planned(self.config).select(loaded):
            item = ScenarioItem.from_parent(self, name=cell.id, cell=cell)
            for tag in cell.loaded.scenario.tags:
                if tag not in registered:
                    # Registered here so that `--strict-markers` accepts scenario tags.
                    self.config.addinivalue_line("markers", f"{tag}: a scenario tag")
                    registered.add(tag)
                item.add_marker(tag)
            yield item


class ScenarioItem(pytest.Item):
    """One scenario on one runtime and store; a failure reads `file:line id: expect.key: ...`."""

    def __init__(self, *, cell: Cell, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cell = cell
        self.html_view: str | None = None
        """With `--harness-html`: the cell as the report shows it, as JSON."""

    def runtest(self) -> None:
        from harness.errors import ScenarioCellFailedError
        from harness.scenarios.run import run_cell

        runner = _target_runner(self.config)
        options = _run_options(self.config)
        result = (
            run_cell(self.cell, options) if runner is None else runner.run_cell(self.cell, options)
        )
        if options.collect_detail:
            from harness.scenarios.html import cell_view

            self.html_view = cell_view(result).model_dump_json()
        if result.skipped is not None:
            pytest.skip(result.skipped)
        if not result.passed:
            raise ScenarioCellFailedError(result.cell.id, result)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        from harness.errors import ScenarioCellFailedError

        if isinstance(excinfo.value, ScenarioCellFailedError):
            from harness.scenarios.report import failure_lines

            return "\n".join(failure_lines(excinfo.value.result))  # type: ignore[arg-type]
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.cell.loaded.line - 1, self.cell.id


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Carry a scenario cell's HTML view on its call report, which pytest-xdist sends from the
    worker to the controller, where the `--harness-html` report gathers it."""
    report = yield
    if call.when == "call" and isinstance(item, ScenarioItem) and item.html_view is not None:
        from harness.scenarios.html import REPORT_ATTRIBUTE

        setattr(report, REPORT_ATTRIBUTE, item.html_view)
    return report


# -- fixtures for Python tests ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def harness_record_mode(pytestconfig: pytest.Config) -> RecordMode:
    """The session's record mode (`--harness-record-mode`)."""
    from harness.cassettes import RecordMode

    return RecordMode.parse(pytestconfig.getoption("harness_record_mode"))


@pytest.fixture
def harness_cassette(
    request: pytest.FixtureRequest, harness_record_mode: RecordMode
) -> Iterator[CassetteFactory]:
    """Open `CassetteTransport`s in the session's record mode, closed (saved, checked) at teardown.

    A relative `path` is relative to the test file's folder; without one, the path of the
    `harness_cassette(path)` marker is used. The transport is an `httpx2` one, what the official
    SDKs' clients take; `library="httpx"` gives the same transport typed as an `httpx` 0.28 one
    (`HttpxCassetteTransport`). `transport_options` go to `CassetteTransport` (`inner`, `strict`,
    `volatile`, ..., even `mode` to pin one test's mode).
    """
    from harness.cassettes import CassetteTransport, HttpxCassetteTransport

    folder = request.path.parent
    marker = request.node.get_closest_marker(CASSETTE_MARKER)
    marked: str | os.PathLike[str] | None = None
    if marker is not None:
        problem = _marker_problem(marker)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        marked = marker.args[0]
    with ExitStack() as opened:

        def open_cassette(
            path: str | os.PathLike[str] | None = None,
            /,
            *,
            library: HttpLibraryName = "httpx2",
            **transport_options: Any,
        ) -> CassetteTransport:
            kind = (
                HttpxCassetteTransport
                if _checked_library(library) == "httpx"
                else CassetteTransport
            )
            if path is None:
                if marked is None:
                    raise pytest.UsageError(
                        "harness_cassette() needs a path: pass one, or mark the test with "
                        f"@pytest.mark.{CASSETTE_MARKER}(path)"
                    )
                path = marked
            options = {"mode": harness_record_mode, **transport_options}
            transport = kind(folder / path, **options)
            opened.callback(transport.close)
            return transport

        yield cast(CassetteFactory, open_cassette)


@pytest.fixture
def harness_fuzz(pytestconfig: pytest.Config, tmp_path: Path) -> FuzzRunner:
    """Run `harness fuzz` on the session's target (`--harness-target`, `--harness-target-cmd`,
    else `[tool.harness] target` of the rootdir's `pyproject.toml`) and fail the test with the
    differences and the written scenario when the target differs from the reference.

    `harness_fuzz(cells=200, **options)` (the other options of `harness.fuzz.fuzz`: where the
    search starts, the runtime, the output folder, the kinds of cell, whether to shrink) returns the search's `FuzzOutcome` when no
    difference was found; the scenario is written to the test's temporary folder by default.
    """
    from dataclasses import replace

    from harness.fuzz import fuzz, fuzz_target
    from harness.scenarios.plan import PYTEST_NAMES

    def run(
        *,
        cells: int = 200,
        seed: int = 0,
        runtime: str | None = None,
        out: Path | None = None,
        kinds: Sequence[ScenarioKind] | None = None,
        shrink: bool = True,
    ) -> FuzzOutcome:
        target = fuzz_target(
            pytestconfig.getoption("harness_target"),
            pytestconfig.getoption("harness_target_cmd"),
            pytestconfig.getoption("harness_target_env"),
            pyproject=pytestconfig.rootpath / "pyproject.toml",
            names=replace(PYTEST_NAMES, compare_reference="harness_fuzz"),
        )
        outcome = fuzz(
            target,
            runtime=runtime,
            cells=cells,
            seed=seed,
            out=out or tmp_path,
            kinds=kinds,
            shrink=shrink,
        )
        if outcome.finding is not None:
            finding = outcome.finding
            pytest.fail(
                f"the target differs from the reference; the smallest cell is in "
                f"{finding.path}:\n" + "\n".join(f"  {line}" for line in finding.differences),
                pytrace=False,
            )
        return outcome

    return run


@pytest.fixture
def harness_script() -> ScriptFactory:
    """Build `ScriptTransport`s: `provider`'s wire answers from replies (dicts or `ScriptedReply`).

    An `httpx2` transport, what the official SDKs' clients take; `library="httpx"` gives the same
    transport typed as an `httpx` 0.28 one (`HttpxScriptTransport`).
    """
    from harness.llm.gateway import parse_provider
    from harness.llm.script import HttpxScriptTransport, ScriptedReply, ScriptTransport

    def script(
        provider: str,
        replies: Iterable[ScriptedReply | Mapping[str, Any]],
        *,
        library: HttpLibraryName = "httpx2",
    ) -> ScriptTransport:
        kind = HttpxScriptTransport if _checked_library(library) == "httpx" else ScriptTransport
        return kind(
            parse_provider(provider), [ScriptedReply.model_validate(reply) for reply in replies]
        )

    return cast(ScriptFactory, script)


@pytest.fixture
def harness_gateway() -> Iterator[GatewayFactory]:
    """Build `LlmGateway`s configured from the environment over a transport; closed at teardown."""
    from harness.llm.gateway import GatewayConfig, LlmGateway

    with ExitStack() as opened:

        def gateway(provider: str, transport: AnySyncTransport) -> LlmGateway:
            built = LlmGateway(GatewayConfig.from_environment(provider), transport=transport)
            opened.callback(built.close)
            return built

        yield gateway
