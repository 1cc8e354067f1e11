"""`expect.forced_history`: the conversation each forced attempt's request carries, checked from
the end of each forced request, the same way in process and on a target's wire requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.llm.models import LlmRequest, UserMessage
from harness.scenarios import RunOptions, ScenarioFileError, expand, load_scenarios, run_scenario
from harness.scenarios.expect import ABSENT, Mismatch, ObservedRequest, check_forced_history
from harness.scenarios.format import HistoryMessageExpect
from harness.scenarios.history import json_equal, json_subset
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.targets import REFERENCE_TARGET

# attempt 1: a __finish__ the schema refuses; attempt 2: text; the budget of 2 is spent
SCENARIO = """\
name: s
provider: {provider}
stores: [memory]
script:
  - text: Paris.
  - tool_calls: [{{name: __finish__, arguments: {{city: 7}}}}]
  - text: Still Paris.
agent:
  user_message: Capital?
  output_schema: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
  max_completion_retries: 2
expect:
  forced_history:
{history}
"""
FIRST = """\
    - - {role: user, text: "Capital?"}
      - {role: assistant, text: Paris., tool_calls: []}
      - {role: completion, attempt: 1, max_attempts: 2}
"""
SECOND = """\
    - - {role: completion, attempt: 1, max_attempts: 2}
      - {role: assistant, tool_calls: [{name: __finish__, arguments: {city: 7.0}}]}
      - {role: tool, name: __finish__, result: {acknowledged: false}%s}
      - {role: completion, attempt: 2, max_attempts: 2}
"""
HISTORY = FIRST + SECOND % ", is_error: true"


def write(tmp_path: Path, history: str, provider: str = "anthropic") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(provider=provider, history=history), encoding="utf-8")
    return path


def mismatches(tmp_path: Path, history: str, provider: str = "anthropic") -> list[Mismatch]:
    loaded = load_scenarios([write(tmp_path, history, provider)])[0]
    results = run_scenario(loaded, RunOptions(workdir=tmp_path))
    assert all(r.error is None for r in results), [r.error for r in results]
    return [m for r in results for m in r.mismatches]


def refusal(tmp_path: Path, history: str, provider: str = "anthropic") -> str:
    with pytest.raises(ScenarioFileError) as raised:
        load_scenarios([write(tmp_path, history, provider)])
    return str(raised.value)


def test_the_reference_carries_every_earlier_attempt(tmp_path: Path) -> None:
    assert mismatches(tmp_path, HISTORY) == []
    assert mismatches(tmp_path, FIRST + SECOND % "", provider="openai") == []


def test_one_entry_per_forced_request(tmp_path: Path) -> None:
    assert mismatches(tmp_path, FIRST) == [
        Mismatch("forced_history", "1 forced request(s)", "2 forced request(s)")
    ]


def test_messages_out_of_step_with_the_items_are_listed_in_a_few_words(tmp_path: Path) -> None:
    without_result = SECOND.replace(
        "      - {role: tool, name: __finish__, result: {acknowledged: false}%s}\n", ""
    )
    assert mismatches(tmp_path, FIRST + without_result) == [
        Mismatch(
            "forced_history[1]",
            [
                "completion (attempt 1 of 2)",
                "assistant calling __finish__",
                "completion (attempt 2 of 2)",
            ],
            [
                "completion (attempt 1 of 2)",
                "assistant calling __finish__",
                "tool result of __finish__",
                "completion (attempt 2 of 2)",
            ],
        )
    ]


def test_no_completion_message_comes_before_the_items(tmp_path: Path) -> None:
    # the entry is how the request ends, but attempt 1's message before it is not pinned
    tail = """\
    - - {role: tool, name: __finish__}
      - {role: completion, attempt: 2, max_attempts: 2}
