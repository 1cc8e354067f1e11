"""Scenario keys that close gaps in what the library can notice: the runtime's own default
budget, the exact chunk sequence, cancelled runs, and several executions of one completion
module."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent.definition import DEFAULT_MAX_COMPLETION_RETRIES
from harness.protocol.chunks import ForcedCompletionChunk
from harness.scenarios import RunOptions, ScenarioFileError, load_scenarios, run_scenario
from harness.scenarios.build import agent_definition
from harness.scenarios.expect import ABSENT, Mismatch, check_chunk_sequence
from harness.scenarios.format import ChunkExpect
from harness.scenarios.report import failure_lines

AGENT = """\
name: s
stores: [memory]
script:
  - text: Paris.
  - text: Still Paris.
agent:
  output_schema: {type: object, properties: {city: {type: string}}, required: [city]}
  max_completion_retries: 1
"""
EXHAUSTED: list[dict[str, object]] = [
    {"phase": "started", "trigger": "terminal_text", "max_attempts": 1},
    {"phase": "attempt_started", "attempt": 1},
    {"phase": "attempt_failed", "attempt": 1, "code": "framework_completion_tool_missing"},
    {"phase": "exhausted", "code": "framework_forced_completion_exhausted"},
]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def mismatches(tmp_path: Path, text: str) -> list[Mismatch]:
    results = run_scenario(load_scenarios([write(tmp_path, text)])[0], RunOptions(workdir=tmp_path))
    assert all(r.error is None for r in results), [r.error for r in results]
    return [m for r in results for m in r.mismatches]


def refusal(tmp_path: Path, text: str) -> str:
    with pytest.raises(ScenarioFileError) as raised:
        load_scenarios([write(tmp_path, text)])
    return str(raised.value)


# -- the runtime's default budget -------------------------------------------------------------------


def test_an_omitted_budget_is_the_runtimes_default(tmp_path: Path) -> None:
    loaded = load_scenarios([write(tmp_path, AGENT.replace("  max_completion_retries: 1\n", ""))])
    scenario = loaded[0].scenario
    assert scenario.agent is not None
    assert scenario.agent.max_completion_retries is None
    assert "max_completion_retries" not in scenario.agent.model_dump(exclude_none=True)
    definition = agent_definition(scenario, scenario.agent)
    assert definition.max_completion_retries == DEFAULT_MAX_COMPLETION_RETRIES == 2
    assert "max_completion_retries" not in definition.model_fields_set


def test_a_given_budget_is_passed_on_zero_included(tmp_path: Path) -> None:
    scenario = load_scenarios([write(tmp_path, AGENT.replace("retries: 1", "retries: 0"))])[0]
    assert scenario.scenario.agent is not None
    assert agent_definition(scenario.scenario, scenario.scenario.agent).max_completion_retries == 0


def test_a_negative_budget_is_refused(tmp_path: Path) -> None:
    message = refusal(tmp_path, AGENT.replace("retries: 1", "retries: -1"))
    assert "agent.max_completion_retries: Input should be greater than or equal to 0" in message


# -- chunk_sequence ---------------------------------------------------------------------------------


def sequence_yaml(items: list[dict[str, object]]) -> str:
    lines = "".join(
        "    - {" + ", ".join(f"{k}: {v}" for k, v in item.items()) + "}\n" for item in items
    )
    return "expect:\n  chunk_sequence:\n" + lines


def test_the_exact_chunk_sequence_passes(tmp_path: Path) -> None:
    assert mismatches(tmp_path, AGENT + sequence_yaml(EXHAUSTED)) == []


@pytest.mark.parametrize(
    ("items", "key", "expected", "actual"),
    [
        # one chunk short: the chunk left over is named
        (EXHAUSTED[:-1], "chunk_sequence[3]", ABSENT, "exhausted"),
        # exhausted twice: the item no chunk faces is named
        ([*EXHAUSTED, EXHAUSTED[-1]], "chunk_sequence[4]", EXHAUSTED[-1], ABSENT),
        # a gap (chunks may not be skipped): the first item out of place, by its field
        (
            [EXHAUSTED[0], *EXHAUSTED[2:]],
            "chunk_sequence[1].phase",
            "attempt_failed",
            "attempt_started",
        ),
        # one field differs
        (
            [*EXHAUSTED[:3], {**EXHAUSTED[3], "max_attempts": 2}],
            "chunk_sequence[3].max_attempts",
            2,
            1,
        ),
    ],
    ids=["short", "exhausted-twice", "gap", "field"],
)
def test_any_other_sequence_fails_naming_the_first_difference(
    tmp_path: Path, items: list[dict[str, object]], key: str, expected: object, actual: object
) -> None:
    (mismatch,) = mismatches(tmp_path, AGENT + sequence_yaml(items))
    assert mismatch.key == key
    assert mismatch.expected == expected
    shown = mismatch.actual["phase"] if isinstance(mismatch.actual, dict) else mismatch.actual
    assert shown == actual


def test_an_empty_sequence_means_no_forced_phase(tmp_path: Path) -> None:
    finished = AGENT.replace("  - text: Still Paris.\n", "").replace(
        "  - text: Paris.\n", "  - tool_calls: [{name: __finish__, arguments: {city: Paris}}]\n"
    )
    assert mismatches(tmp_path, finished + "expect:\n  chunk_sequence: []\n") == []
    (mismatch,) = mismatches(tmp_path, AGENT + "expect:\n  chunk_sequence: []\n")
    assert mismatch.key == "chunk_sequence[0]"
    assert mismatch.expected is ABSENT
    assert mismatch.actual["phase"] == "started"


def chunk(phase: str, **fields: object) -> ForcedCompletionChunk:
    return ForcedCompletionChunk.model_validate(
        {"phase": phase, "trigger": "max_steps", "max_attempts": 1, **fields}
    )


def test_check_chunk_sequence_takes_plain_chunks_and_names_the_chunk_left_over() -> None:
    wanted = [ChunkExpect(phase="started"), ChunkExpect(phase="exhausted", max_attempts=1)]
    chunks = [chunk("started"), chunk("exhausted"), chunk("exhausted")]
    assert check_chunk_sequence(wanted, chunks[:2]) == []
    assert check_chunk_sequence(wanted, chunks) == [
        Mismatch(
            "chunk_sequence[2]",
            ABSENT,
            {"phase": "exhausted", "trigger": "max_steps", "max_attempts": 1},
        )
    ]
    assert check_chunk_sequence(wanted, chunks[:1]) == [
        Mismatch("chunk_sequence[1]", {"phase": "exhausted", "max_attempts": 1}, ABSENT)
    ]


def test_the_report_line_names_the_first_difference_on_the_key_s_line(tmp_path: Path) -> None:
    path = write(tmp_path, AGENT + sequence_yaml([*EXHAUSTED[:3], {**EXHAUSTED[3], "code": "x"}]))
    loaded = load_scenarios([path])[0]
    (result,) = run_scenario(loaded, RunOptions(workdir=tmp_path))
    (line,) = failure_lines(result)
    sequence_line = path.read_text().splitlines().index("  chunk_sequence:") + 1
    assert f":{sequence_line} " in line
    assert line.endswith(
        "expect.chunk_sequence[3].code: expected 'x', got 'framework_forced_completion_exhausted'"
    )
    short = write(tmp_path, AGENT + sequence_yaml([*EXHAUSTED, EXHAUSTED[-1]]))
    (result,) = run_scenario(load_scenarios([short])[0], RunOptions(workdir=tmp_path))
    (line,) = failure_lines(result)
    assert line.endswith("got (absent)")
    assert len(line) < 300, "the differing element, never two whole lists"


# -- cancel -----------------------------------------------------------------------------------------


def test_a_cancelled_scenario_run_is_expected_as_cancelled(tmp_path: Path) -> None:
    text = AGENT.replace("stores: [memory]", "runtimes: [js, dbos]\nstores: [memory, sqlite]")
    text += "cancel: {after: forced_attempt_persisted}\n"
    expect = (
        "expect:\n  status: cancelled\n  error_code: null\n  forced_calls: 0\n"
        "  outcome_record: {stop_reason: cancelled, final_message: Paris.}\n"
        "  envelope: {outcome: partial, structuredOutput: null}\n"
    )
    assert mismatches(tmp_path, text + expect) == []
    assert [m.key for m in mismatches(tmp_path, text + "expect: {status: failed}\n")] == [
        "status"
    ] * 4


def test_a_cancellation_the_run_never_reaches_fails_the_cell(tmp_path: Path) -> None:
    text = AGENT + "cancel: {after: forced_attempt_persisted, occurrence: 2}\n"
    (result,) = run_scenario(load_scenarios([write(tmp_path, text)])[0])
    assert result.error_code == "cancel_not_reached"
    assert result.error is not None
    assert "before it could be cancelled after forced_attempt_persisted (occurrence 2)" in (
        result.error
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            AGENT + "cancel: {after: run_finished}\n",
            "cancel.after: Input should be 'run_started', 'work_step_persisted', "
            "'forced_entered', 'forced_attempt_persisted' or 'forced_attempt_finished'",
        ),
        (
            AGENT + "faults: [{crash_after: forced_entered}]\ncancel: {after: forced_entered}\n",
            "cancel and a fault both act after forced_entered (occurrence 1); the run can either "
            "crash or be cancelled there, so move one of them",
        ),
        (
            AGENT + "expect: {status: cancelled}\n",
            "expect.status cancelled needs a 'cancel' block",
        ),
        (
            "name: c\nkind: completion\ninput: {agentFinalAnswer: x}\n"
            "cancel: {after: run_started}\n",
            "a cancel block does not apply to a completion scenario",
        ),
        (
            AGENT + "cancel: {after: forced_entered, occurrence: 0}\n",
            "cancel.occurrence: Input should be greater than 0",
        ),
    ],
    ids=["run-finished", "same-point-as-a-fault", "status-without-cancel", "module", "zero"],
)
def test_a_cancel_block_that_cannot_act_is_refused(tmp_path: Path, text: str, message: str) -> None:
    assert message in refusal(tmp_path, text)


# -- several executions of one completion module ---------------------------------------------------

EXECUTIONS = """\
name: c
kind: completion
executions:
  - input: {agentFinalAnswer: First.}
    expect: {status: completed, outputs: {finalAnswer: First., agentOutcome: final_answer}}
  - input: {agentFinalAnswer: " "}
    expect: {status: failed, outputs: {}}
  - input: {agentFinalAnswer: Third.}
    expect: {status: completed, outputs: {finalAnswer: Third., agentOutcome: final_answer}}
