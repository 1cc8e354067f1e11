"""Invariants of `harness` runs and modules, as reusable assertion functions.

Each function checks one documented promise and raises `AssertionError` with a message that says
which promise broke and where, so it reads well inside your own hypothesis test:

```python
@given(agent_runs())
def test_my_agent(run):
    with run.completer() as gateway:
        result = my_agent(gateway)
    run_ends_validly(result)
    forced_budget_respected(result)
```

Messages name codes, counts, phases and field names; they never echo model output or workflow
state, so they are as safe to log as the harness's own errors.

**An agent of your own.** `AgentCall` records what any agent did through a `ScriptTransport` (the
requests it sent, read back with the provider adapter's `parse_request`, and what it returned or
raised), and the `agent_call_*` invariants check it with no knowledge of how the agent is built:
an agent on the official `openai` SDK with its own output tool and retry loop is checked like the
harness's own.

**Provider errors on work calls.** A provider error (non-2xx) on a *work* call fails the run at
once with `framework_llm_call_failed`, which is not one of the five completion codes: it is not a
completion failure. `run_ends_validly` accepts it only when the last request the run sent was a
work call; on a forced call the same error is a failed attempt, counted against the budget.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, JsonValue, ValidationError

from harness.agent.definition import FINISH_TOOL, AgentDefinition
from harness.agent.loop import LLM_CALL_FAILED
from harness.agent.output import output_validator
from harness.agent.prompt import (
    COMPLETION_PREFIX,
    FORCED_METADATA_KEY,
    MEMORY_METADATA_KEY,
    OBSOLETE_NUDGE_PREFIX,
    work_fragments,
)
from harness.agent.result import RunResult
from harness.agent.state import PERSISTENCE_POINTS, RunState
from harness.cassettes.key import canonical_request_key
from harness.cassettes.transport import CassetteTransport
from harness.errors import HarnessError, IllegalArgumentException
from harness.llm.adapters import RequestFormatError, adapter_for
from harness.llm.gateway import Completer, GatewayConfig, LlmGateway, parse_provider
from harness.llm.models import (
    FRAGMENT_BASE,
    AssistantMessage,
    LlmRequest,
    Message,
    NamedToolChoice,
    ReasoningDisabled,
    ToolResultMessage,
    UserMessage,
)
from harness.llm.script import ScriptedReply, ScriptExhaustedError, ScriptTransport
from harness.modules.completion import (
    FINAL_ANSWER_OUTCOME,
    INPUT_FINAL_ANSWER,
    MAX_ANSWER_UTF16_UNITS,
    REQUIRED_MESSAGE,
    TOO_LONG_MESSAGE,
    AgentCompletionModule,
)
from harness.modules.decision import AgentDecisionModule
from harness.modules.projection import (
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_STATE_CHARACTERS,
    MAX_TEXT_UNITS,
    OMITTED_KEY,
)
from harness.protocol.canonical import canonical_hash
from harness.protocol.chunks import ForcedCompletionChunk, RunFinishChunk, StreamChunk
from harness.protocol.forced import CompletionCode
from harness.protocol.outcome import CANONICAL_STOP_REASONS, AgentOutcome
from harness.runtimes.base import RUNTIME_NAMES, Fault
from harness.runtimes.run import FaultNotReachedError, run_agent

__all__ = [
    "BARE_ERRORS",
    "COMPLETION_CODES",
    "DECISION_OUTCOMES",
    "PROFILE_DIFFERENCES",
    "AgentCall",
    "MakeCompleter",
    "agent_call_bounded",
    "agent_call_budget_respected",
    "agent_call_ends_validly",
    "agent_call_forced_requests_minimal",
    "chunk_sequence_valid",
    "completion_module_contract",
    "crash_resume_equivalent",
    "decision_outputs_safe",
    "envelope_matches_result",
    "forced_budget_respected",
    "forced_requests_are_minimal",
    "memory_extracted_once_at_terminal",
    "outcome_record_round_trips",
    "replay_reproduces_run",
    "request_key_canonical",
    "request_key_distinguishes",
    "run_ends_validly",
    "same_result_on_every_profile",
    "work_requests_carry_everything",
    "work_requests_unchanged",
]

COMPLETION_CODES: Final = frozenset(code.value for code in CompletionCode)
"""The five documented failure codes of an outputSchema agent's completion."""
DECISION_OUTCOMES: Final = frozenset({"tool_calls", "final_answer", "ask_user", "wait_approval"})
"""The `agentDecisionOutcome` values a successful decision may emit."""
PROFILE_DIFFERENCES: Final = frozenset({"override_calls"})
"""Run-state fields allowed to differ between runtime profiles: only `js` and `cloudflare-do`
invoke `llm_config_override`, so only they record its calls."""
_FORCED_ONLY_FRAGMENTS: Final = (FRAGMENT_BASE,)

MakeCompleter = Callable[[], Completer]


def _fail(message: str) -> None:
    raise AssertionError(message)


# -- (a) every run ends validly -------------------------------------------------------------------


