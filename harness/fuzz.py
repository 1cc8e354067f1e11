"""`harness fuzz`: find a cell on which a target and the reference disagree, shrink it, and write
it as a scenario file.

Cells are generated with hypothesis from the property kit's own strategies (`harness.strategies`),
of every kind the target runs. Agent cells: agents with an output schema or none (a plain run),
budgets 0..3 or none, 1..3 steps, tools (approval granted or denied), skills, workspaces, memory,
streaming and reasoning (OpenAI efforts, Anthropic and Gemini thinking); scripts of prose,
`max_tokens` cuts, thinking before a reply (for an agent that reasons) and thinking that spends
the whole cap, tool calls with cut-off JSON, `__finish__` with siblings (before or after it), several
calls in one reply, schema-invalid output, provider errors and the provider's refusal of a
forced tool choice; every provider the target speaks (`hello.providers`); plus text that is
blank to Java, JavaScript and Python alike; and, as the hello's features allow, an
`llm_config_override` for the forced phase (on every forced call, or on those whose
forced-completion state matches a trigger or an attempt), crash points and a cancellation. Module cells: completion
executions through one module, decision states with a model selection, an ACL, a tool policy
and scripted replies. Each cell runs on the target and on the reference through the
`--compare-reference` machinery, and the contract differ (`harness.scenarios.contract`) decides
whether they disagree. The first disagreement is shrunk by hypothesis itself, and the smallest
cell is written with an `expect` taken from what the reference did, in the scenario vocabulary.

A search is deterministic for a `--seed` (same target, same cells, same file): it keeps no
example database, so no earlier run changes what it tries, and draws no constant from the modules
the process loaded (`_no_constants_of_loaded_modules`), so neither does what ran before it.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, get_args

import yaml
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException, HypothesisWarning

from harness.agent.definition import DEFAULT_MAX_COMPLETION_RETRIES, AgentDefinition
from harness.agent.spec import ConfigOverrideSpec, FaultSpec, OverrideWhen
from harness.agent.state import PERSISTENCE_POINTS, PersistencePoint
from harness.engines.settings import ENGINE_NAMES, REAL_RUNTIMES, EngineName
from harness.errors import HarnessError
from harness.files import write_atomically
from harness.interrupts import Interrupts, interrupts_redelivered
from harness.json_body import canonical_number
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.llm.models import ReasoningEffort
from harness.llm.script import ScriptedError, ScriptedReply, ScriptTransport
from harness.providers import PROVIDERS, Provider, find_provider
from harness.runtimes.run import FaultNotReachedError
from harness.scenarios.contract import request_view
from harness.scenarios.expect import AgentObservation, module_observation
from harness.scenarios.format import Scenario, StreamChunkExpect
from harness.scenarios.load import LoadedScenario, load_file
from harness.scenarios.on_target import TargetRunner, TargetSpec, target_runner
from harness.scenarios.plan import CLI_NAMES, OptionNames, resolve_target
from harness.scenarios.run import (
    Cell,
    CellResult,
    ModuleExecution,
    RunOptions,
    run_reference_agent,
    run_reference_module,
)
from harness.stores.urls import open_store
from harness.strategies import (
    _agent_spec,  # the one conversion of a generated agent to a scenario's agent block
    agents,
    completion_inputs,
    decision_replies,
    decision_states,
    replies,
)
from harness.targets.base import DEFAULT_CELL_TIMEOUT
from harness.targets.protocol import ScenarioKind, TargetHello

DEFAULT_CELLS: Final = 200
DEFAULT_OUT: Final = Path(".harness/fuzz")
DEFAULT_RUNTIME: Final = "js"
STORE: Final = "memory"
"""Fuzzed cells run on the memory store: nothing to clean up, and the fastest."""
JAVA_BLANKS: Final = ("\u2003", " \t\n", "\u3000", "\u2028", "\r\x0b\x0c ")
"""Text Java's `String.isBlank` calls blank (an em space, white space with a tab and a line
break, an ideographic space, a line separator, a carriage return with a vertical tab and a form
feed): an answer of nothing but these is no answer, and a runtime that trims only ASCII spaces
takes it for one. Only characters Java's `isBlank`, JavaScript's `trim()` and Python's `strip()`
all call white space: a runtime may use any of the three."""
KIND_WEIGHTS: Final[dict[ScenarioKind, int]] = {"agent": 4, "decision": 2, "completion": 1}
"""How often each kind of cell is drawn when a target runs several: agent cells, the largest
space, most often; the completion module's small space least."""
_SEARCH_NAME: Final = "fuzz"


class FuzzOptionError(HarnessError, ValueError):
    """Raised when `harness fuzz` (`fuzz()`) is given an option it cannot search with: a cell
    count below 1, a negative `--seed`, or a runtime profile or kind the target does not declare."""

    code: ClassVar[str] = "fuzz_option_invalid"


