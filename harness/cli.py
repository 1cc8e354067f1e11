"""The `harness` command line: a thin face over the packages; no logic of its own."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.table import Table

from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.scenarios.report import ScenarioPaths
    from harness.scenarios.run import CellResult
    from harness.targets.protocol import ScenarioKind

_T = TypeVar("_T")


class _Path(click.Path[Path]):
    """`click.Path` that refuses a NUL byte with a usage error (click's own check raises
    `ValueError` from `os.stat` on one), and an empty value, which names no file or folder
    (`Path("")` would be the current folder)."""

    def convert(
        self,
        value: str | os.PathLike[str],
        param: click.Parameter | None,
        ctx: click.Context | None,
    ) -> Path:
        if "\x00" in os.fspath(value):
            self.fail(f"{os.fspath(value)!r} holds a NUL byte, which no path can", param, ctx)
        if not os.fspath(value):
            default = param.default if isinstance(param, click.Option) else None
            instead = f" (or leave the option out: {default})" if default is not None else ""
            self.fail(
                f"'' is empty, which names no file or folder; give a path{instead}", param, ctx
            )
        return super().convert(value, param, ctx)


class _Choice(click.Choice[str]):
    """`click.Choice` over an enumeration the harness defines elsewhere, read on first use, so
    that the command line repeats no list of names and `harness --help` imports none of the
    packages that own them."""

    def __init__(self, load: Callable[[], tuple[str, ...]]) -> None:
        # click's own __init__ would store the choices now; they are read on first use instead
        self._load = load
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:
        return self._load()

    @choices.setter
    def choices(self, value: tuple[str, ...]) -> None:
        self._load = lambda: value


def _runtimes() -> tuple[str, ...]:
    from harness.runtimes.base import RUNTIME_NAMES

    return RUNTIME_NAMES


def _engines() -> tuple[str, ...]:
    from harness.engines.settings import ENGINE_NAMES

    return ENGINE_NAMES


def _stores() -> tuple[str, ...]:
    from harness.stores.base import STORE_KINDS

    return STORE_KINDS


def _record_modes() -> tuple[str, ...]:
    from harness.cassettes.modes import RecordMode

    return tuple(mode.value for mode in RecordMode)


def _identical_requests() -> tuple[str, ...]:
    from typing import get_args

    from harness.cassettes.cassette import IdenticalRequests

    return get_args(IdenticalRequests)


def _scenario_kinds() -> tuple[str, ...]:
    from typing import get_args

    from harness.targets.protocol import ScenarioKind

    return get_args(ScenarioKind)


def _log_formats() -> tuple[str, ...]:
    from harness.serve.request_log import LOG_FORMATS

    return LOG_FORMATS


def _providers() -> tuple[str, ...]:
    from harness.providers import PROVIDERS

    return PROVIDERS


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_INTERRUPTED = 130


@click.group()
@click.version_option(package_name="completion-harness")
def main() -> None:
    """Pin down how LLM agents finish: scenarios, cassettes, reference modules."""


PROGRESS_INTERVAL = 0.1
"""Seconds between two redraws of `harness run`'s progress bar."""


