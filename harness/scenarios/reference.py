"""The harness's own reference modules as a target: `harness run --target
harness.scenarios.reference:run` (`REFERENCE_TARGET`).

It speaks the target protocol like any implementation under test: it reaches the model only
through the `harness serve` session each cell names, and reports its run in the protocol's
shapes. What it runs is what the in-process runner runs (`run_reference_agent`,
`decision_module`, `execute_module` in `harness.scenarios.run`), so through the target path the
scenario library gives the same results as in process; it is also the model a user's own target
is compared with (`--compare-reference`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final, get_args

import httpx2

from harness.engines.settings import EngineName
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.modules.completion import AgentCompletionModule
from harness.modules.models_acl import LlmDetails
from harness.providers import find_provider, provider_of
from harness.runtimes.profiles import PROFILES
from harness.scenarios.format import ModelSpec, Scenario, SessionSpec, ToolPolicySpec
from harness.scenarios.run import (
    RunOptions,
    cell_store,
    decision_module,
    execute_module,
    run_reference_agent,
)
from harness.targets.protocol import (
    FEATURES,
    PROTOCOL_VERSION,
    AgentCell,
    Hello,
    ModuleCell,
    ScenarioKind,
    Shutdown,
)

if TYPE_CHECKING:
    from harness.modules.decision import AgentDecisionModule

API_KEY: Final = "harness-reference-target"
"""Sent to the replay server, which never forwards a client's key."""


def run(message: dict[str, Any]) -> dict[str, Any] | None:
    """Answer one protocol message."""
    return _answer(message, engine="simulated")


def run_on_real_engines(message: dict[str, Any]) -> dict[str, Any] | None:
    """Answer one protocol message, running a `temporal` or `dbos` agent cell on Temporal or
    DBOS themselves (`harness.engines`: a dev server and SQLite, started on first use and
    stopped when the process ends), crashes killing a worker; every other cell as `run` does."""
    return _answer(message, engine="real")


def _answer(message: dict[str, Any], *, engine: EngineName) -> dict[str, Any] | None:
    kind = message.get("type")
    if kind == "hello":
        Hello.model_validate(message)
        return {
            "type": "hello",
            "protocol": PROTOCOL_VERSION,
            "name": "harness reference",
            "kinds": list(get_args(ScenarioKind)),
            "runtimes": sorted(PROFILES),
            "features": list(FEATURES),
        }
    if kind == "shutdown":
        Shutdown.model_validate(message)
        return None
    if message.get("kind") == "agent":
        return _agent(AgentCell.model_validate(message), engine)
    return _module(ModuleCell.model_validate(message))


@functools.cache
def _connections() -> httpx2.HTTPTransport:
    """One connection pool for every cell: the replay server is the same for all, and a new
    pool per cell built a TLS context each time, a third of a cell's cost."""
    return httpx2.HTTPTransport()


def _gateway(provider: str, base_urls: dict[str, str]) -> LlmGateway:
    """A gateway to the cell's session. Not closed after the cell: closing it would close the
    shared pool."""
    spec = find_provider(provider)
    assert spec is not None  # the cell message names a provider the protocol knows
    base = spec.server_root(base_urls[provider])
    config = GatewayConfig(provider=provider_of(spec), base_url=base, api_key=API_KEY)
    return LlmGateway(config, transport=_connections())


def _agent(cell: AgentCell, engine: EngineName) -> dict[str, Any]:
    scenario = Scenario.model_construct(  # the parts of a scenario the message carries
        name=cell.scenario,
        provider=cell.provider,
        model=cell.model,
        agent=cell.agent,
        faults=cell.faults,
        cancel=cell.cancel,
        temporal=cell.temporal,
    )
    store = cell_store(cell.store, RunOptions())
    try:
        result, stored = run_reference_agent(
            scenario,
            _gateway(cell.provider, cell.base_urls),
            store,
            runtime=cell.runtime,
            run_id=cell.run_id,
            session_id=cell.session_id,
            user_message=cell.user_message,
            engine=engine,
        )
        store.delete(cell.run_id)
    finally:
        store.close()
    forced = stored.forced_completion if stored is not None else None
    return {
        "type": "result",
        "id": cell.id,
        "status": result.status,
        "error_code": result.error_code,
        "error_message": result.state.error_message,
        "output": result.output,
        "chunks": [chunk.model_dump(mode="json") for chunk in result.chunks],
        "outcome_record": result.outcome_record().model_dump(mode="json"),
        "envelope": result.envelope().model_dump(mode="json", by_alias=True),
        "counters": {
            "memory_extractions": result.state.memory_extractions,
            "llm_config_override_calls": [
                call.execution_phase for call in result.state.override_calls
            ],
            "crashes": result.crashes,
            "forced_state": None if forced is None else forced.model_dump(mode="json"),
        },
    }


def _module(cell: ModuleCell) -> dict[str, Any]:
    module: AgentCompletionModule | AgentDecisionModule
    if cell.kind == "completion":
        module = AgentCompletionModule()
    else:

        def completer_for(record: LlmDetails) -> LlmGateway:
            return _gateway(record.provider, cell.base_urls)

        scenario = Scenario.model_construct(  # the parts of a scenario the message carries
            name=cell.scenario,
            config=cell.config,
            models=[ModelSpec.model_validate(model) for model in cell.models],
            session=None if cell.session is None else SessionSpec.model_validate(cell.session),
            tool_policy=None
            if cell.tool_policy is None
            else ToolPolicySpec.model_validate(cell.tool_policy),
        )
        module = decision_module(scenario, completer_for)
    executions = []
    for execution in cell.executions:
        outputs, error = execute_module(module, execution["input"])  # type: ignore[arg-type]
        executions.append(
            {
                "outputs": outputs,
                "error": None
                if error is None
                else {"type": type(error).__name__, "code": error.code, "message": str(error)},
            }
        )
    return {"type": "result", "id": cell.id, "executions": executions}
