"""The wheel is what `pip install completion-harness` gives: built with `python -m build`,
installed into a fresh virtualenv, it runs the README's scenario with its own `harness` command,
and the scenario library it bundles from an empty folder.

Installing uses uv (pinned by the Makefile, in the dev environment) with its cache, the same
resolution as pip in a fraction of the time. The wheel is built once and installed once per
module.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from fnmatch import fnmatch
from pathlib import Path

import pytest

from harness.scenarios import RunOptions
from harness.scenarios.bundled import ScenarioLibrary
from harness.scenarios.load import load_scenarios
from harness.scenarios.plan import select_cells
from harness.targets import REFERENCE_TARGET
from tests.docs.fences import ROOT, fences

pytestmark = pytest.mark.subprocess

BIN = Path(sys.executable).parent
CHECKOUT_LIBRARY = ScenarioLibrary(root=ROOT, installed=False)
BUNDLED = "harness/_library"
"""Where the wheel puts the library: the package's own folder, scenarios/ and cassettes/."""
UVX_FROM = re.compile(r"`uvx --from (\S+\.whl) harness run`")


def _run(
    *command: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = _run(
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--installer",
        "uv",
        "--outdir",
        out,
        ROOT,
        cwd=ROOT,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = out.glob("completion_harness-*-py3-none-any.whl")
    return path


@pytest.fixture(scope="module")
def harness_command(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `harness` command of the wheel, installed into a fresh virtualenv."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
    created = _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=venv.parent)
    assert created.returncode == 0, created.stderr
    installed = _run(
        BIN / "uv", "pip", "install", "--python", venv / "bin" / "python", wheel, cwd=venv.parent
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv / "bin" / "harness"


def test_the_wheel_holds_the_package_and_its_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "harness/__init__.py",
        "harness/py.typed",
        "harness/cli.py",
        "harness/scenarios/templates/report.html.j2",
    } <= names
    assert any(name.endswith("entry_points.txt") for name in names)
    assert not any(name.startswith(("tests/", "docs/", "scenarios/")) for name in names)


def test_the_wheel_bundles_the_scenario_library_once_as_package_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    bundled = sorted(name for name in names if name.startswith(f"{BUNDLED}/"))
    assert bundled == sorted(f"{BUNDLED}/{path.as_posix()}" for path in CHECKOUT_LIBRARY.files())
    assert {name.split("/")[2] for name in bundled} == {"scenarios", "cassettes"}
    assert len(names) == len(set(names)), "no file is in the wheel twice"


def test_the_installed_wheel_runs_the_readme_scenario(
    harness_command: Path, tmp_path: Path
) -> None:
    (scenario,) = [f for f in fences(ROOT / "README.md") if f.language == "yaml"]
    (tmp_path / "capital.yaml").write_text(scenario.source, encoding="utf-8")
    ran = _run(harness_command, "run", "capital.yaml", "--html", "r.html", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed, 0 failed" in ran.stdout
    assert "capital" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_the_installed_wheel_runs_its_bundled_library_on_a_target_from_an_empty_folder(
    harness_command: Path, tmp_path: Path
) -> None:
    ran = _run(harness_command, "run", "--target", REFERENCE_TARGET, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    first = ran.stdout.splitlines()[0]
    scenarios = len(load_scenarios([CHECKOUT_LIBRARY.scenarios]))
    prefix = f"running the bundled scenario library ({scenarios} scenarios) from "
    assert first.startswith(prefix), ran.stdout
    root = Path(first.removeprefix(prefix))
    assert root.is_relative_to(harness_command.parents[1]), "the installed copy, not the checkout"
    assert root.as_posix().endswith(f"site-packages/{BUNDLED}")
    counts = re.search(r"^(\d+) passed, 0 failed(, \d+ skipped)?$", ran.stdout, re.MULTILINE)
    assert counts is not None, ran.stdout
    assert int(counts.group(1)) > scenarios  # every scenario ran, its cassettes found
    assert "CassetteMissError" not in ran.stdout


def test_harness_library_path_and_copy_from_the_installed_wheel(
    harness_command: Path, tmp_path: Path
) -> None:
    printed = _run(harness_command, "library", "path", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    root = Path(printed.stdout.strip())
    assert root.is_relative_to(harness_command.parents[1])
    expected = {path.as_posix(): (ROOT / path).read_bytes() for path in CHECKOUT_LIBRARY.files()}
    assert {
        file.relative_to(root).as_posix(): file.read_bytes()
        for file in root.rglob("*")
        if file.is_file()
    } == expected

    copied = _run(harness_command, "library", "copy", "mine", cwd=tmp_path)
    assert copied.returncode == 0, copied.stderr
    mine = tmp_path / "mine"
    assert {
        file.relative_to(mine).as_posix(): file.read_bytes()
        for file in mine.rglob("*")
        if file.is_file()
    } == expected
    again = _run(harness_command, "library", "copy", "mine", cwd=tmp_path)
    assert again.returncode == 2
    assert f"error: mine already holds {len(expected)} of the library's files" in again.stderr
    forced = _run(harness_command, "library", "copy", "mine", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr

    own = _run(harness_command, "run", "-k", "cassette and js", cwd=mine)
    assert own.returncode == 0, own.stdout + own.stderr
    assert "bundled" not in own.stdout, "a folder with scenarios/ runs its own"
    replaying = select_cells(
        load_scenarios([ROOT / "scenarios"]), RunOptions(), keyword="cassette and js"
    )
    assert f"{len(replaying)} passed, 0 failed" in own.stdout  # every cassette cell, replayed


def test_the_installed_library_is_never_recorded_into(
    harness_command: Path, tmp_path: Path
) -> None:
    root = Path(_run(harness_command, "library", "path", cwd=tmp_path).stdout.strip())
    named = _run(
        harness_command,
        "run",
        root / "scenarios" / "forced",
        "--record-mode",
        "new_episodes",
        cwd=tmp_path,
    )
    assert named.returncode == 2
    assert "which is part of the installed harness" in named.stderr
    keyless = {name: value for name, value in os.environ.items() if not name.endswith("_API_KEY")}
    recorded = _run(harness_command, "record", "--provider", "openai", cwd=tmp_path, env=keyless)
    assert recorded.returncode == 2
    assert "harness record would record into the bundled scenario library" in recorded.stderr


def test_the_readme_uvx_command_runs_the_built_wheel(wheel: Path, tmp_path: Path) -> None:
    (shown,) = UVX_FROM.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert fnmatch(wheel.name, Path(shown).name), f"the README names {shown}, built {wheel.name}"
    uvx = BIN / "uvx"
    if not uvx.exists():
        pytest.skip(f"uv is not installed in {BIN} (make installs it)")
    ran = _run(uvx, "--from", wheel, "harness", "library", "path", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    root = Path(ran.stdout.strip())
    assert root.as_posix().endswith(f"site-packages/{BUNDLED}")
    assert (root / "scenarios").is_dir()
    assert (root / "cassettes").is_dir()