class FuzzWriteError(HarnessError, OSError):
    """Raised when `harness fuzz` (`fuzz()`) found a difference but cannot write its scenario
    file: the disk is full, the folder cannot be created or written. The message names the file
    and the system's reason; no file is left behind, not even an empty one."""

    code: ClassVar[str] = "fuzz_write_failed"


class FuzzInterrupted(KeyboardInterrupt):
    """Raised by `fuzz()` when Ctrl-C (SIGINT) stops the search: a `KeyboardInterrupt`, so what
    stops on one stops on it, carrying how far the search got. The target was stopped, and no
    scenario file was written unless `written` says one was."""

    stage: Literal["starting", "searching", "shrinking", "writing"]
    """What the search was doing: starting the target, generating cells, shrinking the first
    that differed, or writing it."""
    cells_run: int
    """Cells that finished on the target and the reference, the shrinker's included."""
    found_at: int
    """The generated cell that first differed (1 for the first); 0 when none did."""
    differences: tuple[str, ...]
    """How the target differed on that cell (empty when none did)."""
    written: Path | None
    """The scenario file, when it was written before the interruption (it was then not yet
    run on the target again)."""

    def __init__(
        self,
        *,
        stage: Literal["starting", "searching", "shrinking", "writing"],
        cells_run: int,
        found_at: int = 0,
        differences: tuple[str, ...] = (),
        written: Path | None = None,
    ) -> None:
        super().__init__(f"harness fuzz was interrupted while {stage} ({cells_run} cells run)")
        self.stage = stage
        self.cells_run = cells_run
        self.found_at = found_at
        self.differences = differences
        self.written = written


class _Diverged(Exception):
    """The property's failure: the target and the reference disagreed on the cell."""


@dataclass(kw_only=True)
class _Progress:
    """How far a search got, for its outcome or its interruption."""

    stage: Literal["starting", "searching", "shrinking", "writing"] = "starting"
    cells_run: int = 0
    skipped: int = 0
    failures: list[tuple[Scenario, list[str], float, int]] = field(default_factory=list)
    """Each differing cell (the first generated, then the shrinker's), its differences, when it
    finished and how many cells had finished by then."""
    written: Path | None = None

    def interrupted(self) -> FuzzInterrupted:
        first = self.failures[0] if self.failures else None
        return FuzzInterrupted(
            stage=self.stage,
            cells_run=self.cells_run,
            found_at=first[3] if first is not None else 0,
            differences=tuple(first[1]) if first is not None else (),
            written=self.written,
        )


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


def tool_choice_refusal(provider: str) -> ScriptedError | None:
    """`provider`'s HTTP error refusing a call that forces a tool (its spec's
    `forced_tool_choice_refusal`), as a scripted error: the reference reads it as
    `framework_completion_tool_choice_unsupported` when it answers a forced call (the run fails
    at once, no attempt spent), as a failed call when it answers a work call."""
    spec = find_provider(provider)
    if spec is None or spec.forced_tool_choice_refusal is None:
        return None
    status, kind, message = spec.forced_tool_choice_refusal
    return ScriptedError(status=status, type=kind, message=message)


def _refusals_and_blanks(provider: Provider) -> st.SearchStrategy[ScriptedReply]:
    """Replies no property-kit strategy writes: Java blanks, and `provider`'s refusal of a forced
    tool choice (`tool_choice_refusal`)."""
    refusal = tool_choice_refusal(provider)
    if refusal is None:
        return _java_blank_replies()
    return _java_blank_replies() | st.just(ScriptedReply(error=refusal))


_OVERRIDE_TEMPERATURES: Final = (0.1, 1.5)
_TRIGGERS: Final = ("terminal_text", "max_tokens", "max_steps")


def _config_overrides(provider: Provider) -> st.SearchStrategy[ConfigOverrideSpec]:
    """What a generated agent's `llm_config_override` returns in the forced phase: another of
    `provider`'s tool models, a temperature (the generated agents set none), a token cap, or any
    of them together (nothing at all included: an override that changes nothing), on every
    forced call or on those whose forced-completion state has one of some triggers or is about
    to make attempt 2 or 3 (`when`), so a target that gives its callback no state, or a stale
    one, sends another request than the reference."""
    spec = find_provider(provider)
    assert spec is not None  # a Provider is registered
    when = st.builds(
        OverrideWhen,
        trigger=st.none()
        | st.lists(st.sampled_from(_TRIGGERS), min_size=1, max_size=2, unique=True),
        from_attempt=st.none() | st.integers(min_value=2, max_value=3),
    )
    return st.builds(
        ConfigOverrideSpec,
        model=st.none() | st.sampled_from(spec.tool_models),
        temperature=st.none() | st.sampled_from(_OVERRIDE_TEMPERATURES),
        max_tokens=st.none() | st.just(128),
        when=st.none() | when,
    )