@main.command()
@click.argument("paths", nargs=-1, type=_Path(path_type=Path))
@click.option(
    "--runtime",
    "runtimes",
    multiple=True,
    type=_Choice(_runtimes),
    help="Only these runtime profiles.",
)
@click.option("--store", "stores", multiple=True, type=_Choice(_stores), help="Only these stores.")
@click.option("--store-url", help="URL of the PostgreSQL, Redis or SQLite store to use.")
@click.option("--record-mode", type=_Choice(_record_modes), default="none", show_default=True)
@click.option("-k", "keyword", default="", help="Select cells: words, and, or, not, ( ).")
@click.option(
    "--junit-xml", type=_Path(path_type=Path, dir_okay=False), help="Write a JUnit XML report."
)
@click.option(
    "--json",
    "json_path",
    type=_Path(path_type=Path, dir_okay=False),
    help="Write a JSON report.",
)
@click.option(
    "--html",
    "html_path",
    type=_Path(path_type=Path, dir_okay=False),
    help="Write a self-contained HTML report: every cell's calls, diffs and records.",
)
@click.option(
    "--strict-cassettes", is_flag=True, help="Unplayed cassette interactions fail the cell."
)
@click.option(
    "--target",
    "target",
    metavar="MODULE:FUNCTION",
    help="Run the cells on this Python implementation (default: [tool.harness] target in "
    "pyproject.toml, else the in-process reference).",
)
@click.option(
    "--target-cmd",
    metavar="COMMAND",
    help="Run the cells on this command, spoken to in JSON lines on stdin and stdout.",
)
@click.option(
    "--target-env",
    "target_env",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="Give the --target-cmd this environment variable: NAME copies it from this "
    "environment, NAME=VALUE sets it (repeatable; also [tool.harness] target-env). Otherwise a "
    "target gets only PATH, HOME, TMPDIR, the locale and placeholder API keys.",
)
@click.option(
    "--compare-reference",
    is_flag=True,
    help="Also run the reference on every cell and report every difference.",
)
@click.option(
    "-n",
    "workers_text",
    default="0",
    show_default=True,
    metavar="N|auto",
    help="Run cells in N worker processes (auto: one per CPU core; 0: in this process; at most "
    "4 per CPU core, and never more than there are batches of cells).",
)
@click.option(
    "--shard",
    metavar="K/N",
    help="Run shard K of N: every scenario's cells in one shard, decided by its file and name.",
)
@click.option(
    "--last-failed",
    is_flag=True,
    help="Run only the cells that failed in the previous run (.harness/last-run.json).",
)
@click.option(
    "--cell-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds a target may take for one cell.",
)
@click.option(
    "--engine",
    type=_Choice(_engines),
    default="simulated",
    show_default=True,
    help="real: run the temporal and dbos cells on Temporal and DBOS themselves (worker "
    "processes, crashes with SIGKILL, history replay); simulated: on the in-process loop.",
)
@click.option(
    "--temporal-address",
    metavar="HOST:PORT",
    help="With --engine real: the Temporal server to use (default: a dev server started here).",
)
@click.option(
    "--engine-workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --engine real: how many worker processes each engine runs the cells on.",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="List every skipped cell and expectation with its file and line (default: one line "
    "per reason, with a count).",
)
def run(
    paths: tuple[Path, ...],
    runtimes: tuple[str, ...],
    stores: tuple[str, ...],
    store_url: str | None,
    record_mode: str,
    keyword: str,
    junit_xml: Path | None,
    json_path: Path | None,
    html_path: Path | None,
    strict_cassettes: bool,
    target: str | None,
    target_cmd: str | None,
    target_env: tuple[str, ...],
    compare_reference: bool,
    workers_text: str,
    shard: str | None,
    last_failed: bool,
    cell_timeout: float,
    engine: str,
    temporal_address: str | None,
    engine_workers: int,
    verbose: bool,
) -> None:
    """Run every scenario under PATHS (default: scenarios/); exit 1 if any fails.

    Given no PATHS in a folder without scenarios/, it runs the scenario library bundled with the
    harness, and says so on its first line (`harness library` shows where that library is and
    copies it to extend).

    With --target or --target-cmd the cells run on your own implementation (see "Testing your
    own runtime" in the documentation); the harness checks what it answers and the requests it
    sent."""
    with _loading():
        from harness.scenarios.plan import CLI_NAMES, execute_plan, plan_run, write_reports
        from harness.scenarios.report import summary
        from harness.scenarios.run import keep_loaded

        console = Console()
        plan = _or_invalid(
            lambda: plan_run(
                paths,
                runtimes=runtimes,
                stores=stores,
                keyword=keyword,
                record_mode=record_mode,
                store_url=store_url,
                strict_cassettes=strict_cassettes,
                target=target,
                target_cmd=target_cmd,
                target_env=target_env,
                compare_reference=compare_reference,
                cell_timeout=cell_timeout,
                workers=workers_text,
                shard=shard,
                last_failed=last_failed,
                junit_xml=junit_xml,
                json=json_path,
                html=html_path,
                names=CLI_NAMES,
                engine=engine,
                temporal_address=temporal_address,
                engine_workers=engine_workers,
            )
        )
        if plan.bundled is not None:
            click.echo(plan.bundled.announcement)
        if shard is not None and not plan.cells:  # more shards than scenarios: a pass
            console.print(f"shard {shard} holds none of the selected scenarios", highlight=False)
    results: list[CellResult] = []
    interrupted = False
    with (
        _Interruption() as interruption,
        keep_loaded(),
        _progress(console, len(plan.cells)) as advance,
    ):
        try:
            results.extend(execute_plan(plan, on_result=advance))
        except KeyboardInterrupt:  # report what ran, then stop as an interrupted run does
            interrupted = True
        except HarnessError as error:  # the target could not be started
            _exit_invalid(error)
    interrupted = interrupted or interruption.caught  # Ctrl-C while the target was shut down
    not_run = len(plan.cells) - len(results) if interrupted else 0
    print_summary(console, results, not_run=not_run, verbose=verbose)
    try:
        write_reports(plan, results)
    except OSError as error:
        click.echo(f"error: cannot write a report ({error.strerror or error})", err=True)
        sys.exit(EXIT_INVALID)
    if interrupted:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(EXIT_FAILED if summary(results)["failed"] else EXIT_OK)


