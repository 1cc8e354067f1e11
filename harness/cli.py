"""The `harness` command line: a thin face over the packages; no logic of its own."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import click
from rich.console import Console
from rich.table import Table

from harness.errors import HarnessError

_T = TypeVar("_T")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2


@click.group()
@click.version_option(package_name="completion-harness")
def main() -> None:
    """Pin down how LLM agents finish: scenarios, cassettes, reference modules."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def run(paths: tuple[Path, ...]) -> None:
    """Run every scenario under PATHS (default: scenarios/)."""
    from harness.scenarios import load_scenarios, run_scenario

    console = Console()
    try:
        loaded = load_scenarios(list(paths) or [Path("scenarios")])
    except HarnessError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_INVALID)
    if not loaded:
        click.echo("error: no scenario files found under the given paths", err=True)
        sys.exit(EXIT_INVALID)
    table = Table(title="harness run")
    table.add_column("scenario")
    table.add_column("result")
    failed = 0
    for item in loaded:
        result = run_scenario(item.scenario)
        where = f"{item.path}:{item.line}"
        table.add_row(f"{result.name} ({where})", "pass" if result.passed else "[red]FAIL[/red]")
        failed += not result.passed
        for mismatch in result.mismatches:
            console.print(
                f"[red]FAIL[/red] {where} {result.name}: expect.{mismatch.key}: "
                f"expected {mismatch.expected!r}, got {mismatch.actual!r}",
                highlight=False,
            )
    console.print(table)
    console.print(f"{len(loaded) - failed} passed, {failed} failed")
    sys.exit(EXIT_FAILED if failed else EXIT_OK)


@main.group()
def cassettes() -> None:
    """Verify, inspect, compare and import cassette files."""


@cassettes.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
def cassettes_verify(paths: tuple[Path, ...]) -> None:
    """List every interaction whose digest or signature does not match; exit 1 if any."""
    from harness.cassettes.review import cassette_files, verify

    problems = verify(list(paths))
    for problem in problems:
        click.echo(f"{problem.path}: {problem.problem}")
    checked = len(cassette_files(paths))
    if problems:
        click.echo(f"{len(problems)} problem(s) in {checked} cassette(s)", err=True)
        sys.exit(EXIT_FAILED)
    click.echo(f"{checked} cassette(s) verified")


@cassettes.command("show")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
def cassettes_show(path: Path) -> None:
    """One line per interaction: index, request, key, occurrence, status and body kind."""
    from harness.cassettes.review import show

    table = Table(title=str(path))
    for column in ("#", "request", "key", "occ", "status", "body"):
        table.add_column(column)
    for row in _or_invalid(lambda: show(path)):
        table.add_row(
            str(row.index),
            f"{row.method} {row.path}",
            row.key[:19],
            str(row.occurrence),
            str(row.status),
            row.body_kind,
        )
    Console().print(table)


@cassettes.command("stats")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
def cassettes_stats(paths: tuple[Path, ...]) -> None:
    """Counts per cassette: interactions, keys, repeats, streams, size, endpoints, statuses."""
    from harness.cassettes.review import cassette_files, stats

    table = Table(title="cassette stats")
    for column in ("cassette", "provider", "interactions", "keys", "repeated", "sse", "bytes"):
        table.add_column(column)
    for path in cassette_files(paths):
        result = _or_invalid(partial(stats, path))
        table.add_row(
            str(path),
            result.provider or "-",
            str(result.interactions),
            str(result.unique_keys),
            str(result.repeated_keys),
            str(result.streamed),
            str(result.size_bytes),
        )
    Console().print(table)


@cassettes.command("diff")
@click.argument("a", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.argument("b", type=click.Path(path_type=Path, exists=True, dir_okay=False))
def cassettes_diff(a: Path, b: Path) -> None:
    """What changed from cassette A to cassette B; exit 1 when they differ."""
    from harness.cassettes.review import diff

    result = _or_invalid(lambda: diff(a, b))
    for item in result.added:
        click.echo(f"+ {item.request.method} {item.request.url} ({item.key}, #{item.occurrence})")
    for item in result.removed:
        click.echo(f"- {item.request.method} {item.request.url} ({item.key}, #{item.occurrence})")
    for before, _, lines in result.changed:
        click.echo(
            f"~ {before.request.method} {before.request.url} ({before.key}, #{before.occurrence})"
        )
        for line in lines:
            click.echo(f"    {line}")
    click.echo(
        f"{len(result.added)} new, {len(result.changed)} changed, {len(result.removed)} removed"
    )
    sys.exit(EXIT_OK if result.identical else EXIT_FAILED)


@cassettes.command("import-vcr")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for the converted harness-cassette/1 files (relative paths are kept).",
)
def cassettes_import_vcr(sources: tuple[Path, ...], out_dir: Path) -> None:
    """Convert vcrpy YAML cassettes (standard or parsed_body form) into harness cassettes."""
    from harness.cassettes.vcr import import_vcr

    report = _or_invalid(lambda: import_vcr(list(sources), out_dir))
    click.echo(report.summary())


def _or_invalid(action: Callable[[], _T]) -> _T:
    """Run `action`; a harness error becomes a one-line message and exit code 2."""
    try:
        return action()
    except HarnessError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_INVALID)