def run_ends_validly(result: RunResult, *, extra_codes: Iterable[str] = ()) -> None:
    """An outputSchema run ends `completed` with output that satisfies the schema (and the Agent
    Completion module), or `failed` with one of the five `CompletionCode`s; never completed
    without output, never still running.

    `framework_llm_call_failed` is accepted only when the last request sent was a work call (see
    the module docstring); `extra_codes` admits codes your own setup causes on purpose, such as
    `temporal_activity_not_registered`. An agent without a schema must simply end, completed or
    failed.
    """
    state = result.state
    if state.phase != "finished":
        _fail(f"the run is not finished: phase={state.phase}, status={state.status}")
    if state.status not in ("completed", "failed"):
        _fail(f"the run ended with status={state.status}; expected completed or failed")
    schema = result.agent.output_schema
    if schema is None:
        return
    if state.status == "completed":
        if not isinstance(state.output, dict):
            _fail(
                "the run completed without structured output "
                f"(output type={type(state.output).__name__})"
            )
        errors = sorted(
            "/" + "/".join(str(p) for p in error.absolute_path) + f": {error.validator}"
            for error in output_validator(schema).iter_errors(state.output)
        )
        if errors:
            _fail(f"the run completed with output that fails the schema at {', '.join(errors)}")
        if state.error_code is not None:
            _fail(f"the run completed but carries error_code={state.error_code}")
        return
    code = state.error_code
    allowed = COMPLETION_CODES | set(extra_codes)
    if code == LLM_CALL_FAILED:
        sent = result.sent()
        if not sent or sent[-1].kind != "work":
            _fail(
                f"the run failed with {LLM_CALL_FAILED} but its last request was "
                f"{sent[-1].kind if sent else 'none'}; a forced call's provider error is a failed "
                "attempt, not a run failure"
            )
    elif code not in allowed:
        _fail(f"the run failed with error_code={code}; expected one of {sorted(allowed)}")
    if state.output is not None:
        _fail(f"the run failed with {code} but left output behind")


# -- (b) the forced-completion budget ------------------------------------------------------------


def forced_budget_respected(result: RunResult) -> None:
    """The forced calls that returned never exceed `max_completion_retries`; neither do the
    forced requests sent nor the attempts counted in the persisted state. A budget of 0 makes no
    forced call at all."""
    budget = result.agent.max_completion_retries
    state = result.state
    sent = len(result.requests("forced"))
    if state.forced_calls_returned > budget:
        _fail(f"{state.forced_calls_returned} forced call(s) returned; the budget is {budget}")
    if sent > budget:
        _fail(f"{sent} forced request(s) were sent; the budget is {budget}")
    if budget == 0 and (sent or state.forced_calls_returned):
        _fail(f"budget 0 but {sent} forced request(s) were sent")
    forced = state.forced_completion
    if forced is not None:
        if forced.max_attempts != budget:
            _fail(f"forced state maxAttempts={forced.max_attempts}; the budget is {budget}")
        if forced.attempts_used > budget:
            _fail(f"forced state attemptsUsed={forced.attempts_used} > budget {budget}")
        if forced.attempts_used > sent:
            _fail(f"attemptsUsed={forced.attempts_used} but only {sent} forced request(s) sent")


# -- (c) forced requests are minimal; work requests are complete ---------------------------------


def _texts(request: LlmRequest) -> list[str]:
    texts = [fragment.text for fragment in request.system]
    for message in request.messages:
        if isinstance(message, UserMessage):
            texts.append(message.content)
        elif isinstance(message, AssistantMessage) and message.text:
            texts.append(message.text)
        elif isinstance(message, ToolResultMessage):
            texts.append(message.content)
    return texts


def _memory_injected(request: LlmRequest) -> bool:
    return any(
        isinstance(message, UserMessage) and message.metadata.get(MEMORY_METADATA_KEY) is True
        for message in request.messages
    )


def forced_requests_are_minimal(result: RunResult, *, output_tool: str = FINISH_TOOL) -> None:
    """Every forced request offers exactly the output tool (`output_tool`, the harness's
    `__finish__` by default) with the named tool choice, disables reasoning, sends only the `base`
    fragment (no skills, workspace), carries no memory message, ends with the `[completion]`
    message whose metadata names the trigger, attempt and budget, and never contains the obsolete
    `[SYSTEM] You must call` nudge."""
    forced = result.state.forced_completion
    for index, sent in enumerate(result.sent("forced"), start=1):
        request = sent.request
        where = f"forced request #{index} (attempt {sent.attempt})"
        if request.tool_names() != (output_tool,):
            _fail(f"{where} offers tools {list(request.tool_names())}; expected only {output_tool}")
        if request.tool_choice != NamedToolChoice(name=output_tool):
            _fail(f"{where} has tool_choice={request.tool_choice!r}; expected {output_tool} named")
        if request.reasoning != ReasoningDisabled():
            _fail(f"{where} has reasoning={request.reasoning!r}; expected disabled")
        if tuple(f.name for f in request.system) != _FORCED_ONLY_FRAGMENTS:
            _fail(f"{where} sends fragments {[f.name for f in request.system]}; expected base only")
        if _memory_injected(request):
            _fail(f"{where} injects the memory message")
        if any(OBSOLETE_NUDGE_PREFIX in text for text in _texts(request)):
            _fail(f"{where} contains the obsolete {OBSOLETE_NUDGE_PREFIX!r} message")
        last = request.messages[-1] if request.messages else None
        if not isinstance(last, UserMessage) or not last.content.startswith(COMPLETION_PREFIX):
            _fail(f"{where} does not end with the {COMPLETION_PREFIX} message")
        assert isinstance(last, UserMessage)
        metadata = last.metadata.get(FORCED_METADATA_KEY)
        expected = {
            "trigger": forced.trigger if forced is not None else None,
            "attempt": sent.attempt,
            "maxAttempts": result.agent.max_completion_retries,
        }
        if metadata != expected:
            _fail(f"{where} has {FORCED_METADATA_KEY} metadata {metadata}; expected {expected}")


