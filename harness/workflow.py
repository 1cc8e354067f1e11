"""Downstream of the agent output envelope: chained jobs and the `xema/publish-kb` consumer.

A workflow is a set of jobs. An agent job (`uses: xema/agent@v1`) projects values from its
envelope through `outputs:` (`${{ job.outputs.structuredOutput }}`); a downstream job lists it in
`needs:` and reads them in `with:` (`${{ needs.draft.outputs.spec }}`). A matrix job
(`strategy.dynamic` with `from`, `as` and `keyBy`) runs once per item and exposes its iterations'
outputs keyed by the item's `keyBy` field. Expressions are resolved by `harness.expressions`, so
reading an output nobody declares (`deliverables`) fails by name, never as null.

`publish_kb` models the `xema/publish-kb` action: it publishes an inline markdown `body`, or an
artifact version that has `mode: inline` and a `payload.body`. The agent's `structuredOutput` is a
`json_payload` artifact with no body, and its `response` is always null, so neither can be
published: both are refused with `PublishRefusedError` saying what the branch requires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import Field, JsonValue, PositiveInt, field_validator, model_validator

from harness.errors import ExpressionError, HarnessError, PublishRefusedError
from harness.expressions import (
    ExpressionContext,
    JobOutputs,
    MatrixJobOutputs,
    resolve,
)
from harness.protocol._base import CamelWireModel, WireModel
from harness.protocol.canonical import canonical_hash
from harness.protocol.envelope import AGENT_ACTION, AgentOutputEnvelope, ArtifactRef

PUBLISH_KB_ACTION: Final = "xema/publish-kb@v1"

# -- artifacts --------------------------------------------------------------------------------------


class ArtifactVersion(CamelWireModel):
    """One stored version of an artifact, as `xema/publish-kb` resolves it.

    A document page the old harvester emitted is `mode: inline` with `payload.body`; an agent's
    structured handoff is `type: json_payload` with the handoff JSON as its payload and no mode.
    """

    artifact_id: str = Field(min_length=1)
    version_id: str = Field(min_length=1)
    version: PositiveInt = 1
    type: Literal["json_payload", "markdown_doc", "document"] = "json_payload"
    mode: Literal["inline", "reference"] | None = None
    payload: JsonValue = None


@dataclass
class ArtifactStore:
    """Artifact versions by `(artifactId, versionId)`; the latest version by `artifactId`."""

    versions: dict[tuple[str, str], ArtifactVersion] = field(default_factory=dict)

    def put(self, version: ArtifactVersion) -> None:
        self.versions[(version.artifact_id, version.version_id)] = version

    def put_handoff(self, envelope: AgentOutputEnvelope) -> None:
        """Store the envelope's `structuredOutput` as the json_payload artifact it references."""
        ref = envelope.structured_output
        if ref is not None:
            self.put(
                ArtifactVersion(
                    artifact_id=ref.artifact_id,
                    version_id=ref.version_id,
                    version=ref.version,
                    type=ref.type,
                    payload=envelope.agent_result,
                )
            )

    def resolve(self, artifact_id: str, version_id: str | None = None) -> ArtifactVersion:
        """The pinned version, or the highest version of `artifact_id` when none is pinned."""
        if version_id is not None:
            found = self.versions.get((artifact_id, version_id))
        else:
            candidates = [v for (a, _), v in self.versions.items() if a == artifact_id]
            found = max(candidates, key=lambda v: v.version) if candidates else None
        if found is None:
            raise PublishRefusedError(
                f"{PUBLISH_KB_ACTION}: artifactId {artifact_id!r}"
                + (f" version {version_id!r}" if version_id else "")
                + " does not resolve to a stored artifact version"
            )
        return found


# -- xema/publish-kb --------------------------------------------------------------------------------


class KnowledgeBasePage(WireModel):
    """What `xema/publish-kb` publishes."""

    title: str
    body: str
    source: Literal["inline", "artifact"]
    artifact_id: str | None = None
    version_id: str | None = None
    hash: str


