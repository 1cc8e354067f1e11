"""`harness fuzz`: find an agent cell on which a target and the reference disagree, shrink it, and
write it as a scenario file.

Cells are generated with hypothesis from the property kit's own strategies (`harness.strategies`:
agents with budgets 0..3 or none, 1..3 steps, tools (approval granted or denied), skills,
workspaces, memory, streaming and reasoning; scripts of prose, `max_tokens` cuts, tool calls
with cut-off JSON, `__finish__` with siblings or schema-invalid output, provider errors; both
providers), plus text that is blank by Java's `isBlank`. Each cell runs on the target and on
the reference through the `--compare-reference` machinery, and the contract differ
(`harness.scenarios.contract`) decides whether they disagree. The first disagreement is shrunk
by hypothesis itself, and the smallest cell is written with an `expect` taken from what the
reference did, in the scenario vocabulary.

A search is deterministic for a `--seed` (same target, same cells, same file): it keeps no
example database, so no earlier run changes what it tries.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Final

import yaml
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from harness.agent.definition import DEFAULT_MAX_COMPLETION_RETRIES, AgentDefinition
from harness.errors import HarnessError
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.llm.script import ScriptedReply, ScriptTransport
from harness.providers import PROVIDERS, Provider
from harness.scenarios.contract import request_view
from harness.scenarios.expect import AgentObservation
from harness.scenarios.format import Scenario
from harness.scenarios.load import LoadedScenario, load_file
from harness.scenarios.on_target import TargetRunner, TargetSpec, target_runner
from harness.scenarios.plan import CLI_NAMES, OptionNames, resolve_target
from harness.scenarios.run import Cell, CellResult, RunOptions, run_reference_agent
from harness.stores.urls import open_store
from harness.strategies import (
    _agent_spec,  # the one conversion of a generated agent to a scenario's agent block
    agents,
    replies,
)
from harness.targets.base import DEFAULT_CELL_TIMEOUT
from harness.targets.protocol import TargetHello

DEFAULT_CELLS: Final = 200
DEFAULT_OUT: Final = Path(".harness/fuzz")
DEFAULT_RUNTIME: Final = "js"
STORE: Final = "memory"
"""Fuzzed cells run on the memory store: nothing to clean up, and the fastest."""
JAVA_BLANKS: Final = ("\u2003", " \t\n", "\u3000", "\u2028", "\x1c")
"""Text Java's `String.isBlank` calls blank (an em space, whitespace with a tab and a line break,
an ideographic space, a line separator, a file separator): an answer of nothing but these is no
answer, and a runtime that trims only ASCII spaces takes it for one."""
_SEARCH_NAME: Final = "fuzz"


class FuzzOptionError(HarnessError, ValueError):
    """Raised when `harness fuzz` (`fuzz()`) is given an option it cannot search with: a cell
    count below 1, a negative `--seed`, or a runtime profile or kind the target does not declare."""

    code: ClassVar[str] = "fuzz_option_invalid"


class _Diverged(Exception):
    """The property's failure: the target and the reference disagreed on the cell."""


@dataclass(frozen=True, kw_only=True)
class FuzzFinding:
    """The smallest cell found on which the target differs from the reference."""

    scenario: Scenario
    path: Path
    differences: tuple[str, ...]
    caught_by_expect: bool
    """Whether the written scenario, run on the target without `--compare-reference`, fails:
    False when the difference lies where no `expect` key reaches (a text delta's wording, a
    tool result's content), so only `--compare-reference` shows it."""


@dataclass(frozen=True, kw_only=True)
class FuzzOutcome:
    """What a search did: the cells it ran, how long it took, and the finding (None: the target
    agreed with the reference on every cell)."""

    cells_run: int
    """Every cell run, the shrinker's included."""
    search_seconds: float
    """Until the first difference (or the end, when there is none)."""
    shrink_seconds: float
    finding: FuzzFinding | None = None
    found_at: int = 0
    """The generated cell that first differed (1 for the first), before shrinking."""
    skipped: int = 0
    notes: list[str] = field(default_factory=list)


# -- the cells ----------------------------------------------------------------------------------


def _java_blank_replies() -> st.SearchStrategy[ScriptedReply]:
    return st.builds(ScriptedReply, text=st.sampled_from(JAVA_BLANKS), truncated=st.booleans())