@main.command("fuzz")
@click.option("--target", metavar="MODULE:FUNCTION", help="Search this Python implementation.")
@click.option("--target-cmd", metavar="COMMAND", help="Search this command (JSON lines).")
@click.option(
    "--target-env",
    "target_env",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="Give the --target-cmd this environment variable (as harness run does).",
)
@click.option(
    "--runtime",
    type=_Choice(_runtimes),
    help="The runtime profile agent cells run on (default: js, else the target's first).",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=_Choice(_scenario_kinds),
    help="Generate only cells of this kind (repeatable; default: every kind the target runs).",
)
@click.option(
    "--cells",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="How many generated cells to try before calling the target sound.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Where the search starts: the same --seed tries the same cells.",
)
@click.option(
    "--out",
    type=_Path(path_type=Path, file_okay=False),
    default=Path(".harness/fuzz"),
    show_default=True,
    help="Where the scenario file of a difference is written.",
)
@click.option(
    "--shrink/--no-shrink",
    default=True,
    show_default=True,
    help="Shrink the first differing cell to the smallest that still differs, or write it as "
    "generated (sooner).",
)
@click.option(
    "--cell-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds a target may take for one cell.",
)
@click.option(
    "--engine",
    type=_Choice(_engines),
    default="simulated",
    show_default=True,
    help="real: the reference runs the agent cells on Temporal or DBOS themselves (with "
    "--runtime temporal or dbos), crashes killing a worker; simulated: on the in-process loop.",
)
def fuzz_command(
    target: str | None,
    target_cmd: str | None,
    target_env: tuple[str, ...],
    runtime: str | None,
    kinds: tuple[ScenarioKind, ...],
    cells: int,
    seed: int,
    out: Path,
    shrink: bool,
    cell_timeout: float,
    engine: str,
) -> None:
    """Generate cells (agent, decision and completion, as the target runs them), run each on
    the target and on the reference, and on the first difference write the smallest cell that
    shows it as a scenario file in OUT (its expect is what the reference did); exit 1 then, 0
    when CELLS cells agree. The same --seed tries the same cells. Ctrl-C stops it at once
    (exit 130), saying how far it got."""
    try:
        from harness.fuzz import fuzz, fuzz_target

        spec = _or_invalid(
            lambda: fuzz_target(target, target_cmd, target_env, cell_timeout=cell_timeout)
        )
        outcome = fuzz(
            spec,
            runtime=runtime,
            cells=cells,
            seed=seed,
            out=out,
            kinds=list(kinds) or None,
            shrink=shrink,
            engine=engine,
        )
    except KeyboardInterrupt as interruption:  # the target is ended by then
        _fuzz_interrupted(interruption, seed)
    except HarnessError as error:  # an option the target refuses, a target that cannot start,
        _exit_invalid(error)  # a scenario file that cannot be written
    except OSError as error:  # --out cannot even be looked at
        click.echo(f"error: cannot write into {out} ({error.strerror or error})", err=True)
        sys.exit(EXIT_INVALID)
    for note in outcome.notes:
        click.echo(f"note: {note}", err=True)
    finding = outcome.finding
    rate = outcome.cells_run / outcome.search_seconds if outcome.search_seconds > 0 else 0.0
    if finding is None:
        click.echo(
            f"{outcome.cells_run} cells (--seed {seed}): no difference from the reference "
            f"({rate:.0f} cells/s)"
        )
        sys.exit(EXIT_OK)
    how = (
        f"shrunk in {outcome.shrink_seconds:.1f} s); the smallest cell is in"
        if shrink
        else "not shrunk); the cell is in"
    )
    click.echo(
        f"FAIL the target differs from the reference on cell {outcome.found_at} (--seed {seed}; "
        f"{how} {finding.path}"
    )
    for line in finding.differences:
        click.echo(f"  {line}")
    if not finding.caught_by_expect:
        click.echo(
            "note: no expect key reaches this difference; run the file with --compare-reference "
            "to see it"
        )
    sys.exit(EXIT_FAILED)


def _fuzz_interrupted(interruption: KeyboardInterrupt, seed: int) -> NoReturn:
    """Say how far an interrupted `harness fuzz` got (`FuzzInterrupted`; a bare
    `KeyboardInterrupt` came before the search began), and exit 130."""
    from harness.fuzz import FuzzInterrupted

    if not isinstance(interruption, FuzzInterrupted) or interruption.stage == "starting":
        click.echo(f"interrupted before any cell ran (--seed {seed}); nothing was written")
        sys.exit(EXIT_INTERRUPTED)
    ran = f"interrupted after {interruption.cells_run} cells (--seed {seed})"
    if interruption.written is not None:
        click.echo(
            f"{ran}: the target differs from the reference on cell {interruption.found_at}; "
            f"the smallest cell is in {interruption.written} (not yet run on the target again)"
        )
    elif not interruption.found_at:
        click.echo(f"{ran}: no difference from the reference so far; nothing was written")
    else:
        cut_short = (
            "shrinking was cut short"
            if interruption.stage == "shrinking"
            else "it was interrupted before its scenario file was written"
        )
        click.echo(
            f"{ran}: the target differs from the reference on cell {interruption.found_at}; "
            f"{cut_short} and nothing was written (run the same command again, or with "
            "--no-shrink to write the cell as it was generated)"
        )
    for line in interruption.differences:
        click.echo(f"  {line}")
    sys.exit(EXIT_INTERRUPTED)


@main.command()
@click.argument("paths", nargs=-1, type=_Path(path_type=Path))
@click.option("--provider", required=True, type=_Choice(_providers))
@click.option("--model", help="Record with this model instead of the scenarios' own.")
def record(paths: tuple[Path, ...], provider: str, model: str | None) -> None:
    """Re-record the cassettes of PATHS' scenarios against the live PROVIDER."""
    from harness.scenarios import load_scenarios
    from harness.scenarios.plan import default_paths
    from harness.scenarios.record import record as rerecord
    from harness.scenarios.report import failure_lines

    try:
        loaded = load_scenarios(list(paths) or default_paths(recording="harness record"))
        changes = rerecord(loaded, provider, model=model)
    except HarnessError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_INVALID)
    if not changes:
        click.echo(f"no scenario under the given paths replays a {provider} cassette", err=True)
        sys.exit(EXIT_INVALID)
    failed = False
    for change in changes:
        state = "created" if change.created else "re-recorded"
        click.echo(
            f"{change.path}: {state}; {change.new} new, {change.changed} changed, "
            f"{change.removed} removed ({', '.join(change.scenarios)})"
        )
        if change.rejected is not None:
            click.echo(
                f"  kept the previous cassette: {len(change.failed)} scenario cell(s) failed with "
                f"the new recording, which is in {change.rejected}"
            )
        for result in change.failed:
            failed = True
            for line in failure_lines(result):
                click.echo(f"  FAIL {line}")
    sys.exit(EXIT_FAILED if failed else EXIT_OK)


