"""A workflow that is not deterministic, for the test that Temporal's replay catches it: on
replay it starts a timer its first run never started."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from harness.engines.temporal_workflow import WORKFLOW_NAME, AgentCellWorkflow


@workflow.defn(name=WORKFLOW_NAME)
class NondeterministicAgentCell(AgentCellWorkflow):
    @workflow.run
    async def run(self, job: dict[str, Any]) -> str:
        return await super().run(job)

    async def _unit(self, name: str, *args: Any) -> Any:
        if name == "advance" and workflow.unsafe.is_replaying():
            await workflow.sleep(0.01)  # a command the history does not hold
        return await super()._unit(name, *args)