_THOUGHTS: Final = (
    "The user wants a capital. I should search first.",
    "Checking the schema before I answer.",
)


def _thinking_replies(
    replies: st.SearchStrategy[ScriptedReply], agent: AgentDefinition
) -> st.SearchStrategy[ScriptedReply]:
    """`replies`, for an agent that reasons, now and then with the thinking its model shows
    before them (a signed block, a thought signature, reasoning tokens, as its wire carries
    them), and a reply of thinking alone cut off by the token limit: the max_tokens trigger of
    a model that spent its whole cap thinking."""
    if not isinstance(agent.reasoning, ReasoningEffort):
        return replies
    thoughts = st.sampled_from(_THOUGHTS)

    def thought(reply: ScriptedReply) -> st.SearchStrategy[ScriptedReply]:
        if reply.error is not None:
            return st.just(reply)
        return st.just(reply) | thoughts.map(lambda words: reply.evolve(thinking=words))

    spent = thoughts.map(lambda words: ScriptedReply(thinking=words, truncated=True))
    return replies.flatmap(thought) | spent


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
    kinds: Sequence[ScenarioKind] = ("agent",),
) -> st.SearchStrategy[Scenario]:
    """Scenarios of one cell and no `expect`, of the `kinds` given (`KIND_WEIGHTS` says how
    often each is drawn when there are several): agent cells (`runtime`, the memory store) with
    a script long enough for any run of the agent, using only the protocol `features` given (a
    target's `hello.features`) so no cell is skipped; decision and completion module cells
    (`module_scenarios`). Shrinks towards an agent cell of one provider's prose.

    Agent cells use each feature only when `features` holds it: `streaming`, `memory` and
    `approval` in the agent; `llm_config_override` for an override of the forced phase
    (`_config_overrides`); `faults` for one or two crash points, `cancel` for a cancellation,
    each after a persistence the reference's run of the cell reaches (`_reached_points`), so a
    crash or cancellation always acts. Agents without an output schema (a plain run, no forced
    phase) and each provider's refusal of a forced tool choice are always among them."""
    unknown = sorted(set(kinds) - set(get_args(ScenarioKind)))
    if not kinds or unknown:
        raise FuzzOptionError(
            f"expected scenario kinds among {', '.join(get_args(ScenarioKind))} but got "
            f"kinds={list(kinds)!r}"
        )
    by_kind: dict[ScenarioKind, Callable[[], st.SearchStrategy[Scenario]]] = {
        "agent": lambda: _agent_scenarios(runtime, providers, features),
        "decision": lambda: module_scenarios("decision", providers=providers),
        "completion": lambda: module_scenarios("completion"),
    }
    drawn = [kind for kind, weight in KIND_WEIGHTS.items() if kind in kinds for _ in range(weight)]
    if len(set(drawn)) == 1:
        return by_kind[drawn[0]]()
    return st.sampled_from(drawn).flatmap(lambda kind: by_kind[kind]())


def _agent_scenarios(
    runtime: str, providers: Sequence[Provider], features: Sequence[str]
) -> st.SearchStrategy[Scenario]:
    def for_provider(provider: Provider) -> st.SearchStrategy[Scenario]:
        def scenario(agent: AgentDefinition) -> st.SearchStrategy[Scenario]:
            tools = [tool.name for tool in agent.all_tools()]
            reply = _thinking_replies(
                replies(agent.output_schema, tools=tools, provider=provider), agent
            )
            length = agent.max_steps + agent.max_completion_retries
            script = st.lists(
                reply | _refusals_and_blanks(provider), min_size=length, max_size=length
            )
            override: st.SearchStrategy[ConfigOverrideSpec | None] = st.none()
            if "llm_config_override" in features:
                override = st.none() | _config_overrides(provider)
            return st.builds(
                lambda script_, default_budget, deny, override_: _scenario(
                    agent,
                    provider,
                    runtime,
                    script_,
                    default_budget=default_budget,
                    deny=deny,
                    override=override_,
                ),
                script,
                st.booleans(),
                st.booleans() if "approval" in features else st.just(False),
                override,
            )

        # with an output schema or without one (a plain run, no forced phase); shrinks to with
        generated = st.booleans().flatmap(
            lambda plain: agents(provider=provider, output_schema=not plain)
        )
        return generated.map(lambda a: _supported(a, features)).flatmap(scenario)

    cells = st.sampled_from(list(providers)).flatmap(for_provider)
    if "faults" in features or "cancel" in features:
        return cells.flatmap(lambda cell: _interrupted(cell, features))
    return cells


