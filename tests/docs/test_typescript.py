"""The TypeScript page's code is the npm package's: every `ts` block compiles, with TypeScript's
strict options, against `completion-harness` built from packages/node (and the `openai`,
`@playwright/test` and `vitest` packages it uses); the 30-line target passes the completion
scenarios of the library, and the mistake the page describes fails with the line it shows.

The package is compiled into a scratch project, never into the checkout, with the TypeScript that
packages/node pins.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from tests.docs.fences import DOCS, ROOT, Fence, fences
from tests.support.example_cells import completion_hello, declared_cells
from tests.support.node import installed_node

PAGE: Final = DOCS / "typescript.md"
PACKAGE: Final = ROOT / "packages" / "node"
OPENAI: Final = ROOT / "examples" / "targets" / "node_openai_sdk"
HARNESS: Final = Path(sys.executable).with_name("harness")
SECONDS: Final = 300.0
TARGET_LINES: Final = 30
BLANK_AS_TRIM: Final = ("[...answer].every(isJavaWhitespace)", 'answer.trim() === ""')
"""The mistake the page describes: the target's test for blank text, and what replaces it."""
TSCONFIG: Final = """{
  "compilerOptions": {
    "target": "ES2022", "lib": ["ES2022"], "types": ["node"],
    "module": "NodeNext", "moduleResolution": "NodeNext",
    "strict": true, "noUncheckedIndexedAccess": true, "skipLibCheck": true,
    "rootDir": "src", "outDir": "dist"
  },
  "include": ["src"]
}
"""
EXPORTED: Final = {
    "completion-harness": (
        "runTarget",
        "startServe",
        "openSession",
        "AgentCell",
        "AgentResult",
        "CompletionCell",
        "DecisionCell",
        "ModuleExecution",
        "StreamChunk",
        "AgentOutcome",
        "AgentOutputEnvelope",
    ),
    "completion-harness/playwright": ("test", "expect"),
    "completion-harness/vitest": ("test", "expect"),
}
"""The names the page's text says each entry point exports (its blocks import the rest)."""


def _blocks() -> list[Fence]:
    return [fence for fence in fences(PAGE) if fence.language == "ts"]


def _target() -> Fence:
    (target,) = [fence for fence in _blocks() if "runTarget(" in fence.source]
    return target


def test_the_target_is_about_thirty_lines() -> None:
    assert "## A 30-line TypeScript target" in PAGE.read_text(encoding="utf-8")
    assert len(_target().source.splitlines()) <= TARGET_LINES


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=SECONDS, check=False
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Node project holding every `ts` block of the page under src/, compiled to dist/, with
    `completion-harness` built from packages/node in its node_modules."""
    node = installed_node(PACKAGE)
    installed_node(OPENAI)
    folder = tmp_path_factory.mktemp("typescript")
    modules = folder / "node_modules"
    modules.mkdir()
    for installed in (*(PACKAGE / "node_modules").iterdir(), OPENAI / "node_modules" / "openai"):
        if not installed.name.startswith("."):
            (modules / installed.name).symlink_to(installed, target_is_directory=True)
    package = modules / "completion-harness"
    package.mkdir()
    shutil.copy(PACKAGE / "package.json", package / "package.json")
    tsc = str(PACKAGE / "node_modules" / "typescript" / "bin" / "tsc")
    built = _run(
        [node, tsc, "-p", str(PACKAGE / "tsconfig.json"), "--outDir", str(package / "dist")], folder
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (folder / "package.json").write_text('{"type": "module"}\n', encoding="utf-8")
    (folder / "tsconfig.json").write_text(TSCONFIG, encoding="utf-8")
    (folder / "src").mkdir()
    for block in _blocks():
        (folder / "src" / f"{_module(block)}.ts").write_text(block.source, encoding="utf-8")
    for index, (entry, names) in enumerate(EXPORTED.items()):
        (folder / "src" / f"exported-{index}.ts").write_text(_importing(entry, names), "utf-8")
    compiled = _run([node, tsc, "-p", "."], folder)
    assert compiled.returncode == 0, (
        f"{PAGE.name}: the ts blocks do not compile:\n{compiled.stdout}"
    )
    return folder


def _importing(entry: str, names: tuple[str, ...]) -> str:
    """A module that compiles only when `entry` exports every one of `names` (a lower-case name
    is a value, the others types)."""
    shown = ", ".join(f"typeof {name}" if name[0].islower() else name for name in names)
    return f"import type {{ {', '.join(names)} }} from {json.dumps(entry)};\nexport type Names = [{shown}];\n"


def _module(block: Fence) -> str:
    """The name of the module a block is compiled as: `target` for the target."""
    return "target" if block == _target() else f"block-{block.line}"


def _completion_run(program: Path) -> subprocess.CompletedProcess[str]:
    target = shlex.join([installed_node(None), str(program)])
    return _run(
        [str(HARNESS), "run", str(ROOT / "scenarios" / "completion"), "--target-cmd", target], ROOT
    )


@pytest.mark.subprocess
def test_every_block_compiles_against_the_package(project: Path) -> None:
    compiled = sorted(path.name for path in (project / "dist").iterdir())
    assert compiled == sorted(
        [
            *(f"{_module(block)}.js" for block in _blocks()),
            *(f"exported-{i}.js" for i in range(len(EXPORTED))),
        ]
    )


def test_the_exported_names_are_the_page_s() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for entry, names in EXPORTED.items():
        assert f'"{entry}"' in page
        assert all(re.search(rf"\b{name}\b", page) for name in names), entry


@pytest.mark.subprocess
def test_the_target_passes_every_completion_cell(project: Path) -> None:
    completed = _completion_run(project / "dist" / "target.js")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert f"{declared_cells(completion_hello())} passed, 0 failed" in completed.stdout


@pytest.mark.subprocess
def test_the_mistake_the_page_describes_fails_as_it_shows(project: Path) -> None:
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    correct, mistaken = BLANK_AS_TRIM
    assert f"Write `{mistaken}` instead of the Java whitespace test" in page
    (shown,) = re.findall(r"fails, naming the cell: `([^`]+)`", page)
    compiled = (project / "dist" / "target.js").read_text(encoding="utf-8")
    assert compiled.count(correct) == 1
    mutant = project / "mutant" / "target.js"  # beside dist/, which other tests list
    mutant.parent.mkdir()
    mutant.write_text(compiled.replace(correct, mistaken), "utf-8")

    completed = _completion_run(mutant)

    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert shown in completed.stdout
