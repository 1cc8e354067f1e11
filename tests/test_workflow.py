"""Downstream of the envelope: chained jobs, matrix outputs, and the publish-kb consumer."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import JsonValue, ValidationError

from harness.errors import PublishRefusedError
from harness.protocol.envelope import AgentOutputEnvelope, ArtifactRef
from harness.scenarios import load_scenarios
from harness.scenarios.format import Scenario
from harness.scenarios.run import RunOptions, run_scenario
from harness.workflow import (
    ArtifactStore,
    ArtifactVersion,
    Workflow,
    publish_kb,
    run_workflow,
)

HANDOFF: dict[str, JsonValue] = {"title": "Dark mode", "summary": "Add a dark theme."}
REF = ArtifactRef.for_payload(HANDOFF, artifact_id="art-1", version_id="art-1-v1")
ENVELOPE = AgentOutputEnvelope(
    allocation_id="alloc-1",
    outcome="succeeded",
    structured_output=REF,
    agent_result=HANDOFF,
    duration_ms=12,
    session_id="sess-1",
    workspace_id=None,
)
DOCUMENT = ArtifactVersion(
    artifact_id="kb-1",
    version_id="kb-1-v2",
    version=2,
    type="document",
    mode="inline",
    payload={"body": "# Page"},
)
CANARY = "canary-confidential-7f3a"


def store() -> ArtifactStore:
    artifacts = ArtifactStore()
    artifacts.put_handoff(ENVELOPE)
    artifacts.put(DOCUMENT)
    return artifacts


def workflow(jobs: dict[str, JsonValue]) -> Workflow:
    return Workflow.model_validate({"jobs": jobs})


def test_publish_kb_publishes_inline_markdown() -> None:
    page = publish_kb({"title": "T", "body": "# Hello"}, store())
    assert (page.source, page.body, page.title) == ("inline", "# Hello", "T")


def test_publish_kb_publishes_an_inline_artifact_version_latest_or_pinned() -> None:
    artifacts = store()
    artifacts.put(DOCUMENT.model_copy(update={"version_id": "kb-1-v1", "version": 1}))
    latest = publish_kb({"artifactId": "kb-1"}, artifacts)
    assert (latest.source, latest.version_id, latest.body) == ("artifact", "kb-1-v2", "# Page")
    pinned = publish_kb({"artifactId": "kb-1", "versionId": "kb-1-v1"}, artifacts)
    assert pinned.version_id == "kb-1-v1"


@pytest.mark.parametrize(
    "inputs",
    [{"artifactId": "art-1"}, {"artifact": REF.model_dump(mode="json")}],
    ids=["artifactId", "artifact"],
)
def test_publish_kb_refuses_the_json_payload_handoff(inputs: dict[str, JsonValue]) -> None:
    with pytest.raises(PublishRefusedError) as caught:
        publish_kb(inputs, store())
    message = str(caught.value)
    assert caught.value.code == "publish_kb_refused"
    assert "requires an artifact version with mode: inline and payload.body" in message
    assert "json_payload" in message
    assert "Dark mode" not in message  # never the content it refused


def test_publish_kb_refuses_a_null_body_naming_outputs_response() -> None:
    with pytest.raises(PublishRefusedError, match=r"outputs\.response is always null"):
        publish_kb({"body": ENVELOPE.output("response")}, store())


@pytest.mark.parametrize(
    ("inputs", "match"),
    [
        ({}, "exactly one of body, artifactId or artifact but got none"),
        ({"body": "x", "artifactId": "kb-1"}, "but got body, artifactId"),
        ({"body": {"secret": CANARY}}, "markdown text but got a value of type object"),
        ({"artifactId": "missing"}, "does not resolve"),
        ({"artifactId": 3}, "non-empty string"),
        ({"artifact": None}, "artifact is null"),
        ({"artifact": {"x": CANARY}}, "ArtifactRef object"),
        ({"body": "x", "bodyy": "x"}, "unknown input"),
        ({"title": "", "body": "x"}, "title"),
    ],
)
def test_publish_kb_refusals_say_what_is_expected(inputs: dict[str, JsonValue], match: str) -> None:
    with pytest.raises(PublishRefusedError, match=match) as caught:
        publish_kb(inputs, store())
    assert CANARY not in str(caught.value)


def test_outputs_reach_downstream_jobs_through_needs() -> None:
    result = run_workflow(
        workflow(
            {
                "draft": {
                    "uses": "xema/agent@v1",
                    "outputs": {
                        "spec": "${{ job.outputs.structuredOutput }}",
                        "sessionId": "${{ job.outputs.sessionId }}",
                    },
                },
                "publish": {
                    "needs": "draft",
                    "uses": "customer/publish-feature-spec@v1",
                    "with": {"spec": "${{ needs.draft.outputs.spec }}"},
                },
            }
        ),
        ENVELOPE,
    )
    publish = result.jobs["publish"]
    assert publish.status == "succeeded"
    assert publish.received == {"spec": REF.model_dump(mode="json")}
    assert result.jobs["draft"].outputs == {
        "spec": REF.model_dump(mode="json"),
        "sessionId": "sess-1",
    }


def test_deliverables_fails_by_name_and_dependents_are_skipped() -> None:
    result = run_workflow(
        workflow(
            {
                "draft": {
                    "uses": "xema/agent@v1",
                    "outputs": {"files": "${{ job.outputs.deliverables }}"},
                },
                "publish": {"needs": ["draft"], "with": {"f": "${{ needs.draft.outputs.files }}"}},
            }
        ),
        ENVELOPE,
    )
    assert result.jobs["draft"].error_code == "output_not_declared"
    assert "'deliverables'" in (result.jobs["draft"].error_message or "")
    assert result.jobs["publish"].status == "skipped"


def test_job_outputs_outside_an_agent_job_is_an_expression_error() -> None:
    result = run_workflow(
        workflow({"other": {"uses": "x/y@v1", "outputs": {"a": "${{ job.outputs.sessionId }}"}}}),
        ENVELOPE,
    )
    assert result.jobs["other"].error_code == "expression_invalid"


def test_matrix_outputs_are_keyed_by_key_by() -> None:
    jobs: dict[str, JsonValue] = {
        "plan": {"outputs": {"targets": [{"name": "api"}, {"name": "web"}]}},
        "build": {
            "needs": ["plan"],
            "uses": "xema/agent@v1",
            "strategy": {
                "dynamic": {"from": "${{ needs.plan.outputs.targets }}", "as": "t", "keyBy": "name"}
            },
            "outputs": {
                "result": "${{ job.outputs.structuredOutput }}",
                "n": "${{ matrix.t.name }}",
            },
        },
        "use": {"needs": ["build"], "with": {"web": "${{ needs.build.outputs.web.n }}"}},
    }
    result = run_workflow(workflow(jobs), ENVELOPE)
    assert result.jobs["build"].outputs == {
        "api": {"result": REF.model_dump(mode="json"), "n": "api"},
        "web": {"result": REF.model_dump(mode="json"), "n": "web"},
    }
    assert result.jobs["use"].received == {"web": "web"}


def test_matrix_with_duplicate_keys_or_a_non_list_fails() -> None:
    def build(source: JsonValue) -> Workflow:
        return workflow(
            {
                "build": {
                    "uses": "xema/agent@v1",
                    "strategy": {"dynamic": {"from": source, "as": "t", "keyBy": "name"}},
                }
            }
        )

    duplicate = run_workflow(build([{"name": "a"}, {"name": "a"}]), ENVELOPE)
    assert duplicate.jobs["build"].error_code == "expression_invalid"
    scalar = run_workflow(build("not a list"), ENVELOPE)
    assert scalar.jobs["build"].error_code == "expression_invalid"


@pytest.mark.parametrize(
    ("jobs", "match"),
    [
        ({"a": {"needs": ["missing"]}}, "no job is named"),
        ({"a": {"needs": ["b"]}, "b": {"needs": ["a"]}}, "cycle"),
        ({"a": {"withh": {}}}, "Extra inputs"),
    ],
)
def test_workflow_blocks_are_validated(jobs: dict[str, JsonValue], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        workflow(jobs)


AGENT = {
    "name": "s",
    "script": [{"text": "hi"}],
    "agent": {},
    "workflow": {"jobs": {"draft": {"uses": "xema/agent@v1"}}},
}


def test_scenario_validation_of_workflow_and_downstream() -> None:
    Scenario.model_validate(AGENT)
    with pytest.raises(ValidationError, match="not have"):
        Scenario.model_validate({**AGENT, "expect": {"downstream": {"nope": {"status": "failed"}}}})
    with pytest.raises(ValidationError, match="needs a 'workflow' block"):
        Scenario.model_validate(
            {**AGENT, "workflow": None, "expect": {"downstream": {"draft": {}}}}
        )
    with pytest.raises(ValidationError, match="does not apply to a completion"):
        Scenario.model_validate(
            {"name": "c", "kind": "completion", "input": {}, "workflow": AGENT["workflow"]}
        )
    with pytest.raises(ValidationError, match="downstream do not apply"):
        Scenario.model_validate(
            {"name": "c", "kind": "completion", "input": {}, "expect": {"downstream": {}}}
        )


def test_the_workflow_scenarios_pass_and_a_wrong_expectation_fails(tmp_path: Path) -> None:
    library = Path(__file__).resolve().parents[1] / "scenarios" / "workflow"
    options = RunOptions(workdir=tmp_path)
    for loaded in load_scenarios([library]):
        for result in run_scenario(loaded, options):
            assert result.passed, (result.error, result.mismatches)
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        (library / "downstream.yaml")
        .read_text()
        .replace("error_code: output_not_declared", "error_code: publish_kb_refused")
    )
    results = [r for loaded in load_scenarios([broken]) for r in run_scenario(loaded, options)]
    failed = [r for r in results if not r.passed]
    assert [r.cell.loaded.scenario.name for r in failed] == ["workflow-deliverables-not-declared"]
    assert {m.key for m in failed[0].mismatches} == {
        "downstream.draft.error_code",
        "downstream.draft-singular.error_code",
        "downstream.publish.error_code",
    }
