"""The npm package `completion-harness` (packages/node) builds, passes its own Node tests, holds
types that match the harness's wire models, and works from its `npm pack` tarball as a user
installs it: a TypeScript completion target written only against the documented exports (and the
one its README shows) type-checks under `tsc --strict` and passes the completion scenarios
through `harness run`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pytest

from tests.support.browser import chromium_executable
from tests.support.node import installed_node

pytestmark = [pytest.mark.subprocess, pytest.mark.browser]

ROOT: Final = Path(__file__).resolve().parents[2]
PACKAGE: Final = ROOT / "packages" / "node"
TARGET_SOURCE: Final = Path(__file__).with_name("target") / "completion.ts"
AGENT_SOURCE: Final = Path(__file__).with_name("target") / "agent.ts"
README: Final = PACKAGE / "README.md"
HARNESS: Final = Path(sys.executable).with_name("harness")
TSC: Final = PACKAGE / "node_modules" / ".bin" / "tsc"
STEP_SECONDS: Final = 180.0
COMPLETION_CELLS_AT_LEAST: Final = 17
"""The cells of scenarios/completion today are more; a target that runs none must not pass."""


def run(
    command: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `command` to its end; fail the test, with its output, when it exits non-zero."""
    completed = subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
        env={**os.environ, "HARNESS_BIN": str(HARNESS), "NO_COLOR": "1", **(env or {})},
    )
    if completed.returncode != 0:
        pytest.fail(
            f"`{shlex.join(command)}` in {cwd} exited {completed.returncode}:\n"
            f"{completed.stdout[-6000:]}\n{completed.stderr[-6000:]}"
        )
    return completed


def npm() -> str:
    """The `npm` on PATH (installed_node has checked it)."""
    found = shutil.which("npm")
    assert found is not None
    return found


def package_copy(destination: Path) -> Path:
    """packages/node without its dist/, its installed packages linked: built and packed there, so
    this test never rewrites the dist/ that the Node examples import while they run."""
    shutil.copytree(
        PACKAGE,
        destination,
        ignore=shutil.ignore_patterns("node_modules", "dist", "*.tgz", "test-results", ".*lock"),
    )
    (destination / "node_modules").symlink_to(PACKAGE / "node_modules", target_is_directory=True)
    return destination


def test_the_package_builds_passes_its_tests_and_runs_a_target_from_its_tarball(
    tmp_path: Path,
) -> None:
    node = installed_node(PACKAGE)
    chromium = chromium_executable()
    package = package_copy(tmp_path / "node")

    run([npm(), "run", "build"], package)
    tested = run([npm(), "test"], package, {"CHROMIUM_PATH": chromium})
    assert "# fail 0" in tested.stdout
    assert "# skipped 0" in tested.stdout, tested.stdout
    packed = run(
        [npm(), "pack", "--ignore-scripts", "--json", "--pack-destination", str(tmp_path)],
        package,
    )
    tarball = tmp_path / json.loads(packed.stdout)[0]["filename"]

    with tarfile.open(tarball) as archive:
        files = set(archive.getnames())
        manifest = archive.extractfile("package/package.json")
        assert manifest is not None
        shipped: dict[str, Any] = json.load(manifest)
    for entry in ("index", "playwright", "vitest"):
        assert {f"package/dist/{entry}.js", f"package/dist/{entry}.d.ts"} <= files
    assert "package/README.md" in files
    assert not {name for name in files if name.startswith(("package/src/", "package/test/"))}
    assert "dependencies" not in shipped  # nothing installs with it
    assert shipped["peerDependenciesMeta"] == {
        "@playwright/test": {"optional": True},
        "vitest": {"optional": True},
    }

    project = tmp_path / "user-project"
    project.mkdir()
    (project / "package.json").write_text(
        json.dumps({"name": "user-project", "private": True, "type": "module"}), encoding="utf-8"
    )
    run(
        [npm(), "install", "--prefer-offline", "--no-audit", "--no-fund", str(tarball)],
        project,
    )
    targets = {"target": TARGET_SOURCE.read_text(encoding="utf-8"), "readme": readme_target()}
    for name, source in targets.items():
        (project / f"{name}.ts").write_text(source, encoding="utf-8")
    # strict, the package's own .d.ts checked too, and no @types of any kind: a target needs
    # nothing but the package
    (project / "tsconfig.json").write_text(
        json.dumps(
            {
                "compilerOptions": {
                    "strict": True,
                    "target": "ES2022",
                    "module": "NodeNext",
                    "moduleResolution": "NodeNext",
                    "types": [],
                    "skipLibCheck": False,
                    "outDir": "dist",
                },
                "files": [f"{name}.ts" for name in targets],
            }
        ),
        encoding="utf-8",
    )
    run([str(TSC), "-p", "tsconfig.json", "--strict"], project)

    for name in targets:
        report = tmp_path / f"{name}.json"
        target = shlex.join([node, str(project / "dist" / f"{name}.js")])
        completed = run(
            [
                str(HARNESS),
                "run",
                "scenarios/completion",
                "--target-cmd",
                target,
                "--json",
                str(report),
            ],
            ROOT,
        )

        cells: list[dict[str, Any]] = json.loads(report.read_text(encoding="utf-8"))["cells"]
        assert len(cells) >= COMPLETION_CELLS_AT_LEAST, name
        assert [cell["id"] for cell in cells if not cell["passed"]] == [], name
        assert f"{len(cells)} passed, 0 failed" in completed.stdout, name


