"""The formats docs/targets.md tells a target to reproduce are the reference's, and the library's.

"What a target reproduces exactly" shows, for one example agent, the texts a target's requests
carry and the tools and tool results they offer; each block is rendered here from the reference
modules (`harness.agent`) for the agent the page shows, and must equal it. Every text quoted in
an "exact text (from the reference)" column is found in the reference's code, its `<...>`
placeholders standing for the values the code formats in. The tables of expectations, codes and
error messages are compared with the scenario library: every `expect` key, every code and every
message text the library checks is on the page, and nothing it does not check.
"""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, Final, get_args

import pytest
from markdown_it import MarkdownIt
from pydantic import BaseModel, JsonValue

import harness.errors
from harness.agent.definition import FINISH_TOOL, AgentDefinition, AgentTool
from harness.agent.forced import ForcedCompletionExhausted
from harness.agent.loop import AgentLoop
from harness.agent.prompt import (
    completion_message,
    forced_fragments,
    memory_message,
    work_fragments,
    work_tools,
)
from harness.agent.spec import AgentSpec
from harness.llm.models import LlmRequest, LlmResponse, LlmToolCall, ToolResultMessage
from harness.protocol.forced import ForcedCompletionState
from harness.protocol.outcome import ToolUse
from harness.scenarios import load_scenarios
from harness.scenarios.format import Expect, RequestExpect
from harness.scenarios.load import LoadedScenario
from tests.docs.fences import DOCS, ROOT, Fence, fences
from tests.support.package_source import parsed, python_files

PAGE: Final = DOCS / "targets.md"
SECTION: Final = "What a target reproduces exactly"
FROM_THE_REFERENCE: Final = "exact text (from the reference)"
PLACEHOLDER: Final = re.compile(r"<[^<>]+>")
STORE_CHECK_KEYS: Final = frozenset({"differences"})
"""`expect` keys of store checks, which run on the harness and never on a target."""


# -- the page -----------------------------------------------------------------------------------


def _headings() -> list[tuple[int, int, str]]:
    """Each heading of the page (not a `#` line inside a block): its level, line and title."""
    tokens = MarkdownIt("commonmark").parse(PAGE.read_text(encoding="utf-8"))
    return [
        (int(token.tag[1]), token.map[0], tokens[index + 1].content)
        for index, token in enumerate(tokens)
        if token.type == "heading_open" and token.map is not None
    ]


def _lines_of(level: int, title: str) -> tuple[int, int]:
    """The 0-based lines the heading `title` of `level` opens, up to the next of its level."""
    headings = _headings()
    (start,) = [line for lvl, line, text in headings if (lvl, text) == (level, title)]
    after = [line for lvl, line, _ in headings if lvl <= level and line > start]
    return start, after[0] if after else len(PAGE.read_text(encoding="utf-8").splitlines())


def _text(lines: tuple[int, int]) -> str:
    return "\n".join(PAGE.read_text(encoding="utf-8").splitlines()[lines[0] : lines[1]])


def _section_text() -> str:
    return _text(_lines_of(2, SECTION))


def _subsection(title: str) -> str:
    return _text(_lines_of(3, title))


def _section_fences() -> list[Fence]:
    first, last = _lines_of(2, SECTION)
    return [fence for fence in fences(PAGE) if first < fence.line <= last]


def _spans(markdown: str) -> list[str]:
    """The code spans of `markdown`, in order."""
    tokens = MarkdownIt("commonmark").parseInline(markdown)
    return [
        child.content
        for token in tokens
        for child in token.children or []
        if child.type == "code_inline"
    ]


@cache
def _tables(text: str) -> list[list[dict[str, str]]]:
    """Each Markdown table of `text`: its rows, each a mapping from header to cell."""
    tables: list[list[dict[str, str]]] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].startswith("|") and index + 1 < len(lines) and "---" in lines[index + 1]:
            header = _cells(lines[index])
            rows = []
            index += 2
            while index < len(lines) and lines[index].startswith("|"):
                rows.append(dict(zip(header, _cells(lines[index]), strict=True)))
                index += 1
            tables.append(rows)
        index += 1
    return tables


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _table(title: str, header: str) -> list[dict[str, str]]:
    (table,) = [rows for rows in _tables(_subsection(title)) if rows and header in rows[0]]
    return table