@main.command()
@click.option(
    "--cassettes",
    "cassettes_dir",
    type=_Path(path_type=Path, file_okay=False),
    default=Path("cassettes"),
    show_default=True,
    help="Folder of the cassettes served under /c/<name>/...",
)
@click.option("--record-mode", type=_Choice(_record_modes), default="none", show_default=True)
@click.option(
    "--allow-repeats",
    is_flag=True,
    help="Once a request's recorded answers are used up, replay its last one again instead of "
    "answering 404 (a server kept running across test runs).",
)
@click.option(
    "--pace",
    default="off",
    show_default=True,
    help="How replayed event streams are timed: recorded (as they were recorded), a number N "
    "(N times faster), or off (as fast as the client reads). A session may set its own.",
)
@click.option(
    "--identical-requests",
    type=_Choice(_identical_requests),
    default=None,
    help="How a recording answers identical requests: shared sends the first to the provider "
    "and answers every identical one (any client, any session) with it, so parallel suites "
    "replay in any order; separate records each. [default: what the cassette says, shared "
    "for a new one]",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port; 0 picks a free one.",
)
@click.option(
    "--ready-file",
    type=_Path(path_type=Path, dir_okay=False),
    help="Write the server's base URL here once it accepts connections.",
)
@click.option(
    "--allow-session-record",
    is_flag=True,
    help="Let sessions choose any record mode (by default a session records at most as the "
    "server's own --record-mode does).",
)
@click.option(
    "--control-token",
    envvar="HARNESS_CONTROL_TOKEN",
    metavar="TOKEN",
    help="Every request but GET /_harness/health must carry TOKEN (as the SDK's API key or an "
    "x-harness-token header); required to listen beyond loopback. Env: HARNESS_CONTROL_TOKEN.",
)
@click.option(
    "--max-request-bytes",
    type=click.IntRange(min=1),
    default=32 * 1024 * 1024,
    show_default=True,
    help="The largest request body read; larger ones are answered 413.",
)
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Sessions open at once; one more closes the longest idle (its recording saved).",
)
@click.option(
    "--max-cassettes",
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="/c/ cassettes held open at once; one more closes the longest idle (saved first).",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    help="Client connections open at once; beyond it a new one replaces the longest idle. "
    "[default: 1024, or fewer under a lower ulimit -n]",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds a connection has to send a request's headers.",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    help="Seconds a kept-alive connection may stay silent after a response.",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds a request body may take to arrive.",
)
@click.option(
    "--log-format",
    type=_Choice(_log_formats),
    default="text",
    show_default=True,
    help="One line per request on stderr: time, cassette or session, provider endpoint, request "
    "key, outcome (replayed, recorded, missed, used up, scripted, refused, ...), status and "
    "milliseconds; as text or one JSON object per line.",
)
def serve(
    cassettes_dir: Path,
    record_mode: str,
    allow_repeats: bool,
    identical_requests: str | None,
    pace: str,
    host: str,
    port: int,
    ready_file: Path | None,
    allow_session_record: bool,
    control_token: str | None,
    max_request_bytes: int,
    max_sessions: int,
    max_cassettes: int,
    max_connections: int | None,
    header_timeout: float,
    idle_timeout: float,
    body_timeout: float,
    log_format: str,
) -> None:
    """Serve OpenAI, Anthropic and Gemini APIs from cassettes and scripts until interrupted.

    An SDK's base URL is http://HOST:PORT/c/<cassette>/v1 (OpenAI) or .../c/<cassette>
    (Anthropic, google-genai); sessions are opened with POST /_harness/sessions. Record modes
    forward misses to the provider with this process's OPENAI_API_KEY / ANTHROPIC_API_KEY /
    GOOGLE_API_KEY or GEMINI_API_KEY. GET
    /_harness/cassettes lists the /c/ cassettes served (?session=<id>: that session's) and what
    was played of each; at exit, the interactions no client played are printed, per cassette.
    """
    import os

    from harness.cassettes.modes import RecordMode
    from harness.cassettes.pacing import parse_pace
    from harness.serve import ServeConfig, serve_forever
    from harness.serve.limits import ServeLimits

    limits = ServeLimits(
        max_request_bytes=max_request_bytes,
        max_sessions=max_sessions,
        max_cassettes=max_cassettes,
        header_timeout=header_timeout,
        idle_timeout=idle_timeout,
        body_timeout=body_timeout,
        **({"max_connections": max_connections} if max_connections else {}),
    )
    config = ServeConfig(
        cassettes=cassettes_dir,
        record_mode=RecordMode.parse(record_mode),
        allow_repeats=allow_repeats,
        identical_requests=identical_requests,  # type: ignore[arg-type]  # click.Choice checked it
        pace=_or_invalid(lambda: parse_pace(pace)),
        allow_session_record=allow_session_record,
        control_token=control_token or None,
        limits=limits,
        environ=dict(os.environ),
        log_format=log_format,  # type: ignore[arg-type]  # click.Choice checked it
    )
    _or_invalid(
        lambda: serve_forever(
            config,
            host=host,
            port=port,
            ready_file=ready_file,
            announce=lambda line: click.echo(line),
        )
    )


@main.group()
def report() -> None:
    """Work with the reports of `harness run`."""