def _interrupted(scenario: Scenario, features: Sequence[str]) -> st.SearchStrategy[Scenario]:
    """`scenario` as it is (what this shrinks to), or, as `features` allow, crashed after one
    or two persistences (`faults`; the run resumes from its store) or cancelled after one
    (`cancel`): only persistences the reference's uninterrupted run reaches, which a crashed
    run reaches too, as it resumes and goes on through the same points."""
    kinds: list[st.SearchStrategy[Scenario]] = [st.just(scenario)]
    reached = [
        (point, occurrence)
        for point, count in sorted(
            _reached_points(scenario).items(), key=lambda item: PERSISTENCE_POINTS.index(item[0])
        )
        for occurrence in range(1, count + 1)
    ]

    def with_(update: dict[str, Any]) -> Scenario:
        document = scenario.model_dump(mode="json", exclude_unset=True)
        return Scenario.model_validate({**document, **update})

    if "faults" in features:
        kinds.append(
            st.lists(st.sampled_from(reached), min_size=1, max_size=2, unique=True).map(
                lambda crashes: with_(
                    {"faults": [{"crash_after": p, "occurrence": n} for p, n in crashes]}
                )
            )
        )
    cancellable = [(point, n) for point, n in reached if point != "run_finished"]
    if "cancel" in features and cancellable:
        kinds.append(
            st.sampled_from(cancellable).map(
                lambda at: with_({"cancel": {"after": at[0], "occurrence": at[1]}})
            )
        )
    return st.one_of(kinds)


_NEVER: Final = 1_000_000
"""An occurrence no run reaches: the probe fault of `_reached_points`, which never fires."""


def _reached_points(scenario: Scenario) -> dict[PersistencePoint, int]:
    """How often the reference's run of the agent `scenario` (uninterrupted) reaches each
    persistence point: run with a crash point it never reaches, which reports them."""
    spec = scenario.agent
    assert spec is not None
    assert scenario.script is not None
    runtime, _ = scenario.cells()[0]
    probe = scenario.model_copy(
        update={"faults": [FaultSpec(crash_after="run_finished", occurrence=_NEVER)]}
    )
    gateway = LlmGateway(
        GatewayConfig(provider=scenario.provider, base_url="https://scripted.invalid"),
        transport=ScriptTransport(scenario.provider, list(scenario.script)),
    )
    store = open_store("memory://")
    # a module the run imports late may draw from the global random (rich does, once), which
    # hypothesis takes for a strategy using `random`: the probe leaves it as it found it
    random_state = random.getstate()
    try:
        run_reference_agent(
            probe,
            gateway,
            store,
            runtime=runtime,
            run_id="fuzz-probe",
            session_id="session-fuzz-probe",
            user_message=spec.user_message,
        )
    except FaultNotReachedError as error:
        return error.seen
    finally:
        store.close()
        gateway.close()
        random.setstate(random_state)
    raise AssertionError("a run never reaches run_finished a million times")  # pragma: no cover


_MODEL_IDS: Final = uuid.UUID("6f1d2c3b-5a4e-4f60-8b7c-9d0e1f2a3b4c")
"""The namespace of generated decision models' ids (one id per provider and model name)."""


def _decision_models(provider: Provider) -> list[dict[str, Any]]:
    """The model catalog of a generated decision cell: a model of `provider` everyone sees, and
    one only the `ops` group sees (the ACL: the session's principal, alice, is not in it)."""
    spec = find_provider(provider)
    assert spec is not None  # a Provider is registered
    model = spec.tool_models[0]
    return [
        {
            "id": str(uuid.uuid5(_MODEL_IDS, f"{provider}/{name}")),
            "name": name,
            "provider": provider,
            "model": model,
            **({"visible_to": ["ops"]} if name == "ops-only" else {}),
        }
        for name in ("everyone", "ops-only")
    ]


_SELECTIONS: Final[tuple[tuple[str, str | None, bool], ...]] = (
    ("session-default", None, True),
    ("session-default", None, True),
    ("first-visible", None, False),
    ("first-visible", None, True),
    ("pinned", "everyone", False),
    ("session-default", None, False),
    ("name", "everyone", True),
    ("name", "ops-only", True),
    ("pinned", "ops-only", True),
    ("policy", "round-robin", True),
)
"""Model selections of generated decision cells, as (how, which model or policy, whether the
session has a default model): the session default (the module's default policy), the first
visible model, a pinned model, and (less often) a policy or pin that selects nothing alice may
see."""


def _selection_config(how: str, which: str | None, models: list[dict[str, Any]]) -> dict[str, str]:
    """The decision module's configuration for one of `_SELECTIONS`."""
    if how == "first-visible":
        return {"modelSelection": "first-visible"}
    if how == "name":
        return {"modelSelection": f"name:{which}"}
    if how == "pinned":
        return {"llmDetailsId": next(model["id"] for model in models if model["name"] == which)}
    if how == "policy":
        return {"modelSelection": str(which)}
    return {}