def _supported(agent: AgentDefinition, features: Sequence[str]) -> AgentDefinition:
    """`agent` without what the target's hello does not declare, so no generated cell is skipped."""
    update: dict[str, Any] = {}
    if "streaming" not in features:
        update["stream"] = False
    if "memory" not in features:
        update["memory"] = None
    if "approval" not in features:
        update["tools"] = tuple(
            tool.model_copy(update={"requires_approval": False}) for tool in agent.tools
        )
        if agent.workspace is not None:
            update["workspace"] = agent.workspace.model_copy(
                update={
                    "tools": tuple(
                        tool.model_copy(update={"requires_approval": False})
                        for tool in agent.workspace.tools
                    )
                }
            )
    return agent.evolve(**update) if update else agent


def fuzz_scenarios(
    *,
    runtime: str = DEFAULT_RUNTIME,
    providers: Sequence[Provider] = PROVIDERS,
    features: Sequence[str] = ("streaming", "memory", "approval"),
) -> st.SearchStrategy[Scenario]:
    """Agent scenarios of one cell (`runtime`, the memory store) with a script long enough for
    any run of the agent, and no `expect`. Only the protocol `features` given are used (a
    target's `hello.features`), so no cell is skipped. Shrinks towards one provider's prose."""

    def for_provider(provider: Provider) -> st.SearchStrategy[Scenario]:
        def scenario(agent: AgentDefinition) -> st.SearchStrategy[Scenario]:
            tools = [tool.name for tool in agent.all_tools()]
            reply = replies(agent.output_schema, tools=tools, provider=provider)
            length = agent.max_steps + agent.max_completion_retries
            script = st.lists(reply | _java_blank_replies(), min_size=length, max_size=length)
            return st.builds(
                lambda script_, default_budget, deny: _scenario(
                    agent, provider, runtime, script_, default_budget=default_budget, deny=deny
                ),
                script,
                st.booleans(),
                st.booleans() if "approval" in features else st.just(False),
            )

        return agents(provider=provider).map(lambda a: _supported(a, features)).flatmap(scenario)

    return st.sampled_from(list(providers)).flatmap(for_provider)


def _scenario(
    agent: AgentDefinition,
    provider: Provider,
    runtime: str,
    script: Sequence[ScriptedReply],
    *,
    default_budget: bool,
    deny: bool,
) -> Scenario:
    """The cell as a scenario. With `default_budget`, a budget of the default (2) is left out,
    so the target's own default is what runs; with `deny`, every approval-gated tool is denied."""
    spec = _agent_spec(agent).model_dump(exclude_defaults=True)
    if default_budget and agent.max_completion_retries == DEFAULT_MAX_COMPLETION_RETRIES:
        spec.pop("max_completion_retries", None)
    if deny:
        gated = [tool.name for tool in agent.all_tools() if tool.requires_approval]
        if gated:
            spec["deny_approval"] = gated
    return Scenario.model_validate(
        {
            "name": _SEARCH_NAME,
            "provider": provider,
            "model": agent.model,
            "runtimes": [runtime],
            "stores": [STORE],
            "script": [reply.model_dump(exclude_defaults=True) for reply in script],
            "agent": spec,
        }
    )


def _cell(scenario: Scenario, runtime: str, folder: Path) -> Cell:
    loaded = LoadedScenario(scenario, folder / f"{scenario.name}.yaml", 1, {})
    return Cell(loaded, runtime, STORE)


FUZZ_NAMES: Final = replace(CLI_NAMES, compare_reference="harness fuzz")
"""The options as `harness fuzz` spells them, for the refusals of `resolve_target`."""


def fuzz_target(
    target: str | None,
    target_cmd: str | None,
    target_env: Sequence[str] = (),
    *,
    cell_timeout: float = DEFAULT_CELL_TIMEOUT,
    pyproject: Path = Path("pyproject.toml"),
    names: OptionNames = FUZZ_NAMES,
) -> TargetSpec:
    """The implementation to search, by `harness run`'s own rules (`resolve_target`): `target`
    (a `module:function`) or `target_cmd`, else `[tool.harness] target` of `pyproject`; a
    command also gets `[tool.harness] target-env`, then `target_env`. `TargetSpecError` when
    both or neither are given (there is nothing to compare the reference with), or for
    `target_env` with a callable."""
    spec = resolve_target(
        target,
        target_cmd,
        target_env,
        compare_reference=True,
        cell_timeout=cell_timeout,
        pyproject=pyproject,
        names=names,
    )
    assert spec is not None  # comparing with the reference refuses "neither"
    return spec


# -- the search ---------------------------------------------------------------------------------