@report.command("merge")
@click.argument("reports", nargs=-1, required=True, type=_Path(path_type=Path, dir_okay=False))
@click.option(
    "--json",
    "json_path",
    type=_Path(path_type=Path, dir_okay=False),
    help="Write the merged JSON report.",
)
@click.option(
    "--junit-xml", type=_Path(path_type=Path, dir_okay=False), help="Write the merged JUnit XML."
)
def report_merge(reports: tuple[Path, ...], json_path: Path | None, junit_xml: Path | None) -> None:
    """Merge the --json reports of several runs (the shards of one library) into one.

    Exit 1 when any merged cell failed, as the run itself would; 2 when a report cannot be read
    or two reports hold the same cell."""
    from harness.scenarios.report import (
        check_report_paths,
        merge_reports,
        write_junit_report,
        write_report_json,
    )

    def merge() -> dict[str, Any]:
        check_report_paths({"--json": json_path, "--junit-xml": junit_xml})
        return merge_reports(list(reports))

    merged = _or_invalid(merge)
    if json_path is not None:
        write_report_json(merged, json_path)
    if junit_xml is not None:
        write_junit_report(merged, junit_xml)
    counts = merged["summary"]
    click.echo(
        f"{len(reports)} report(s), {counts['cells']} cells: {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['skipped']} skipped"
    )
    sys.exit(EXIT_FAILED if counts["failed"] else EXIT_OK)


@main.group(invoke_without_command=True)
@click.pass_context
def schema(context: click.Context) -> None:
    """Print the JSON Schema of scenario files (or, with `records`, write the record schemas)."""
    import json

    from harness.schemas import scenario_schema

    if context.invoked_subcommand is None:
        click.echo(json.dumps(scenario_schema(), indent=2))


@schema.command("target")
def schema_target() -> None:
    """Print the JSON Schema of the target protocol: every message to and from a target."""
    import json

    from harness.targets import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


@schema.command("records")
@click.option(
    "--out",
    "out_dir",
    type=_Path(path_type=Path, file_okay=False),
    default=Path("schemas"),
    show_default=True,
    help="Folder for the <record>.schema.json files.",
)
def schema_records(out_dir: Path) -> None:
    """Write the JSON Schema (draft 2020-12) of every public wire record, one file per record."""
    from harness.schemas import RECORD_SCHEMAS, record_schema_text

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in RECORD_SCHEMAS:
            path = out_dir / f"{name}.schema.json"
            text = record_schema_text(name)
            unchanged = path.is_file() and path.read_text(encoding="utf-8") == text
            if not unchanged:
                path.write_text(text, encoding="utf-8")
            click.echo(f"{path}: {'unchanged' if unchanged else 'written'}")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        click.echo(f"error: cannot write the schemas into {out_dir}: {reason}", err=True)
        sys.exit(EXIT_INVALID)


@main.group()
def cassettes() -> None:
    """Verify, inspect, compare and import cassette files."""


@cassettes.command("verify")
@click.argument("paths", nargs=-1, required=True, type=_Path(path_type=Path, exists=True))
def cassettes_verify(paths: tuple[Path, ...]) -> None:
    """List every problem: content that is not a cassette, each digest or signature that does not
    match; exit 1 if any, 2 if a path cannot be read. Warn (exit 0) about identical requests
    recorded with different answers, whose replay depends on the order requests arrive in."""
    from harness.cassettes.review import cassette_files, order_dependent, verify

    checked = len(_or_invalid(lambda: cassette_files(paths)))
    if not checked:
        click.echo("error: no cassette files (*.json) under the given folders", err=True)
        sys.exit(EXIT_INVALID)
    problems = _or_invalid(lambda: verify(list(paths)))
    for problem in problems:
        named = problem.problem.startswith(f"{problem.path}")  # the message names its file
        click.echo(problem.problem if named else f"{problem.path}: {problem.problem}")
    for warning in _or_invalid(lambda: order_dependent(list(paths))):
        click.echo(str(warning))
    if problems:
        click.echo(f"{len(problems)} problem(s) in {checked} cassette(s)", err=True)
        sys.exit(EXIT_FAILED)
    click.echo(f"{checked} cassette(s) verified")


@cassettes.command("show")
@click.argument("path", type=_Path(path_type=Path, exists=True, dir_okay=False))
def cassettes_show(path: Path) -> None:
    """One line per interaction: index, request, key, occurrence, status and body kind."""
    from rich.markup import escape

    from harness.cassettes.review import show

    table = Table(title=escape(str(path)))
    for column in ("#", "request", "key", "occ", "status", "body"):
        table.add_column(column)
    for row in _or_invalid(lambda: show(path)):
        table.add_row(
            str(row.index),
            escape(f"{row.method} {row.path}"),
            row.key[:19],
            str(row.occurrence),
            str(row.status),
            row.body_kind,
        )
    Console().print(table)


@cassettes.command("stats")
@click.argument("paths", nargs=-1, required=True, type=_Path(path_type=Path, exists=True))
def cassettes_stats(paths: tuple[Path, ...]) -> None:
    """Counts per cassette: interactions, keys, repeats, streams, size, endpoints, statuses."""
    from rich.markup import escape

    from harness.cassettes.review import cassette_files, stats

    table = Table(title="cassette stats")
    for column in ("cassette", "provider", "interactions", "keys", "repeated", "sse", "bytes"):
        table.add_column(column)
    for path in _or_invalid(lambda: cassette_files(paths)):
        result = _or_invalid(partial(stats, path))
        table.add_row(
            escape(str(path)),
            result.provider or "-",
            str(result.interactions),
            str(result.unique_keys),
            str(result.repeated_keys),
            str(result.streamed),
            str(result.size_bytes),
        )
    Console().print(table)


def _diff_formats() -> tuple[str, ...]:
    from harness.cassettes.compare import RENDERERS

    return tuple(RENDERERS)


