"""Re-recording scenario cassettes against the live provider.

Keys come from the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`; base URLs from
`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`), checked before any request. Each cassette is rewritten
from this run's traffic only (record mode `all`), then compared with what it held before.

When a scenario fails with its new recording (the provider was down, refused the key, or
answered differently), the previous cassette is put back and the new recording is kept beside it
as `<name>.rejected.json`: an outage never empties a committed cassette, and paid traffic is
never thrown away.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.cassettes import RecordMode
from harness.cassettes.review import diff
from harness.llm.gateway import GatewayConfig, parse_provider
from harness.scenarios.bundled import check_recordable
from harness.scenarios.load import LoadedScenario
from harness.scenarios.run import CellResult, RunOptions, expand, run_cell


@dataclass
class CassetteChange:
    """What re-recording did to one cassette."""

    path: Path
    scenarios: list[str]
    new: int = 0
    changed: int = 0
    removed: int = 0
    created: bool = False
    results: list[CellResult] = field(default_factory=list)
    rejected: Path | None = None
    """Where this run's recording went when a scenario failed with it (the previous cassette
    was put back); None when the new recording replaced the cassette."""

    @property
    def failed(self) -> list[CellResult]:
        return [r for r in self.results if not r.passed]


def recordable(loaded: Sequence[LoadedScenario], provider: str) -> dict[Path, list[LoadedScenario]]:
    """Cassette path -> the scenarios (for `provider`) that replay it."""
    groups: dict[Path, list[LoadedScenario]] = {}
    for item in loaded:
        scenario = item.scenario
        if scenario.cassette is None or scenario.provider != provider:
            continue
        groups.setdefault((item.folder / scenario.cassette).resolve(), []).append(item)
    return groups


def record(
    loaded: Sequence[LoadedScenario],
    provider: str,
    *,
    model: str | None = None,
    workdir: Path | None = None,
) -> list[CassetteChange]:
    """Re-record every cassette of `provider`'s scenarios; raise before any request without a
    key, or when a cassette is part of the library installed with the harness
    (`LibraryReadOnlyError`)."""
    groups = recordable(loaded, provider)
    check_recordable(groups, recording="re-recording")
    GatewayConfig.from_environment(parse_provider(provider)).require_api_key()
    changes: list[CassetteChange] = []
    with _one_recording_run():
        for path, items in sorted(groups.items()):
            change = CassetteChange(
                path, [i.scenario.name for i in items], created=not path.exists()
            )
            with _previous(path) as before:
                options = RunOptions(
                    record_mode=RecordMode.ALL, model=model, workdir=workdir or Path.cwd()
                )
                for item in items:
                    first = expand([item], options)[:1]
                    change.results.extend(run_cell(cell, options) for cell in first)
                if before is not None and path.exists():
                    delta = diff(before, path)
                    change.new, change.changed, change.removed = (
                        len(delta.added),
                        len(delta.changed),
                        len(delta.removed),
                    )
                elif path.exists():
                    from harness.cassettes import Cassette

                    change.new = len(Cassette.load(path).raw)
                if change.failed and before is not None:
                    change.rejected = path.with_name(f"{path.stem}.rejected{path.suffix}")
                    if path.exists():
                        os.replace(path, change.rejected)
                    shutil.copy2(before, path)
            changes.append(change)
    return changes


@contextmanager
def _previous(path: Path) -> Iterator[Path | None]:
    if not path.exists():
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="harness-record-"))
    try:
        copy = folder / path.name
        shutil.copy2(path, copy)
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _one_recording_run() -> Iterator[None]:
    """Every cassette shared by several scenarios is rewritten once, then appended to: one
    recording run, joined here and left when the recording ends."""
    from harness.cassettes.recording_run import join_run, leave_run

    previous = os.environ.get("HARNESS_RECORD_RUN_ID")
    run_id = f"record-{uuid.uuid4().hex}"
    os.environ["HARNESS_RECORD_RUN_ID"] = run_id
    join_run(run_id)
    try:
        yield
    finally:
        leave_run(run_id)
        if previous is None:
            del os.environ["HARNESS_RECORD_RUN_ID"]
        else:
            os.environ["HARNESS_RECORD_RUN_ID"] = previous