def fuzz(
    target: TargetSpec,
    *,
    runtime: str | None = None,
    cells: int = DEFAULT_CELLS,
    seed: int = 0,
    out: Path = DEFAULT_OUT,
    providers: Sequence[Provider] = PROVIDERS,
) -> FuzzOutcome:
    """Run up to `cells` generated agent cells on `target` and on the reference; on the first
    difference in the contract, shrink the cell and write it to `out` as a scenario file whose
    `expect` is what the reference did there.

    Raises `FuzzOptionError` for `cells` below 1, a negative `seed`, or a `runtime` (default
    `js`, else the first the target declares) or agent kind the target's hello does not declare;
    the target's own errors (it cannot be started) propagate as `HarnessError`s.
    """
    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 1:
        raise FuzzOptionError(
            f"expected a whole number of cells of at least 1 but got cells={cells!r} "
            f"(type={type(cells).__name__})"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise FuzzOptionError(
            f"expected a --seed of 0 or more but got seed={seed!r} (type={type(seed).__name__})"
        )
    _refuse_unwritable(out)
    options = RunOptions()
    with target_runner(replace(target, compare_reference=True)) as runner:
        hello = runner.hello(runner.under_test)
        runtime = _runtime(hello, runtime)
        strategy = fuzz_scenarios(runtime=runtime, providers=providers, features=hello.features)
        ran = [0, 0]  # cells, skipped
        failures: list[tuple[Scenario, list[str], float, int]] = []

        @settings(
            database=None,
            max_examples=cells,
            deadline=None,
            derandomize=False,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            print_blob=False,
            report_multiple_bugs=False,
        )
        @hypothesis_seed(seed)
        @given(strategy)
        def agrees(scenario: Scenario) -> None:
            ran[0] += 1
            result = runner.run_cell(_cell(scenario, runtime, out), options)
            if result.skipped is not None:
                ran[1] += 1
                return
            problems = _problems(result)
            if problems:
                failures.append((scenario, problems, time.perf_counter(), ran[0]))
                raise _Diverged

        started = time.perf_counter()
        notes: list[str] = []
        try:
            agrees()
        except _Diverged:
            pass
        except HypothesisException as error:  # a target that answers one cell two ways
            notes.append(
                f"the target did not answer the same cell the same way twice ({type(error).__name__})"
            )
        finished = time.perf_counter()
        if not failures:
            return FuzzOutcome(
                cells_run=ran[0],
                skipped=ran[1],
                search_seconds=finished - started,
                shrink_seconds=0.0,
                notes=notes,
            )
        first_failure, found_at = failures[0][2:]
        scenario, problems, _, _ = failures[-1]  # hypothesis replays the smallest one last
        finding = _write_finding(runner, scenario, problems, runtime, seed, out)
        return FuzzOutcome(
            cells_run=ran[0],
            skipped=ran[1],
            search_seconds=first_failure - started,
            shrink_seconds=finished - first_failure,
            found_at=found_at,
            finding=finding,
            notes=notes,
        )


def _refuse_unwritable(out: Path) -> None:
    """Refuse, before any cell runs, a folder the finding could not be written into: a file, or a
    folder (or the nearest existing parent of one to be made) this process may not write."""
    if out.exists() and not out.is_dir():
        raise FuzzOptionError(
            f"expected a folder to write the finding into but got out={str(out)!r}, a file"
        )
    existing = next((folder for folder in (out, *out.parents) if folder.exists()), Path.cwd())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise FuzzOptionError(
            f"cannot write the finding into {str(out)!r}: {str(existing)!r} is not writable"
        )


def _runtime(hello: TargetHello, runtime: str | None) -> str:
    if "agent" not in hello.kinds:
        raise FuzzOptionError(
            f"{hello.name} does not run agent cells (hello.kinds: {', '.join(hello.kinds)}); "
            "harness fuzz generates agent cells"
        )
    if runtime is None:
        runtime = DEFAULT_RUNTIME if DEFAULT_RUNTIME in hello.runtimes else hello.runtimes[0]
    if runtime not in hello.runtimes:
        raise FuzzOptionError(
            f"expected a runtime profile the target declares ({', '.join(hello.runtimes)}) but "
            f"got runtime={runtime!r} (type={type(runtime).__name__})"
        )
    return runtime


def _problems(result: CellResult) -> list[str]:
    if result.error is not None:
        return [result.error]
    return list(result.differences)


# -- the finding as a scenario file ---------------------------------------------------------------


def _write_finding(
    runner: TargetRunner,
    scenario: Scenario,
    problems: list[str],
    runtime: str,
    seed: int,
    out: Path,
) -> FuzzFinding:
    description = (
        f"Found by harness fuzz --seed {seed}: the target differed from the reference "
        f"({problems[0].split(':', 1)[0]}); the expect is what the reference did."
    )
    path = write_scenario(scenario, runtime, out, description=description)
    (loaded,) = load_file(path)  # what was written loads, as `harness run` will read it
    on_target = replace(runner, reference=None).run_cell(Cell(loaded, runtime, STORE), RunOptions())
    return FuzzFinding(
        scenario=loaded.scenario,
        path=path,
        differences=tuple(problems),
        caught_by_expect=on_target.failed,
    )


def write_scenario(scenario: Scenario, runtime: str, out: Path, *, description: str) -> Path:
    """Write the agent cell `scenario` (on `runtime`, the memory store) into `out` as a scenario
    file named after its content (`fuzz-<runtime>-<provider>-<hash>.yaml`), its `expect` what
    the reference does (`reference_expect`); returns its path. The same cell always gets the
    same file, byte for byte."""
    digest = hashlib.sha256(scenario.model_dump_json().encode()).hexdigest()[:8]
    name = f"fuzz-{runtime}-{scenario.provider}-{digest}"
    named = scenario.model_copy(update={"name": name})
    assert named.agent is not None
    document: dict[str, Any] = {
        "name": name,
        "description": description,
        "tags": ["fuzz"],
        "provider": scenario.provider,
        "model": scenario.model,
        "runtimes": [runtime],
        "stores": [STORE],
        "script": [
            reply.model_dump(mode="json", exclude_defaults=True) for reply in named.script or []
        ],
        "agent": named.agent.model_dump(mode="json", exclude_defaults=True),
        "expect": reference_expect(named, runtime),
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.yaml"
    text = (
        "# A cell `harness fuzz` found; commit it to keep the difference fixed.\n"
        + yaml.safe_dump(
            [document], sort_keys=False, allow_unicode=True, width=100, default_flow_style=None
        )
    )
    path.write_text(text, encoding="utf-8")
    return path


def reference_expect(scenario: Scenario, runtime: str) -> dict[str, Any]:
    """An `expect` block holding what the reference does on the cell: its status, error code,
    output, call counts, the exact forced-completion chunk stream, what every work and forced
    request carried alike, its persisted forced state, counters and records. Only what does not
    change from one run to the next (no run ids, no timings, no message wording)."""
    spec = scenario.agent
    assert spec is not None
    assert scenario.script is not None
    transport = ScriptTransport(scenario.provider, list(scenario.script))
    gateway = LlmGateway(
        GatewayConfig(provider=scenario.provider, base_url="https://scripted.invalid"),
        transport=transport,
    )
    store = open_store("memory://")
    try:
        result, stored = run_reference_agent(
            scenario,
            gateway,
            store,
            runtime=runtime,
            run_id=f"{scenario.name}-{uuid.uuid4().hex[:8]}",
            session_id=f"session-{scenario.name}",
            user_message=spec.user_message,
        )
    finally:
        store.close()
        gateway.close()
    forced = stored.forced_completion if stored is not None else None
    run = AgentObservation.of_run(result, forced)
    expect: dict[str, Any] = {"status": run.status}
    if run.error_code is not None:
        expect["error_code"] = run.error_code
    if run.output is not None:
        expect["output"] = run.output
    expect["llm_calls"] = sum(len(requests) for requests in run.requests.values())
    expect["forced_calls"] = len(run.requests["forced"])
    expect["chunk_sequence"] = [
        chunk.model_dump(mode="json", exclude={"kind"}, exclude_none=True)
        for chunk in run.forced_chunks()
    ]
    for kind in ("work", "forced"):
        common = _common_request_fields([request_view(kind, r) for r in run.requests[kind]])
        if common:
            expect[f"{kind}_request"] = common
    if forced is None:
        expect["store_absent"] = True
    else:
        expect["store"] = forced.model_dump(mode="json", by_alias=True, exclude_none=True)
    if spec.memory is not None:
        expect["memory_extractions"] = run.memory_extractions
    record = {
        key: value
        for key, value in run.outcome_record.items()
        if isinstance(value, str) and key != "session_id"
    }
    if record:
        expect["outcome_record"] = record
    expect["envelope"] = {"outcome": run.envelope["outcome"]}
    return expect


_REQUEST_FIELDS: Final = (
    "tools",
    "tool_choice",
    "reasoning",
    "system_fragments",
    "memory_injected",
    "completion_metadata",
    "model",
    "temperature",
)


def _common_request_fields(views: list[dict[str, Any]]) -> dict[str, Any]:
    """The request fields every request of one kind carried with the same value."""
    if not views:
        return {}
    common: dict[str, Any] = {}
    for name in _REQUEST_FIELDS:
        values = [view[name] for view in views]
        if values[0] is not None and all(value == values[0] for value in values):
            common[name] = values[0]
    return common