@cassettes.command("diff")
@click.argument("old", type=_Path(path_type=Path, exists=True, dir_okay=False))
@click.argument("new", type=_Path(path_type=Path, exists=True, dir_okay=False))
@click.option(
    "--format",
    "output_format",
    type=_Choice(_diff_formats),
    default="text",
    show_default=True,
    help="text for a terminal, markdown for a pull-request comment, json for a script.",
)
def cassettes_diff(old: Path, new: Path, output_format: str) -> None:
    """What changed from cassette OLD to cassette NEW: interactions added, removed and changed
    (request fields as JSON paths, answers summarised), unchanged ones counted. Interactions pair
    by request key, then by method, path and nearest request. Exit 0 when nothing changed, 1 when
    something did, 2 when a file is not a cassette or fails verification."""
    from harness.cassettes.compare import RENDERERS, compare_files

    comparison = _or_invalid(lambda: compare_files(old, new))
    click.echo(RENDERERS[output_format](comparison), nl=False)
    sys.exit(EXIT_OK if comparison.identical else EXIT_FAILED)


@cassettes.command("prune")
@click.argument(
    "paths", nargs=-1, required=True, type=_Path(path_type=Path, exists=True, dir_okay=False)
)
@click.option(
    "--unplayed-in",
    "logs",
    multiple=True,
    type=_Path(path_type=Path, dir_okay=False),
    help="The cassette usage log of a replay run (repeatable: runs that share the cassettes "
    "together). Default: .harness/cassette-usage.jsonl, which the pytest plugin leaves.",
)
@click.option(
    "--from-partial-run",
    is_flag=True,
    help="Prune by a log of a run that ran a part of the suite or had failing tests: what "
    "tests that did not run played is dropped too.",
)
@click.option("--dry-run", is_flag=True, help="List what would be dropped; change nothing.")
def cassettes_prune(
    paths: tuple[Path, ...], logs: tuple[Path, ...], from_partial_run: bool, dry_run: bool
) -> None:
    """Drop from each cassette the interactions no test of a replay run played: what tests
    deleted or changed since the recording left behind. Each cassette is rewritten atomically
    under its lock, what is left renumbered; a cassette that does not verify is left as it is
    (exit 2). Refuses (exit 2) a log that does not mention a cassette, and, unless
    --from-partial-run, a run that selected a part of the suite (-k, node ids, --lf) or had
    failures."""
    from harness.cassettes.usage import CassetteUsageError, partial_runs, prune, read_usage

    usage = _or_invalid(lambda: read_usage(list(logs) or [Path(".harness/cassette-usage.jsonl")]))
    narrowed = partial_runs(usage)
    if narrowed and not from_partial_run:
        _exit_invalid(
            CassetteUsageError(
                "the logged run did not replay the whole suite, so interactions its unrun or "
                "failed tests need would be dropped: "
                + "; ".join(narrowed)
                + ". Prune after a full, green replay run, or pass --from-partial-run"
            )
        )
    for path in paths:
        pruned = _or_invalid(partial(prune, path, usage, dry_run=dry_run))
        verb = "would drop" if dry_run else "dropped"
        click.echo(
            f"{path}: {verb} {len(pruned.dropped)} of {pruned.held} interaction(s) no test played"
        )
        for interaction in pruned.dropped:
            request = interaction.request
            click.echo(
                f"  {request.method} {request.path} (key {interaction.key[:19]}, occurrence "
                f"{interaction.occurrence})"
            )


@cassettes.command("import-vcr")
@click.argument("sources", nargs=-1, required=True, type=_Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=_Path(path_type=Path, file_okay=False),
    help="Folder for the converted harness-cassette files (relative paths are kept).",
)
@click.option(
    "--anthropic-version",
    metavar="VERSION",
    help="Key Anthropic requests recorded without an anthropic-version header (a recorder that "
    "filters anthropic-* headers drops it) with VERSION: the one the replaying client sends.",
)
def cassettes_import_vcr(
    sources: tuple[Path, ...], out_dir: Path, anthropic_version: str | None
) -> None:
    """Convert vcrpy YAML cassettes (standard or parsed_body form) into harness cassettes."""
    from harness.cassettes.vcr import import_vcr

    report = _or_invalid(
        lambda: import_vcr(list(sources), out_dir, anthropic_version=anthropic_version)
    )
    click.echo(report.summary())


@main.group()
def modules() -> None:
    """The reference modules' declared contracts (inputs, outputs, configuration, failures)."""


@modules.command("list")
def modules_list() -> None:
    """One row per module: name, version, and how many inputs, outputs and failures it has."""
    from harness.metadata import MODULES

    table = Table(title="harness modules")
    for column in (
        "name",
        "module",
        "version",
        "inputs",
        "outputs",
        "config",
        "network",
        "failures",
    ):
        table.add_column(column)
    for key, metadata in MODULES.items():
        table.add_row(
            key,
            metadata.name,
            metadata.version or "-",
            str(len(metadata.inputs)),
            str(len(metadata.outputs)),
            str(len(metadata.configuration)),
            "outbound" if metadata.network.outbound else "none",
            str(len(metadata.failures)),
        )
    _wide_console().print(table)


