"""The harness's own reference modules as a target: `harness run --target
harness.targets.reference:run`.

It speaks the target protocol like any implementation under test: it reaches the model only
through the `harness serve` session each cell names, and reports its run in the protocol's
shapes. Run through the target path, the scenario library gives the same results as the
in-process runner; it is also the model a user's own target can be compared with
(`--compare-reference`).
"""

from __future__ import annotations

import functools
from typing import Any, Final, get_args

import httpx2

from harness.errors import HarnessError
from harness.llm.gateway import GatewayConfig, LlmGateway
from harness.modules.completion import AgentCompletionModule
from harness.modules.decision import AgentDecisionModule
from harness.modules.models_acl import LlmDetails
from harness.runtimes.base import RuntimeOptions
from harness.runtimes.profiles import PROFILES
from harness.runtimes.run import run_agent
from harness.scenarios import build
from harness.scenarios.format import (
    AgentSpec,
    CancelSpec,
    FaultSpec,
    ModelSpec,
    Scenario,
    SessionSpec,
    ToolPolicySpec,
)
from harness.scenarios.run import RunOptions, cell_store
from harness.targets.protocol import (
    FEATURES,
    PROTOCOL_VERSION,
    AgentCell,
    Hello,
    ModuleCell,
    ScenarioKind,
    Shutdown,
)

API_KEY: Final = "harness-reference-target"
"""Sent to the replay server, which never forwards a client's key."""


def run(message: dict[str, Any]) -> dict[str, Any] | None:
    """Answer one protocol message."""
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
        return _agent(AgentCell.model_validate(message))
    return _module(ModuleCell.model_validate(message))


@functools.cache
def _connections() -> httpx2.HTTPTransport:
    """One connection pool for every cell: the replay server is the same for all, and a new
    pool per cell built a TLS context each time, a third of a cell's cost."""
    return httpx2.HTTPTransport()


def _gateway(provider: str, base_urls: dict[str, str]) -> LlmGateway:
    """A gateway to the cell's session. Not closed after the cell: closing it would close the
    shared pool."""
    base = base_urls[provider].rstrip("/").removesuffix("/v1")
    config = GatewayConfig(provider=provider, base_url=base, api_key=API_KEY)  # type: ignore[arg-type]
    return LlmGateway(config, transport=_connections())


def _agent(cell: AgentCell) -> dict[str, Any]:
    spec = AgentSpec.model_validate(cell.agent)
    agent = build.agent_named(spec, name=cell.scenario, provider=cell.provider, model=cell.model)
    store = cell_store(cell.store, RunOptions())
    gateway = _gateway(cell.provider, cell.base_urls)
    try:
        result = run_agent(
            agent,
            gateway,
            user_message=cell.user_message,
            runtime=cell.runtime,
            store=store,
            faults=[FaultSpec.model_validate(fault).plan() for fault in cell.faults],
            cancel=None if cell.cancel is None else CancelSpec.model_validate(cell.cancel).plan(),
            run_id=cell.run_id,
            session_id=cell.session_id,
            llm_config_override=build.config_override(spec),
            approve=build.approval_policy(spec),
            options=RuntimeOptions(
                temporal_register_persist_forced_completion=bool(
                    (cell.temporal or {}).get("register_persist_forced_completion", True)
                )
            ),
        )
        stored = store.load(cell.run_id)
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
    if cell.kind == "completion":
        module: Any = AgentCompletionModule()
    else:

        def completer_for(record: LlmDetails) -> LlmGateway:
            return _gateway(record.provider, cell.base_urls)

        stub = Scenario.model_construct(
            name=cell.scenario,
            models=[ModelSpec.model_validate(model) for model in cell.models],
            session=None if cell.session is None else SessionSpec.model_validate(cell.session),
        )
        policy = (
            None if cell.tool_policy is None else ToolPolicySpec.model_validate(cell.tool_policy)
        )
        module = AgentDecisionModule(
            cell.config,
            models=build.models_service(stub),
            session=build.session(stub),
            completer_for=completer_for,
            tool_policy=None if policy is None else build.ScenarioToolPolicy(policy),
        )
    executions = []
    for execution in cell.executions:
        try:
            outputs = dict(module.execute(execution["input"]))
            error = None
        except HarnessError as caught:
            outputs = dict(module.outputs) if cell.kind == "completion" else {}
            error = {"type": type(caught).__name__, "code": caught.code, "message": str(caught)}
        executions.append({"outputs": outputs, "error": error})
    return {"type": "result", "id": cell.id, "executions": executions}
