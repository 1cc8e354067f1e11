"""Running a scenario library from Python: what `harness run` does, as a function.

```python
from harness import run_scenarios

run = run_scenarios(["scenarios/forced"], runtimes=["js"])
assert run.passed, "\\n".join(run.failures())
```
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cassettes.modes import RecordMode
from harness.scenarios.plan import execute_plan, plan_run, write_reports
from harness.scenarios.report import (
    ScenarioPaths,
    failure_lines,
    skip_lines,
    summary,
    write_json,
    write_junit,
)
from harness.scenarios.run import CellResult


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
        paths = ScenarioPaths()
        return [line for result in self.results for line in failure_lines(result, paths=paths)]

    def skips(self) -> list[str]:
        """Every skipped cell and expectation, with its reason (as `harness run --verbose`
        prints them)."""
        return skip_lines(self.results)

    def write_json(self, path: str | Path) -> None:
        write_json(self.results, Path(path))

    def write_junit(self, path: str | Path) -> None:
        write_junit(self.results, Path(path))


def run_scenarios(
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
    engine: str = "simulated",
    temporal_address: str | None = None,
    engine_workers: int = 1,
) -> ScenarioRun:
    """Run every selected cell of the scenario files under `paths` (none: `scenarios/`, else in a
    folder without one the library bundled with the harness), as `harness run` does: the same plan (`harness.scenarios.plan.plan_run`), so
    the same options, checks and refusals, on the in-process reference or on a `target` /
    `target_cmd` (with neither, `[tool.harness] target` of `./pyproject.toml`), in `workers`
    processes (`"auto"` or a count), for one `shard` (`"K/N"`) or only the cells that failed
    last time (`last_failed`). `target_env` gives a `target_cmd` variables beyond its minimal
    environment, as `--target-env` does. Like `harness run` it records the run in
    `.harness/last-run.json`, then writes the `junit_xml`, `json` and `html` reports asked for.
    `engine="real"` runs the `temporal` and `dbos` cells on the engines themselves
    (`temporal_address`, `engine_workers`: as `--temporal-address` and `--engine-workers`).

    Bad input (a scenario file, an option) raises its typed `HarnessError` before anything runs;
    a cell's own failure is in its result, never raised."""
    plan = plan_run(
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
        workers=workers,
        shard=shard,
        last_failed=last_failed,
        junit_xml=junit_xml,
        json=json,
        html=html,
        engine=engine,
        temporal_address=temporal_address,
        engine_workers=engine_workers,
    )
    results = list(execute_plan(plan))
    write_reports(plan, results)
    return ScenarioRun(results)