def _matches(documented: str, actual: str) -> bool:
    """`actual` is `documented` with each `<...>` placeholder standing for some text."""
    pattern = ".+".join(re.escape(part) for part in PLACEHOLDER.split(documented))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


# -- the reference's code -----------------------------------------------------------------------


@cache
def _code_templates() -> frozenset[str]:
    """Every string the harness's code spells out, each formatted value as `{}` (adjacent
    literals joined, as Python joins them)."""
    templates: set[str] = set()
    for path in python_files():
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                templates.add(node.value)
            elif isinstance(node, ast.JoinedStr):
                templates.add(
                    "".join(
                        str(part.value) if isinstance(part, ast.Constant) else "{}"
                        for part in node.values
                    )
                )
    return frozenset(templates)


def _in_the_code(documented: str) -> bool:
    wanted = PLACEHOLDER.sub("{}", documented)
    return any(wanted in template for template in _code_templates())


def _agent_key(span: str) -> bool:
    """`agent.workspace.fragment`: a key of a cell's agent block, which the target copies."""
    head, *path = span.split(".")
    model: type[BaseModel] | None = AgentSpec
    for part in path:
        if model is None or part not in model.model_fields:
            return False
        annotation = model.model_fields[part].annotation
        model = next(
            (
                a
                for a in (annotation, *get_args(annotation))
                if isinstance(a, type) and issubclass(a, BaseModel)
            ),
            None,
        )
    return head == "agent" and bool(path)


def test_every_quoted_reference_text_is_in_the_reference_code() -> None:
    quoted = [
        span
        for rows in _tables(_section_text())
        for row in rows
        for header, cell in row.items()
        if FROM_THE_REFERENCE in header
        for span in _spans(cell)
    ]
    assert len(quoted) >= 8, "the page quotes the reference's texts in its tables"
    missing = [span for span in quoted if not (_agent_key(span) or _in_the_code(span))]
    assert not missing, (
        f"not in harness/ (placeholders <...> stand for formatted values): {missing}"
    )


def test_the_check_finds_what_it_looks_for() -> None:
    assert _in_the_code("## Skill: <name>")
    assert not _in_the_code("## Skills: <name>")
    assert _agent_key("agent.workspace.fragment")
    assert not _agent_key("agent.workspace.fragmentt")
    assert _matches('{"error":"<error>"}', '{"error":"no such file"}')
    assert not _matches('{"error":"<error>"}', '{"error": "no such file"}')


# -- the blocks, rendered by the reference --------------------------------------------------------


def _blocks() -> dict[str, Fence]:
    """The section's blocks by what they show, in the order the page shows them."""
    names = ("agent", "work system prompt", "memory recall", "completion", "metadata", "tools")
    found = [f for f in _section_fences() if f.language in ("json", "text")]
    assert [f.language for f in found] == ["json", "text", "text", "text", "json", "json"]
    return dict(zip(names, found, strict=True))


def _agent() -> AgentDefinition:
    return AgentDefinition.model_validate(json.loads(_blocks()["agent"].source))


def test_the_work_system_prompt_is_the_reference_s() -> None:
    request = LlmRequest(model="m", system=work_fragments(_agent()), messages=())
    assert _blocks()["work system prompt"].source == request.system_text() + "\n"
    assert [f.name for f in work_fragments(_agent())] == [
        row["fragment"].strip("`")
        for row in _table("The system prompt and its fragments", "fragment")
    ]


def test_the_forced_system_prompt_is_the_base_fragment_alone() -> None:
    (base,) = forced_fragments(_agent())
    assert f"A **forced call** sends the `base` fragment alone: `{base.text}`" in _section_text()


def test_the_memory_recall_is_the_reference_s() -> None:
    agent = _agent()
    assert agent.memory is not None
    recall = memory_message(agent.memory.memories)
    assert _blocks()["memory recall"].source == recall.content + "\n"
    opening = recall.content.split("\n", 1)[0]
    assert f"opens with `{opening}`" in _subsection("The memory recall")


