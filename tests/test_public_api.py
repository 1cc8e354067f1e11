"""The public surface: what `from harness import ...` promises."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import harness
import harness.cassettes
import harness.llm
import harness.protocol
from benchmarks.startup import CASES


def public_names(module: object) -> set[str]:
    return {
        name
        for name in vars(module)
        if not name.startswith("_")
        and not isinstance(getattr(module, name), type(harness))  # submodules
        and name != "annotations"
    }


def test_the_issue_names_import_from_the_top_level() -> None:
    from harness import (  # noqa: F401
        AgentCompletionModule,
        AgentDecision,
        AgentOutcome,
        HarnessError,
        IllegalArgumentException,
        Payload,
        StopKind,
    )


def test_all_is_exactly_the_public_names() -> None:
    exported = set(harness.__all__)
    assert len(harness.__all__) == len(exported)
    for name in exported:
        assert getattr(harness, name) is not None
    plumbing = {"importlib", "TYPE_CHECKING", "Any"}
    public = {
        name
        for name in dir(harness)
        if not name.startswith(("_", "@")) and not inspect.ismodule(getattr(harness, name))
    }
    assert public - plumbing - {"annotations"} == exported - {"__version__"}
    assert set(harness.protocol.__all__) == public_names(harness.protocol)
    assert set(harness.llm.__all__) == public_names(harness.llm)
    assert set(harness.cassettes.__all__) == set(harness.cassettes._EXPORTS)
    for name in harness.cassettes.__all__:
        assert getattr(harness.cassettes, name) is not None


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        getattr(harness, "Nope")  # noqa: B009


def test_importing_harness_loads_nothing_else() -> None:
    """Only the package and the few lines that load its names on first use: no other module of
    the harness, and nothing outside the standard library."""
    code = (
        "import sys; before = set(sys.modules); import harness; "
        "print(sorted(m for m in set(sys.modules) - before "
        "if m.startswith('harness') or m.split('.')[0] not in sys.stdlib_module_names))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert output.stdout.strip() == "['harness', 'harness.lazy']"


def test_a_scripted_run_loads_neither_the_cassette_stack_nor_httpx() -> None:
    """A run that opens no cassette pays for none: the transport, the file lock and `httpx`
    0.28 load only when used, and `httpx` clients still work when the user's code brings it."""
    code = """
import sys
from harness import AgentDefinition, LlmGateway, ScriptTransport, run_agent
from harness.llm.script import ScriptedReply
gateway = LlmGateway.scripted("openai", [{"text": "It is Paris."}])
result = run_agent(AgentDefinition(name="a", system_prompt="s"), gateway, user_message="Where?")
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"httpx", "filelock"}
                or m.startswith("harness.cassettes."))
print(result.status, loaded)
import httpx
with httpx.Client(transport=ScriptTransport("openai", [ScriptedReply(text="Hi")])) as client:
    reply = client.post("https://api.openai.com/v1/chat/completions", json={"model": "m"})
print(type(reply).__module__.split(".")[0], reply.json()["choices"][0]["message"]["content"])
"""
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert output.stdout.splitlines() == ["completed []", "httpx Hi"]


def test_a_captured_one_scenario_run_loads_only_what_it_uses(tmp_path: Path) -> None:
    """`harness run` with its output captured, on one OpenAI scenario in a folder with no
    pyproject.toml: no process pool, no progress bar, no TOML parser, no Anthropic adapter, nothing
    of the decision module, and no module contract validated."""
    forced_completion = CASES[0]  # the cell the start-up benchmark times
    (tmp_path / "capital.yaml").write_text(forced_completion.scenario)
    code = """
import sys
from harness.cli import main
try:
    main(["run", "capital.yaml"])
except SystemExit as stop:
    unused = ("multiprocessing", "concurrent", "rich.progress", "tomllib", "harness.llm.anthropic",
              "harness.modules.catalog", "harness.modules.models_acl", "harness.modules.decision")
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in unused or m in unused)
    contracts = [n for n in ("COMPLETION", "DECISION", "MODULES") if n in vars(sys.modules["harness.metadata"])]
    print(stop.code, loaded, contracts, file=sys.stderr)
"""
    output = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "1 passed, 0 failed" in output.stdout
    assert output.stderr.splitlines()[-1] == "0 [] []"


def test_a_run_without_an_output_schema_loads_no_json_schema_validator(tmp_path: Path) -> None:
    (tmp_path / "plain.yaml").write_text(
        "name: plain\nstores: [memory]\nagent: {user_message: Capital?}\n"
        "script: [{text: It is Paris.}]\n"
        "expect: {status: completed, outcome_record: {final_message: It is Paris.}}\n"
    )
    code = """
import sys
from harness.cli import main
try:
    main(["run", "plain.yaml"])
except SystemExit as stop:
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"jsonschema", "referencing"})
    print(stop.code, loaded, file=sys.stderr)
"""
    output = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "1 passed, 0 failed" in output.stdout
    assert output.stderr.splitlines()[-1] == "0 []"