_TOOL_POLICIES: Final[tuple[dict[str, Any] | None, ...]] = (
    None,
    {"available": False},
    {"available": True, "allow": ["artifact.read"]},
)
_SELECTION_INPUTS: Final = ("llmDetailsId", "agentToolCatalog", "securityContextualToolVisibility")
"""Workflow inputs that, generated freely, mostly end a decision before its model call."""


def module_scenarios(
    kind: Literal["decision", "completion"], *, providers: Sequence[Provider] = PROVIDERS
) -> st.SearchStrategy[Scenario]:
    """Module cells with no `expect`. A completion cell: one to three executions through one
    module instance, each a JSON workflow state (`completion_inputs(json_only=True)`: text
    blank to Java, non-breaking spaces that are content, lengths around 65,536 UTF-16 units,
    values that are not text, or no answer). A decision cell: a JSON workflow state
    (`decision_states(json_only=True)`, most often with a task and without the inputs that end
    a decision before its model call), a model selection (`_SELECTIONS`), a model catalog with
    an ACL, a server tool policy, and a script of one or two `decision_replies` in the wire of
    `providers`' models."""
    if kind == "completion":
        return st.lists(completion_inputs(json_only=True), min_size=1, max_size=3).map(
            lambda states: Scenario.model_validate(
                {
                    "name": _SEARCH_NAME,
                    "kind": "completion",
                    "executions": [{"input": state, "expect": {}} for state in states],
                }
            )
        )

    def decision(
        provider: Provider,
        state: dict[str, Any],
        usable: bool,
        selection: tuple[str, str | None, bool],
        policy: dict[str, Any] | None,
        script: list[ScriptedReply],
    ) -> Scenario:
        models = _decision_models(provider)
        how, which, default = selection
        config = _selection_config(how, which, models)
        if usable:
            state = {k: v for k, v in state.items() if k not in _SELECTION_INPUTS}
            state.setdefault("agentTask", "Inspect release-42 and report its status")
            step = state.get("agentStep")
            if not isinstance(step, int) or isinstance(step, bool) or step < 0:
                state.pop("agentStep", None)
        session: dict[str, Any] = {"principal": "alice"}
        if default:
            session["default_llm_details_id"] = models[0]["id"]
        document: dict[str, Any] = {
            "name": _SEARCH_NAME,
            "kind": "decision",
            "provider": provider,
            "models": models,
            "session": session,
            "config": config,
            "input": state,
            "script": [reply.model_dump(exclude_defaults=True) for reply in script],
        }
        if policy is not None:
            document["tool_policy"] = policy
        return Scenario.model_validate(document)

    return st.builds(
        decision,
        st.sampled_from(list(providers)),
        decision_states(json_only=True),
        st.sampled_from((True, True, True, False)),
        st.sampled_from(_SELECTIONS),
        st.sampled_from(_TOOL_POLICIES),
        st.lists(decision_replies(), min_size=1, max_size=2),
    )


def _scenario(
    agent: AgentDefinition,
    provider: Provider,
    runtime: str,
    script: Sequence[ScriptedReply],
    *,
    default_budget: bool,
    deny: bool,
    override: ConfigOverrideSpec | None = None,
) -> Scenario:
    """The cell as a scenario. With `default_budget`, a budget of the default (2) is left out,
    so the target's own default is what runs; with `deny`, every approval-gated tool is denied;
    `override` is what the agent's `llm_config_override` returns in the forced phase."""
    spec = _agent_spec(agent).model_dump(exclude_defaults=True)
    if override is not None:
        spec["llm_config_override"] = override.model_dump(exclude_none=True)
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
            "script": [_portable(reply.model_dump(exclude_defaults=True)) for reply in script],
            "agent": spec,
        }
    )


def _portable(value: Any) -> Any:
    """`value` with every number one JavaScript and Python write alike: an integral double
    (`0.0`) as the integer (`0`), and a fraction below 1e-4 (`1.5e-05`, `0.000015` in
    JavaScript) as 0. The output hash is RFC 8785's, but a runtime that hashes with its own
    language's JSON writer is no bug for the fuzzer to report."""
    if isinstance(value, float):
        return 0 if abs(value) < 1e-4 else canonical_number(value)
    if isinstance(value, dict):
        return {key: _portable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_portable(item) for item in value]
    return value


