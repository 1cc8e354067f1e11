"""Scenario files written to break the harness: each is refused at load with a located
`ScenarioFileError` (exit 2 from `harness run`), never a traceback, a crash later in the run, or
a request to the network."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from harness.agent.definition import AgentDefinition, AgentTool
from harness.agent.output import InvalidOutput, output_validator, validate_output
from harness.cassettes import CassetteTransport, canonical_request_key
from harness.cassettes.key import VolatileFieldError
from harness.cli import main
from harness.errors import IllegalArgumentException
from harness.scenarios import Expect, load_scenarios, run_scenario
from harness.scenarios.format import Scenario, StoreCheckSpec
from harness.scenarios.load import LoadedScenario
from tests.support.fake_provider import FakeProvider, Reply, serve
from tests.support.scenario_files import refusal, write

AGENT = """\
name: hostile
stores: [memory]
script: [{text: done}]
agent:
  system_prompt: CANARY-system-prompt
"""


# -- 1. every YAML problem is located ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        pytest.param("name: a\x01b\n", "1:8", "control character U+0001", id="control-character"),
        pytest.param("name: ok\nx: \x00\n", "2:4", "control character U+0000", id="nul"),
        pytest.param("{[a]: 1}\n", "1:2", "found unhashable key", id="unhashable-key"),
        pytest.param("? {a: 1}\n: x\n", "1:3", "found unhashable key", id="mapping-key"),
        pytest.param("name: !!python/object:os.system x\n", "1:7", "constructor", id="python-tag"),
        pytest.param(
            "name: !custom x\n", "1:7", "constructor for the tag '!custom'", id="local-tag"
        ),
        pytest.param("name: !!int twelve\n", "1:7", "not a valid int", id="bad-int"),
        pytest.param("name: !!bool maybe\n", "1:7", "not a valid bool", id="bad-bool"),
        pytest.param("name: !!int\n", "1:7", "not a valid int", id="empty-int"),
        pytest.param("name: 2001-02-30\n", "1:7", "not a valid timestamp", id="impossible-date"),
        pytest.param("name: !!int 0x" + "f" * 4000 + "\n", "1:7", "not a valid int", id="huge-int"),
        pytest.param("name: *nowhere\n", "1:7", "found undefined alias", id="undefined-alias"),
        pytest.param("name: a\n---\nname: b\n", "2:1", "another document", id="two-documents"),
        pytest.param("name: [a\n", "2:1", "invalid YAML", id="unclosed"),
        pytest.param("[" * 2_000, "1:1001", "nesting depth", id="parser-depth"),
    ],
)
def test_a_yaml_problem_is_a_located_error(
    tmp_path: Path, text: str, where: str, problem: str
) -> None:
    path = write(tmp_path, text)
    message = refusal(path)
    assert message.startswith(f"{path}:{where}: invalid YAML"), message
    assert problem in message


def test_a_value_that_cannot_be_read_is_not_repeated_in_the_message(tmp_path: Path) -> None:
    message = refusal(write(tmp_path, "name: !!int CANARY-secret\n"))
    assert "CANARY" not in message


def test_harness_run_exits_2_with_the_location_and_no_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, "{[a]: 1}\n")
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {path}:1:2: invalid YAML: found unhashable key")
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# -- 2. what the agent builder refuses is refused at load, at its key -------------------------------


@pytest.mark.parametrize(
    ("agent", "where", "message"),
    [
        pytest.param(
            "  tools: [{name: a}, {name: a}]\n",
            "6:29 agent.tools.1.name",
            "tool names must be unique; 'a' is used twice",
            id="duplicate-tools",
        ),
        pytest.param(
            "  tools: [{name: ''}]\n",
            "6:18 agent.tools.0.name",
            "String should match pattern",
            id="empty-tool-name",
        ),
        pytest.param(
            "  tools: [{name: __finish__}]\n",
            "6:18 agent.tools.0.name",
            "__finish__ is the completion tool",
            id="completion-tool-name",
        ),
        pytest.param(
            "  tools: [{name: load_skill}]\n  skills: {catalog: [{name: s}]}\n",
            "6:18 agent.tools.0.name",
            "'load_skill' is a built-in skill tool",
            id="skill-tool-name",
        ),
        pytest.param(
            "  tools: [{name: bash}]\n  workspace: {tools: [{name: bash}]}\n",
            "7:30 agent.workspace.tools.0.name",
            "'bash' is used twice",
            id="workspace-clash",
        ),
        pytest.param(
            "  skills: {catalog: [{name: ''}]}\n",
            "6:29 agent.skills.catalog.0.name",
            "at least 1 character",
            id="empty-skill-name",
        ),
        pytest.param(
            "  temperature: 3\n",
            "6:16 agent.temperature",
            "less than or equal to 2",
            id="temperature",
        ),
        pytest.param(
            "  temperature: .nan\n",
            "6:16 agent.temperature",
            "(found nan)",
            id="temperature-nan",
        ),
        pytest.param(
            "  llm_config_override: {temperature: 7}\n",
            "6:38 agent.llm_config_override.temperature",
            "less than or equal to 2",
            id="override-temperature",
        ),
        pytest.param(
            "  llm_config_override: {model: ''}\n",
            "6:32 agent.llm_config_override.model",
            "at least 1 character",
            id="override-model",
        ),
    ],
)
def test_an_agent_the_run_would_refuse_is_refused_at_its_key(
    tmp_path: Path, agent: str, where: str, message: str
) -> None:
    path = write(tmp_path, AGENT + agent)
    position, key = where.split(" ")
    text = refusal(path)
    assert text.startswith(f"{path}:{position}: {key}: "), text
    assert message in text
    assert "CANARY" not in text, "the agent's prompt is not part of the message"


def test_the_definition_refuses_what_the_loop_would_crash_on() -> None:
    with pytest.raises(ValueError, match="at least 1 character"):
        AgentDefinition(model="")
    with pytest.raises(ValueError, match="'t' is used twice"):
        AgentDefinition(tools=(AgentTool(name="t"), AgentTool(name="t")))


def test_a_valid_agent_with_skills_and_workspace_loads(tmp_path: Path) -> None:
    text = AGENT + (
        "  tools: [{name: lookup}]\n"
        "  skills: {catalog: [{name: s}]}\n"
        "  workspace: {tools: [{name: bash}]}\n"
        "  llm_config_override: {temperature: 0.5, model: gpt-4o}\n"
    )
    [loaded] = load_scenarios([write(tmp_path, text)])
    assert all(result.passed for result in run_scenario(loaded))


# -- 3. volatile fields are JSON pointers -----------------------------------------------------------


@pytest.mark.parametrize(
    ("pointer", "complaint"),
    [
        pytest.param("''", "the whole body", id="empty"),
        pytest.param("messages", "starting with '/'", id="no-slash"),
        pytest.param("/a~2b", "'~0'", id="bad-escape"),
        pytest.param("/a~", "'~0'", id="trailing-tilde"),
    ],
)
def test_a_volatile_entry_that_is_not_a_json_pointer_is_refused_at_load(
    tmp_path: Path, pointer: str, complaint: str
) -> None:
    path = write(tmp_path, AGENT + f"volatile: ['/user', {pointer}]\n")
    text = refusal(path)
    assert text.startswith(f"{path}:6:21: volatile.1: "), text
    assert complaint in text


OPENAI_URL = "https://api.openai.com/v1/chat/completions"
BODY = {"model": "m", "messages": [{"role": "user", "content": str(n)} for n in range(5)]}


@pytest.mark.parametrize("digit", ["\u00b2", "\u0663", "\uff13"])  # ², Arabic-Indic 3, fullwidth 3
def test_a_non_ascii_digit_is_a_member_name_never_an_array_index(
    tmp_path: Path, digit: str
) -> None:
    path = write(tmp_path, AGENT + f"volatile: ['/messages/{digit}']\n")
    assert load_scenarios([path])
    plain = canonical_request_key("POST", OPENAI_URL, {}, json.dumps(BODY))
    with_pointer = canonical_request_key(
        "POST", OPENAI_URL, {}, json.dumps(BODY), volatile=[f"/messages/{digit}"]
    )
    assert with_pointer == plain, "no message is removed"
    assert plain != canonical_request_key(
        "POST", OPENAI_URL, {}, json.dumps(BODY), volatile=["/messages/3"]
    )


def record_one(tmp_path: Path, volatile: list[str]) -> str:
    """Record one request through a new `CassetteTransport` with `volatile`; its key."""
    transport = CassetteTransport(
        tmp_path / f"{len(list(tmp_path.iterdir()))}.json",
        mode="once",
        inner=httpx2.MockTransport(lambda request: httpx2.Response(200, json={})),
        volatile=volatile,
    )
    with httpx2.Client(transport=transport) as client:
        client.post(OPENAI_URL, json=BODY)
    return transport.recorded[0].key


def test_cassette_transport_applies_the_same_pointer_check(tmp_path: Path) -> None:
    assert record_one(tmp_path, ["/messages/²"]) == canonical_request_key(
        "POST", OPENAI_URL, {}, json.dumps(BODY)
    )
    with pytest.raises(VolatileFieldError, match="'~0'"):
        record_one(tmp_path, ["/messages/~2"])
    with pytest.raises(VolatileFieldError, match="starting with '/'"):
        CassetteTransport(tmp_path / "new.json", mode="all", volatile=["messages"])


# -- 4. store_check extra columns are plain, new identifiers ----------------------------------------

STORE_CHECK = "name: drift\nkind: store_check\nstore_check:\n  extra_columns: {columns}\n"


@pytest.mark.parametrize(
    ("columns", "key", "complaint"),
    [
        pytest.param(
            "[status]", "extra_columns.0", "a column the store already has", id="existing"
        ),
        pytest.param("[ok, Run_ID]", "extra_columns.1", "already has", id="existing-other-case"),
        pytest.param("['a b']", "extra_columns.0", "expected a column name", id="space"),
        pytest.param("['1x']", "extra_columns.0", "expected a column name", id="digit-first"),
        pytest.param("[x" + "y" * 63 + "]", "extra_columns.0", "up to 62", id="too-long"),
        pytest.param(
            """['x"; DROP TABLE harness_runs; --']""",
            "extra_columns.0",
            "expected a column name",
            id="injection",
        ),
        pytest.param("[flag, FLAG]", "extra_columns", "repeated: FLAG, flag", id="duplicate"),
    ],
)
def test_an_extra_column_must_be_a_new_plain_identifier(
    tmp_path: Path, columns: str, key: str, complaint: str
) -> None:
    path = write(tmp_path, STORE_CHECK.format(columns=columns))
    text = refusal(path)
    assert f": store_check.{key}: " in text, text
    assert complaint in text


def test_a_schema_version_the_harness_never_wrote_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "name: d\nkind: store_check\nstore_check: {schema_version: 4}\n")
    assert "store_check.schema_version: Input should be less than or equal to 3" in refusal(path)


def test_extra_columns_are_quoted_when_the_store_is_built(tmp_path: Path) -> None:
    """Defence in depth: even a name the loader refuses stays one column name."""
    odd = 'odd "name"; DROP TABLE harness_runs; --'
    scenario = Scenario.model_construct(
        name="drift",
        kind="store_check",
        store_check=StoreCheckSpec.model_construct(
            store="sqlite", schema_version=3, extra_columns=[odd]
        ),
        expect=Expect(status="failed", differences=[odd]),
    )
    [result] = run_scenario(LoadedScenario(scenario, tmp_path / "s.yaml", 1, {}))
    assert result.error is None
    assert result.passed, result.mismatches


# -- 5. cassette paths ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cassette",
    ["''", "cassettes/", "cassettes/x.yaml", "cassettes/.json", '"a\\0b.json"', "cassettes"],
)
def test_a_cassette_that_is_not_a_json_file_path_is_refused(tmp_path: Path, cassette: str) -> None:
    path = write(tmp_path, f"name: c\ncassette: {cassette}\nagent: {{}}\n")
    text = refusal(path)
    assert text.startswith(f"{path}:2:11: cassette: "), text
    assert "expected the path of a .json cassette file" in text


@pytest.mark.parametrize("cassette", ["recorded/new.json", "/tmp/elsewhere/new.json"])
def test_a_cassette_that_does_not_exist_yet_loads(tmp_path: Path, cassette: str) -> None:
    [loaded] = load_scenarios([write(tmp_path, f"name: c\ncassette: {cassette}\nagent: {{}}\n")])
    assert loaded.scenario.cassette == cassette


# -- 6. output schemas never reach the network ------------------------------------------------------


def schema_server() -> AbstractContextManager[FakeProvider]:
    """A loopback server that would answer any GET with a valid schema; it keeps each request."""
    return serve(lambda request: Reply(body={"type": "object"}))


def test_a_remote_ref_is_refused_at_load_and_never_fetched(tmp_path: Path) -> None:
    with schema_server() as server:
        base = server.base_url
        path = write(tmp_path, AGENT + f"  output_schema: {{$ref: '{base}/answer.json'}}\n")
        text = refusal(path)
        assert text.startswith(f"{path}:6:18: agent.output_schema: "), text
        assert f"remote $ref '{base}/answer.json' is not fetched" in text
        assert "inline the schema under $defs" in text
    assert server.received == []


def test_the_validator_cannot_fetch_even_when_validating() -> None:
    with schema_server() as server:
        remote = {"$ref": f"{server.base_url}/s.json"}
        validator = output_validator({"type": "object"}).evolve(schema=remote)
        with pytest.raises(IllegalArgumentException, match="cannot be resolved offline"):
            validate_output(validator, "{}")
    assert server.received == []


@pytest.mark.parametrize(
    ("schema", "complaint"),
    [
        ({"$ref": "file:///etc/passwd"}, "is not fetched"),
        ({"$ref": "urn:example:answer"}, "is not fetched"),
        ({"$ref": "answer.json"}, "is not fetched"),
        ({"$ref": "#/$defs/missing"}, "points to nothing"),
        ({"$dynamicRef": "#nowhere"}, "points to nothing"),
        ({"$ref": "#"}, "refers back to itself"),
        (
            {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}}},
            "itself",
        ),
        ({"anyOf": [{"type": "string"}, {"$ref": "#"}]}, "refers back to itself"),
    ],
)
def test_references_outside_the_schema_or_without_end_are_refused(
    schema: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(IllegalArgumentException, match=complaint):
        output_validator(schema)


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        (
            {
                "$defs": {"city": {"type": "string"}},
                "properties": {"city": {"$ref": "#/$defs/city"}},
            },
            {"city": "Paris"},
            {"city": 1},
        ),
        (
            {"type": "object", "properties": {"child": {"$ref": "#"}}},
            {"child": {"child": {}}},
            {"child": {"child": 1}},
        ),
        (
            {
                "$id": "https://example.com/root",
                "$defs": {"leaf": {"$id": "leaf", "type": "string"}},
                "properties": {"a": {"$ref": "leaf"}, "b": {"$ref": "root#/$defs/leaf"}},
            },
            {"a": "x", "b": "y"},
            {"a": "x", "b": 2},
        ),
        (
            {
                "properties": {"$ref": {"type": "string"}},
                "not": {"enum": [{"$ref": "http://x.test/"}]},
            },
            {"$ref": "a name, not a reference"},
            {"$ref": "http://x.test/"},
        ),
    ],
)
def test_references_within_the_schema_are_resolved(
    schema: dict[str, Any], valid: dict[str, Any], invalid: dict[str, Any]
) -> None:
    validator = output_validator(schema)
    assert validate_output(validator, json.dumps(valid)) == valid
    with pytest.raises(InvalidOutput):
        validate_output(validator, json.dumps(invalid))


def test_output_nested_too_deeply_is_invalid_output_not_a_crash() -> None:
    validator = output_validator({"type": "object", "properties": {"a": {"$ref": "#"}}})
    with pytest.raises(InvalidOutput, match="nested too deeply"):
        validate_output(validator, '{"a":' * 100_000 + "{}" + "}" * 100_000)


def test_thousands_of_problems_are_summarised(tmp_path: Path) -> None:
    columns = ", ".join(f"'bad {n}'" for n in range(5_000))
    text = refusal(write(tmp_path, STORE_CHECK.format(columns=f"[{columns}]")))
    lines = text.splitlines()
    assert len(lines) == 21
    assert lines[-1].endswith("and 4980 more problem(s) like these")


def test_fifty_thousand_distinct_extra_columns_load(tmp_path: Path) -> None:
    # a quadratic duplicate check would take minutes here
    columns = ", ".join(f"c{n}" for n in range(50_000))
    [loaded] = load_scenarios([write(tmp_path, STORE_CHECK.format(columns=f"[{columns}]"))])
    assert loaded.scenario.store_check is not None
    assert len(loaded.scenario.store_check.extra_columns) == 50_000