@pytest.mark.parametrize("package", [harness, harness.cassettes], ids=lambda p: p.__name__)
def test_the_lazy_table_all_and_the_type_checking_imports_agree(package: Any) -> None:
    """`_EXPORTS` is the one list; `__all__` and the imports type checkers read must match it."""
    tree = ast.parse(Path(package.__file__).read_text(encoding="utf-8"))
    (block,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    for_type_checkers = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname in (None, alias.name)
    }
    assert for_type_checkers == package._EXPORTS
    assert set(package.__all__) - {"__version__"} == set(package._EXPORTS)


def test_the_user_path_imports_from_the_top_level() -> None:
    from harness import (  # noqa: F401
        AgentDefinition,
        AgentTool,
        CassetteTransport,
        GatewayConfig,
        LlmGateway,
        RecordMode,
        RunResult,
        ScriptedReply,
        ScriptedToolCall,
        ScriptTransport,
        run_agent,
        run_scenarios,
    )

    for name in ("AgentDefinition", "run_agent", "LlmGateway.scripted", "run_scenarios"):
        assert name in (harness.__doc__ or ""), f"help(harness) names {name}"


def test_an_agent_runs_in_a_few_lines_importing_only_from_harness() -> None:
    from harness import AgentDefinition, LlmGateway, ScriptedReply, ScriptedToolCall, run_agent

    agent = AgentDefinition(
        name="capital",
        system_prompt="You find capitals.",
        model="gpt-4o-mini",
        output_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    gateway = LlmGateway.scripted(
        "openai",
        [
            ScriptedReply(text="It is Paris."),
            ScriptedReply(
                tool_calls=(ScriptedToolCall(name="__finish__", arguments={"city": "Paris"}),)
            ),
        ],
    )
    result = run_agent(agent, gateway, user_message="Capital of France?")
    assert (result.status, result.output) == ("completed", {"city": "Paris"})
    assert result.outcome_record().stop_reason == "end_turn"
    assert [chunk.phase for chunk in result.forced_chunks()] == [
        "started",
        "attempt_started",
        "succeeded",
    ]


def test_a_script_asked_in_the_other_providers_wire_says_so() -> None:
    from harness import GatewayConfig, LlmGateway, LlmRequest, ScriptedReply, ScriptTransport
    from harness.llm.models import UserMessage
    from harness.llm.script import ScriptProviderMismatchError

    script = ScriptTransport("openai", [ScriptedReply(text="hi")])
    config = GatewayConfig(provider="anthropic", base_url="https://api.anthropic.com")
    request = LlmRequest(model="claude-sonnet-4-5", messages=(UserMessage(content="hi"),))
    with (
        LlmGateway(config, transport=script) as gateway,
        pytest.raises(ScriptProviderMismatchError) as caught,
    ):
        gateway.complete(request)
    assert "the script renders openai replies but the code under test called the anthropic" in str(
        caught.value
    )


def test_run_scenarios_returns_typed_results_and_the_lines_harness_run_prints(
    tmp_path: Path,
) -> None:
    from harness import CellResult, run_scenarios

    (tmp_path / "capital.yaml").write_text(
        "- name: capital\n  stores: [memory]\n  script: [{text: It is Lyon.}]\n"
        "  agent: {user_message: Capital?}\n"
        "  expect: {outcome_record: {final_message: It is Paris.}}\n"
    )
    run = run_scenarios([tmp_path], runtimes=["js"])
    assert not run.passed
    assert all(isinstance(result, CellResult) for result in run.results)
    assert run.summary()["failed"] == 1
    (line,) = run.failures()
    assert line.endswith(
        'capital[js-memory]: expect.outcome_record: expected {"final_message": "It is Paris."}, '
        'got {"text": "It is Lyon.", "final_message": "It is Lyon.", "stop_reason": "end_turn", '
        '"session_id": "session-capital"}'
    )


JAVA_NAMES = {
    "AgentDecisionCallException",
    "AgentDecisionProtocolException",
    "IllegalArgumentException",
    "SecurityException",
}
"""The exception names the Agent Decision and Agent Completion module contracts give."""


def test_every_error_class_follows_one_naming_convention() -> None:
    """`...Error`, except the Java names the module contracts give; an earlier name may live on
    as an alias of the same class, never as a second class."""
    import importlib
    import pkgutil

    from harness.errors import HarnessError

    classes: dict[str, type] = {}
    for module_info in pkgutil.walk_packages(harness.__path__, "harness."):
        if module_info.name.endswith(("pytest_plugin", "__main__")):
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, HarnessError)
                and value.__module__ == module.__name__
            ):
                classes.setdefault(value.__name__, value)
                if name != value.__name__:
                    assert name in {alias for alias in vars(module) if not alias.startswith("_")}
    wrong = sorted(
        name for name in classes if not name.endswith("Error") and name not in JAVA_NAMES
    )
    assert wrong == [], "name them ...Error"
    assert set(classes) >= JAVA_NAMES
    from harness.errors import CassetteMiss, CassetteMissError, ToolChoiceUnsupported

    assert CassetteMiss is CassetteMissError
    assert ToolChoiceUnsupported is harness.ToolChoiceUnsupportedError