_ARTIFACT_REQUIREMENT: Final = (
    "the artifactId branch of xema/publish-kb requires an artifact version with mode: inline "
    "and payload.body"
)


def publish_kb(inputs: Mapping[str, JsonValue], artifacts: ArtifactStore) -> KnowledgeBasePage:
    """Publish one knowledge-base page from `inputs` (`title`, and `body` or `artifactId`).

    `body` must be markdown text. `artifactId` (with an optional `versionId` pin, or an
    `ArtifactRef` object as `artifact`) must resolve to a version with `mode: inline` and a
    string `payload.body`. Refuses, with `PublishRefusedError`: both or neither source; a null
    body (what piping `outputs.response` gives: it is always null); a `json_payload` handoff
    (`structuredOutput`), which carries no body. Messages name inputs and shapes, never content.
    """
    unknown = sorted(set(inputs) - {"title", "body", "artifactId", "versionId", "artifact"})
    if unknown:
        raise PublishRefusedError(
            f"{PUBLISH_KB_ACTION}: unknown input(s) {', '.join(unknown)}; expected title and "
            "one of body, artifactId (with an optional versionId) or artifact"
        )
    title = inputs.get("title", "Untitled")
    if not isinstance(title, str) or not title.strip():
        raise PublishRefusedError(
            f"{PUBLISH_KB_ACTION}: expected title to be non-empty text but got a value of type "
            f"{type(title).__name__}"
        )
    sources = [name for name in ("body", "artifactId", "artifact") if name in inputs]
    if len(sources) != 1:
        raise PublishRefusedError(
            f"{PUBLISH_KB_ACTION}: expected exactly one of body, artifactId or artifact but got "
            f"{', '.join(sources) if sources else 'none'}"
        )
    if sources == ["body"]:
        body = inputs["body"]
        if body is None:
            raise PublishRefusedError(
                f"{PUBLISH_KB_ACTION}: body is null. An agent's outputs.response is always null "
                "(the handoff path produces no closing message), so it cannot feed body; supply "
                "markdown the workflow writes itself"
            )
        if not isinstance(body, str):
            raise PublishRefusedError(
                f"{PUBLISH_KB_ACTION}: expected body to be markdown text but got a value of type "
                f"{_json_type(body)}; a structuredOutput ArtifactRef is not markdown"
            )
        return KnowledgeBasePage(title=title, body=body, source="inline", hash=canonical_hash(body))
    artifact_id, version_id = _artifact_source(inputs)
    version = artifacts.resolve(artifact_id, version_id)
    payload = version.payload
    body = payload.get("body") if isinstance(payload, dict) else None
    if version.mode != "inline" or not isinstance(body, str):
        raise PublishRefusedError(
            f"{PUBLISH_KB_ACTION}: artifact {artifact_id!r} version {version.version} is a "
            f"{version.type} artifact with mode {version.mode or 'unset'} and "
            f"{'a' if isinstance(body, str) else 'no'} payload.body, but {_ARTIFACT_REQUIREMENT}. "
            "A structuredOutput handoff (json_payload) carries no body; publish inline markdown "
            "with body instead"
        )
    return KnowledgeBasePage(
        title=title,
        body=body,
        source="artifact",
        artifact_id=version.artifact_id,
        version_id=version.version_id,
        hash=canonical_hash(body),
    )


