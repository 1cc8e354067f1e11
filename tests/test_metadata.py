"""Module metadata: every row of the contract documents' tables, and the implementation against its contract."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import errors
from harness.agent.definition import DEFAULT_MAX_COMPLETION_RETRIES, DEFAULT_MAX_STEPS
from harness.cli import main
from harness.metadata import (
    COMPLETION,
    DECISION,
    FORCED_COMPLETION,
    MODULES,
    ModuleMetadata,
    module_metadata,
)
from harness.modules import completion, decision
from harness.modules.completion import AgentCompletionModule
from harness.protocol.forced import CompletionCode
from tests.support.decision import EXAMPLE_STATE, module
from tests.support.scripted import text_reply, tool_reply


def seeds_dir() -> Path:
    override = os.environ.get("HARNESS_SEEDS_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1].parent / "shared" / "seeds"


def contract_document(title: str) -> str:
    """The text of the contract document whose first line is `title` (`ModuleMetadata.source`)."""
    for path in sorted(seeds_dir().glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        if text.splitlines()[:1] == [title]:
            return text
    pytest.skip(f"no document titled {title!r} in {seeds_dir()} (set HARNESS_SEEDS_DIR)")


def table(text: str, header: str) -> list[dict[str, str]]:
    """The rows of the tab-separated table whose header line starts with `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header + "\t"))
    columns = lines[start].split("\t")
    rows: list[dict[str, str]] = []
    for line in lines[start + 1 :]:
        if "\t" not in line:
            break
        rows.append(dict(zip(columns, line.split("\t"), strict=True)))
    assert rows, f"no rows under {header!r}"
    return rows


def required(cell: str) -> bool:
    assert cell in ("Yes", "No"), cell
    return cell == "Yes"


def default(cell: str) -> object:
    return None if cell == "none" else cell


# -- the contract documents' tables ------------------------------------------------------------------------------


@pytest.mark.parametrize("metadata", [COMPLETION, DECISION], ids=["completion", "decision"])
def test_every_input_row_of_the_contract_is_declared(metadata: ModuleMetadata) -> None:
    rows = table(contract_document(metadata.source), "Input")
    assert [row["Input"] for row in rows] == list(metadata.input_names())
    for row, field in zip(rows, metadata.inputs, strict=True):
        assert (field.type, field.required, field.description) == (
            row["Type"],
            required(row["Required"]),
            row["Description"],
        )
        if "Constraints" in row:
            assert field.constraints == row["Constraints"]
        match = re.search(r"Defaults to (\w+)\.", row["Description"])
        if match:
            assert json.dumps(field.default) == match.group(1)


@pytest.mark.parametrize("metadata", [COMPLETION, DECISION], ids=["completion", "decision"])
def test_every_output_row_of_the_contract_is_declared(metadata: ModuleMetadata) -> None:
    rows = table(contract_document(metadata.source), "Output")
    assert [row["Output"] for row in rows] == list(metadata.output_names())
    for row, output in zip(rows, metadata.outputs, strict=True):
        assert (output.type, output.condition, output.description) == (
            row["Type"],
            row["Condition"],
            row["Description"],
        )


def test_decision_configuration_defaults_are_the_seeds() -> None:
    rows = table(contract_document(DECISION.source), "Field")
    assert [row["Field"] for row in rows] == [field.name for field in DECISION.configuration]
    for row, field in zip(rows, DECISION.configuration, strict=True):
        assert (field.type, field.default, field.description) == (
            row["Type"],
            default(row["Default"]),
            row["Description"],
        )


def test_completion_declares_no_configuration_and_no_network() -> None:
    text = contract_document(COMPLETION.source)
    assert "The module has no configuration fields." in text
    assert COMPLETION.configuration == ()
    assert "network access" in text
    assert not COMPLETION.network.outbound


def test_completion_classifies_its_input_and_its_outputs_confidential() -> None:
    # "Security: input and output are classified confidential"
    inputs = [field.classification for field in COMPLETION.inputs]
    outputs = [field.classification for field in COMPLETION.outputs]
    assert inputs + outputs == ["confidential"] * 3


def test_decision_network_boundary_is_the_shared_gateway_on_server_hosts() -> None:
    text = contract_document(DECISION.source)
    assert "server-configured outbound network boundary" in text
    assert "provider hosts are deployment-owned server configuration, never workflow input" in text
    assert DECISION.network.outbound
    assert DECISION.network.target is not None
    assert "shared LLM gateway" in DECISION.network.target
    assert DECISION.network.hosts is not None
    assert "server configuration" in DECISION.network.hosts


@pytest.mark.parametrize("metadata", [COMPLETION, DECISION], ids=["completion", "decision"])
def test_every_failure_row_of_the_contract_is_declared_verbatim(metadata: ModuleMetadata) -> None:
    rows = table(contract_document(metadata.source), "Failure")
    assert [row["Failure"] for row in rows] == [failure.name for failure in metadata.failures]
    for row, failure in zip(rows, metadata.failures, strict=True):
        assert (failure.cause, failure.retryable, failure.recovery) == (
            row["Cause"],
            row["Retryable"],
            row["Recovery"],
        )


def test_forced_completion_declares_the_seeds_budget_and_five_codes() -> None:
    text = contract_document(FORCED_COMPLETION.source)
    assert "Default remains 2." in text
    assert FORCED_COMPLETION.configuration_defaults()["maxCompletionRetries"] == 2
    codes = set(re.findall(r"framework_(?:forced_)?completion_[a-z_]+", text))
    assert {failure.code for failure in FORCED_COMPLETION.failures} == codes
    assert codes == {code.value for code in CompletionCode}


# -- the metadata against the code ------------------------------------------------------------------


def test_every_failure_code_and_retryability_is_the_errors() -> None:
    classes = {
        name: value
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.HarnessError)
    }
    for metadata in (COMPLETION, DECISION):
        for failure in metadata.failures:
            error = classes[failure.exception]
            assert error.code == failure.code
            assert error.retryable == failure.is_retryable, failure.name


def test_the_modules_reference_their_metadata() -> None:
    assert AgentCompletionModule.metadata is COMPLETION
    assert AgentCompletionModule().metadata is COMPLETION
    assert decision.AgentDecisionModule.metadata is DECISION
    assert (AgentCompletionModule.name, AgentCompletionModule.version) == (
        "AgentCompletionModule",
        "2.0",
    )
    assert (COMPLETION.name, COMPLETION.version) == ("AgentCompletionModule", "2.0")
    assert (DECISION.name, DECISION.version) == (
        decision.AgentDecisionModule.name,
        decision.AgentDecisionModule.version,
    )
    assert COMPLETION.inputs[0].name == completion.INPUT_FINAL_ANSWER
    assert (COMPLETION.output_names()) == (
        completion.OUTPUT_FINAL_ANSWER,
        completion.OUTPUT_AGENT_OUTCOME,
    )
    assert [f.message for f in COMPLETION.failures] == [
        completion.REQUIRED_MESSAGE,
        completion.TOO_LONG_MESSAGE,
    ]
    assert DECISION.input_names() == decision.INPUTS
    assert DECISION.output_names() == decision.OUTPUTS
    assert dict(decision.CONFIGURATION_DEFAULTS) == DECISION.configuration_defaults()


def test_forced_completion_defaults_are_the_agent_definitions() -> None:
    defaults = FORCED_COMPLETION.configuration_defaults()
    assert defaults["maxCompletionRetries"] == DEFAULT_MAX_COMPLETION_RETRIES
    assert defaults["maxSteps"] == DEFAULT_MAX_STEPS


class RecordingState(Mapping[str, object]):
    """Workflow state that records every key the module looks at."""

    def __init__(self, values: Mapping[str, object]) -> None:
        self._values = dict(values)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> object:
        self.read.add(key)
        return self._values[key]

    def get(self, key: str, default: object = None) -> object:
        self.read.add(key)
        return self._values.get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("a module must not enumerate the workflow state")

    def __len__(self) -> int:
        return len(self._values)


UNDECLARED = {"agentFinalAnswerDraft": "x", "apiKey": "sk-canary", "deliverables": ["a"]}


@pytest.mark.parametrize(
    "answer", ["Deployment completed.", "   ", None, 7, "x" * 70_000], ids=repr
)
def test_completion_reads_only_declared_inputs_and_writes_only_declared_outputs(
    answer: object,
) -> None:
    state = RecordingState({"agentFinalAnswer": answer, **UNDECLARED})
    module = AgentCompletionModule()
    try:
        outputs: Mapping[str, object] = module.execute(state)
    except errors.IllegalArgumentException:
        outputs = module.outputs
    assert state.read <= set(COMPLETION.input_names())
    assert set(outputs) <= set(COMPLETION.output_names())


RETRIEVAL = {
    "retrieval": {"receipts": [{"receiptId": "r-1", "policyId": "p-1", "decision": "allow"}]}
}


@pytest.mark.parametrize("reply", ["tool", "text"])
def test_decision_reads_only_declared_inputs_and_writes_only_declared_outputs(reply: str) -> None:
    every_input = {
        **EXAMPLE_STATE,
        "agentUserMessage": "go on",
        "agentProjectContext": {"project": "release"},
        "agentObservation": {"ok": True},
        "agentToolCatalog": None,
        "securityContextualToolVisibility": False,
        "agentApprovalRequest": {"action": "deploy"},
        "agentApprovalGranted": True,
        "agentPreviousFailure": "bad reply",
        "agentFailureAttempts": 1,
        **UNDECLARED,
    }
    answer = (
        tool_reply(("workflow_execution_inspect", '{"executionId": "r"}'), metadata=RETRIEVAL)
        if reply == "tool"
        else text_reply("Done.", metadata=RETRIEVAL)
    )
    module_under_test, _, _ = module([answer])
    state = RecordingState(every_input)
    outputs = module_under_test.execute(state)
    assert state.read <= set(DECISION.input_names())
    assert set(outputs) == set(DECISION.output_names())


def test_decision_reads_the_configured_task_and_session_fields_only() -> None:
    config = {"taskField": "ticket", "sessionField": "chat"}
    module_under_test, _, _ = module([text_reply("Done.")], config=config)
    state = RecordingState({"ticket": "t", "chat": "c", **UNDECLARED})
    module_under_test.execute(state)
    assert state.read - set(DECISION.input_names()) == {"ticket", "chat"}


# -- the command line -------------------------------------------------------------------------------


def test_modules_list_shows_every_module() -> None:
    result = CliRunner().invoke(main, ["modules", "list"])
    assert result.exit_code == 0, result.output
    for key, metadata in MODULES.items():
        assert key in result.output
        assert metadata.name in result.output


@pytest.mark.parametrize("name", list(MODULES))
def test_modules_show_json_round_trips(name: str) -> None:
    result = CliRunner().invoke(main, ["modules", "show", name, "--json"])
    assert result.exit_code == 0, result.output
    assert ModuleMetadata.model_validate_json(result.output) == module_metadata(name)


def test_modules_show_prints_the_contract() -> None:
    result = CliRunner().invoke(main, ["modules", "show", "decision"])
    assert result.exit_code == 0, result.output
    for text in ("AgentDecisionModule", "agentTask", "session-default-valor", "SecurityException"):
        assert text in result.output


def test_modules_show_refuses_an_unknown_name_listing_the_names() -> None:
    result = CliRunner().invoke(main, ["modules", "show", "completoin"])
    assert result.exit_code == 2
    assert "completion, decision, forced-completion" in result.output
    with pytest.raises(errors.UnknownModuleError) as caught:
        module_metadata("completoin")
    assert caught.value.code == "module_unknown"