def _cell(scenario: Scenario, folder: Path) -> Cell:
    """The scenario's one cell (an agent scenario's runtime and the memory store, or a module's)."""
    loaded = LoadedScenario(scenario, folder / f"{scenario.name}.yaml", 1, {})
    return Cell(loaded, *scenario.cells()[0])


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
    kinds: Sequence[ScenarioKind] | None = None,
    shrink: bool = True,
    engine: str = "simulated",
) -> FuzzOutcome:
    """Run up to `cells` generated cells on `target` and on the reference; on the first
    difference in the contract, shrink the cell (unless not `shrink`: then the cell is written
    as it was generated, sooner) and write it to `out` as a scenario file whose `expect` is what
    the reference did there.

    The cells are of the `kinds` given (default: every kind the target's hello declares); agent
    cells run on `runtime` (default `js`, else the first the target declares). With `engine`
    `real` the reference runs them on Temporal or DBOS themselves (`runtime` `temporal` or
    `dbos`), its crash points killing a worker, so a target is compared with what the engine
    does. Raises `FuzzOptionError` for `cells` below 1, a negative `seed`, an engine other than
    `simulated` and `real`, `real` on another runtime, or a kind or runtime the target's hello
    does not declare; `FuzzWriteError` when the scenario file cannot be written (a full
    disk); the target's own errors (it cannot be started) propagate as `HarnessError`s.

    Ctrl-C stops the search at once, also while a cell runs, while shrinking or while the file
    is written, even where Python would drop the `KeyboardInterrupt` (`interrupts_redelivered`):
    the target's process group is ended (SIGTERM, then SIGKILL after 2 s) and `FuzzInterrupted`
    says how far the search got.
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
    if engine not in ENGINE_NAMES:
        raise FuzzOptionError(
            f"expected --engine {' or '.join(ENGINE_NAMES)} but got engine={engine!r}"
        )
    if engine == "real" and runtime not in REAL_RUNTIMES:
        raise FuzzOptionError(
            "--engine real runs the reference's agent cells on Temporal or DBOS: give --runtime "
            f"{' or --runtime '.join(REAL_RUNTIMES)} (got runtime={runtime!r})"
        )
    _refuse_unwritable(out)
    progress = _Progress()
    interrupts = Interrupts()
    reference_engine: EngineName = "real" if engine == "real" else "simulated"
    compared = replace(target, compare_reference=True, reference_engine=reference_engine)
    with target_runner(compared) as runner:
        # an interruption leaves the block first, so `target_runner` ends the target with nothing
        # sending SIGINT any more (Ctrl-C pressed again there kills it without waiting)
        try:
            with interrupts_redelivered() as interrupts:
                return _search(
                    runner,
                    progress,
                    interrupts,
                    runtime=runtime,
                    cells=cells,
                    seed=seed,
                    out=out,
                    providers=providers,
                    kinds=kinds,
                    shrink=shrink,
                )
        except KeyboardInterrupt:
            raise progress.interrupted() from None
        except Exception:
            if interrupts.received:  # a library turned the interruption into its own error
                raise progress.interrupted() from None
            raise


def _search(
    runner: TargetRunner,
    progress: _Progress,
    interrupts: Interrupts,
    *,
    runtime: str | None,
    cells: int,
    seed: int,
    out: Path,
    providers: Sequence[Provider],
    kinds: Sequence[ScenarioKind] | None,
    shrink: bool,
) -> FuzzOutcome:
    """`fuzz()` on a connected target, noting in `progress` how far it got; it stops at the
    next cell once Ctrl-C was pressed (`interrupts`), also where the interruption came out as
    another error (a cell that failed because of it is no difference)."""
    options = RunOptions()
    hello = runner.hello(runner.under_test)
    searched = _kinds(hello, kinds)
    runtime = _runtime(hello, runtime, searched)
    strategy = fuzz_scenarios(
        runtime=runtime,
        providers=_providers(hello, providers),
        features=hello.features,
        kinds=searched,
    )
    failures = progress.failures

    @settings(
        database=None,
        max_examples=cells,
        deadline=None,
        derandomize=False,
        phases=(Phase.generate, Phase.shrink) if shrink else (Phase.generate,),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
        report_multiple_bugs=False,
    )
    @hypothesis_seed(seed)
    @given(strategy)
    def agrees(scenario: Scenario) -> None:
        interrupts.stop_if_received()
        result = runner.run_cell(_cell(scenario, out), options)
        interrupts.stop_if_received()
        progress.cells_run += 1
        if result.skipped is not None:
            progress.skipped += 1
            return
        problems = _problems(result)
        if problems:
            failures.append((scenario, problems, time.perf_counter(), progress.cells_run))
            if shrink:
                progress.stage = "shrinking"
            raise _Diverged

    started = time.perf_counter()
    notes: list[str] = []
    progress.stage = "searching"
    try:
        with warnings.catch_warnings(), _no_constants_of_loaded_modules():
            # a finding of a 65,536-character answer is written to a file, never printed
            warnings.simplefilter("ignore", HypothesisWarning)
            agrees()
    except _Diverged:
        pass
    except HypothesisException as error:  # a target that answers one cell two ways
        notes.append(
            f"the target did not answer the same cell the same way twice ({type(error).__name__})"
        )
    interrupts.stop_if_received()  # whatever hypothesis made of an interrupted cell
    finished = time.perf_counter()
    if not failures:
        return FuzzOutcome(
            cells_run=progress.cells_run,
            skipped=progress.skipped,
            search_seconds=finished - started,
            shrink_seconds=0.0,
            notes=notes,
        )
    first_failure, found_at = failures[0][2:]
    scenario, problems, _, _ = failures[-1]  # hypothesis replays the smallest one last
    progress.stage = "writing"
    finding = _write_finding(runner, scenario, problems, seed, out, progress)
    interrupts.stop_if_received()  # the file is written, but not checked on the target
    return FuzzOutcome(
        cells_run=progress.cells_run,
        skipped=progress.skipped,
        search_seconds=first_failure - started,
        shrink_seconds=finished - first_failure,
        found_at=found_at,
        finding=finding,
        notes=notes,
    )


@contextmanager
def _no_constants_of_loaded_modules() -> Iterator[None]:
    """While the search runs, hypothesis draws none of the constants it reads from the modules
    loaded in this process, so what a `--seed` tries does not depend on what was imported first.

    Now and then hypothesis (6.131 on) draws a number or string from the source of every module
    loaded from outside the standard library and site-packages, read again whenever
    `sys.modules` grows: a test worker that had run other tests, or a target with modules of its
    own, had other ones, and the same seed tried other cells there. Its own constants it still
    draws. Hypothesis has no setting for this, so its reader is replaced for the search and put
    back after, and the constants it cached from either pool are dropped on the way in and out."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - a hypothesis before 6.131 reads no module's constants
        yield
        return
    read_loaded_modules = providers._get_local_constants
    none = Constants()
    providers.CONSTANTS_CACHE.cache.clear()
    providers._get_local_constants = lambda *_: none
    try:
        yield
    finally:
        providers._get_local_constants = read_loaded_modules
        providers.CONSTANTS_CACHE.cache.clear()


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


