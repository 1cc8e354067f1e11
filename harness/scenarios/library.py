"""Running a scenario library from Python: what `harness run` does, as a function.

```python
from harness import run_scenarios

run = run_scenarios(["scenarios/forced"], runtimes=["js"])
assert run.passed, "\\n".join(run.failures())
```
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cassettes.modes import RecordMode
from harness.scenarios.load import LoadedScenario, load_scenarios
from harness.scenarios.report import failure_lines, skip_lines, summary, write_json, write_junit
from harness.scenarios.run import Cell, CellResult, RunOptions, expand, run_cell
from harness.scenarios.select import compile_keyword


@dataclass(frozen=True)
class ScenarioRun:
    """The cells a run ran, in order, with what each did."""

    results: list[CellResult]

    @property
    def passed(self) -> bool:
        """No cell failed (skipped cells, which a target did not support, do not fail a run)."""
        return all(not result.failed for result in self.results)

    def summary(self) -> dict[str, int]:
        """Counts: cells, passed, failed, skipped, skipped expectations, errors."""
        return summary(self.results)

    def failures(self) -> list[str]:
        """Every failure as `harness run` prints it: `file:line id: expect.key: expected X, got
        Y`, secrets redacted."""
        return [line for result in self.results for line in failure_lines(result)]

    def skips(self) -> list[str]:
        """Every skipped cell and expectation, with its reason."""
        return skip_lines(self.results)

    def write_json(self, path: str | Path) -> None:
        write_json(self.results, Path(path))

    def write_junit(self, path: str | Path) -> None:
        write_junit(self.results, Path(path))


def select_cells(
    loaded: Iterable[LoadedScenario], options: RunOptions, keyword: str = ""
) -> list[Cell]:
    """The cells of `loaded` the options' matrix filters and `-k keyword` select, in order."""
    selected = compile_keyword(keyword)
    return [
        cell for cell in expand(loaded, options) if selected({cell.id, *cell.loaded.scenario.tags})
    ]


def run_scenarios(
    paths: Sequence[str | Path] = ("scenarios",),
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
    cell_timeout: float = 30.0,
) -> ScenarioRun:
    """Run every selected cell of the scenario files under `paths`, as `harness run` does (the
    same options, the same checks, on the in-process reference or on a `target` / `target_cmd`;
    `target_env` as `--target-env` gives a `target_cmd` variables beyond its minimal
    environment). Bad input (a scenario file, an option) raises its typed `HarnessError`; a
    cell's own failure is in its result, never raised."""
    options = RunOptions(
        record_mode=RecordMode.parse(record_mode),
        runtimes=tuple(runtimes),
        stores=tuple(stores),
        store_url=store_url,
        strict_cassettes=strict_cassettes,
    )
    if isinstance(target_env, str):
        from harness.targets import TargetSpecError

        raise TargetSpecError(
            "expected target_env as a list of NAME or NAME=VALUE strings, but got one str"
        )
    cells = select_cells(load_scenarios([Path(path) for path in paths]), options, keyword)
    if target is None and target_cmd is None:
        if compare_reference:
            from harness.targets import TargetSpecError

            raise TargetSpecError(
                "compare_reference compares a target with the reference: give target or target_cmd"
            )
        if target_env:
            from harness.targets import TargetSpecError

            raise TargetSpecError("target_env is the environment of a target_cmd: give target_cmd")
        return ScenarioRun([run_cell(cell, options) for cell in cells])
    from harness.scenarios.targets import TargetSpec, target_runner

    spec = TargetSpec(
        callable=target,
        command=target_cmd,
        cell_timeout=cell_timeout,
        compare_reference=compare_reference,
        env=tuple(target_env),
    )
    with target_runner(spec) as runner:
        return ScenarioRun([runner.run_cell(cell, options) for cell in cells])
