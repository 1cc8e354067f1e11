"""The units of work of an agent cell, as a worker of a real engine runs them.

Temporal activities and DBOS steps are these functions: each takes the cell's job (what the
worker needs to rebuild the reference loop: the agent, the run's ids, the fault plan) and the run
state as JSON, and returns JSON, so the engine checkpoints exactly what the simulated runtime
persists. The loop they drive is `harness.agent.loop.AgentLoop`, unchanged; the model, the store
and the approval policy are the cell's, reached through the harness (`harness.engines.host`).

A persistence unit saves the state and, when the fault plan says so, kills its own worker with
SIGKILL right after: the save is durable, the unit never reports back, and the engine must resume
the run on a new worker.
"""

from __future__ import annotations

import os
import signal
from typing import Any, Final, TypedDict

from harness.agent.definition import AgentDefinition, AgentTool
from harness.agent.loop import AgentLoop
from harness.agent.state import PersistencePoint, RunState, StateWriter
from harness.engines.host import HostClient, HostedCompleter, unit_id
from harness.llm.models import LlmToolCall, Message
from harness.stores.base import StoredRun

PERSIST_FORCED_COMPLETION: Final = "persistForcedCompletion"
"""The activity the Temporal runtime persists the forced-completion state with."""


class CellJob(TypedDict):
    """What a worker is given to run one agent cell (JSON all through)."""

    cell: str
    agent: dict[str, Any]
    run_id: str
    session_id: str
    user_message: str
    faults: list[list[Any]]
    cancel: list[Any] | None
    extracts_memories: bool


class Advanced(TypedDict):
    state: str
    point: str
    finished: bool


class HostedStore:
    """The cell's store, in the harness process (`StateStore`)."""

    def __init__(self, client: HostClient, cell: str) -> None:
        self._client = client
        self._cell = cell

    def load(self, run_id: str) -> StoredRun | None:
        run = self._client.call("/load", {"cell": self._cell, "run_id": run_id})["run"]
        return StoredRun.model_validate(run) if run is not None else None

    def save(self, run: StoredRun) -> None:
        self._client.call("/save", {"cell": self._cell, "run": run.model_dump(mode="json")})

    def delete(self, run_id: str) -> None:  # pragma: no cover - the harness deletes runs
        raise NotImplementedError

    def close(self) -> None:
        return


class Units:
    """The units of every cell a worker runs, over one connection to the harness."""

    def __init__(self, client: HostClient) -> None:
        self.client = client

    def _loop(self, job: CellJob, unit: str) -> AgentLoop:
        cell = job["cell"]

        def approve(call: LlmToolCall, tool: AgentTool) -> bool:
            body = {"cell": cell, "call": call.model_dump(mode="json"), "tool": tool.model_dump()}
            return bool(self.client.call("/approve", body)["granted"])

        def extract(messages: tuple[Message, ...]) -> None:
            body = {"cell": cell, "messages": [m.model_dump(mode="json") for m in messages]}
            self.client.call("/extract", body)

        return AgentLoop(
            AgentDefinition.model_validate(job["agent"]),
            HostedCompleter(self.client, cell, unit),
            invoke_config_override=False,  # neither Temporal nor DBOS invokes llm_config_override
            approve=approve,
            extract_memories=extract if job["extracts_memories"] else None,
        )

    def start(self, job: CellJob) -> str:
        """The run's first state (persisted next, at `run_started`)."""
        loop = self._loop(job, "start")
        state = loop.start(
            run_id=job["run_id"], session_id=job["session_id"], user_message=job["user_message"]
        )
        return StateWriter().dump(state)

    def advance(self, job: CellJob, state_json: str) -> Advanced:
        """One unit of work from `state_json`: the next state and its persistence point."""
        state = RunState.model_validate_json(state_json)
        self.client.call(
            "/unit-started",
            {
                "cell": job["cell"],
                "worker": os.getpid(),
                "forced_completion": state.forced_completion.model_dump_json()
                if state.forced_completion is not None
                else None,
            },
        )
        state, point = self._loop(job, unit_id(state_json)).advance(state)
        return {"state": StateWriter().dump(state), "point": point, "finished": state.finished}

    def persist(self, job: CellJob, state_json: str, point: str | None, occurrence: int) -> None:
        """Save the state reached at `point` (its `occurrence`-th time); crash right after when
        the fault plan says so. A save at no point (a cancelled run's) never crashes."""
        state = RunState.model_validate_json(state_json)
        run = StoredRun(
            run_id=state.run_id,
            status=state.status,
            state_json=state_json,
            forced_completion=state.forced_completion,
        )
        answer = self.client.call(
            "/save",
            {
                "cell": job["cell"],
                "run": run.model_dump(mode="json"),
                "point": point,
                "occurrence": occurrence,
            },
        )
        if answer["crash"]:
            os.kill(os.getpid(), signal.SIGKILL)

    def cancel(self, job: CellJob, state_json: str) -> str:
        """The run ended from outside, as a cancel request does (persisted next)."""
        return StateWriter().dump(RunState.model_validate_json(state_json).cancelled())

    def fail(self, job: CellJob, code: str, message: str) -> str:
        """The workflow failed outside the loop: its last persisted state, marked failed."""
        store = HostedStore(self.client, job["cell"])
        stored = store.load(job["run_id"])
        if stored is None:  # pragma: no cover - run_started is always persisted first
            raise LookupError(f"no run {job['run_id']!r} in its store to mark failed")
        failed = RunState.model_validate_json(stored.state_json).failed_outside(code, message)
        state_json = StateWriter().dump(failed)
        store.save(
            StoredRun(
                run_id=failed.run_id,
                status=failed.status,
                state_json=state_json,
                forced_completion=failed.forced_completion,
            )
        )
        return state_json


def due(job: CellJob, kind: str, point: PersistencePoint | str, occurrence: int) -> bool:
    """Whether the job's `kind` plan (`cancel`) acts after `point`'s `occurrence`-th persistence."""
    plan = job.get(kind)
    return isinstance(plan, list) and (plan[0], plan[1]) == (point, occurrence)