def work_requests_carry_everything(result: RunResult, *, output_tool: str = FINISH_TOOL) -> None:
    """Every work request carries every system fragment, every tool (plus the output tool,
    `output_tool`, with a schema), `tool_choice: auto`, the agent's reasoning setting, and the
    memory message exactly when the agent has memories; no `[completion]` message."""
    agent = result.agent
    fragments = tuple(f.name for f in work_fragments(agent) if f.text)
    tools = tuple(tool.name for tool in agent.all_tools())
    if agent.output_schema is not None:
        tools = (*tools, output_tool)
    memories = agent.memory is not None and bool(agent.memory.memories)
    for index, request in enumerate(result.requests("work"), start=1):
        where = f"work request #{index}"
        if request.fragment_names() != fragments:
            _fail(f"{where} sends fragments {list(request.fragment_names())}; expected {fragments}")
        if request.tool_names() != tools:
            _fail(f"{where} offers tools {list(request.tool_names())}; expected {list(tools)}")
        if request.tool_choice != "auto":
            _fail(f"{where} has tool_choice={request.tool_choice!r}; expected auto")
        if request.reasoning != agent.reasoning:
            _fail(f"{where} has reasoning={request.reasoning!r}; expected {agent.reasoning!r}")
        if _memory_injected(request) != memories:
            _fail(f"{where} memory injected={not memories}; expected {memories}")
        if any(
            isinstance(m, UserMessage) and m.content.startswith(COMPLETION_PREFIX)
            for m in request.messages
        ):
            _fail(f"{where} contains a {COMPLETION_PREFIX} message")


def work_requests_unchanged(result: RunResult, baseline: RunResult) -> None:
    """The work requests of `result` equal those of `baseline`, one by one, up to the shorter
    run: use it to show that forced completion (a budget, a trigger) changes no work call."""
    mine, theirs = result.requests("work"), baseline.requests("work")
    for index, (request, expected) in enumerate(zip(mine, theirs, strict=False), start=1):
        if request != expected:
            changed = sorted(
                name
                for name in LlmRequest.model_fields
                if getattr(request, name) != getattr(expected, name)
            )
            _fail(f"work request #{index} differs from the baseline in {changed}")


# -- (d) the forced_completion chunk sequence ----------------------------------------------------


def chunk_sequence_valid(chunks: Sequence[StreamChunk]) -> None:
    """The `forced_completion` chunks of a run form `started`, then for each attempt n = 1, 2, ...
    `attempt_started(n)` followed by `attempt_failed(n)` (with a code) or `succeeded(n)`, then at
    most one `exhausted` (code `framework_forced_completion_exhausted`), which comes last; trigger
    and budget never change. Nothing follows `succeeded` or a `tool_choice_unsupported` failure.
    The whole stream ends with exactly one `run_finish` chunk."""
    finishes = [i for i, c in enumerate(chunks) if isinstance(c, RunFinishChunk)]
    if len(finishes) != 1 or finishes[0] != len(chunks) - 1:
        _fail(f"run_finish chunks at positions {finishes} of {len(chunks)}; expected one, last")
    forced = [c for c in chunks if isinstance(c, ForcedCompletionChunk)]
    if not forced:
        return
    phases = [c.phase for c in forced]
    if phases[0] != "started" or phases.count("started") != 1:
        _fail(f"forced_completion phases {phases} do not begin with one 'started'")
    first = forced[0]
    for chunk in forced:
        if chunk.trigger != first.trigger or chunk.max_attempts != first.max_attempts:
            _fail(f"forced_completion phases {phases}: trigger or maxAttempts changed")
    position, attempt, ended = 1, 0, False
    while position < len(forced):
        chunk = forced[position]
        if ended:
            _fail(f"forced_completion phases {phases}: {chunk.phase} after the phase ended")
        if chunk.phase == "exhausted":
            if position != len(forced) - 1 or chunk.code != CompletionCode.EXHAUSTED:
                _fail(f"forced_completion phases {phases}: exhausted is not last with its code")
            ended = True
            position += 1
            continue
        if chunk.phase != "attempt_started" or chunk.attempt != attempt + 1:
            _fail(
                f"forced_completion phases {phases}: expected attempt_started {attempt + 1} at "
                f"position {position}, got {chunk.phase} {chunk.attempt}"
            )
        attempt += 1
        if position + 1 >= len(forced):
            _fail(f"forced_completion phases {phases}: attempt {attempt} never finished")
        outcome = forced[position + 1]
        if outcome.phase not in ("attempt_failed", "succeeded") or outcome.attempt != attempt:
            _fail(
                f"forced_completion phases {phases}: attempt {attempt} ended with "
                f"{outcome.phase} {outcome.attempt}"
            )
        if outcome.phase == "attempt_failed" and not outcome.code:
            _fail(f"forced_completion phases {phases}: attempt_failed {attempt} has no code")
        if outcome.phase == "succeeded" or outcome.code == CompletionCode.TOOL_CHOICE_UNSUPPORTED:
            ended = True
        position += 2
    if attempt > first.max_attempts:
        _fail(
            f"forced_completion phases {phases}: {attempt} attempts > budget {first.max_attempts}"
        )