def _providers(hello: TargetHello, providers: Sequence[Provider]) -> tuple[Provider, ...]:
    """`providers` the target speaks (`hello.providers`; all of them when it names none), so no
    generated cell is skipped; `FuzzOptionError` when it speaks none of them."""
    if hello.providers is None:
        return tuple(providers)
    spoken = tuple(provider for provider in providers if provider in hello.providers)
    if not spoken:
        raise FuzzOptionError(
            f"expected providers the target speaks ({', '.join(hello.providers)}) but got "
            f"providers={list(providers)!r}"
        )
    return spoken


def _kinds(hello: TargetHello, kinds: Sequence[ScenarioKind] | None) -> tuple[ScenarioKind, ...]:
    """The kinds of cell to generate: `kinds`, every one of which the target must declare, or
    (None) every kind it declares."""
    if kinds is None:
        return tuple(hello.kinds)
    missing = [kind for kind in kinds if kind not in hello.kinds]
    if not kinds or missing:
        raise FuzzOptionError(
            f"expected kinds of cell the target declares ({', '.join(hello.kinds)}) but got "
            f"kinds={list(kinds)!r}"
        )
    return tuple(dict.fromkeys(kinds))


def _runtime(hello: TargetHello, runtime: str | None, kinds: Sequence[ScenarioKind]) -> str:
    """The runtime profile agent cells run on. A target that runs no agent cells has none, and
    any `runtime` given is left unused (module cells run once, on no runtime)."""
    if "agent" not in kinds:
        return runtime or DEFAULT_RUNTIME
    if not hello.runtimes:
        raise FuzzOptionError(
            f"{hello.name} runs agent cells but declares no runtime profile (hello.runtimes is "
            "empty); list the profiles it runs, such as js"
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
    seed: int,
    out: Path,
    progress: _Progress,
) -> FuzzFinding:
    description = (
        f"Found by harness fuzz --seed {seed}: the target differed from the reference "
        f"({problems[0].split(':', 1)[0]}); the expect is what the reference did."
    )
    path = progress.written = write_scenario(scenario, out, description=description)
    (loaded,) = load_file(path)  # what was written loads, as `harness run` will read it
    on_target = replace(runner, reference=None).run_cell(
        Cell(loaded, *loaded.scenario.cells()[0]), RunOptions()
    )
    return FuzzFinding(
        scenario=loaded.scenario,
        path=path,
        differences=tuple(problems),
        caught_by_expect=on_target.failed,
    )