MISSPELT: Final = ("agent.system_prompt,", "agent.sytem_prompt,")
"""One field of the agent cell's input, and the same misspelt."""


def test_an_agent_target_reads_a_typed_cell_and_tsc_strict_refuses_a_misspelt_field(
    tmp_path: Path,
) -> None:
    """The agent cell's input (`agent`, `faults`, `cancel`, `temporal`) is typed from the
    protocol's models, not left as JSON: a misspelt field is a compile error under `--strict`,
    naming the field and the one meant, instead of `undefined` at run time."""
    installed_node(PACKAGE)
    package = package_copy(tmp_path / "node")
    run([npm(), "run", "build"], package)
    project = tmp_path / "user-project"
    (project / "node_modules").mkdir(parents=True)
    (project / "node_modules" / "completion-harness").symlink_to(package, target_is_directory=True)
    (project / "package.json").write_text(
        json.dumps({"name": "user-project", "private": True, "type": "module"}), encoding="utf-8"
    )
    source = AGENT_SOURCE.read_text(encoding="utf-8")
    assert source.count(MISSPELT[0]) == 1
    (project / "agent.ts").write_text(source, encoding="utf-8")
    (project / "misspelt.ts").write_text(source.replace(*MISSPELT), encoding="utf-8")
    for name in ("agent", "misspelt"):
        options = {
            "strict": True,
            "target": "ES2022",
            "module": "NodeNext",
            "moduleResolution": "NodeNext",
            "types": [],
            "skipLibCheck": False,
            "noEmit": True,
        }
        config = {"compilerOptions": options, "files": [f"{name}.ts"]}
        (project / f"{name}.tsconfig.json").write_text(json.dumps(config), encoding="utf-8")

    run([str(TSC), "-p", "agent.tsconfig.json"], project)
    refused = subprocess.run(
        [str(TSC), "-p", "misspelt.tsconfig.json", "--pretty", "false"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
    )

    assert refused.returncode != 0, refused.stdout
    errors = [line for line in refused.stdout.splitlines() if ": error TS" in line]
    assert len(errors) == 1, refused.stdout
    assert errors[0].startswith("misspelt.ts(")
    assert errors[0].endswith(
        "error TS2551: Property 'sytem_prompt' does not exist on type 'AgentSpec'. "
        "Did you mean 'system_prompt'?"
    ), errors[0]


def readme_target() -> str:
    """The target packages/node/README.md shows: its TypeScript block that starts `// target.ts`."""
    blocks = re.findall(r"```ts\n(// target\.ts.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "README.md shows one `// target.ts` block"
    return str(blocks[0])


def test_the_committed_types_are_what_the_models_generate() -> None:
    installed_node(PACKAGE)

    checked = run([npm(), "run", "check-generated"], PACKAGE)

    assert "generated files match the harness's models" in checked.stderr


KINDS_LINE: Final = '  kinds: ("agent" | "decision" | "completion")[];'
"""The target hello's `kinds`, generated from the protocol's `ScenarioKind`."""


def test_the_check_names_each_generated_file_that_drifted(tmp_path: Path) -> None:
    installed_node(PACKAGE)
    copy = package_copy(tmp_path / "node")
    generated = copy / "src" / "generated"
    protocol = generated / "target-protocol.ts"
    lines = protocol.read_text(encoding="utf-8").split("\n")
    assert lines.count(KINDS_LINE) == 1
    changed = lines.index(KINDS_LINE)
    lines[changed] = "  kinds: string[];"
    protocol.write_text("\n".join(lines), encoding="utf-8")
    (generated / "artifact-ref.ts").unlink()
    (generated / "hand-written.ts").write_text("", encoding="utf-8")

    completed = subprocess.run(
        [npm(), "run", "check-generated"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
        env={**os.environ, "HARNESS_BIN": str(HARNESS)},
    )

    assert completed.returncode == 1, completed.stdout + completed.stderr
    problems = [line for line in completed.stderr.splitlines() if line.startswith("src/")]
    assert problems == [
        f"src/generated/target-protocol.ts differs from what the models give (line {changed + 1}: "
        f"the models give {json.dumps(KINDS_LINE)}, the file has {json.dumps('  kinds: string[];')})",
        "src/generated/artifact-ref.ts is missing",
        "src/generated/hand-written.ts is not generated from any schema any more",
    ]
    stale = re.search(
        r"^the generated types are stale: run `npm run generate` in packages/node and commit "
        r"src/generated/ \(`diff -r src/generated (\S+)` shows the changes\)$",
        completed.stderr,
        re.M,
    )
    assert stale is not None, completed.stderr
    regenerated = Path(stale.group(1))
    try:
        assert KINDS_LINE in (regenerated / "target-protocol.ts").read_text(encoding="utf-8")
        assert (regenerated / "artifact-ref.ts").is_file()
    finally:
        shutil.rmtree(regenerated)