# -- (e) memory ---------------------------------------------------------------------------------


def memory_extracted_once_at_terminal(
    result: RunResult,
    *,
    extractor_calls: int | None = None,
    extracted: Sequence[Sequence[Message]] | None = None,
) -> None:
    """An agent with memory extracts memories exactly once, at the terminal outcome (completed or
    failed), never on a forced attempt that continues; an agent without memory never extracts.

    Pass `extractor_calls` (how often your `extract_memories` callback ran) to check the callback
    too, or `extracted` (the histories it received, in order) to also check that the one
    extraction saw the run's final history, not an earlier one. Memories are recalled once per
    work call that went out, and never for a forced call.
    """
    agent = result.agent
    state = result.state
    expected = 1 if agent.memory is not None else 0
    if state.memory_extractions != expected:
        _fail(f"memory extracted {state.memory_extractions} time(s); expected {expected}")
    if extractor_calls is not None and extractor_calls != expected:
        _fail(f"the extract_memories callback ran {extractor_calls} time(s); expected {expected}")
    if extracted is not None:
        if len(extracted) != expected:
            _fail(
                f"the extract_memories callback ran {len(extracted)} time(s); expected {expected}"
            )
        if extracted and tuple(extracted[0]) != tuple(state.messages):
            _fail(
                f"memory was extracted from a history of {len(extracted[0])} message(s), not the "
                f"final one of {len(state.messages)}: extraction ran before the terminal outcome"
            )
    if not state.finished:
        _fail("memory was checked before the run finished")
    recalls = (
        len(result.requests("work")) if agent.memory is not None and agent.memory.memories else 0
    )
    if state.memory_recalls != recalls:
        _fail(f"memory recalled {state.memory_recalls} time(s); expected one per work call")


# -- (f) profiles and crashes -------------------------------------------------------------------


def _comparable(state: RunState, ignore: frozenset[str] = frozenset()) -> dict[str, Any]:
    dumped: dict[str, Any] = state.model_dump(mode="json", exclude=set(ignore))
    return dumped


def _state_difference(left: RunState, right: RunState, ignore: frozenset[str]) -> list[str]:
    a, b = _comparable(left, ignore), _comparable(right, ignore)
    return sorted(key for key in a.keys() | b.keys() if a.get(key) != b.get(key))


def same_result_on_every_profile(
    agent: AgentDefinition,
    make_completer: MakeCompleter,
    *,
    user_message: str = "Do the task.",
    runtimes: Sequence[str] = RUNTIME_NAMES,
    **run_options: Any,
) -> dict[str, RunResult]:
    """Run `agent` on every runtime profile (a fresh completer from `make_completer` and a fresh
    memory store each, the same run id) and assert the final states are equal except for the
    documented difference, `override_calls` (`PROFILE_DIFFERENCES`). Returns the results by
    profile. `run_options` go to `run_agent` (for example `llm_config_override`)."""
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    results: dict[str, RunResult] = {}
    for runtime in runtimes:
        completer = make_completer()
        try:
            results[runtime] = run_agent(
                agent,
                completer,
                user_message=user_message,
                runtime=runtime,
                run_id=run_id,
                **run_options,
            )
        finally:
            _close(completer)
    first_name, first = next(iter(results.items()))
    for name, result in results.items():
        changed = _state_difference(first.state, result.state, PROFILE_DIFFERENCES)
        if changed:
            _fail(f"profile {name} differs from {first_name} in {changed}")
    return results


