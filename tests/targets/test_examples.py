"""The example targets under examples/targets pass the scenario library through `harness run`,
and each one's mutant (a one-line change, applied here to a copy) fails it with the line a user
would read.

An example passes when no cell fails, it passes exactly as many cells as the documentation says
(tests/docs/test_documented_counts.py keeps that number equal to the library's), and every skipped
cell was skipped for a kind it does not run, for a store check, for the `faults` or `cancel`
features, which the examples do not declare (they keep a run in memory: they cannot resume it
after a crash or stop it at a persistence point), or for Gemini, whose API they do not call.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
from filelock import FileLock, Timeout

from tests.support.example_cells import (
    completion_hello,
    declared_cells,
    documented_agent_cells,
    documented_decision_cells,
)
from tests.support.node import INSTALL_SECONDS, install_packages, installed_node

ROOT: Final = Path(__file__).resolve().parents[2]
EXAMPLES: Final = ROOT / "examples" / "targets"
HARNESS: Final = Path(sys.executable).with_name("harness")
AGENT_SCENARIOS: Final = ("scenarios",)  # the whole library, as docs/targets.md runs it
RUN_SECONDS: Final = 300.0
NODE_PACKAGE: Final = ROOT / "packages" / "node"
"""`completion-harness`, which a Node example may depend on (`file:`); its dist/ is git-ignored."""


@dataclass(frozen=True, kw_only=True)
class Example:
    folder: str
    program: str  # the file the target command runs
    scenarios: tuple[str, ...]
    mutated_file: str
    line: str  # exactly one line of `mutated_file` holds it
    mutant: str
    mutant_scenarios: tuple[str, ...]
    failure: str  # a line the mutant's run prints
    passes: Callable[[], int]  # how many cells of `scenarios` it passes


PYTHON_AGENT: Final = Example(
    folder="python_openai_sdk",
    program="target.py",
    scenarios=AGENT_SCENARIOS,
    mutated_file="agent.py",
    line="system=self.agent.system_prompt,  # the base prompt only: no skills, workspace or memory",
    mutant="system=self.agent.work_system_prompt(),",
    mutant_scenarios=("scenarios/forced/prompt.yaml",),
    failure=(
        "scenarios/forced/prompt.yaml:LINE prompt-forced-call-is-trimmed-openai-reasoning-model"
        '[js-sqlite]: expect.forced_request.system_fragments: expected ["base"], got '
        "\"['base', 'skills_catalog', 'skill_bodies', 'workspace'] (request #1)\""
    ),
    passes=documented_agent_cells,
)
NODE_AGENT: Final = Example(
    folder="node_openai_sdk",
    program="target.mjs",
    scenarios=AGENT_SCENARIOS,
    mutated_file="agent.mjs",
    line="return this.attemptsUsed < this.maxAttempts;",
    mutant="return this.attemptsUsed <= this.maxAttempts;",
    mutant_scenarios=("scenarios/forced/budgets.yaml",),
    failure=(
        "scenarios/forced/budgets.yaml:LINE budget-0-fails-at-once[js-sqlite]: "
        "expect.forced_calls: expected 0, got 1"
    ),
    passes=documented_agent_cells,
)
NODE_AI_SDK_AGENT: Final = Example(
    folder="node_ai_sdk",
    program="target.mjs",
    scenarios=AGENT_SCENARIOS,
    mutated_file="errors.mjs",
    # the Vercel AI SDK's ToolChoiceViolationError reported as a failed call, as a target that
    # catches every SDK error as one would
    line="const code = replied.toolCalls.length ? Codes.PROTOCOL_VIOLATION : Codes.TOOL_MISSING;",
    mutant="const code = Codes.LLM_CALL_FAILED;",
    mutant_scenarios=("scenarios/forced/failure-codes.yaml",),
    failure=(
        "scenarios/forced/failure-codes.yaml:LINE code-tool-missing[js-sqlite]: "
        "expect.error_message: expected 'last cause: framework_completion_tool_missing', got "
        "'forced completion exhausted after 1 of 1 attempt(s); last cause: "
        "framework_llm_call_failed'"
    ),
    passes=documented_agent_cells,
)
NODE_COMPLETION: Final = Example(
    folder="node_completion",
    program="target.mjs",
    scenarios=("scenarios/completion",),
    mutated_file="completion.mjs",
    line="return [...text].every(isJavaWhitespace);",
    mutant='return text.trim() === "";',
    mutant_scenarios=("scenarios/completion/contract.yaml",),
    failure=(
        "scenarios/completion/contract.yaml:LINE completion-non-breaking-space-is-content: "
        "expect.status: expected 'completed', got 'failed'"
    ),
    passes=lambda: declared_cells(completion_hello()),
)
NODE_DECISION: Final = Example(
    folder="node_decision",
    program="target.mjs",
    scenarios=AGENT_SCENARIOS,  # the whole library: every decision cell, the others skipped
    mutated_file="decision.mjs",
    # a cut-off reply taken as a decision when its tool calls parse, though a later call may be
    # missing
    line='if (reply.stop === "limit_reached") {',
    mutant='if (reply.stop === "limit_reached" && !reply.toolCalls.length) {',
    mutant_scenarios=("scenarios/decision/failures.yaml",),
    failure=(
        "scenarios/decision/failures.yaml:LINE decision-cut-off-after-a-complete-tool-call: "
        "expect.status: expected 'failed', got 'completed'"
    ),
    passes=documented_decision_cells,
)
RUN_HERE: Final = [PYTHON_AGENT, NODE_AGENT, NODE_AI_SDK_AGENT, NODE_COMPLETION, NODE_DECISION]
"""The examples this file runs (the Cloudflare one has a test of its own)."""


def command(example: Example, folder: Path) -> str:
    """The `--target-cmd` of `example` in `folder`, with its packages installed."""
    program = folder / example.program
    if program.suffix == ".py":
        return shlex.join([sys.executable, str(program)])
    packages = EXAMPLES / example.folder
    node = installed_node(packages if (packages / "package-lock.json").is_file() else None)
    if "completion-harness" in _dependencies(packages):
        built_node_package()
    return shlex.join([node, str(program)])


def built_node_package() -> None:
    """Build `completion-harness` (packages/node) into its dist/, which an example depending on it
    imports: when dist/ is missing or older than a source file (a fresh checkout, as under CI),
    with the package's pinned packages installed first when `tsc` is not there. One process
    builds while the others wait."""
    npm = shutil.which("npm")
    assert npm is not None, "installed_node found npm"
    if not (NODE_PACKAGE / "node_modules" / ".bin" / "tsc").exists():
        install_packages(npm, NODE_PACKAGE)
    try:
        with FileLock(NODE_PACKAGE / ".install.lock", timeout=INSTALL_SECONDS * 2):
            if _node_package_built():
                return
            completed = subprocess.run(
                [npm, "run", "build"],
                cwd=NODE_PACKAGE,
                capture_output=True,
                text=True,
                timeout=INSTALL_SECONDS,
            )
    except Timeout:
        pytest.fail(f"another test process held the npm install lock in {NODE_PACKAGE} too long")
    except subprocess.TimeoutExpired:
        pytest.fail(f"`npm run build` in {NODE_PACKAGE} did not finish within {INSTALL_SECONDS:g}s")
    if completed.returncode != 0:
        pytest.fail(
            f"`npm run build` in {NODE_PACKAGE} failed (exit {completed.returncode}):\n"
            f"{completed.stdout.strip()}\n{completed.stderr.strip()}"
        )


def _dependencies(folder: Path) -> dict[str, str]:
    manifest = folder / "package.json"
    if not manifest.is_file():
        return {}
    dependencies: dict[str, str] = json.loads(manifest.read_text(encoding="utf-8")).get(
        "dependencies", {}
    )
    return dependencies


def _node_package_built() -> bool:
    built = NODE_PACKAGE / "dist" / "index.js"
    sources = [path.stat().st_mtime for path in (NODE_PACKAGE / "src").rglob("*.ts")]
    return built.is_file() and built.stat().st_mtime >= max(sources, default=0.0)


def harness_run(
    target: str, scenarios: tuple[str, ...], report: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(HARNESS),
            "run",
            *scenarios,
            "--runtime",
            "js",
            "--target-cmd",
            target,
            "--json",
            str(report),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        env={**os.environ, "NO_COLOR": "1"},
    )


def mutated_copy(example: Example, destination: Path) -> Path:
    """A copy of `example` with its one-line mutant applied (its installed packages linked)."""
    source = EXAMPLES / example.folder
    shutil.copytree(
        source, destination, ignore=shutil.ignore_patterns("node_modules", "__pycache__")
    )
    if (source / "node_modules").is_dir():
        (destination / "node_modules").symlink_to(source / "node_modules", target_is_directory=True)
    path = destination / example.mutated_file
    text = path.read_text(encoding="utf-8")
    assert text.count(example.line) == 1, f"{example.mutated_file} must hold the line once"
    path.write_text(text.replace(example.line, example.mutant), encoding="utf-8")
    return destination


def cells(report: Path) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads(report.read_text(encoding="utf-8"))["cells"]
    return loaded


@pytest.mark.subprocess
@pytest.mark.parametrize("example", RUN_HERE, ids=lambda e: e.folder)
def test_the_example_passes_every_cell_it_declares(example: Example, tmp_path: Path) -> None:
    target = command(example, EXAMPLES / example.folder)
    report = tmp_path / "report.json"

    completed = harness_run(target, example.scenarios, report)

    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = cells(report)
    passed = [cell for cell in results if cell["passed"]]
    skipped = [cell for cell in results if cell["skipped"] is not None]
    assert len(passed) + len(skipped) == len(results)
    assert len(passed) == example.passes()
    reasons = {cell["skipped"] for cell in skipped}
    # the examples keep a run in memory: they cannot resume after a crash, nor stop at a
    # persistence point when cancelled, and say so in their hello
    undeclared = {
        "the target does not declare the feature(s) " + needs + " (hello.features)"
        for needs in ("faults", "cancel", "faults, cancel")
    }
    other_kinds = {
        f"the target does not run {kind} scenarios (hello.kinds)"
        for kind in ("agent", "decision", "completion")
    }
    store_checks = {"a store check runs on the harness, not on a target"}
    # the agents call the OpenAI and Anthropic APIs, and say so in their hello
    other_providers = {"the target does not speak the gemini API (hello.providers)"}
    assert reasons <= undeclared | other_kinds | store_checks | other_providers, reasons
    assert f"{len(passed)} passed, 0 failed" in completed.stdout


@pytest.mark.subprocess
@pytest.mark.parametrize("example", RUN_HERE, ids=lambda e: e.folder)
def test_the_mutant_fails_with_the_line_a_user_reads(example: Example, tmp_path: Path) -> None:
    command(example, EXAMPLES / example.folder)  # installs the packages the copy links to
    target = command(example, mutated_copy(example, tmp_path / example.folder))

    completed = harness_run(target, example.mutant_scenarios, tmp_path / "report.json")

    assert completed.returncode == 1, completed.stdout + completed.stderr
    # the scenario's line moves as the file grows; the rest of the line is the contract
    pattern = re.escape(f"FAIL {example.failure}\n").replace("LINE", r"\d+")
    assert re.search(pattern, completed.stdout), completed.stdout


def test_node_without_packages_needs_no_npm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = tmp_path / "node"
    node.write_text("#!/bin/sh\n", encoding="utf-8")
    node.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))

    assert installed_node(None) == str(node)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="npm is not on PATH"):
        installed_node(EXAMPLES / NODE_AGENT.folder)