"""
    (found,) = mismatches(tmp_path, FIRST + tail)
    assert found.key == "forced_history[1]"
    assert found.actual[0] == "completion (attempt 1 of 2)"
    assert len(found.actual) == 4


def test_the_first_differing_item_and_field_is_named(tmp_path: Path) -> None:
    accepted = HISTORY.replace("acknowledged: false", "acknowledged: true")
    assert mismatches(tmp_path, accepted) == [
        Mismatch(
            "forced_history[1][2].result",
            {"acknowledged": True},
            {"acknowledged": False, "errors": ["/city: 7 is not of type 'string'"]},
        )
    ]
    no_flag = HISTORY.replace("is_error: true", "is_error: false")
    assert mismatches(tmp_path, no_flag) == [Mismatch("forced_history[1][2].is_error", False, True)]
    other_text = HISTORY.replace("text: Paris.", "text: Rome.")
    assert mismatches(tmp_path, other_text) == [
        Mismatch("forced_history[0][1].text", "Rome.", "Paris.")
    ]
    other_attempt = HISTORY.replace("attempt: 2, max_attempts: 2", "attempt: 3, max_attempts: 2")
    assert mismatches(tmp_path, other_attempt) == [Mismatch("forced_history[1][3].attempt", 3, 2)]
    other_arguments = HISTORY.replace("city: 7.0", "city: '7'")
    assert mismatches(tmp_path, other_arguments) == [
        Mismatch(
            "forced_history[1][1].tool_calls",
            [{"name": "__finish__", "arguments": {"city": "7"}}],
            [{"name": "__finish__", "arguments": {"city": 7}}],
        )
    ]


def test_a_completion_message_that_names_no_attempt_has_none() -> None:
    request = LlmRequest(model="m", messages=(UserMessage(content="[completion] Finish now."),))
    observed = ObservedRequest(
        request=request, fragments=(), memory_injected=False, completion_metadata=None
    )
    item = HistoryMessageExpect(role="completion", attempt=1)
    assert check_forced_history([[item]], [observed]) == [
        Mismatch("forced_history[0][0].attempt", 1, ABSENT)
    ]
    assert check_forced_history([[HistoryMessageExpect(role="completion")]], [observed]) == []


def test_json_values_compare_numbers_by_value_but_never_a_boolean_as_a_number() -> None:
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not json_equal(True, 1)
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert json_subset({"a": 1}, {"a": 1.0, "b": 2})
    assert not json_subset({"a": [1]}, {"a": [1, 2]})


@pytest.mark.parametrize(
    ("history", "message"),
    [
        (
            "    - - {role: completion, attempt: 1, text: x}\n",
            "a completion message has no field text; its fields: attempt, max_attempts",
        ),
        (
            "    - - {role: user, text: 'Capital?'}\n",
            "entry 0 must end with a completion item",
        ),
        ("    - []\n", "entry 0 must end with a completion item"),
        (
            "    - - {role: tool, is_error: true}\n      - {role: completion}\n",
            "expect.forced_history[0][0].is_error: a tool result on openai carries no error flag",
        ),
    ],
)
def test_what_can_never_pass_is_refused_at_load(tmp_path: Path, history: str, message: str) -> None:
    assert message in refusal(tmp_path, history, provider="openai")


def test_a_module_scenario_has_no_forced_history(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "name: m\nkind: completion\ninput: {agentFinalAnswer: x}\n"
        "expect: {forced_history: [[{role: completion}]]}\n",
        encoding="utf-8",
    )
    with pytest.raises(ScenarioFileError, match="forced_history do not apply"):
        load_scenarios([path])


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_target_is_read_from_the_wire_as_the_reference_is(tmp_path: Path, provider: str) -> None:
    history = HISTORY if provider != "openai" else FIRST + SECOND % ""
    wrong = history.replace("acknowledged: false", "acknowledged: true")
    for text, expected in ((history, []), (wrong, ["forced_history[1][2].result"])):
        cells = expand(load_scenarios([write(tmp_path, text, provider)]), RunOptions())
        with target_runner(TargetSpec(callable=REFERENCE_TARGET)) as runner:
            (result,) = [runner.run_cell(cell, RunOptions()) for cell in cells]
        assert result.error is None, result.error
        assert [m.key for m in result.mismatches] == expected