def _artifact_source(inputs: Mapping[str, JsonValue]) -> tuple[str, str | None]:
    if "artifact" in inputs:
        raw = inputs["artifact"]
        if raw is None:
            raise PublishRefusedError(
                f"{PUBLISH_KB_ACTION}: artifact is null; the job that should have produced it "
                "made no structured output"
            )
        try:
            ref = ArtifactRef.model_validate(raw)
        except ValueError:
            raise PublishRefusedError(
                f"{PUBLISH_KB_ACTION}: expected artifact to be an ArtifactRef object "
                "{artifactId, versionId, version, hash, type} but got a value of type "
                f"{_json_type(raw)} that is not one"
            ) from None
        return ref.artifact_id, ref.version_id
    artifact_id = inputs["artifactId"]
    version_id = inputs.get("versionId")
    if not isinstance(artifact_id, str) or not artifact_id:
        raise PublishRefusedError(
            f"{PUBLISH_KB_ACTION}: expected artifactId to be a non-empty string but got a value "
            f"of type {_json_type(artifact_id)}"
        )
    if version_id is not None and not isinstance(version_id, str):
        raise PublishRefusedError(
            f"{PUBLISH_KB_ACTION}: expected versionId to be a string but got a value of type "
            f"{_json_type(version_id)}"
        )
    return artifact_id, version_id


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# -- the workflow -----------------------------------------------------------------------------------


class DynamicStrategy(WireModel):
    """`strategy.dynamic`: one iteration per item of `from`, bound to `matrix.<as>`."""

    from_: JsonValue = Field(alias="from", description="a list, or an expression giving one")
    as_: str = Field(alias="as", pattern=r"^[A-Za-z_][\w-]*$")
    key_by: str = Field(alias="keyBy", min_length=1)


class Strategy(WireModel):
    dynamic: DynamicStrategy


class WorkflowJob(WireModel):
    """One job: its action, what it needs, what it receives and what it projects."""

    uses: str | None = Field(
        default=None,
        description=(
            f"{AGENT_ACTION} (outputs read the run's envelope), {PUBLISH_KB_ACTION}, or any "
            "other action (a consumer that records what it receives)"
        ),
    )
    needs: list[str] = Field(default_factory=list)
    with_: dict[str, JsonValue] = Field(default_factory=dict, alias="with")
    outputs: dict[str, JsonValue] = Field(
        default_factory=dict, description="name -> value; expressions in it are resolved"
    )
    strategy: Strategy | None = None

    @field_validator("needs", mode="before", json_schema_input_type=str | list[str])
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


class Workflow(WireModel):
    """Jobs chained by `needs:`; the agent jobs read the scenario run's envelope."""

    jobs: dict[str, WorkflowJob] = Field(min_length=1)
    artifacts: list[ArtifactVersion] = Field(default_factory=list)

    @model_validator(mode="after")
    def _acyclic(self) -> Workflow:
        self.order()
        return self

    def order(self) -> list[str]:
        """Job names in an order where every job follows what it needs; refuses cycles."""
        for name, job in self.jobs.items():
            unknown = [n for n in job.needs if n not in self.jobs]
            if unknown:
                raise ValueError(
                    f"job {name!r} needs {', '.join(unknown)}, which no job is named; jobs: "
                    f"{', '.join(self.jobs)}"
                )
        ordered: list[str] = []
        remaining = dict(self.jobs)
        while remaining:
            ready = [n for n, j in remaining.items() if all(d in ordered for d in j.needs)]
            if not ready:
                raise ValueError(f"jobs {', '.join(remaining)} need each other in a cycle")
            for name in ready:
                ordered.append(name)
                del remaining[name]
        return ordered


JobStatus = Literal["succeeded", "failed", "skipped"]


@dataclass(frozen=True, kw_only=True)
class JobRun:
    """What one job received (`with:` resolved), projected, or failed with."""

    job: str
    status: JobStatus
    received: JsonValue = None
    outputs: JsonValue = None
    error_code: str | None = None
    error_message: str | None = None

    def as_dict(self) -> dict[str, JsonValue]:
        return {
            "status": self.status,
            "received": self.received,
            "outputs": self.outputs,
            "error_code": self.error_code,
            "error_message": self.error_message,
        }


@dataclass(frozen=True)
class WorkflowResult:
    jobs: dict[str, JobRun]


