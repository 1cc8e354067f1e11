"""Every Python and YAML example of README.md and docs/ runs, so no example rots.

Python: the blocks of one page run in order in one namespace, as a reader types them, through
pytest-examples (a `print(...)` followed by `#> ...` lines is checked against what it prints;
`pytest tests/docs --update-examples` rewrites those lines). A `test_*` function a block defines
without parameters is then called, as pytest would (hypothesis properties with few examples).
YAML: every block is a scenario file; it loads, and each of its cells runs and must pass.
Both run in a scratch folder holding copies of `cassettes/` and `scenarios/`.
"""

from __future__ import annotations

import ast
import inspect
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings
from pytest_examples import CodeExample, EvalExample, find_examples

import harness
from harness.scenarios import RunOptions, expand, load_scenarios, run_cell
from harness.scenarios.report import failure_lines
from tests.docs.fences import (
    ROOT,
    RUN_LANGUAGES,
    SHOWN_LANGUAGES,
    Fence,
    all_fences,
    documents,
    fences,
)

# Names the public API is gaining in parallel with these pages. A block importing one of them
# from `harness` before it exists is skipped, naming it; any other missing name fails.
PENDING_PUBLIC_NAMES = frozenset(
    {
        "AgentDefinition",
        "AgentTool",
        "run_agent",
        "RunResult",
        "LlmGateway",
        "GatewayConfig",
        "ScriptTransport",
        "ScriptedReply",
        "ScriptedToolCall",
        "CassetteTransport",
        "RecordMode",
        "run_scenarios",
    }
)
PENDING_ATTRIBUTES = {"LlmGateway": ("scripted", "replaying")}
PROPERTY_EXAMPLES = 10


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch folder with the committed cassettes and scenarios, as the working folder."""
    for folder in ("cassettes", "scenarios"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_block_is_in_a_known_language() -> None:
    unknown = [
        f"{fence.where}: ```{fence.language}"
        for fence in all_fences()
        if fence.language not in RUN_LANGUAGES | SHOWN_LANGUAGES
    ]
    assert not unknown, f"write these blocks as one of {sorted(RUN_LANGUAGES | SHOWN_LANGUAGES)}"


def test_pytest_examples_sees_every_python_block() -> None:
    ours = {(f.path, f.line) for f in all_fences() if f.language == "python"}
    theirs = {(e.path, e.start_line) for e in _python_examples(documents())}
    assert ours == theirs


def _python_examples(paths: list[Path]) -> list[CodeExample]:
    return [e for e in find_examples(*paths) if e.prefix.split()[0] == "python"]


def _pages_with_python() -> list[Path]:
    return [p for p in documents() if any(f.language == "python" for f in fences(p))]


@pytest.mark.parametrize(
    "page", _pages_with_python(), ids=lambda p: str(p.relative_to(ROOT)).replace("/", ".")
)
def test_python_examples_run(page: Path, workdir: Path, eval_example: EvalExample) -> None:
    directives = {f.line: f.directive for f in fences(page)}
    namespace: dict[str, Any] = {}
    for example in _python_examples([page]):
        if directives[example.start_line] == "fragment":
            compile(example.source, str(example), "exec")
            continue
        _skip_if_pending(example)
        namespace = _run(eval_example, example, namespace)
        _call_tests(namespace, defined_in=example.source)


def _run(
    eval_example: EvalExample, example: CodeExample, namespace: dict[str, Any]
) -> dict[str, Any]:
    # pytest-examples runs each block as `__main__`; put the real one back for later tests.
    main = sys.modules["__main__"]
    try:
        if eval_example.update_examples:
            return eval_example.run_print_update(example, module_globals=namespace)
        return eval_example.run_print_check(example, module_globals=namespace)
    finally:
        sys.modules["__main__"] = main


def _skip_if_pending(example: CodeExample) -> None:
    missing = []
    for node in ast.walk(ast.parse(example.source)):
        if isinstance(node, ast.ImportFrom) and node.module == "harness":
            missing += [a.name for a in node.names if not hasattr(harness, a.name)]
    for name, attributes in PENDING_ATTRIBUTES.items():
        value = getattr(harness, name, None)
        missing += [f"{name}.{a}" for a in attributes if value and not hasattr(value, a)]
    unexpected = [name for name in missing if name.split(".")[0] not in PENDING_PUBLIC_NAMES]
    assert not unexpected, f"{example}: harness has no {unexpected}"
    if missing:
        pytest.skip(f"{example} waits for the public API: {', '.join(missing)}")


def _call_tests(namespace: dict[str, Any], *, defined_in: str) -> None:
    """Call the parameterless `test_*` functions this block defined, as pytest would."""
    defined = {
        node.name
        for node in ast.parse(defined_in).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }
    for name in sorted(defined):
        test: Callable[[], object] = namespace[name]
        if inspect.signature(test).parameters:
            continue  # takes fixtures: defining it is what the example shows
        if hasattr(test, "hypothesis"):
            test = settings(max_examples=PROPERTY_EXAMPLES, database=None)(test)
        test()


def _yaml_fences() -> list[Fence]:
    return [f for f in all_fences() if f.language == "yaml"]


@pytest.mark.parametrize("fence", _yaml_fences(), ids=lambda f: f.where.replace("/", "."))
def test_yaml_examples_load_and_pass(fence: Fence, workdir: Path) -> None:
    yaml.safe_load(fence.source)
    if fence.directive == "fragment":
        return
    path = workdir / f"{fence.path.stem}-{fence.line}.yaml"
    path.write_text(fence.source, encoding="utf-8")
    loaded = load_scenarios([path])
    assert loaded, f"{fence.where}: no scenario in this block"
    if fence.directive == "load-only":
        return
    options = RunOptions()
    failures = [
        line for cell in expand(loaded, options) for line in failure_lines(run_cell(cell, options))
    ]
    assert not failures, f"{fence.where}: " + "\n".join(failures)