def crash_resume_equivalent(
    agent: AgentDefinition,
    make_completer: MakeCompleter,
    *,
    user_message: str = "Do the task.",
    runtime: str = "js",
    max_occurrences: int = 20,
    **run_options: Any,
) -> int:
    """Kill the run after every persistence point, at every occurrence the run reaches, resume
    it from its store, and assert each resumed run ends in exactly the state of an uninterrupted
    run. Returns how many crash points were checked (at least `run_started` and `run_finished`).

    `make_completer` must return a fresh completer each time; within one run the same completer
    serves the resumed runtime, as one provider would."""
    run_id = f"run-{uuid.uuid4().hex[:12]}"

    def run(faults: Sequence[Fault]) -> RunResult:
        completer = make_completer()
        try:
            return run_agent(
                agent,
                completer,
                user_message=user_message,
                runtime=runtime,
                run_id=run_id,
                faults=faults,
                **run_options,
            )
        finally:
            _close(completer)

    baseline = run(())
    checked = 0
    for point in PERSISTENCE_POINTS:
        for occurrence in range(1, max_occurrences + 1):
            try:
                crashed = run((Fault(point, occurrence),))
            except FaultNotReachedError:
                break
            checked += 1
            if crashed.crashes != 1:
                _fail(f"crash after {point} #{occurrence}: {crashed.crashes} crashes, expected 1")
            changed = _state_difference(baseline.state, crashed.state, frozenset())
            if changed:
                _fail(
                    f"a crash after {point} (occurrence {occurrence}) and resume differs from "
                    f"the uninterrupted run in {changed}"
                )
    return checked


def _close(completer: object) -> None:
    close = getattr(completer, "close", None)
    if callable(close):
        close()


# -- (g) the Agent Decision module ---------------------------------------------------------------


def _strings(value: object, seen: set[int] | None = None) -> Iterable[str]:
    seen = set() if seen is None else seen
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping | list | tuple) and id(value) not in seen:
        seen.add(id(value))
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        for key, item in items:
            if isinstance(key, str):
                yield key
            yield from _strings(item, seen)


def _envelope_bounded(envelope: JsonValue) -> str | None:
    """Where a projected value of the control envelope breaks the bounds, each measured from its
    own root (the envelope and the `approval` wrapper are not projected values)."""
    if not isinstance(envelope, dict):
        return "the control envelope is not an object"
    for name, value in envelope.items():
        roots = [value]
        if name == "approval" and isinstance(value, dict):
            roots = [value.get("request")]
        for root in roots:
            problem = _bounded(root)
            if problem:
                return f"{name}: {problem}"
    return None


def _bounded(value: JsonValue, depth: int = 1) -> str | None:
    """Where a projected value breaks the projection bounds, or None."""
    if isinstance(value, str):
        units = len(value.encode("utf-16-le", "surrogatepass")) // 2
        return f"a text of {units} units" if units > MAX_TEXT_UNITS else None
    if isinstance(value, dict) and OMITTED_KEY in value and len(value) <= 2:
        return None  # a content-free omission marker
    if isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            return f"depth {depth}"
        # the items marker is one extra member (two keys in an object)
        if len(value) > MAX_ITEMS + (2 if isinstance(value, dict) else 1):
            return f"a collection of {len(value)} items"
        items = value.values() if isinstance(value, dict) else value
        for item in items:
            problem = _bounded(item, depth + 1)
            if problem:
                return problem
    return None


def decision_outputs_safe(
    module: AgentDecisionModule, state: Mapping[str, object], *, canary: str | None = None
) -> dict[str, object] | HarnessError:
    """Execute `module` once on `state` and check its safety promises:

    - a success emits `agentApprovalGranted: false`, a known `agentDecisionOutcome`, non-negative
      costs, and the output map equals `module.outputs`;
    - a failure (a `HarnessError`) leaves `module.outputs` empty, and its message contains neither
      `canary` nor the control envelope that was sent nor any long text of the state;
    - the control envelope sent to the model stays within the projection bounds (depth, items,
      text units, 600,000 characters).

    Returns the outputs, or the error the module raised.
    """
    try:
        outputs: dict[str, object] | HarnessError = module.execute(state)
    except HarnessError as error:
        outputs = error
    request = module.last_request
    envelope_text = ""
    if request is not None:
        message = request.messages[0]
        assert isinstance(message, UserMessage)
        envelope_text = message.content
        if len(envelope_text) > MAX_STATE_CHARACTERS:
            _fail(f"the control envelope has {len(envelope_text):,} characters")
        problem = _envelope_bounded(json.loads(envelope_text))
        if problem:
            _fail(f"the control envelope breaks the projection bounds: {problem}")
    if isinstance(outputs, HarnessError):
        if module.outputs:
            _fail(f"the module failed ({outputs.code}) but left outputs {sorted(module.outputs)}")
        text = str(outputs)
        if canary is not None and canary in text:
            _fail(f"the {outputs.code} message repeats the canary")
        if envelope_text and envelope_text in text:
            _fail(f"the {outputs.code} message contains the control envelope")
        leaked = [s for s in _strings(state) if len(s) >= 24 and s in text]
        if leaked:
            _fail(
                f"the {outputs.code} message repeats a state value of {len(leaked[0])} characters"
            )
        return outputs
    if outputs.get("agentApprovalGranted") is not False:
        _fail("a successful decision did not emit agentApprovalGranted: false")
    if outputs.get("agentDecisionOutcome") not in DECISION_OUTCOMES:
        _fail(f"agentDecisionOutcome={outputs.get('agentDecisionOutcome')!r} is not documented")
    for cost in ("costTokens", "costCredits"):
        value = outputs.get(cost)
        if not isinstance(value, int | float) or value < 0:
            _fail(f"{cost}={value!r} is not a non-negative number")
    if outputs != module.outputs:
        _fail("the returned outputs differ from module.outputs")
    return outputs