"""


def test_executions_run_in_order_through_one_module(tmp_path: Path) -> None:
    assert mismatches(tmp_path, EXECUTIONS) == []


def test_an_execution_mismatch_is_keyed_by_its_index(tmp_path: Path) -> None:
    text = EXECUTIONS.replace("expect: {status: failed, outputs: {}}", "expect: {outputs: {a: 1}}")
    assert mismatches(tmp_path, text) == [Mismatch("executions.1.outputs", {"a": 1}, {})]


def test_executions_share_one_module_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.modules import completion

    created: list[object] = []
    original = completion.AgentCompletionModule.__init__

    def counting(self: completion.AgentCompletionModule) -> None:
        created.append(self)
        original(self)

    monkeypatch.setattr(completion.AgentCompletionModule, "__init__", counting)
    assert mismatches(tmp_path, EXECUTIONS) == []
    assert len(created) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            EXECUTIONS + "input: {agentFinalAnswer: x}\n",
            "give either input (with expect) or executions, not both",
        ),
        (
            EXECUTIONS + "expect: {status: completed}\n",
            "with executions, each execution has its own expect",
        ),
        (
            EXECUTIONS.replace("kind: completion", "kind: decision\nscript: [{text: x}]"),
            "executions apply to a completion scenario only, not to a decision one",
        ),
        (
            "name: c\nkind: completion\nexecutions: []\n",
            "executions: List should have at least 1 item after validation, not 0",
        ),
        (
            "name: c\nkind: completion\nexecutions:\n  - input: {agentFinalAnswer: x}\n",
            "executions.0.expect: required key is missing",
        ),
        (
            EXECUTIONS.replace("{status: failed, outputs: {}}", "{forced_calls: 0}"),
            "executions.1: Value error, expect key(s) forced_calls do not apply to a "
            "completion scenario",
        ),
        (
            EXECUTIONS.replace("{status: failed, outputs: {}}", "{status: cancelled}"),
            "a module execution is never cancelled; expect completed or failed",
        ),
        (
            "name: c\nkind: completion\n",
            "a completion scenario needs an 'input' block (the workflow state) or 'executions'",
        ),
    ],
    ids=[
        "and-input",
        "and-expect",
        "decision",
        "empty",
        "no-expect",
        "agent-key",
        "cancelled",
        "neither",
    ],
)
def test_invalid_executions_are_refused_with_what_to_do(
    tmp_path: Path, text: str, message: str
) -> None:
    assert message in refusal(tmp_path, text)


# -- skills ----------------------------------------------------------------------------------------


def test_loading_a_catalog_skill_returns_its_body(tmp_path: Path) -> None:
    """The catalog lists names and descriptions in the prompt; `load_skill` returns the body."""
    from harness.agent.tools import run_tool
    from harness.llm.models import LlmToolCall

    skills = (
        "  skills:\n    catalog:\n      - {name: geography, description: Capitals, "
        "body: Look it up in the atlas.}\n"
    )
    scenario = load_scenarios([write(tmp_path, AGENT + skills)])[0].scenario
    assert scenario.agent is not None
    definition = agent_definition(scenario, scenario.agent)
    call = LlmToolCall(id="c1", name="load_skill", arguments='{"name": "geography"}')
    outcome = run_tool(definition, call, lambda call, tool: True)
    assert outcome.result == {"name": "geography", "body": "Look it up in the atlas."}


# -- chunks_in_order --------------------------------------------------------------------------------

IN_ORDER = "expect:\n  chunks_in_order:\n"


def test_chunks_in_order_places_forced_chunks_among_step_chunks(tmp_path: Path) -> None:
    items = (
        "    - {kind: step_finish, step: 0}\n"
        "    - {kind: forced_completion, phase: attempt_started, attempt: 1}\n"
        "    - {kind: step_start, phase: forced}\n"
        "    - {kind: text_delta}\n"
        "    - {kind: forced_completion, phase: attempt_failed, attempt: 1}\n"
        "    - {kind: run_finish, status: failed, error_code: framework_forced_completion_exhausted}\n"
    )
    assert mismatches(tmp_path, AGENT + IN_ORDER + items) == []
    swapped = (
        "    - {kind: step_start, phase: forced}\n"
        "    - {kind: forced_completion, phase: attempt_started, attempt: 1}\n"
    )
    (mismatch,) = mismatches(tmp_path, AGENT + IN_ORDER + swapped)
    assert mismatch.key == "chunks_in_order[1]"
    assert mismatch.expected == {
        "kind": "forced_completion",
        "phase": "attempt_started",
        "attempt": 1,
    }
    # the order differs: the chunk is there, before the one the item before matched
    assert isinstance(mismatch.actual, str)
    assert mismatch.actual.startswith("only chunk #")
    assert ", which the item before matched" in mismatch.actual


def test_chunks_in_order_names_the_field_of_the_nearest_chunk_of_its_kind(tmp_path: Path) -> None:
    """An item whose kind follows but whose fields differ: the first differing field of the
    nearest such chunk is named, not the whole stream."""
    items = (
        "    - {kind: step_finish, step: 0}\n"
        "    - {kind: forced_completion, phase: attempt_failed, attempt: 2}\n"
    )
    (mismatch,) = mismatches(tmp_path, AGENT + IN_ORDER + items)
    assert mismatch.key == "chunks_in_order[1].attempt"
    assert mismatch.expected == 2
    assert isinstance(mismatch.actual, str)
    assert mismatch.actual.startswith("1 (chunk #")
    assert "the nearest forced_completion chunk after the item before" in mismatch.actual
    # a kind the stream lacks: the stream as the items see it, never a text delta's text
    (absent,) = mismatches(
        tmp_path, AGENT + IN_ORDER + "    - {kind: text_delta}\n    - {kind: tool_result}\n"
    )
    assert absent.key == "chunks_in_order[1]"
    assert isinstance(absent.actual, list)
    assert all("text" not in chunk for chunk in absent.actual)


def test_a_chunks_in_order_item_gives_only_fields_of_its_kind(tmp_path: Path) -> None:
    message = refusal(tmp_path, AGENT + IN_ORDER + "    - {kind: step_start, granted: true}\n")
    assert "a step_start chunk has no field granted; its fields: phase, step" in message


# -- contains_text ----------------------------------------------------------------------------------


def test_contains_text_says_where_the_request_text_parts_from_the_snippet() -> None:
    from harness.scenarios.expect import where_texts_part

    text = "System prompt.\nTool results: weather=sunny, time=noon.\n[completion] Finish now."
    shown = where_texts_part(["Tool results: time=noon, weather=sunny"], text)
    assert shown == (
        "the text holds the snippet's first 14 character(s), up to 'Tool results: ', then goes "
        "on 'weather=sunny, time=noon.\\n[compl' where the snippet has 'time=noon, weather=sunny'"
    )
    assert where_texts_part(["held", "Zebra"], "held text") == (
        "no text holding the snippet's start 'Zebra'"
    )