@modules.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the metadata as JSON.")
def modules_show(name: str, as_json: bool) -> None:
    """Print the declared contract of NAME (completion, decision or forced-completion)."""
    from rich.markup import escape

    from harness.metadata import module_metadata

    metadata = _or_invalid(lambda: module_metadata(name))
    if as_json:
        click.echo(metadata.model_dump_json(indent=2))
        return
    console = _wide_console()
    version = f" v{metadata.version}" if metadata.version else ""
    console.print(f"[bold]{escape(metadata.name)}[/bold]{version}", highlight=False)
    console.print(escape(metadata.summary), highlight=False)
    inputs = Table(title="inputs")
    for column in ("input", "type", "required", "default", "classification", "description"):
        inputs.add_column(column)
    for field in metadata.inputs:
        description = field.description + (f" ({field.constraints})" if field.constraints else "")
        inputs.add_row(
            field.name,
            escape(field.type),
            "yes" if field.required else "no",
            "-" if field.default is None else str(field.default),
            field.classification or "-",
            escape(description),
        )
    outputs = Table(title="outputs")
    for column in ("output", "type", "condition", "classification", "description"):
        outputs.add_column(column)
    for output in metadata.outputs:
        outputs.add_row(
            output.name,
            escape(output.type),
            output.condition,
            output.classification or "-",
            escape(output.description),
        )
    configuration = Table(title="configuration")
    for column in ("field", "type", "default", "description"):
        configuration.add_column(column)
    for config in metadata.configuration:
        configuration.add_row(
            config.name,
            escape(config.type),
            "none" if config.default is None else str(config.default),
            escape(config.description),
        )
    failures = Table(title="failures")
    for column in ("failure", "code", "retryable", "cause", "recovery"):
        failures.add_column(column)
    for failure in metadata.failures:
        failures.add_row(
            escape(failure.name),
            failure.code,
            escape(failure.retryable),
            escape(failure.cause),
            escape(failure.recovery),
        )
    for table in (inputs, outputs):
        console.print(table)
    if metadata.configuration:
        console.print(configuration)
    else:
        console.print("configuration: none", highlight=False)
    network = metadata.network
    console.print(
        "network: "
        + (escape(f"{network.target}; {network.hosts}") if network.outbound else "none")
        + f"\n  {escape(network.description)}",
        highlight=False,
    )
    console.print(failures)


@main.group()
def stores() -> None:
    """Inspect durable stores."""


@stores.command("check")
@click.argument("url")
def stores_check(url: str) -> None:
    """Compare the store at URL with the schema this harness expects; exit 1 on any difference.

    Never migrates or writes: SQLite opens read-only, PostgreSQL in a read-only session.
    """
    from harness.stores.check import check_store

    result = _or_invalid(lambda: check_store(url))
    for difference in result.differences:
        click.echo(f"- {difference}")
    if result.matches:
        click.echo(
            f"{result.kind} store matches the expected schema (version {result.expected_version})"
        )
        return
    click.echo(f"{len(result.differences)} difference(s) from the expected schema", err=True)
    sys.exit(EXIT_FAILED)


@main.group()
def library() -> None:
    """The scenario library bundled with the harness: where it is, and a copy to extend.

    `harness run` runs it when given no PATHS in a folder without scenarios/."""


@library.command("path")
def library_path() -> None:
    """Print the folder of the bundled scenario library (its scenarios/ and cassettes/).

    Run part of it with `harness run "$(harness library path)/scenarios/forced"`; exit 2 when
    this installation holds no library."""
    from harness.scenarios.bundled import bundled_library

    click.echo(_or_invalid(bundled_library).root)


