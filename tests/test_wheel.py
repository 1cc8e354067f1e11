"""The wheel is what `pip install completion-harness` gives: built with `python -m build`,
installed into a fresh virtualenv, it runs the README's scenario with its own `harness` command.

Installing uses uv (pinned by the Makefile, in the dev environment) with its cache, the same
resolution as pip in a fraction of the time.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.docs.fences import ROOT, fences

pytestmark = pytest.mark.subprocess

BIN = Path(sys.executable).parent


def _run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=120
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


def test_the_installed_wheel_runs_the_readme_scenario(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    created = _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    installed = _run(
        BIN / "uv", "pip", "install", "--python", venv / "bin" / "python", wheel, cwd=tmp_path
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr

    (scenario,) = [f for f in fences(ROOT / "README.md") if f.language == "yaml"]
    (tmp_path / "capital.yaml").write_text(scenario.source, encoding="utf-8")
    ran = _run(venv / "bin" / "harness", "run", "capital.yaml", "--html", "r.html", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed, 0 failed" in ran.stdout
    assert "capital" in (tmp_path / "r.html").read_text(encoding="utf-8")
