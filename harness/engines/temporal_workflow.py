"""The Temporal workflow of an agent cell: the reference runtime's drive loop, every unit an
activity.

Workflow code must be deterministic: it decides only from its input and from what its activities
returned, which Temporal records in the run's history and hands back when it replays the
workflow on another worker. So this module imports Temporal's SDK and the standard library alone
(the workflow sandbox re-imports it for every run), and each decision the simulated runtime makes
(`harness.runtimes.base.Runtime`) is made here the same way: persist after every unit, count each
persistence point, cancel where the plan says. The units themselves (`harness.engines.units`)
run in activities.

The forced-completion state is persisted by the `persistForcedCompletion` activity, as the Helix
Temporal runtime does; a worker that does not register it fails that activity with Temporal's own
`NotFoundError`, and once the retry policy gives up the run fails with
`temporal_activity_not_registered`, carrying Temporal's message.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

WORKFLOW_NAME: Final = "HarnessAgentCell"
PERSIST_FORCED_COMPLETION: Final = "persistForcedCompletion"
NOT_REGISTERED_CODE: Final = "temporal_activity_not_registered"

RETRY_POLICY: Final = RetryPolicy(
    initial_interval=timedelta(milliseconds=100),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=1),
    maximum_attempts=3,
)
"""Every activity: up to 3 attempts, 100 ms then 200 ms apart."""
UNIT_TIMEOUT: Final = timedelta(minutes=10)
"""How long one unit of work (a model call) may take."""
PERSIST_TIMEOUT: Final = timedelta(seconds=1)
"""How long a save may take: past it, Temporal runs it again on another worker, which is how a
run goes on after its worker was killed during a save."""


@workflow.defn(name=WORKFLOW_NAME)
class AgentCellWorkflow:
    """One agent cell: start, then advance and persist until the run is finished."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    @workflow.run
    async def run(self, job: dict[str, Any]) -> str:
        state: str = await self._unit("startRun", job)
        state, over = await self._persist(job, state, "run_started")
        while not over:
            advanced: dict[str, Any] = await self._unit("advance", job, state)
            state = advanced["state"]
            try:
                state, cancelled = await self._persist(job, state, advanced["point"])
            except ActivityError as error:
                cause = error.cause
                if isinstance(cause, ApplicationError) and cause.type == "NotFoundError":
                    failed: str = await self._unit(
                        "failRun", job, NOT_REGISTERED_CODE, cause.message
                    )
                    return failed
                raise
            over = advanced["finished"] or cancelled
        return state

    async def _unit(self, name: str, *args: Any) -> Any:
        return await workflow.execute_activity(
            name, args=list(args), start_to_close_timeout=UNIT_TIMEOUT, retry_policy=RETRY_POLICY
        )

    async def _persist(self, job: dict[str, Any], state: str, point: str) -> tuple[str, bool]:
        """Persist `state` at `point`; cancel the run after it when the plan says so."""
        occurrence = self._seen.get(point, 0) + 1
        self._seen[point] = occurrence
        activity = PERSIST_FORCED_COMPLETION if point == "forced_entered" else "persistState"
        await self._save(activity, job, state, point, occurrence)
        cancel = job.get("cancel")
        if cancel is not None and (cancel[0], cancel[1]) == (point, occurrence):
            state = await self._unit("cancelRun", job, state)
            await self._save("persistState", job, state, None, 0)
            return state, True
        return state, False

    async def _save(
        self, activity: str, job: dict[str, Any], state: str, point: str | None, occurrence: int
    ) -> None:
        await workflow.execute_activity(
            activity,
            args=[job, state, point, occurrence],
            start_to_close_timeout=PERSIST_TIMEOUT,
            retry_policy=RETRY_POLICY,
        )
