"""The agent output envelope and `ArtifactRef`."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue, ValidationError

from harness import AgentOutputEnvelope, ArtifactRef, OutputNotDeclaredError
from harness.protocol import canonical_hash

json_values: st.SearchStrategy[JsonValue] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def make_envelope(**overrides: object) -> AgentOutputEnvelope:
    values: dict[str, object] = {
        "allocationId": "alloc-1",
        "outcome": "succeeded",
        "structuredOutput": None,
        "agentResult": {"spec": "x"},
        "durationMs": 1200,
        "sessionId": "sess-1",
        "workspaceId": None,
    }
    values.update(overrides)
    return AgentOutputEnvelope.model_validate(values)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6), st.randoms())
def test_the_hash_is_stable_for_equal_payloads_whatever_their_key_order(
    payload: dict[str, JsonValue], random: object
) -> None:
    items = list(payload.items())
    random.shuffle(items)  # type: ignore[attr-defined]
    reordered = dict(items)
    a = ArtifactRef.for_payload(payload, artifact_id="a", version_id="v")
    b = ArtifactRef.for_payload(reordered, artifact_id="a", version_id="v")
    assert a.hash == b.hash
    assert a.hash == canonical_hash(json.loads(json.dumps(reordered, indent=3)))


def test_the_hash_is_sha256_of_the_canonical_json() -> None:
    ref = ArtifactRef.for_payload({"b": 1, "a": [True, None]}, artifact_id="a", version_id="v")
    expected = hashlib.sha256(b'{"a":[true,null],"b":1}').hexdigest()
    assert ref.hash == f"sha256:{expected}"
    assert ref.type == "json_payload"
    assert ref.version == 1
    assert ref.model_dump() == {
        "artifactId": "a",
        "versionId": "v",
        "version": 1,
        "hash": f"sha256:{expected}",
        "type": "json_payload",
    }


def test_different_payloads_hash_differently() -> None:
    one = ArtifactRef.for_payload({"a": 1}, artifact_id="a", version_id="v")
    two = ArtifactRef.for_payload({"a": 2}, artifact_id="a", version_id="v")
    assert one.hash != two.hash


@pytest.mark.parametrize(
    "fields",
    [
        {"version": 0},
        {"hash": "md5:abc"},
        {"hash": "sha256:" + "A" * 64},
        {"type": "markdown_doc"},
        {"artifactId": ""},
    ],
)
def test_artifact_ref_refuses_invalid_fields(fields: dict[str, object]) -> None:
    values: dict[str, object] = {
        "artifactId": "a",
        "versionId": "v",
        "version": 1,
        "hash": "sha256:" + "0" * 64,
        "type": "json_payload",
    }
    values.update(fields)
    with pytest.raises(ValidationError):
        ArtifactRef.model_validate(values)


@pytest.mark.parametrize("name", ["deliverables", "deliverable", "finalAnswer"])
def test_undeclared_outputs_fail_by_name(name: str) -> None:
    envelope = make_envelope()
    with pytest.raises(OutputNotDeclaredError) as caught:
        envelope.output(name)
    message = str(caught.value)
    assert repr(name) in message
    assert "not declared" in message
    assert caught.value.code == "output_not_declared"
    assert isinstance(caught.value, LookupError)


def test_declared_outputs_are_the_seeds() -> None:
    assert AgentOutputEnvelope.declared_outputs() == (
        "allocationId",
        "outcome",
        "structuredOutput",
        "agentResult",
        "response",
        "durationMs",
        "sessionId",
        "workspaceId",
        "workerName",
        "workerUrl",
        "workerProxyUrl",
        "allocationStatus",
    )


def test_response_is_always_null() -> None:
    assert make_envelope().output("response") is None
    with pytest.raises(ValidationError, match="response"):
        make_envelope(response={"artifactId": "x"})


@pytest.mark.parametrize(
    "fields",
    [
        {"outcome": "completed"},
        {"durationMs": -1},
        {"deliverables": []},
        {"allocationId": None},
    ],
)
def test_the_envelope_refuses_invalid_shapes(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        make_envelope(**fields)


def test_declared_outputs_read_their_wire_values() -> None:
    ref = ArtifactRef.for_payload({"spec": "x"}, artifact_id="art-1", version_id="ver-1")
    envelope = make_envelope(structuredOutput=ref.model_dump(), workerName="w-1")
    assert envelope.output("structuredOutput") == ref.model_dump()
    assert envelope.output("agentResult") == {"spec": "x"}
    assert envelope.output("durationMs") == 1200
    assert envelope.output("workerName") == "w-1"
    assert envelope.output("workspaceId") is None


def test_the_wire_form_is_camel_case_only_while_python_takes_attribute_names() -> None:
    wire = make_envelope().model_dump_json()
    assert AgentOutputEnvelope.model_validate_json(wire) == make_envelope()
    snake = json.dumps({_snake(key): value for key, value in json.loads(wire).items()})
    with pytest.raises(ValidationError, match="allocation_id"):
        AgentOutputEnvelope.model_validate_json(snake)
    assert AgentOutputEnvelope.model_validate_json(snake, by_name=True) == make_envelope()
    ref = ArtifactRef.for_payload({"a": 1}, artifact_id="art", version_id="v")
    with pytest.raises(ValidationError, match="artifact_id"):
        ArtifactRef.model_validate_json(json.dumps({"artifact_id": "art", **ref.model_dump()}))


@pytest.mark.parametrize("value", ["5", True, 1.5])
def test_integers_on_the_wire_are_json_integers(value: object) -> None:
    with pytest.raises(ValidationError, match="durationMs"):
        AgentOutputEnvelope.model_validate_json(
            make_envelope()
            .model_dump_json()
            .replace('"durationMs":1200', f'"durationMs":{json.dumps(value)}')
        )
    ref = json.loads(ArtifactRef.for_payload({}, artifact_id="a", version_id="v").model_dump_json())
    with pytest.raises(ValidationError, match="version"):
        ArtifactRef.model_validate_json(json.dumps({**ref, "version": value}))


def _snake(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
