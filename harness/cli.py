"""The `harness` command line: a thin face over the packages; no logic of its own."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from harness.errors import HarnessError

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
