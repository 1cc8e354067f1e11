"""The scenario library bundled with the harness: found in the checkout by a development install
(the installed wheel's copy is tested in tests/test_wheel.py), run by `harness run` and
`run_scenarios` given no paths in a folder without `scenarios/`, never recorded into from there,
and copied by `harness library copy` without overwriting anything unless asked to."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import run_scenarios
from harness.cli import main
from harness.scenarios.bundled import (
    LibraryCopyRefusedError,
    LibraryReadOnlyError,
    ScenarioLibrary,
    bundled_library,
)
from harness.scenarios.load import load_scenarios
from harness.scenarios.plan import default_paths, plan_run

ROOT = Path(__file__).resolve().parents[2]
SMALL = "cassette and js"
"""A `-k` selecting every scenario that replays a cassette, on one runtime profile."""


@pytest.fixture
def empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    # as a user runs it: not as a worker with its own SQLite file (pytest-xdist, harness run -n)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("HARNESS_WORKER", raising=False)
    return folder


@pytest.fixture
def small_library(tmp_path: Path) -> ScenarioLibrary:
    root = tmp_path / "library"
    for name, text in {
        "scenarios/a.yaml": "a",
        "scenarios/nested/b.yaml": "b",
        "cassettes/c.json": "c",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return ScenarioLibrary(root=root, installed=False)


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_a_development_install_finds_the_checkout_and_every_cassette_is_inside_it() -> None:
    library = bundled_library()
    assert (library.root, library.installed) == (ROOT, False)
    replayed = {
        (item.folder / item.scenario.cassette).resolve()
        for item in load_scenarios([library.scenarios])
        if item.scenario.cassette is not None
    }
    assert replayed, "the library replays cassettes"
    outside = [path for path in replayed if not path.is_relative_to(library.cassettes)]
    assert not outside, "a wheel ships cassettes/ only: each scenario's cassette must be in it"
    missing = [path for path in replayed if not path.is_file()]
    assert not missing
    assert {Path("cassettes") / path.relative_to(ROOT / "cassettes") for path in replayed} <= set(
        library.files()
    )


def test_harness_run_without_paths_in_a_folder_without_scenarios_runs_the_bundled_library(
    empty_folder: Path,
) -> None:
    result = CliRunner().invoke(main, ["run", "-k", SMALL])
    assert result.exit_code == 0, result.output
    scenarios = len(load_scenarios([ROOT / "scenarios"]))
    first = result.output.splitlines()[0]
    assert first == f"running the bundled scenario library ({scenarios} scenarios) from {ROOT}"
    assert "14 passed, 0 failed" in result.output  # each cassette replayed from the library


def test_a_folder_with_scenarios_runs_its_own_and_says_nothing_of_the_bundled_one(
    empty_folder: Path,
) -> None:
    (empty_folder / "scenarios").mkdir()
    (empty_folder / "scenarios" / "one.yaml").write_text(
        "name: one\nstores: [memory]\nruntimes: [js]\nscript: [{text: Hi.}]\n"
        "agent: {user_message: Hello?}\nexpect: {status: completed}\n",
        encoding="utf-8",
    )
    assert default_paths() == [Path("scenarios")]
    assert plan_run().bundled is None
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 0, result.output
    assert "bundled" not in result.output
    assert "1 passed, 0 failed" in result.output


def test_a_broken_scenarios_link_fails_as_today_instead_of_running_the_bundled_library(
    empty_folder: Path,
) -> None:
    (empty_folder / "scenarios").symlink_to(empty_folder / "gone")
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 2
    assert "scenarios: no such file or folder" in result.output
    assert "bundled" not in result.output


def test_run_scenarios_and_the_plan_run_the_same_bundled_library(empty_folder: Path) -> None:
    plan = plan_run(keyword=SMALL)
    assert plan.bundled is not None
    assert plan.bundled.library == bundled_library()
    assert plan.bundled.scenarios == len(load_scenarios([ROOT / "scenarios"]))
    run = run_scenarios(keyword=SMALL)
    assert run.passed, "\n".join(run.failures())
    assert [result.cell.id for result in run.results] == [cell.id for cell in plan.cells]
    assert all(result.cell.loaded.path.is_relative_to(ROOT / "scenarios") for result in run.results)


@pytest.mark.parametrize("mode", ["once", "new_episodes", "all"])
def test_a_run_without_paths_never_records_into_the_bundled_library(
    empty_folder: Path, mode: str
) -> None:
    with pytest.raises(LibraryReadOnlyError) as refused:
        plan_run(record_mode=mode)
    assert refused.value.code == "library_read_only"
    assert f"record_mode={mode} would record into the bundled scenario library" in str(
        refused.value
    )
    result = CliRunner().invoke(main, ["run", "--record-mode", mode])
    assert result.exit_code == 2
    assert f"error: --record-mode={mode} would record into the bundled" in result.output
    assert "harness library copy DIR" in result.output


def test_harness_record_without_paths_refuses_the_bundled_library_before_asking_for_a_key(
    empty_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(main, ["record", "--provider", "openai"])
    assert result.exit_code == 2
    assert "harness record would record into the bundled scenario library" in result.output


def test_harness_library_path_prints_the_library(empty_folder: Path) -> None:
    result = CliRunner().invoke(main, ["library", "path"])
    assert result.exit_code == 0, result.output
    assert result.output == f"{ROOT}\n"


def test_harness_library_copy_copies_scenarios_and_cassettes_that_then_run(
    empty_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CliRunner().invoke(main, ["library", "copy", "mine"])
    assert result.exit_code == 0, result.output
    library = bundled_library()
    copied = _tree(empty_folder / "mine")
    assert copied == {
        path.as_posix(): (library.root / path).read_bytes() for path in library.files()
    }
    assert {name.split("/")[0] for name in copied} == {"scenarios", "cassettes"}
    assert f"({len(copied)} files)" in result.output
    monkeypatch.chdir(empty_folder / "mine")
    ran = CliRunner().invoke(main, ["run", "-k", SMALL])
    assert ran.exit_code == 0, ran.output
    assert "bundled" not in ran.output
    assert "14 passed, 0 failed" in ran.output


def test_harness_library_copy_refuses_to_overwrite_without_force(empty_folder: Path) -> None:
    kept = empty_folder / "mine" / "cassettes" / "wire" / "chat-stream-max-tokens.json"
    kept.parent.mkdir(parents=True)
    kept.write_text("my own", encoding="utf-8")
    refused = CliRunner().invoke(main, ["library", "copy", "mine"])
    assert refused.exit_code == 2
    assert "error: mine already holds 1 of the library's files" in refused.output
    assert "--force" in refused.output
    assert _tree(empty_folder / "mine") == {
        "cassettes/wire/chat-stream-max-tokens.json": b"my own"
    }, "nothing is copied when anything is refused"
    forced = CliRunner().invoke(main, ["library", "copy", "mine", "--force"])
    assert forced.exit_code == 0, forced.output
    assert "1 overwritten" in forced.output
    assert (
        kept.read_bytes()
        == (bundled_library().root / kept.relative_to(empty_folder / "mine")).read_bytes()
    )


def test_copy_refuses_what_force_cannot_replace(
    small_library: ScenarioLibrary, tmp_path: Path
) -> None:
    onto_itself = pytest.raises(
        LibraryCopyRefusedError, match="the bundled scenario library itself"
    )
    with onto_itself:
        small_library.copy_to(small_library.root, force=True)
    folder_for_a_file = tmp_path / "a"
    (folder_for_a_file / "scenarios" / "a.yaml").mkdir(parents=True)
    with pytest.raises(LibraryCopyRefusedError, match=r"a\.yaml is a folder"):
        small_library.copy_to(folder_for_a_file, force=True)
    file_for_a_folder = tmp_path / "b"
    (file_for_a_folder / "scenarios").mkdir(parents=True)
    (file_for_a_folder / "scenarios" / "nested").write_text("x", encoding="utf-8")
    with pytest.raises(LibraryCopyRefusedError, match="nested is a file"):
        small_library.copy_to(file_for_a_folder, force=True)
    assert _tree(small_library.root) == {
        "cassettes/c.json": b"c",
        "scenarios/a.yaml": b"a",
        "scenarios/nested/b.yaml": b"b",
    }
    assert _tree(folder_for_a_file) == {}
    assert _tree(file_for_a_folder) == {"scenarios/nested": b"x"}


def test_copy_with_force_replaces_a_link_instead_of_writing_through_it(
    small_library: ScenarioLibrary, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("not the library's", encoding="utf-8")
    destination = tmp_path / "copy"
    (destination / "scenarios").mkdir(parents=True)
    (destination / "scenarios" / "a.yaml").symlink_to(elsewhere)
    with pytest.raises(LibraryCopyRefusedError, match="already holds 1 of the library's files"):
        small_library.copy_to(destination)
    copied = small_library.copy_to(destination, force=True)
    assert copied.overwritten == 1
    assert len(copied.files) == 3
    assert elsewhere.read_text(encoding="utf-8") == "not the library's"
    assert not (destination / "scenarios" / "a.yaml").is_symlink()
    assert _tree(destination) == _tree(small_library.root)