def test_the_completion_message_and_its_metadata_are_the_reference_s() -> None:
    metadata = json.loads(_blocks()["metadata"].source)
    forced = metadata["forcedCompletion"]
    state = ForcedCompletionState(
        trigger=forced["trigger"],
        max_attempts=forced["maxAttempts"],
        attempts_used=forced["attempt"] - 1,
    )
    message = completion_message(state)
    assert _blocks()["completion"].source == message.content + "\n"
    assert metadata == message.metadata


def test_the_work_tools_are_the_reference_s() -> None:
    documented = json.loads(_blocks()["tools"].source)
    assert documented == [tool.model_dump() for tool in work_tools(_agent())]


# -- tool results -------------------------------------------------------------------------------

_SCHEMA: Final[dict[str, JsonValue]] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


def _results(
    *calls: tuple[str, str],
    deny: bool = False,
    tools: tuple[AgentTool, ...] = (),
    skills: bool = False,
) -> list[str]:
    """The tool results' content the reference sends back for `calls` (name, arguments)."""
    spec: dict[str, Any] = {"tools": tools, "output_schema": _SCHEMA}
    if skills:
        spec["skills"] = {"catalog": [{"name": "<name>", "body": "<body>"}]}
    loop = AgentLoop(AgentDefinition.model_validate(spec), _NoModel(), approve=lambda *_: not deny)
    sent = tuple(LlmToolCall(id=f"call-{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls))
    messages, _, _ = loop._run_calls(0, sent)
    return [message.content for message in messages]


def _on_a_forced_call() -> list[str]:
    loop = AgentLoop(AgentDefinition(output_schema=_SCHEMA), _NoModel())
    reply = LlmResponse(
        tool_calls=(LlmToolCall(id="call-0", name="search", arguments="{}"),), stop=ToolUse()
    )
    answered = loop._answered(reply, (), succeeded=False)
    return [m.content for m in answered if isinstance(m, ToolResultMessage)]


class _NoModel:
    """The tool results are rendered without a model call."""

    def complete(self, request: LlmRequest) -> LlmResponse:
        raise AssertionError("no model call is made")


TOOL_RESULTS: Final[dict[str, Callable[[], list[str]]]] = {
    "a tool with a scripted `result`": lambda: _results(
        ("search", "{}"),
        ("lookup", "{}"),
        tools=(AgentTool(name="search", result={"hits": ["Paris"]}), AgentTool(name="lookup")),
    ),
    "a tool with a scripted `error`": lambda: _results(
        ("search", "{}"), tools=(AgentTool(name="search", error="<error>"),)
    ),
    "an approval-gated tool the cell denies (`deny_approval`)": lambda: _results(
        ("pay", "{}"), tools=(AgentTool(name="pay", requires_approval=True),), deny=True
    ),
    "`load_skill`": lambda: _results(
        ("load_skill", '{"name": "<name>"}'), ("load_skill", '{"name": "x"}'), skills=True
    ),
    "a tool the agent does not have": lambda: _results(("<name>", "{}")),
    "arguments that are not JSON, or not an object": lambda: _results(
        ("search", "{"), ("search", "[]"), tools=(AgentTool(name="search"),)
    ),
    "`__finish__` with valid output": lambda: _results((FINISH_TOOL, '{"answer": "yes"}')),
    "`__finish__` with invalid output": lambda: _results((FINISH_TOOL, '{"answer": 1}')),
    "any other tool, called on a forced call": _on_a_forced_call,
}


def _tool_result_rows() -> dict[str, list[str]]:
    rows = _table("Tools and tool results", "the call")
    return {row["the call"]: _spans(row["what the reference sends back"]) for row in rows}


def test_every_tool_result_row_is_rendered_here() -> None:
    assert list(_tool_result_rows()) == list(TOOL_RESULTS)


@pytest.mark.parametrize("call", list(TOOL_RESULTS))
def test_the_tool_results_are_what_the_reference_sends(call: str) -> None:
    documented = _tool_result_rows()[call]
    sent = TOOL_RESULTS[call]()
    assert len(documented) == len(sent), (documented, sent)
    for shown, content in zip(documented, sent, strict=True):
        assert _matches(shown, content), (shown, content)


def test_the_exhausted_message_is_the_reference_s() -> None:
    state = ForcedCompletionState(
        trigger="terminal_text",
        max_attempts=2,
        attempts_used=2,
        status="exhausted",
        last_failure_code="framework_completion_tool_missing",
    )
    (row,) = [
        row
        for row in _table("Error codes and messages", "`error_code`")
        if row["`error_code`"] == "`framework_forced_completion_exhausted`"
    ]
    message, cause = _spans(row[next(h for h in row if FROM_THE_REFERENCE in h)])
    assert _matches(message + cause, str(ForcedCompletionExhausted(state)))
    assert _matches(
        message,
        str(ForcedCompletionExhausted(state.evolve(attempts_used=0, last_failure_code=None))),
    )


# -- what the library checks ----------------------------------------------------------------------


@cache
def _library() -> tuple[LoadedScenario, ...]:
    return tuple(load_scenarios([ROOT / "scenarios"]))


def _expects(loaded: LoadedScenario) -> Iterator[Expect]:
    scenario = loaded.scenario
    yield scenario.expect
    for execution in scenario.executions or ():
        yield execution.expect


def test_every_expect_key_is_documented_once() -> None:
    rows = _table("How each expectation is compared", "`expect` keys")
    keys = [
        span for row in rows for span in _spans(row["`expect` keys"]) if span in Expect.model_fields
    ]
    request_row = next(row for row in rows if "`work_request`" in row["`expect` keys"])
    request_keys = {
        span for span in _spans(request_row["`expect` keys"]) if span in RequestExpect.model_fields
    }
    assert request_keys == set(RequestExpect.model_fields)
    assert sorted(set(keys)) == sorted(set(Expect.model_fields) - STORE_CHECK_KEYS)


def _library_messages() -> dict[tuple[str, str | None], set[str]]:
    """The texts the library checks error messages contain: by agent error code, or by
    module and error type (`None`: the scenario names no type)."""
    found: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    for loaded in _library():
        kind = loaded.scenario.kind
        for expect in _expects(loaded):
            if expect.error_message is None:
                continue
            key = expect.error_code if kind == "agent" else expect.error_type
            found[kind, key].add(expect.error_message)
    return found


def test_the_agent_messages_are_the_ones_the_library_checks() -> None:
    rows = _table("Error codes and messages", "`error_code`")
    checked = next(h for h in rows[0] if h.startswith("your `error_message` must contain"))
    documented = {row["`error_code`"].strip("`"): set(_spans(row[checked])) for row in rows}
    library = {
        code: messages for (kind, code), messages in _library_messages().items() if kind == "agent"
    }
    assert {code: texts for code, texts in documented.items() if texts} == library


MODULES: Final = {"Agent Completion": "completion", "Agent Decision": "decision"}


def test_the_module_messages_are_the_ones_the_library_checks() -> None:
    rows = _table("Error codes and messages", "`error.type`")
    checked = next(h for h in rows[0] if h.startswith("your `error.message` must contain"))
    documented: dict[str, dict[str, set[str]]] = defaultdict(dict)
    for row in rows:
        error_type = row["`error.type`"].strip("`")
        assert getattr(harness.errors, error_type).code == row["`error.code`"].strip("`")
        documented[MODULES[row["module"]]][error_type] = set(_spans(row[checked]))
    library = {key: texts for key, texts in _library_messages().items() if key[0] != "agent"}
    for (kind, named), texts in library.items():
        # a scenario that names no error type may check any of its module's messages
        shown = set().union(
            *(documented[kind].values() if named is None else [documented[kind][named]])
        )
        assert texts <= shown, (kind, named, texts - shown)
    for kind in MODULES.values():
        checked_texts = set().union(*(texts for (k, _), texts in library.items() if k == kind))
        assert set().union(*documented[kind].values()) == checked_texts, kind


def test_every_agent_code_the_library_compares_is_named() -> None:
    codes: set[str] = set()
    for loaded in _library():
        if loaded.scenario.kind != "agent":
            continue
        for expect in _expects(loaded):
            codes.update(c for c in [expect.error_code] if c)
            codes.update(
                c.code for c in [*(expect.chunks or ()), *(expect.chunk_sequence or ())] if c.code
            )
            if expect.store and isinstance(expect.store.get("lastFailureCode"), str):
                codes.add(str(expect.store["lastFailureCode"]))
    named = set(_spans(_subsection("Error codes and messages")))
    assert codes
    assert codes <= named, codes - named
