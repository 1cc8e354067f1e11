"""The workflow expression resolver over agent outputs."""

from __future__ import annotations

import pytest

from harness import AgentOutputEnvelope, ArtifactRef, ExpressionError, OutputNotDeclaredError
from harness.expressions import (
    ExpressionContext,
    JobOutputs,
    MatrixJobOutputs,
    evaluate,
    project_outputs,
    resolve,
)

SPEC = ArtifactRef.for_payload({"title": "spec"}, artifact_id="art-1", version_id="ver-1")
ENVELOPE = AgentOutputEnvelope(
    allocation_id="alloc-1",
    outcome="succeeded",
    structured_output=SPEC,
    agent_result={"title": "spec"},
    duration_ms=10,
    session_id="sess-1",
    workspace_id=None,
)


def test_the_seeds_draft_and_publish_jobs() -> None:
    draft = project_outputs(
        {
            "spec": "${{ job.outputs.structuredOutput }}",
            "sessionId": "${{ job.outputs.sessionId }}",
        },
        ExpressionContext(job=ENVELOPE),
    )
    assert draft == {"spec": SPEC.model_dump(), "sessionId": "sess-1"}
    publish = ExpressionContext(needs={"draft": JobOutputs(job="draft", outputs=draft)})
    assert resolve({"spec": "${{ needs.draft.outputs.spec }}"}, publish) == {
        "spec": SPEC.model_dump()
    }
    assert evaluate("needs.draft.outputs.spec.version", publish) == 1
    assert resolve("session ${{ needs.draft.outputs.sessionId }}!", publish) == "session sess-1!"


@pytest.mark.parametrize("name", ["deliverables", "deliverable"])
def test_removed_outputs_fail_by_name_and_never_resolve_to_null(name: str) -> None:
    with pytest.raises(OutputNotDeclaredError, match=f"'{name}' is not declared"):
        resolve(f"${{{{ job.outputs.{name} }}}}", ExpressionContext(job=ENVELOPE))


def test_an_output_a_job_did_not_project_fails_by_name() -> None:
    context = ExpressionContext(needs={"draft": JobOutputs(job="draft", outputs={"spec": 1})})
    with pytest.raises(
        OutputNotDeclaredError, match="'deliverables' is not declared by job 'draft'"
    ):
        evaluate("needs.draft.outputs.deliverables", context)


def test_matrix_outputs_are_keyed_by_key_by() -> None:
    build = MatrixJobOutputs.from_iterations(
        "build",
        "name",
        items=[{"name": "api", "prompt": "a"}, {"name": "web", "prompt": "w"}],
        outputs=[{"result": {"ok": 1}}, {"result": {"ok": 2}}],
    )
    context = ExpressionContext(needs={"build": build}, matrix={"target": {"name": "api"}})
    assert evaluate("needs.build.outputs.web.result", context) == {"ok": 2}
    assert evaluate("needs.build.outputs['api'].result.ok", context) == 1
    assert evaluate("needs.build.outputs.api", context) == {"result": {"ok": 1}}
    assert evaluate("needs.build.outputs", context) == {
        "api": {"result": {"ok": 1}},
        "web": {"result": {"ok": 2}},
    }
    assert evaluate("matrix.target.name", context) == "api"
    with pytest.raises(ExpressionError, match="no iteration with name = 'db'"):
        evaluate("needs.build.outputs.db.result", context)
    with pytest.raises(OutputNotDeclaredError, match="'deliverables'"):
        evaluate("needs.build.outputs.api.deliverables", context)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"prompt": "a"}], "no string field 'name'"),
        ([{"name": "a"}, {"name": "a"}], "share the keyBy value 'a'"),
    ],
)
def test_matrix_keys_must_exist_and_be_unique(items: list[dict[str, str]], message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        MatrixJobOutputs.from_iterations("build", "name", items, [{}] * len(items))


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("steps.x.outputs.y", "expected one of job, needs, matrix"),
        ("needs.plan.outputs.targets", "not in needs"),
        ("job.result.x", "expected 'outputs'"),
        ("job.outputs", "names no output"),
        ("needs.draft.outputs.spec.missing", "cannot read 'missing'"),
        ("needs.draft.outputs.spec[3]", "cannot read 3"),
        ("needs..draft", "cannot parse"),
        ("", "empty expression"),
    ],
)
def test_bad_expressions_say_what_is_wrong(expression: str, message: str) -> None:
    context = ExpressionContext(needs={"draft": JobOutputs(job="draft", outputs={"spec": {}})})
    with pytest.raises(ExpressionError, match=message):
        evaluate(expression, context)


def test_job_outputs_need_a_job() -> None:
    with pytest.raises(ExpressionError, match="outside a job"):
        evaluate("job.outputs.sessionId", ExpressionContext())


def test_lists_and_scalars_resolve_recursively() -> None:
    context = ExpressionContext(needs={"d": JobOutputs(job="d", outputs={"n": [1, 2]})})
    assert resolve(["${{ needs.d.outputs.n[1] }}", 3, None], context) == [2, 3, None]
    assert resolve("n=${{ needs.d.outputs.n }}", context) == "n=[1,2]"


def test_a_string_starting_and_ending_with_expressions_interpolates_both() -> None:
    context = ExpressionContext(needs={"d": JobOutputs(job="d", outputs={"a": "x", "b": 2})})
    assert resolve("${{ needs.d.outputs.a }}-${{ needs.d.outputs.b }}", context) == "x-2"
    assert resolve(" ${{ needs.d.outputs.b }} ", context) == 2  # one expression: its value