def run_workflow(
    workflow: Workflow,
    envelope: AgentOutputEnvelope,
    artifacts: ArtifactStore | None = None,
) -> WorkflowResult:
    """Run every job in dependency order against one agent run's `envelope`.

    Every agent job reads `envelope` (in a matrix, every iteration does). A job whose
    expressions or action fail is `failed` with the error's code; a job that needs a failed or
    skipped job is `skipped`. Errors other than `HarnessError` propagate.
    """
    store = artifacts if artifacts is not None else ArtifactStore()
    store.put_handoff(envelope)
    for version in workflow.artifacts:
        store.put(version)
    done: dict[str, JobOutputs | MatrixJobOutputs] = {}
    runs: dict[str, JobRun] = {}
    for name in workflow.order():
        job = workflow.jobs[name]
        blocked = [n for n in job.needs if runs[n].status != "succeeded"]
        if blocked:
            runs[name] = JobRun(
                job=name,
                status="skipped",
                error_message=f"needs {', '.join(blocked)}, which did not succeed",
            )
            continue
        needs = {n: done[n] for n in job.needs}
        try:
            run, outputs = _run_job(name, job, envelope, needs, store)
        except HarnessError as error:
            runs[name] = JobRun(
                job=name, status="failed", error_code=error.code, error_message=str(error)
            )
            continue
        runs[name] = run
        done[name] = outputs
    return WorkflowResult(jobs=runs)


def _run_job(
    name: str,
    job: WorkflowJob,
    envelope: AgentOutputEnvelope,
    needs: Mapping[str, JobOutputs | MatrixJobOutputs],
    store: ArtifactStore,
) -> tuple[JobRun, JobOutputs | MatrixJobOutputs]:
    if job.strategy is None:
        received, outputs = _iteration(job, envelope, ExpressionContext(needs=needs), store)
        return (
            JobRun(job=name, status="succeeded", received=received, outputs=dict(outputs)),
            JobOutputs(job=name, outputs=outputs),
        )
    dynamic = job.strategy.dynamic
    items = resolve(dynamic.from_, ExpressionContext(needs=needs))
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ExpressionError(
            f"job {name!r}: expected strategy.dynamic.from to give a list of objects but got a "
            f"value of type {_json_type(items)}"
        )
    objects: Sequence[dict[str, JsonValue]] = [item for item in items if isinstance(item, dict)]
    received_all: list[JsonValue] = []
    outputs_all: list[dict[str, JsonValue]] = []
    for item in objects:
        context = ExpressionContext(needs=needs, matrix={dynamic.as_: item})
        received, outputs = _iteration(job, envelope, context, store)
        received_all.append(received)
        outputs_all.append(outputs)
    matrix = MatrixJobOutputs.from_iterations(name, dynamic.key_by, objects, outputs_all)
    keyed: dict[str, JsonValue] = {key: dict(value) for key, value in matrix.iterations.items()}
    return (
        JobRun(job=name, status="succeeded", received=received_all, outputs=keyed),
        matrix,
    )


def _iteration(
    job: WorkflowJob,
    envelope: AgentOutputEnvelope,
    context: ExpressionContext,
    store: ArtifactStore,
) -> tuple[JsonValue, dict[str, JsonValue]]:
    """One run of a job's action: what it received and the outputs it projects.

    An agent job's outputs read the envelope (`job.outputs.*`); a publish-kb job publishes and
    exposes the page as its output `page`; any other action only records what it received.
    """
    received: dict[str, JsonValue] = {
        key: resolve(value, context) for key, value in job.with_.items()
    }
    if job.uses == AGENT_ACTION:
        context = ExpressionContext(job=envelope, needs=context.needs, matrix=context.matrix)
    outputs = {name: resolve(value, context) for name, value in job.outputs.items()}
    if job.uses == PUBLISH_KB_ACTION:
        page = publish_kb(received, store)
        outputs = {"page": page.model_dump(mode="json"), **outputs}
    return received, outputs


__all__ = [
    "PUBLISH_KB_ACTION",
    "ArtifactStore",
    "ArtifactVersion",
    "JobRun",
    "KnowledgeBasePage",
    "Workflow",
    "WorkflowJob",
    "WorkflowResult",
    "publish_kb",
    "run_workflow",
]
