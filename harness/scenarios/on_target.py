"""Running scenario cells against an implementation under test.

Each cell gets its own `harness serve` session replaying the cell's script or cassette; the
target is sent the cell (the agent, the message, the runtime profile, the session's base URLs),
and its answer is checked against the scenario's `expect:` exactly as a reference run is: result
fields from the answer (validated strictly by the wire records), request fields from the requests
the session actually received. With a reference to compare with, the reference runs the same
cell and every difference between the two answers and their traffic is reported too.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

import orjson
from pydantic import ValidationError

from harness.agent.definition import FINISH_TOOL
from harness.agent.prompt import (
    COMPLETION_PREFIX,
    forced_fragments,
    memory_message,
    work_fragments,
)
from harness.cassettes import CassetteTransport, RecordMode
from harness.engines.settings import EngineName
from harness.errors import HarnessError
from harness.lazy import ReadOnDemand
from harness.llm.adapters import adapter_for
from harness.llm.capabilities import capabilities_for
from harness.llm.models import LlmRequest, UserMessage
from harness.llm.script import ScriptTransport
from harness.providers import Provider
from harness.scenarios import build
from harness.scenarios.contract import answer_differences, request_differences
from harness.scenarios.detail import CellDetail, target_detail
from harness.scenarios.expect import (
    AgentObservation,
    ObservedRequest,
    check_downstream,
    check_module,
    check_observation,
    shown_tool_choice,
)
from harness.scenarios.format import Expect, Scenario
from harness.scenarios.run import Cell, CellResult, RunOptions, UnexpectedCellError, mode_for
from harness.targets import REAL_ENGINE_REFERENCE_TARGET, REFERENCE_TARGET
from harness.targets.base import DEFAULT_CELL_TIMEOUT, CallableTarget, CommandTarget, Target
from harness.targets.environment import target_environment
from harness.targets.errors import TargetError, TargetProtocolError, TargetSpecError
from harness.targets.protocol import (
    AGENT_REPLY,
    HELLO_REPLY,
    MODULE_REPLY,
    PROTOCOL_VERSION,
    AgentResult,
    ModuleResult,
    TargetHello,
)
from harness.workflow import run_workflow

TARGET_MISS_ADVICE: Final = (
    "The cassette holds the requests the reference sent for this cell: a target passes by "
    "sending the same request, as the contract defines it (values compared, not spelling: "
    "tool-call arguments by value, a text and one text block alike). Re-recording is not the "
    "fix (the bundled library refuses it); run with --compare-reference to see the request "
    "the reference sends."
)
"""How a cassette miss of a target's cell ends: the cassette is the reference's recording (the
bundled library refuses re-recording), so the fix is in the target."""

if TYPE_CHECKING:
    from harness.serve import ReplayServer
    from harness.serve.app import Session

HELLO_TIMEOUT: Final = 60.0
"""Seconds a target may take to start and answer hello (a cold start may import a lot)."""
_ATTEMPT = re.compile(r"\(attempt (\d+) of (\d+)\)")


@dataclass(frozen=True, kw_only=True)
class TargetSpec:
    """Which implementation to test: a Python callable (`--target`) or a command
    (`--target-cmd`); `compare_reference` also runs the reference on every cell.

    A command runs with a minimal environment plus `env` (`--target-env`: `NAME` copies the
    harness's variable, `NAME=VALUE` sets it), checked here: `TargetSpecError` for a malformed
    entry or a `NAME` the harness's environment does not set. A callable runs inside the harness
    and sees its whole environment, so `env` with a callable is refused rather than ignored."""

    callable: str | None = None
    command: str | None = None
    cell_timeout: float = DEFAULT_CELL_TIMEOUT
    compare_reference: bool = False
    reference_engine: EngineName = "simulated"
    """What the compared reference runs `temporal` and `dbos` agent cells on: `real`, Temporal
    and DBOS themselves (`REAL_ENGINE_REFERENCE_TARGET`)."""
    env: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.env and self.command is None:
            raise TargetSpecError(
                "target-env sets the environment of a command target (--target-cmd); a callable "
                "target (--target) and the in-process reference run inside the harness and see "
                "its environment"
            )
        target_environment(self.env)

    def open(self) -> Target:
        if self.command is not None:
            return CommandTarget(self.command, environ=target_environment(self.env))
        assert self.callable is not None
        return CallableTarget(self.callable)


@dataclass
class _Connected:
    target: Target
    hello: TargetHello | None = None


@dataclass
class TargetRunner:
    """A target (and the reference, when comparing) connected for a run, with the replay
    server every cell's session lives on."""

    spec: TargetSpec
    server: ReplayServer
    under_test: _Connected
    reference: _Connected | None = None
    stderr: dict[str, str] = field(default_factory=dict)

    def hello(self, connected: _Connected) -> TargetHello:
        """The target's hello, asked again after it was restarted (a crash or a hang)."""
        target = connected.target
        restarted = isinstance(target, CommandTarget) and not target.running
        if connected.hello is None or restarted:
            answer = target.exchange(
                {"type": "hello", "protocol": PROTOCOL_VERSION},
                max(self.spec.cell_timeout, HELLO_TIMEOUT),
            )
            try:
                hello = HELLO_REPLY.validate_python(answer)
            except ValidationError as error:
                raise TargetProtocolError(
                    f"{target.name} answered hello with {_problems(error)}"
                ) from None
            if hello.protocol != PROTOCOL_VERSION:
                raise TargetProtocolError(
                    f"{target.name} speaks protocol {hello.protocol}; this harness speaks "
                    f"{PROTOCOL_VERSION}"
                )
            connected.hello = hello
        assert connected.hello is not None
        return connected.hello

    def run_cell(self, cell: Cell, options: RunOptions) -> CellResult:
        """Run `cell` on the target (and the reference). Nothing it raises escapes: a target
        that crashes, hangs or breaks the protocol fails the cell; the next cell runs."""
        started = time.perf_counter()
        result = CellResult(cell)
        try:
            # one run id for both: the envelope's artifact ids are made from it
            run_id = (
                f"{cell.loaded.scenario.name}-{cell.runtime}-{cell.store}-{uuid.uuid4().hex[:8]}"
            )
            observed = self._observe(self.under_test, cell, options, result, run_id)
            if options.collect_detail and observed is not None:
                result.detail = observed.detail()
            if observed is not None and self.reference is not None:
                reference = self._observe(self.reference, cell, options, CellResult(cell), run_id)
                if reference is not None:
                    result.differences.extend(_differences(reference, observed))
        except HarnessError as error:
            result.error = f"{type(error).__name__}: {error}"
            result.error_code = error.code
        except Exception as error:
            unexpected = UnexpectedCellError.from_exception(error)
            result.error = f"{type(unexpected).__name__}: {unexpected}"
            result.error_code = unexpected.code
        result.stderr = self.under_test.target.take_stderr()
        result.duration = time.perf_counter() - started
        return result

    def _observe(
        self,
        connected: _Connected,
        cell: Cell,
        options: RunOptions,
        result: CellResult,
        run_id: str,
    ) -> _Observed | None:
        scenario = cell.loaded.scenario
        if scenario.kind == "store_check":
            result.skipped = "a store check runs on the harness, not on a target"
            return None
        hello = self.hello(connected)
        reason = _unsupported(hello, cell)
        if reason is not None:
            result.skipped = reason
            return None
        transport: ScriptTransport | CassetteTransport = (
            build.transport(
                scenario,
                cell.loaded.folder,
                mode_for(cell, options),
                strict=options.strict_cassettes,
            )
            if scenario.script is not None or scenario.cassette is not None
            else ScriptTransport(scenario.provider, [])  # a completion module calls no model
        )
        if isinstance(transport, CassetteTransport) and transport.mode is RecordMode.NONE:
            transport.miss_advice = TARGET_MISS_ADVICE
        if isinstance(transport, ScriptTransport):
            transport.answers_a_target = True
        session = self.server.attach(transport, output_tool=FINISH_TOOL)
        try:
            message = _cell_message(cell, options, self.server.session_urls(session), run_id)
            answer = connected.target.exchange(message, self.spec.cell_timeout)
        finally:
            self.server.detach(session)
            transport.close()
            result.misses.extend(session.misses)
        calls = _received(session)
        if scenario.kind == "agent":
            return self._agent(connected.target.name, scenario, message, answer, calls, result)
        return self._module(connected.target.name, scenario, answer, calls, result)

    def _agent(
        self,
        name: str,
        scenario: Scenario,
        message: dict[str, Any],
        answer: dict[str, Any],
        calls: list[_Call],
        result: CellResult,
    ) -> _Observed:
        reply = _validated(AGENT_REPLY, answer, name)
        if not isinstance(reply, AgentResult):
            raise TargetError(f"{name} could not run the cell: {reply.message}")
        spec = scenario.agent
        assert spec is not None
        agent = build.agent_definition(scenario, spec)
        read = _wire_reader(reply, agent, scenario.provider)
        observation = _observation(reply, agent, calls, read)
        result.causes.extend(_forced_calls_not_forced(calls, read))
        mismatches, skipped = check_observation(scenario.expect, observation)
        if scenario.workflow is not None and scenario.expect.downstream is not None:
            downstream = run_workflow(scenario.workflow, reply.envelope)
            mismatches.extend(check_downstream(scenario.expect.downstream, downstream))
        result.mismatches.extend(mismatches)
        result.skipped_expectations.extend(skipped)
        return _Observed(reply, calls, read)

    def _module(
        self,
        name: str,
        scenario: Scenario,
        answer: dict[str, Any],
        calls: list[_Call],
        result: CellResult,
    ) -> _Observed:
        reply = _validated(MODULE_REPLY, answer, name)
        if not isinstance(reply, ModuleResult):
            raise TargetError(f"{name} could not run the cell: {reply.message}")
        executions = _executions(scenario)
        if len(reply.executions) != len(executions):
            raise TargetProtocolError(
                f"{name} answered {len(reply.executions)} execution(s) for {len(executions)} sent"
            )
        for index, (execution, (_, expect)) in enumerate(
            zip(reply.executions, executions, strict=True)
        ):
            error = None if execution.error is None else _ReportedError(execution.error)
            found = check_module(
                expect, outputs=dict(execution.outputs), error=error, llm_calls=len(calls)
            )
            if scenario.executions is not None:
                found = [replace(m, key=f"executions.{index}.{m.key}") for m in found]
            result.mismatches.extend(found)
        return _Observed(reply, calls)


def _module_request(request: LlmRequest) -> ObservedRequest:
    """A module cell's wire request: no agent fragments to find in it."""
    return ObservedRequest(
        request=request,
        fragments=(),
        memory_injected=False,
        completion_metadata=None,
        reasoning_unsent=True,
    )


@dataclass(frozen=True)
class _Observed:
    reply: AgentResult | ModuleResult
    calls: list[_Call]
    read: Callable[[LlmRequest], ObservedRequest] = _module_request

    @property
    def requests(self) -> list[tuple[str, LlmRequest]]:
        return [(call.kind, call.request) for call in self.calls]

    @property
    def observed_requests(self) -> list[tuple[str, ObservedRequest]]:
        """The requests as the expectations read them, in the order they were sent."""
        return [(call.kind, self.read(call.request)) for call in self.calls]

    @property
    def answer(self) -> dict[str, Any]:
        """The answer as JSON, with only the counters the target reported (`Counters.reported`):
        the comparison with the reference reads a counter left out as unknown."""
        answer = self.reply.model_dump(mode="json")
        if isinstance(self.reply, AgentResult):
            answer["counters"] = self.reply.counters.reported()
        return answer

    def detail(self) -> CellDetail | None:
        """An agent cell's detail for the HTML report (a module cell has none)."""
        if not isinstance(self.reply, AgentResult):
            return None
        return target_detail(self.reply, self.requests)


class _ReportedError(Exception):
    """A module error as a target reported it, read by the expectations like a raised one."""

    def __init__(self, reported: Any) -> None:
        super().__init__(reported.message)
        self.code = reported.code
        self.type_name = reported.type


def _reference_target(engine: EngineName) -> str:
    return REAL_ENGINE_REFERENCE_TARGET if engine == "real" else REFERENCE_TARGET


@contextmanager
def target_runner(spec: TargetSpec) -> Iterator[TargetRunner]:
    """Connect the target (and the reference), start the replay server; close all at the end,
    within bounded time, also when the run is interrupted (a command target's process group is
    ended however its children hold its pipes; on Ctrl-C, at once, without `shutdown`)."""
    from harness.serve import ReplayServer  # Starlette and uvicorn load only for a target run

    with ReplayServer() as server:
        under_test = _Connected(spec.open())
        reference = (
            _Connected(CallableTarget(_reference_target(spec.reference_engine)))
            if spec.compare_reference
            else None
        )
        interrupted = False
        try:
            yield TargetRunner(spec, server, under_test, reference)
        except KeyboardInterrupt:  # Ctrl-C: the target is ended at once, not asked to shut down
            interrupted = True
            raise
        finally:
            try:  # bounded; Ctrl-C during it still ends the target, then goes on
                under_test.target.close(interrupted=interrupted)
            finally:
                if reference is not None:
                    reference.target.close(interrupted=interrupted)


# -- the cell as a message --------------------------------------------------------------------------


def _cell_message(
    cell: Cell, options: RunOptions, base_urls: dict[str, str], run_id: str
) -> dict[str, Any]:
    scenario = cell.loaded.scenario
    if options.model:
        scenario = scenario.model_copy(update={"model": options.model})
    if scenario.kind == "agent":
        spec = scenario.agent
        assert spec is not None
        return {
            "type": "cell",
            "id": cell.id,
            "kind": "agent",
            "scenario": scenario.name,
            "runtime": cell.runtime,
            "store": cell.store,
            "provider": scenario.provider,
            "model": scenario.model or build.default_model(scenario.provider),
            "base_urls": base_urls,
            "agent": spec.model_dump(mode="json"),
            "user_message": spec.user_message,
            "run_id": run_id,
            "session_id": f"session-{scenario.name}",
            "faults": [fault.model_dump(mode="json") for fault in scenario.faults],
            "cancel": None if scenario.cancel is None else scenario.cancel.model_dump(mode="json"),
            "temporal": None if scenario.temporal is None else scenario.temporal.model_dump(),
        }
    return {
        "type": "cell",
        "id": cell.id,
        "kind": scenario.kind,
        "scenario": scenario.name,
        "config": scenario.config,
        "executions": [{"input": state} for state, _ in _executions(scenario)],
        "base_urls": base_urls if scenario.kind == "decision" else {},
        "models": [model.model_dump(mode="json") for model in scenario.models],
        "session": None if scenario.session is None else scenario.session.model_dump(mode="json"),
        "tool_policy": None
        if scenario.tool_policy is None
        else scenario.tool_policy.model_dump(mode="json"),
    }


def _executions(scenario: Scenario) -> list[tuple[dict[str, Any], Expect]]:
    """A module scenario's executions, in order: its `executions`, or its one `input`."""
    if scenario.executions is not None:
        return [(execution.input, execution.expect) for execution in scenario.executions]
    assert scenario.input is not None
    return [(scenario.input, scenario.expect)]


def _needs(scenario: Scenario) -> list[str]:
    """The protocol features a cell of `scenario` needs."""
    spec = scenario.agent
    if scenario.kind != "agent" or spec is None:
        return []
    needs = {
        "faults": bool(scenario.faults),
        "cancel": scenario.cancel is not None,
        "llm_config_override": spec.llm_config_override is not None,
        "memory": spec.memory is not None,
        "streaming": spec.stream,
        "approval": any(tool.requires_approval for tool in spec.tools) or bool(spec.deny_approval),
    }
    return [feature for feature, needed in needs.items() if needed]


def _unsupported(hello: TargetHello, cell: Cell) -> str | None:
    scenario = cell.loaded.scenario
    if scenario.kind not in hello.kinds:
        return f"the target does not run {scenario.kind} scenarios (hello.kinds)"
    if scenario.kind == "agent" and cell.runtime not in hello.runtimes:
        return f"the target does not declare the {cell.runtime} runtime profile (hello.runtimes)"
    if (
        scenario.kind == "agent"
        and hello.providers is not None
        and scenario.provider not in hello.providers
    ):
        return f"the target does not speak the {scenario.provider} API (hello.providers)"
    missing = [feature for feature in _needs(scenario) if feature not in hello.features]
    if missing:
        return f"the target does not declare the feature(s) {', '.join(missing)} (hello.features)"
    return None


# -- reading the answer and the traffic -------------------------------------------------------------


def _validated(adapter: Any, answer: Mapping[str, Any], name: str) -> Any:
    try:
        return adapter.validate_python(answer)
    except ValidationError as error:
        raise TargetProtocolError(f"{name} answered with {_problems(error)}") from None


def _problems(error: ValidationError) -> str:
    """Where the answer breaks the protocol, by location and reason (never the values: they
    may be the user's content)."""
    shown = [
        f"{'.'.join(str(part) for part in _location(problem['loc'])) or '(answer)'}: "
        f"{problem['msg']}"
        for problem in error.errors(include_input=False)[:5]
    ]
    more = error.error_count() - len(shown)
    return (
        "an answer that breaks the protocol: "
        + "; ".join(shown)
        + (f"; and {more} more" if more > 0 else "")
    )


def _location(location: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A location in the answer, without the message type pydantic puts first for a union."""
    return location[1:] if location[:1] in (("result",), ("error",), ("hello",)) else location


@dataclass(eq=False)
class _Call:
    """One request a session received, called `forced` or `work` by its tool choice alone; the
    whole request (every message of the conversation so far) is read only when something reads
    it: an expectation on the requests, the report's detail, the comparison with the reference."""

    kind: str
    provider: Provider
    body: dict[str, Any]
    path: str | None = None

    @cached_property
    def request(self) -> LlmRequest:
        return adapter_for(self.provider).parse_request(self.body, path=self.path)


def _received(session: Session) -> list[_Call]:
    """Each request the session received, in order, with its kind."""
    calls: list[_Call] = []
    for received in session.received:
        adapter = adapter_for(received.provider)
        try:
            body = orjson.loads(received.body)
            forced = adapter.forced_tool(body) == session.output_tool
        except (ValueError, HarnessError):
            continue  # the server answered it with a provider error; nothing to check
        kind = "forced" if forced else "work"
        calls.append(_Call(kind, received.provider, body, received.path))
    return calls


def _read_on_demand(
    calls: list[_Call], read: Callable[[LlmRequest], ObservedRequest]
) -> ReadOnDemand[ObservedRequest]:
    """`calls` as the expectations read them, each read from the wire the first time it is
    looked at."""
    return ReadOnDemand(len(calls), lambda index: read(calls[index].request), keep=True)


def _wire_reader(
    reply: AgentResult, agent: Any, provider: Provider
) -> Callable[[LlmRequest], ObservedRequest]:
    """How an agent cell's wire requests to `provider` are read: the fragments, memory recall
    and forced attempt each carried, found in its text."""
    trigger = next(
        (chunk.trigger for chunk in reply.chunks if chunk.kind == "forced_completion"), None
    )
    fragments = {fragment.name: fragment.text for fragment in work_fragments(agent)}
    fragments.update({fragment.name: fragment.text for fragment in forced_fragments(agent)})
    memory_opening = memory_message(("",)).content.split("\n", 1)[0]
    return lambda request: _on_the_wire(request, fragments, memory_opening, trigger, provider)


def _forced_calls_not_forced(
    calls: list[_Call], read: Callable[[LlmRequest], ObservedRequest]
) -> list[str]:
    """A line per call the target sent as a forced attempt (it ends with the `[completion]`
    message) without forcing the completion tool: the cause of whatever the cell then got wrong,
    said first."""
    causes = []
    for number, call in enumerate(calls, start=1):
        if call.kind != "work":
            continue
        try:
            observed = read(call.request)
        except (ValueError, HarnessError):
            continue
        if observed.completion_metadata is None:
            continue
        causes.append(
            f"the target's call #{number} carries the [completion] message of a forced attempt "
            f"but went out with tool_choice {shown_tool_choice(observed.request)}: a forced call "
            f"names the completion tool ({FINISH_TOOL}) as its tool choice, with it as the only "
            "tool"
        )
    return causes


def _observation(
    reply: AgentResult,
    agent: Any,
    calls: list[_Call],
    read: Callable[[LlmRequest], ObservedRequest],
) -> AgentObservation:
    counters = reply.counters
    return AgentObservation(
        status=reply.status,
        error_code=reply.error_code,
        error_message=reply.error_message,
        output=reply.output,
        output_schema=agent.output_schema,
        chunks=reply.chunks,
        outcome_record=reply.outcome_record.model_dump(),
        envelope=reply.envelope.model_dump(mode="json", by_alias=True),
        requests={
            kind: _read_on_demand([call for call in calls if call.kind == kind], read)
            for kind in ("work", "forced")
        },
        memory_extractions=counters.memory_extractions,
        override_calls=counters.llm_config_override_calls,
        crashes=counters.crashes,
        forced_state=counters.forced_state,
        forced_state_reported="forced_state" in counters.model_fields_set,
    )


def _on_the_wire(
    request: LlmRequest,
    fragments: dict[str, str],
    memory_opening: str,
    trigger: str | None,
    provider: Provider,
) -> ObservedRequest:
    """What a wire request carried, read from its text: a fragment is there when its text is in
    the system prompt, the recall when a user message opens as the recall does, the forced
    attempt from the `[completion]` message's `(attempt N of M)`."""
    system = request.system_text()
    users = [m.content for m in request.messages if isinstance(m, UserMessage)]
    metadata: dict[str, Any] | None = None
    last = request.messages[-1] if request.messages else None
    if isinstance(last, UserMessage) and last.content.startswith(COMPLETION_PREFIX):
        attempt = _ATTEMPT.search(last.content)
        metadata = {"trigger": trigger}
        if attempt is not None:
            metadata |= {"attempt": int(attempt[1]), "maxAttempts": int(attempt[2])}
    return ObservedRequest(
        request=request,
        fragments=tuple(name for name, text in fragments.items() if text and text in system),
        memory_injected=any(text.startswith(memory_opening) for text in users),
        completion_metadata=metadata,
        reasoning_unsent=True,
        reasons_unless_told=capabilities_for(provider, request.model).reasons_by_default,
    )


# -- comparing with the reference -------------------------------------------------------------------


def _differences(reference: _Observed, observed: _Observed) -> list[str]:
    """How the target's answer and requests differ from the reference's, on what the contract
    defines (`harness.scenarios.contract`: `reference -> target`)."""
    return [
        *answer_differences(reference.answer, observed.answer),
        *request_differences(reference.observed_requests, observed.observed_requests),
    ]