@library.command("copy")
@click.argument("directory", metavar="DIR", type=_Path(path_type=Path, file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite the library's files that DIR holds.")
def library_copy(directory: Path, force: bool) -> None:
    """Copy the bundled scenario library into DIR (DIR/scenarios, DIR/cassettes) to extend it.

    Each scenario keeps finding its cassettes, and `harness run` in DIR runs the copy. DIR is
    created if missing. When DIR already holds a file the copy would write, nothing is copied
    and the command exits 2, unless --force; a folder where a file goes is never replaced."""
    from harness.scenarios.bundled import bundled_library

    copied = _or_invalid(lambda: bundled_library().copy_to(directory, force=force))
    click.echo(
        f"copied the bundled scenario library into {directory} ({len(copied.files)} files"
        + (f", {copied.overwritten} overwritten" if copied.overwritten else "")
        + f"); run it with: cd {directory} && harness run"
    )


def _wide_console() -> Console:
    """A console at least 120 columns wide, so contract tables stay readable in a pipe."""
    return Console(width=max(Console().width, 120))


FULL_TABLE_CELLS = 50
"""Up to this many cells the summary lists every cell; above, one row per scenario file (every
failure is still printed in full below it)."""


def print_summary(
    console: Console,
    results: Sequence[CellResult],
    *,
    not_run: int = 0,
    per_cell: bool | None = None,
    verbose: bool = False,
) -> None:
    """What `harness run` prints when the cells are done: the table (a row per cell up to
    `FULL_TABLE_CELLS` cells, else a row per scenario file; `per_cell` forces either), every
    failure in full, the skips (one line per reason with its count; `verbose`: each skipped
    cell and expectation), and the counts (`not_run`: cells an interruption left). Files are
    named as `ScenarioPaths.shown` names them."""
    from rich.markup import escape

    from harness.scenarios.report import (
        ScenarioPaths,
        failure_lines,
        skip_lines,
        skip_summary,
        summary,
    )
    from harness.scrub import environment_scrubber

    scrubber = environment_scrubber()  # the failure and skip lines are redacted already
    paths = ScenarioPaths()
    console.print(
        _summary_table(
            results, lambda text: escape(scrubber.text(text)), per_cell=per_cell, paths=paths
        )
    )
    for result in results:
        for line in failure_lines(result, paths=paths):
            console.print(f"[red]FAIL[/red] {escape(line)}", highlight=False, soft_wrap=True)
    skips = skip_lines(results, paths=paths) if verbose else skip_summary(results)
    for line in skips:
        console.print(f"[yellow]SKIP[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
    if skips and not verbose:
        console.print("     (--verbose lists each, with its file and line)", highlight=False)
    counts = summary(results)
    console.print(
        f"{counts['passed']} passed, {counts['failed']} failed"
        + (f", {counts['skipped']} skipped" if counts["skipped"] else "")
        + (
            f", {counts['skipped_expectations']} expectation(s) skipped"
            if counts["skipped_expectations"]
            else ""
        )
        + (f", {not_run} not run (interrupted)" if not_run else ""),
        highlight=False,
    )


def _summary_table(
    results: Sequence[CellResult],
    escape: Callable[[str], str],
    *,
    per_cell: bool | None = None,
    paths: ScenarioPaths,
) -> Table:
    if not (len(results) <= FULL_TABLE_CELLS if per_cell is None else per_cell):
        return _files_table(results, escape, paths)
    table = Table(title="harness run")
    for column in ("scenario", "runtime", "store", "result", "time"):
        table.add_column(column)
    for result in results:
        verdict = (
            "pass"
            if result.passed
            else "[yellow]skip[/yellow]"
            if result.skipped
            else ("[red]ERROR[/red]" if result.error else "[red]FAIL[/red]")
        )
        table.add_row(
            escape(result.cell.loaded.scenario.name),
            result.cell.runtime,
            result.cell.store,
            verdict,
            f"{result.duration * 1000:.0f} ms",
        )
    return table


def _files_table(
    results: Sequence[CellResult], escape: Callable[[str], str], paths: ScenarioPaths
) -> Table:
    """A row per scenario file with a failed or skipped cell, then one row for every file whose
    cells all passed: what a large run needs to show, in as many rows as it has problems."""
    rows: dict[str, list[float]] = {}
    for result in results:
        row = rows.setdefault(paths.shown(result.cell.loaded.path), [0, 0, 0, 0, 0.0])
        row[0] += 1
        row[1 if result.passed else 3 if result.skipped else 2] += 1
        row[4] += result.duration
    table = Table(title=f"harness run: {len(results):,} cells in {len(rows):,} files")
    table.add_column("file", overflow="fold")
    for column in ("cells", "passed", "failed", "skipped", "time"):
        table.add_column(column, justify="right")
    clean = [0.0, 0.0, 0.0, 0.0, 0.0]
    clean_files = 0
    for path, row in rows.items():
        cells, passed, failed, skipped, seconds = row
        if not failed and not skipped:
            clean_files += 1
            clean = [total + value for total, value in zip(clean, row, strict=True)]
            continue
        table.add_row(
            escape(path),
            f"{cells:.0f}",
            f"{passed:.0f}",
            f"[red]{failed:.0f}[/red]" if failed else "0",
            f"{skipped:.0f}",
            f"{seconds:.2f} s",
        )
    if clean_files:
        table.add_row(
            f"{clean_files:,} other file{'s' if clean_files != 1 else ''}, all passed",
            f"{clean[0]:.0f}",
            f"{clean[1]:.0f}",
            "0",
            "0",
            f"{clean[4]:.2f} s",
        )
    return table


@contextlib.contextmanager
def _loading() -> Iterator[None]:
    """No garbage-collector passes while the harness and the scenario files load: all that loads
    then (modules, classes, validators, scenarios) lives for the whole run, so a pass would only
    walk it. When the block ends without an error, what it loaded is frozen out of later passes
    (`keep_loaded` thaws it when the cells are done); the collector runs again however it ends."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
        gc.freeze()  # before the collector runs again: no pass over what just loaded
    finally:
        if collecting:
            gc.enable()


class _Interruption:
    """Ctrl-C in its block, or in the exits of what the block opened (a target being shut down),
    caught and remembered, so the run still reports what ran and exits 130."""

    caught = False

    def __enter__(self) -> _Interruption:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> bool:
        self.caught = kind is not None and issubclass(kind, KeyboardInterrupt)
        return self.caught


@contextlib.contextmanager
def _progress(console: Console, total: int) -> Iterator[Callable[[CellResult], None]]:
    """A transient progress bar over `total` cells; what it yields advances it by one.

    Only a terminal shows one: rich draws nothing of a transient bar elsewhere, so a run whose
    output is captured (CI, a pipe) does not even load rich's progress module. No refresh
    thread: `-n` forks its workers, which must not inherit a running thread.
    """
    if not console.is_terminal:
        yield lambda result: None
        return
    from rich.progress import Progress

    with Progress(console=console, transient=True, auto_refresh=False) as progress:
        task = progress.add_task("scenarios", total=total)
        shown = [0.0]

        def advance(result: CellResult) -> None:
            progress.advance(task)
            now = time.monotonic()
            if now - shown[0] >= PROGRESS_INTERVAL:  # drawing it costs more than a cell
                shown[0] = now
                progress.refresh()

        yield advance


def _or_invalid(action: Callable[[], _T]) -> _T:
    """Run `action`; a harness error becomes a one-line message and exit code 2."""
    try:
        return action()
    except HarnessError as error:
        _exit_invalid(error)


def _exit_invalid(error: HarnessError) -> NoReturn:
    """Print `error` as `error: ...` on stderr, secrets redacted (it may quote a scenario's
    value), and exit 2."""
    from harness.scrub import redact

    click.echo(f"error: {redact(str(error))}", err=True)
    sys.exit(EXIT_INVALID)