# -- (h) the Agent Completion module -------------------------------------------------------------

_JAVA_WHITESPACE: Final = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
_NON_BREAKING: Final = frozenset("\u00a0\u2007\u202f")


def _java_blank(text: str) -> bool:
    import unicodedata

    return all(
        c in _JAVA_WHITESPACE
        or (unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in _NON_BREAKING)
        for c in text
    )


def completion_module_contract(state: Mapping[str, object]) -> dict[str, str] | None:
    """Execute `AgentCompletionModule` on `state` and check it against the contract, computed
    independently: a `str` (or subclass) that is not blank in Java's sense and at most 65,536
    UTF-16 units comes back byte-identical as `finalAnswer` (a plain `str`) with `agentOutcome:
    final_answer`; anything else is refused with exactly one of the two messages (`too long` only
    for over-long text), no value in the message, and empty `outputs`. Returns the outputs, or
    None when refused."""
    module = AgentCompletionModule()
    value = state.get(INPUT_FINAL_ANSWER)
    expected_message: str | None = None
    plain = ""
    if not isinstance(value, str):
        expected_message = REQUIRED_MESSAGE
    else:
        plain = "".join(iter(value))  # a str subclass's plain characters
        units = sum(2 if ord(c) > 0xFFFF else 1 for c in plain)
        if _java_blank(plain):
            expected_message = REQUIRED_MESSAGE
        elif units > MAX_ANSWER_UTF16_UNITS:
            expected_message = TOO_LONG_MESSAGE
    try:
        outputs = module.execute(state)
    except IllegalArgumentException as error:
        if expected_message is None:
            _fail(f"a valid answer was refused with {str(error)!r}")
        if str(error) != expected_message:
            _fail(f"refused with {str(error)!r}; expected {expected_message!r}")
        if module.outputs:
            _fail("a refused answer left outputs behind")
        return None
    if expected_message is not None:
        _fail(f"an answer that must be refused ({expected_message!r}) was accepted")
    answer = outputs.get("finalAnswer")
    if type(answer) is not str:
        _fail(f"finalAnswer is of type {type(answer).__name__}, not str")
    assert isinstance(answer, str)
    if answer.encode("utf-8", "surrogatepass") != plain.encode("utf-8", "surrogatepass"):
        _fail("finalAnswer is not byte-identical to the answer")
    if outputs != {"finalAnswer": answer, "agentOutcome": FINAL_ANSWER_OUTCOME}:
        _fail(f"the outputs have keys {sorted(outputs)}; expected finalAnswer and agentOutcome")
    return outputs


# -- (i) the outcome record and the envelope -----------------------------------------------------


def outcome_record_round_trips(result: RunResult) -> AgentOutcome:
    """The run's agent-outcome record survives `into_payload` / `from_payload` unchanged, its
    `stop_reason` is in the canonical vocabulary and follows the run's status (completed
    `end_turn`, or `limit_reached` for a cut-off agent without schema; failed `error`),
    `final_message` is the last answer and `text` every answer joined by newlines."""
    record = result.outcome_record()
    decoded = AgentOutcome.from_payload(record.into_payload())
    if decoded != record:
        _fail("the outcome record changed through its payload")
    if record.stop_reason not in CANONICAL_STOP_REASONS:
        _fail(f"stop_reason={record.stop_reason!r} is not canonical")
    state = result.state
    expected = {"completed": "end_turn", "failed": "error", "cancelled": "cancelled"}[state.status]
    if state.status == "completed" and state.limit_reached and result.agent.output_schema is None:
        expected = "limit_reached"
    if record.stop_reason != expected:
        _fail(f"stop_reason={record.stop_reason} for a {state.status} run; expected {expected}")
    answers = state.answers
    if record.final_message != (answers[-1] if answers else ""):
        _fail("final_message is not the last answer")
    if record.text != "\n".join(answers):
        _fail("text is not every answer joined by newlines")
    if not record.session_id:
        _fail("session_id is empty")
    return record


def envelope_matches_result(result: RunResult) -> None:
    """The agent output envelope says `succeeded` exactly when the run completed with object
    output, whose `json_payload` artifact hash is the canonical hash of that output; the envelope round-trips through its wire form."""
    envelope = result.envelope()
    state = result.state
    has_output = state.status == "completed" and isinstance(state.output, dict)
    if (envelope.outcome == "succeeded") != has_output:
        _fail(f"envelope outcome={envelope.outcome} for a {state.status} run")
    if has_output:
        reference = envelope.structured_output
        if reference is None or reference.hash != canonical_hash(state.output):
            _fail("structuredOutput does not reference the output's canonical hash")
    elif envelope.structured_output is not None:
        _fail("structuredOutput is set without valid output")
    if type(envelope).model_validate(envelope.model_dump(mode="json")) != envelope:
        _fail("the envelope changed through its wire form")