def write_scenario(scenario: Scenario, out: Path, *, description: str) -> Path:
    """Write the one-cell `scenario` into `out` as a scenario file named after its content
    (`fuzz-<runtime>-<provider>-<hash>.yaml` for an agent cell, `fuzz-<kind>-<hash>.yaml` for
    a module's), its `expect` what the reference does (`reference_expect`, per execution for a
    completion cell); returns its path. The same cell always gets the same file, byte for
    byte."""
    digest = hashlib.sha256(scenario.model_dump_json().encode()).hexdigest()[:8]
    runtime, _ = scenario.cells()[0]
    if scenario.kind == "agent":
        name = f"fuzz-{runtime}-{scenario.provider}-{digest}"
    else:
        name = f"fuzz-{scenario.kind}-{digest}"
    named = scenario.model_copy(update={"name": name})
    document: dict[str, Any] = {
        "name": name,
        "description": description,
        "tags": ["fuzz"],
        # what runs, as the generated cell set it (the scenario model's own shape)
        **named.model_dump(
            mode="json",
            exclude_unset=True,
            exclude={"name", "description", "tags", "expect", "executions"},
        ),
    }
    expected = reference_expect(named)
    if named.executions is not None:
        document["executions"] = [
            {"input": execution.input, "expect": expect}
            for execution, expect in zip(named.executions, expected, strict=True)
        ]
    else:
        document["expect"] = expected[0]
    path = out / f"{name}.yaml"
    text = (
        "# A cell `harness fuzz` found; commit it to keep the difference fixed.\n"
        # every character outside ASCII as its escape: a no-break space or a line separator
        # must be seen in the file, not taken for a plain space or a line break
        + yaml.safe_dump(
            [document], sort_keys=False, allow_unicode=False, width=100, default_flow_style=None
        )
    )
    try:  # the whole file or none: a full disk leaves no empty or partial scenario behind
        write_atomically(path, text.encode("utf-8"))
    except OSError as error:
        raise FuzzWriteError(
            f"cannot write the scenario file {path}: {error.strerror or error}; free some "
            "space or give --out a folder you can write, then run the same command again "
            "(the same --seed finds the same cell)"
        ) from None
    return path


def reference_expect(scenario: Scenario) -> list[dict[str, Any]]:
    """The `expect` blocks holding what the reference does on the one-cell `scenario`: one per
    execution of a completion cell, else one. Only what does not change from one run to the
    next (no run ids, no timings, no message wording)."""
    if scenario.kind == "agent":
        return [_agent_expect(scenario, scenario.cells()[0][0])]
    return [
        _module_expect(execution)
        for execution in run_reference_module(scenario, Path.cwd(), RunOptions())
    ]


def _module_expect(execution: ModuleExecution) -> dict[str, Any]:
    """A module execution's status, error type and code, outputs, and (when it called a model)
    its model calls."""
    observed = module_observation(
        outputs=execution.outputs, error=execution.error, llm_calls=execution.llm_calls
    )
    return {key: value for key, value in observed.items() if value is not None and value != 0}


def _agent_expect(scenario: Scenario, runtime: str) -> dict[str, Any]:
    """An agent cell's status, error code, output, call counts, the exact forced-completion
    chunks, the whole chunk stream but its text, what every work and forced request carried
    alike, its persisted forced state, counters (the `llm_config_override` calls' phases, when
    the agent has one; the crashes survived, when the cell plans some) and records."""
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
    run = AgentObservation.of_run(result, forced, scenario.provider)
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
    # the whole stream but the text (a runtime splits text its own way)
    expect["chunks_in_order"] = [
        StreamChunkExpect.matching(chunk).fields()
        for chunk in run.chunks
        if chunk.kind != "text_delta"
    ]
    for kind in ("work", "forced"):
        views = [request_view(kind, r) for r in run.requests[kind]]
        common = _common_request_fields(views)
        if common:
            expect[f"{kind}_request"] = common
        if kind == "forced":
            each = [_request_fields(view, skip=common) for view in views]
            if any(each):
                expect["forced_requests"] = each
    if forced is None:
        expect["store_absent"] = True
    else:
        expect["store"] = forced.model_dump(mode="json", by_alias=True, exclude_none=True)
    if spec.memory is not None:
        expect["memory_extractions"] = run.memory_extractions
    if spec.llm_config_override is not None:
        expect["llm_config_override_calls"] = list(run.override_calls or [])
    if scenario.faults:
        expect["crashes"] = run.crashes
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
    "max_tokens",
    "reasoning_turns",
)
_EACH_REQUEST_FIELDS: Final = ("model", "temperature", "max_tokens", "reasoning_turns")
"""What a forced request may carry that another does not (an override of some attempts, the
reasoning of a later turn): written per request when it differs."""


def _request_fields(view: dict[str, Any], *, skip: dict[str, Any]) -> dict[str, Any]:
    """The fields of one request that the requests of its kind do not all share."""
    return {
        name: view[name]
        for name in _EACH_REQUEST_FIELDS
        if name not in skip and view[name] is not None
    }


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