# -- (j) cassette keys and replay ----------------------------------------------------------------


def _reorder(value: JsonValue) -> JsonValue:
    if isinstance(value, dict):
        return {key: _reorder(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_reorder(item) for item in value]
    return value


def request_key_canonical(
    method: str,
    url: str,
    body: Mapping[str, JsonValue],
    *,
    headers: Mapping[str, str] | None = None,
) -> str:
    """The canonical request key of `body` does not depend on JSON key order or whitespace: the
    compact, the indented and the key-reversed spellings of the same body have one key. Returns
    the key."""
    compact = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    spaced = json.dumps(_reorder(dict(body)), indent=2, ensure_ascii=True)
    key = canonical_request_key(method, url, headers, compact)
    other = canonical_request_key(method, url, headers, spaced)
    if key != other:
        _fail(f"{method} {url}: reordering keys or whitespace changed the request key")
    return key


def request_key_distinguishes(
    method: str,
    url: str,
    body: Mapping[str, JsonValue],
    other: Mapping[str, JsonValue],
) -> None:
    """Two bodies whose canonical JSON differs have different keys. Change only non-volatile
    fields (`DEFAULT_VOLATILE_FIELDS` lists the ones left out of the key)."""
    if json.dumps(body, sort_keys=True) == json.dumps(other, sort_keys=True):
        return
    if canonical_request_key(method, url, None, json.dumps(body)) == canonical_request_key(
        method, url, None, json.dumps(other)
    ):
        _fail(f"{method} {url}: two different bodies have the same request key")


def replay_reproduces_run(
    agent: AgentDefinition,
    replies: Sequence[ScriptedReply],
    *,
    provider: str = "openai",
    user_message: str = "Do the task.",
    runtime: str = "js",
    folder: str | Path | None = None,
) -> RunResult:
    """Record a scripted run into a cassette (`CassetteTransport` in mode `all` over a
    `ScriptTransport`), replay it in mode `none`, and assert the replayed run ends in exactly the
    recorded run's state with every interaction played. Returns the replayed result."""
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    config = GatewayConfig(provider=parse_provider(provider), base_url="https://scripted.invalid")
    with tempfile.TemporaryDirectory(dir=folder) as directory:
        path = Path(directory) / "run.json"
        script = ScriptTransport(config.provider, list(replies))
        recorder = CassetteTransport(path, mode="all", inner=script, run_id=run_id)
        with LlmGateway(config, transport=recorder) as gateway:
            recorded = run_agent(
                agent, gateway, user_message=user_message, runtime=runtime, run_id=run_id
            )
        player = CassetteTransport(path, mode="none")
        with LlmGateway(config, transport=player) as gateway:
            replayed = run_agent(
                agent, gateway, user_message=user_message, runtime=runtime, run_id=run_id
            )
            unplayed = len(player.unplayed)
    changed = _state_difference(recorded.state, replayed.state, frozenset())
    if changed:
        _fail(f"the replayed run differs from the recorded run in {changed}")
    if unplayed:
        _fail(f"{unplayed} recorded interaction(s) were never replayed")
    return replayed


# -- (k) an agent of your own, seen from the model's side ----------------------------------------

BARE_ERRORS: Final[tuple[type[BaseException], ...]] = (
    json.JSONDecodeError,
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    AttributeError,
    ValidationError,
)
"""Exceptions an agent raises only by accident, when a parser or a lookup meets model output it
did not expect (tool arguments cut off mid-JSON, a missing field). Matched by exact type, so your
own errors may still subclass `ValueError`."""


@dataclass(frozen=True, kw_only=True)
class AgentCall:
    """One call of an agent of your own, as the model's side saw it: every request it sent, read
    back into a neutral `LlmRequest`, what it returned or raised, and how many replies its script
    had (None when not known). It holds an output or an error, never both.

    Build it with `AgentCall.observe(transport, run)`, which runs your agent, or with
    `AgentCall.from_transport(transport, output=..., error=...)` when you ran it yourself. The
    invariants below need nothing else, so they hold for an agent built on any SDK.
    """

    requests: tuple[LlmRequest, ...]
    output: object | None = None
    error: BaseException | None = None
    replies: int | None = None

    def __post_init__(self) -> None:
        if self.output is not None and self.error is not None:
            raise IllegalArgumentException(
                "expected an output or an error but got both (output type="
                f"{type(self.output).__name__}, error type={type(self.error).__name__})"
            )

    @classmethod
    def from_transport(
        cls,
        transport: ScriptTransport,
        *,
        output: object | None = None,
        error: BaseException | None = None,
    ) -> AgentCall:
        """The call whose requests `transport` answered, each read with the provider adapter's
        `parse_request`; a body that is not a request is a `RequestFormatError` naming it."""
        adapter = adapter_for(transport.provider)
        requests = []
        for number, sent in enumerate(transport.requests, start=1):
            try:
                body: JsonValue = json.loads(sent.content or b"null")
            except ValueError:
                raise RequestFormatError(f"request #{number} has a body that is not JSON") from None
            requests.append(adapter.parse_request(body, path=sent.url.path))
        return cls(
            requests=tuple(requests), output=output, error=error, replies=len(transport.replies)
        )

    @classmethod
    def observe(cls, transport: ScriptTransport, run: Callable[[], object]) -> AgentCall:
        """Run your agent (`run` takes no arguments and calls the model through `transport`) and
        record what it did: its return value, or the `Exception` it raised (a `BaseException`
        such as `KeyboardInterrupt` is not caught)."""
        try:
            output = run()
        except Exception as error:
            return cls.from_transport(transport, error=error)
        return cls.from_transport(transport, output=output)

    def forced_requests(self, output_tool: str = FINISH_TOOL) -> tuple[tuple[int, LlmRequest], ...]:
        """The requests that force the output tool, with their 1-based position: `tool_choice`
        names `output_tool`, or is `required` with `output_tool` the only tool offered."""
        return tuple(
            (number, request)
            for number, request in enumerate(self.requests, start=1)
            if request.forces_tool(output_tool)
        )


def _ran_dry(error: BaseException) -> bool:
    """Whether `error` is, or was caused by, the script running out of replies (an SDK may wrap
    what its transport raised in an error of its own)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ScriptExhaustedError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _error_names(errors: Sequence[type[BaseException]]) -> str:
    return ", ".join(kind.__name__ for kind in errors) or "none"


def agent_call_ends_validly(
    call: AgentCall,
    schema: dict[str, JsonValue],
    *,
    errors: Sequence[type[BaseException]] = (),
) -> None:
    """The agent returned output valid for `schema` (a pydantic model is checked as its JSON
    dump), or raised one of the `errors` you allow; never a bare parsing or lookup error
    (`BARE_ERRORS`: `json.JSONDecodeError`, `KeyError`, ... on cut-off arguments or odd replies),
    and never more model calls than its script has replies."""
    error = call.error
    if error is None:
        output = call.output
        if isinstance(output, BaseModel):
            output = output.model_dump(mode="json")
        problems = sorted(
            "/" + "/".join(str(p) for p in problem.absolute_path) + f": {problem.validator}"
            for problem in output_validator(schema).iter_errors(output)
        )
        if problems:
            _fail(f"the agent returned output that fails the schema at {', '.join(problems)}")
        return
    if _ran_dry(error):
        _fail(
            f"the agent made more model calls than its script has replies ({call.replies}): it "
            "does not stop within its own steps and budget"
        )
    if type(error) in BARE_ERRORS:
        _fail(
            f"the agent raised a bare {type(error).__name__}: a parser or lookup that model "
            f"output can break; expected output or one of: {_error_names(errors)}"
        )
    if not isinstance(error, tuple(errors)):
        _fail(
            f"the agent raised {type(error).__name__}; expected output or one of: "
            f"{_error_names(errors)}"
        )


def agent_call_budget_respected(
    call: AgentCall, *, budget: int, output_tool: str = FINISH_TOOL
) -> None:
    """The agent sent at most `budget` forced requests (requests that force `output_tool`, see
    `AgentCall.forced_requests`); a budget of 0 sends none."""
    forced = call.forced_requests(output_tool)
    if len(forced) > budget:
        numbers = [number for number, _ in forced]
        _fail(
            f"the agent sent {len(forced)} forced request(s) for {output_tool} (requests "
            f"{numbers}); its budget is {budget}"
        )


def agent_call_forced_requests_minimal(call: AgentCall, *, output_tool: str = FINISH_TOOL) -> None:
    """Every forced request offers only the output tool: a model forced to answer must not be
    able to call anything else instead."""
    for number, request in call.forced_requests(output_tool):
        if request.tool_names() != (output_tool,):
            _fail(
                f"forced request #{number} offers tools {list(request.tool_names())}; expected "
                f"only {output_tool}"
            )


def agent_call_bounded(call: AgentCall, *, max_requests: int | None = None) -> None:
    """The agent sent at most `max_requests` requests (default: as many as its script has
    replies) and never ran its script dry: it stops on its own, whatever the model says.

    Raises `IllegalArgumentException` when neither `max_requests` nor the script length is
    known."""
    limit = max_requests if max_requests is not None else call.replies
    if limit is None:
        raise IllegalArgumentException(
            "expected max_requests, or an AgentCall built from a script transport, but got "
            "max_requests=None (type=NoneType) and no script length"
        )
    if len(call.requests) > limit or (call.error is not None and _ran_dry(call.error)):
        _fail(f"the agent sent {len(call.requests)} request(s); at most {limit} were expected")
