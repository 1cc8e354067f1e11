"""A command target is isolated: it runs in its own process group, which is ended whole (children
included) at a timeout, after a crash and at shutdown, without ever waiting on a pipe a child of
it still holds; it gets a minimal environment plus what the user passes; and `harness run` always
finishes, reports and exits, 130 on Ctrl-C, whatever the target does."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.scenarios import RunOptions, expand, load_scenarios
from harness.scenarios.on_target import TargetSpec, target_runner
from harness.scenarios.report import failure_lines
from harness.scenarios.run import CellResult
from harness.targets import TargetSpecError
from harness.targets.environment import PLACEHOLDER_KEY, target_environment
from tests.support.targets import stdio_target

pytest_plugins = ["pytester"]

TWO_CELLS: Final = """\
- name: capital
  stores: [memory]
  script:
    - text: It is Paris.
  agent: {user_message: "Capital?"}
  expect: {status: completed, outcome_record: {final_message: It is Paris.}}
- name: capital-again
  stores: [memory]
  script:
    - text: It is Rome.
  agent: {user_message: "Capital?"}
  expect: {status: completed, outcome_record: {final_message: It is Rome.}}
"""
WAIT_SECONDS: Final = 120.0
"""How long a test waits for a state (a file written, a process gone, a run finished) before it
fails instead of hanging; never a measure of how fast anything is."""
LAUNCHER: Final = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from harness.cli import main; main(prog_name='harness')"
)
"""`harness` with Python's own Ctrl-C handling, even when the test runner was started with
SIGINT ignored (a shell's background job), which a child would inherit."""


@pytest.fixture
def two_cells(tmp_path: Path) -> Path:
    path = tmp_path / "capital.yaml"
    path.write_text(TWO_CELLS)
    return path


@pytest.fixture
def pids(tmp_path: Path) -> Iterator[Path]:
    """A file the targets of a test append their process ids to (and their children's); any
    still running at the end is killed, so a failing test leaves nothing behind."""
    path = tmp_path / "pids"
    path.touch()
    yield path
    for pid in recorded(path):
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def recorded(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


def alive(pid: int) -> bool:
    """Whether `pid` is a running process (a zombie waiting for its reaper is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def ended(pid: int) -> bool:
    """Whether `pid` is gone, waiting for it at most `WAIT_SECONDS` (a SIGKILL is delivered
    asynchronously)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} was never written"
        time.sleep(0.05)


def target(tmp_path: Path, pids: Path, change: str = "pass", *, child: bool = False) -> str:
    """The reference as a `--target-cmd` recording its pid in `pids` (`change` as for
    `stdio_target`); with `child`, see `with_child`."""
    record = f"""
    if message.get("type") == "hello":
        with open({str(pids)!r}, "a") as file:
            file.write(f"{{os.getpid()}}\\n")
    """
    body = "import os\n" + textwrap.dedent(record) + textwrap.dedent(change)
    program = stdio_target(tmp_path, body)
    return with_child(program, pids) if child else program


def with_child(program: str, pids: Path) -> str:
    """`program` started by a shell that first leaves a `sleep` running in the background,
    holding the target's stdout and stderr; the sleep's pid is recorded in `pids`."""
    script = f"sleep 1000 & echo $! >> {shlex.quote(str(pids))}; exec {program}"
    return shlex.join(["sh", "-c", script])


def run_on(spec: TargetSpec, path: Path) -> list[CellResult]:
    with target_runner(spec) as runner:
        return [
            runner.run_cell(cell, RunOptions())
            for cell in expand(load_scenarios([path]), RunOptions())
        ]


# -- process groups ---------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_a_child_holding_the_targets_stdout_neither_hangs_the_run_nor_outlives_it(
    tmp_path: Path, two_cells: Path, pids: Path
) -> None:
    results = run_on(TargetSpec(command=target(tmp_path, pids, child=True)), two_cells)
    assert all(result.passed for result in results), [failure_lines(r) for r in results]
    started = recorded(pids)
    assert len(started) == 2, "one target and its child, started once"
    assert all(ended(pid) for pid in started)


@pytest.mark.subprocess
def test_a_target_exiting_while_its_child_holds_stdout_is_a_crash_not_a_hang(
    tmp_path: Path, two_cells: Path, pids: Path
) -> None:
    crash = """
    if message.get("scenario") == "capital":
        sys.exit(3)
    """
    spec = TargetSpec(command=target(tmp_path, pids, crash, child=True), cell_timeout=600)
    first, second = run_on(spec, two_cells)
    assert first.error_code == "target_crashed"
    assert "exited before answering with exit code 3" in (first.error or "")
    assert second.passed, failure_lines(second)
    assert all(ended(pid) for pid in recorded(pids))


@pytest.mark.subprocess
def test_a_hanging_target_is_ended_with_its_children_at_the_timeout(
    tmp_path: Path, two_cells: Path, pids: Path
) -> None:
    hang = """
    if message.get("scenario") == "capital":
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends it
        time.sleep(1000)
    """
    spec = TargetSpec(command=target(tmp_path, pids, hang, child=True), cell_timeout=2)
    first, second = run_on(spec, two_cells)
    assert first.error_code == "target_timeout"
    assert second.passed, failure_lines(second)
    started = recorded(pids)
    assert len(started) == 4, "started again after the timeout, each time with its child"
    assert all(ended(pid) for pid in started)


@pytest.mark.subprocess
def test_a_target_that_stops_reading_its_stdin_times_out_instead_of_blocking_the_write(
    tmp_path: Path, pids: Path
) -> None:
    """The cell message is far larger than a pipe holds; the target answers hello, then never
    reads again (the first time it is started)."""
    path = tmp_path / "long.yaml"
    path.write_text(
        TWO_CELLS.replace('user_message: "Capital?"', f'user_message: "{"?" * 300_000}"')
    )
    deaf = f"""
    if message.get("type") == "hello" and not os.path.exists({str(tmp_path / "deaf")!r}):
        open({str(tmp_path / "deaf")!r}, "w").close()
        sys.stdout.write(json.dumps(answer) + "\\n")
        sys.stdout.flush()
        import time
        time.sleep(1000)
    """
    first, second = run_on(TargetSpec(command=target(tmp_path, pids, deaf), cell_timeout=2), path)
    assert first.error_code == "target_timeout"
    assert "did not read its stdin within 2s (--cell-timeout)" in (first.error or "")
    assert second.passed, failure_lines(second)
    assert all(ended(pid) for pid in recorded(pids))


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("no-such-harness-target-program", "No such file or directory"),
        ("my\0target", "embedded null byte"),
    ],
    ids=["missing", "nul-byte"],
)
def test_a_command_that_cannot_start_fails_its_cells_saying_why(
    two_cells: Path, command: str, reason: str
) -> None:
    first, second = run_on(TargetSpec(command=command), two_cells)
    assert first.error_code == second.error_code == "target_spec_invalid"
    assert f"cannot start --target-cmd {command!r}: {reason}" in (first.error or "")


# -- Ctrl-C, out of process -------------------------------------------------------------------------


def harness_run(folder: Path, *arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, "run", *arguments],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )


def finished(process: subprocess.Popen[str]) -> tuple[str, str]:
    """Its stdout and stderr once it exits; it is killed (and the test fails) if it does not
    within `WAIT_SECONDS`."""
    try:
        return process.communicate(timeout=WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"harness run did not finish:\n{out}\n{err}")


def reports(folder: Path) -> list[Path]:
    return [
        folder / "report.json",
        folder / "report.xml",
        folder / "report.html",
        folder / ".harness" / "last-run.json",
    ]


REPORTS: Final = ("--json", "report.json", "--junit-xml", "report.xml", "--html", "report.html")


@pytest.mark.subprocess
@pytest.mark.parametrize("child", [False, True], ids=["target", "target-and-child"])
def test_ctrl_c_while_a_cell_hangs_reports_and_exits_130(
    tmp_path: Path, two_cells: Path, pids: Path, child: bool
) -> None:
    hang = f"""
    if message.get("type") == "cell":
        open({str(tmp_path / "in-cell")!r}, "w").close()
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends it
        time.sleep(1000)
    """
    command = target(tmp_path, pids, hang, child=child)
    run = harness_run(
        tmp_path, str(two_cells), "--target-cmd", command, "--cell-timeout", "600", *REPORTS
    )
    wait_for(tmp_path / "in-cell")
    run.send_signal(signal.SIGINT)
    out, err = finished(run)
    assert run.returncode == 130, out + err
    assert "Aborted" not in err
    assert "0 passed, 0 failed, 2 not run (interrupted)" in out
    assert all(path.is_file() for path in reports(tmp_path))
    assert json.loads((tmp_path / "report.json").read_text())["cells"] == []
    assert all(ended(pid) for pid in recorded(pids))


STUBBORN: Final = """\
import json, os, signal, sys, time
from harness.scenarios.reference import run

with open(sys.argv[1], "a") as file:
    file.write(f"{os.getpid()}\\n")
for line in sys.stdin:
    answer = run(json.loads(line))
    if answer is None:  # shutdown: it ignores it, and SIGTERM
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open(sys.argv[2], "w").close()
        time.sleep(1000)
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""


@pytest.mark.subprocess
def test_ctrl_c_while_the_target_is_shut_down_reports_and_exits_130(
    tmp_path: Path, two_cells: Path, pids: Path
) -> None:
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    marker = tmp_path / "shutting-down"
    program = shlex.join([sys.executable, str(tmp_path / "stubborn.py"), str(pids), str(marker)])
    run = harness_run(tmp_path, str(two_cells), "--target-cmd", with_child(program, pids), *REPORTS)
    wait_for(marker)
    run.send_signal(signal.SIGINT)
    out, err = finished(run)
    assert run.returncode == 130, out + err
    assert "Aborted" not in err
    assert "2 passed, 0 failed" in out
    assert all(path.is_file() for path in reports(tmp_path))
    assert json.loads((tmp_path / "report.json").read_text())["summary"]["passed"] == 2
    assert all(ended(pid) for pid in recorded(pids))


@pytest.mark.subprocess
def test_harness_run_finishes_when_a_child_of_the_target_holds_its_stdout(
    tmp_path: Path, two_cells: Path, pids: Path
) -> None:
    command = target(tmp_path, pids, child=True)
    run = harness_run(tmp_path, str(two_cells), "--target-cmd", command, "--json", "report.json")
    out, err = finished(run)
    assert run.returncode == 0, out + err
    assert json.loads((tmp_path / "report.json").read_text())["summary"]["passed"] == 2
    assert all(ended(pid) for pid in recorded(pids))


# -- the environment --------------------------------------------------------------------------------

KEPT: Final = {
    "PATH",
    "HOME",
    "TMPDIR",
    "LANG",
    "TZ",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
}


def environment_recorder(tmp_path: Path) -> str:
    """A `change` body writing the target's environment to `environment.json` at hello."""
    return f"""
    if message.get("type") == "hello":
        with open({str(tmp_path / "environment.json")!r}, "w") as file:
            json.dump(dict(os.environ), file)
    """


def canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-openai-0123456789")
    monkeypatch.setenv("CANARY_DATABASE_URL", "postgresql://app:canary-password@db/app")
    monkeypatch.setenv("COPIED_FLAG", "copied")


@pytest.mark.subprocess
def test_a_command_target_gets_a_minimal_environment_and_what_is_passed(
    tmp_path: Path, two_cells: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canaries(monkeypatch)
    command = target(tmp_path, pids, environment_recorder(tmp_path))
    spec = TargetSpec(command=command, env=("COPIED_FLAG", "SET_FLAG=set=here"))
    assert all(result.passed for result in run_on(spec, two_cells))
    seen = json.loads((tmp_path / "environment.json").read_text())
    assert seen["OPENAI_API_KEY"] == seen["ANTHROPIC_API_KEY"] == PLACEHOLDER_KEY
    assert seen["GEMINI_API_KEY"] == PLACEHOLDER_KEY
    assert seen["PATH"] == os.environ["PATH"]
    assert (seen["COPIED_FLAG"], seen["SET_FLAG"]) == ("copied", "set=here")
    assert "CANARY_DATABASE_URL" not in seen
    assert {name for name in seen if not name.startswith("LC_")} <= KEPT | {
        "COPIED_FLAG",
        "SET_FLAG",
    }


def test_the_environment_keeps_the_locale_and_lets_a_passed_variable_win() -> None:
    source = {
        "PATH": "/bin",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "AWS_SECRET_ACCESS_KEY": "canary",
        "OPENAI_API_KEY": "sk-real",
    }
    assert target_environment(["OPENAI_API_KEY", "TZ=Europe/Paris"], source) == {
        "PATH": "/bin",
        "LC_ALL": "C.UTF-8",
        "TZ": "Europe/Paris",
        "OPENAI_API_KEY": "sk-real",
        "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
        "GEMINI_API_KEY": PLACEHOLDER_KEY,
    }


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("BAD NAME=sk-canary-secret", "--target-env 'BAD NAME': expected NAME"),
        ("=sk-canary-secret", "--target-env '': expected NAME"),
        ("NOT_SET_HERE", "NOT_SET_HERE is not set in the harness's environment"),
    ],
)
def test_a_bad_target_env_entry_is_refused_naming_it_never_its_value(
    entry: str, problem: str
) -> None:
    with pytest.raises(TargetSpecError) as refused:
        TargetSpec(command="my-target", env=(entry,))
    assert problem in str(refused.value)
    assert "sk-canary-secret" not in str(refused.value)


def test_target_env_with_a_callable_target_is_refused() -> None:
    with pytest.raises(TargetSpecError, match="sets the environment of a command target"):
        TargetSpec(callable="harness.scenarios.reference:run", env=("PATH",))


def test_cli_refuses_target_env_without_a_target_command(two_cells: Path) -> None:
    alone = CliRunner().invoke(main, ["run", str(two_cells), "--target-env", "PATH"])
    assert alone.exit_code == 2
    assert "--target-env sets the environment of a --target-cmd" in alone.output
    unset = CliRunner().invoke(
        main, ["run", str(two_cells), "--target-cmd", "x", "--target-env", "NOT_SET_HERE"]
    )
    assert unset.exit_code == 2
    assert "NOT_SET_HERE is not set in the harness's environment" in unset.output


def test_cli_refuses_a_target_env_in_pyproject_that_is_not_a_list(
    tmp_path: Path, two_cells: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\ntarget-env = "PATH"\n')
    refused = CliRunner().invoke(main, ["run", str(two_cells), "--target-cmd", "x"])
    assert refused.exit_code == 2
    assert "[tool.harness] target-env must be a list of strings" in refused.output


@pytest.mark.subprocess
def test_cli_passes_target_env_from_pyproject_and_the_command_line(
    tmp_path: Path, two_cells: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canaries(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.harness]\ntarget-env = ["COPIED_FLAG", "SET_FLAG=from-pyproject"]\n'
    )
    command = target(tmp_path, pids, environment_recorder(tmp_path))
    arguments = ["run", str(two_cells), "--target-cmd", command, "--target-env", "SET_FLAG=cli"]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    seen = json.loads((tmp_path / "environment.json").read_text())
    assert (seen["COPIED_FLAG"], seen["SET_FLAG"]) == ("copied", "cli")
    assert "CANARY_DATABASE_URL" not in seen
    assert seen["OPENAI_API_KEY"] == PLACEHOLDER_KEY


@pytest.mark.subprocess
def test_pytest_plugin_passes_harness_target_env(
    pytester: pytest.Pytester, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canaries(monkeypatch)
    pytester.makeini(
        """
        [pytest]
        harness_scenarios = scenarios
        addopts = --strict-markers --strict-config -p no:cacheprovider -p no:cassetter
        filterwarnings = error
        """
    )
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "capital.yaml").write_text(TWO_CELLS)
    (pytester.path / "pyproject.toml").write_text('[tool.harness]\ntarget-env = ["COPIED_FLAG"]\n')
    command = target(pytester.path, pids, environment_recorder(pytester.path))
    result = pytester.runpytest(
        "--harness-target-cmd", command, "--harness-target-env", "SET_FLAG=from-pytest"
    )
    result.assert_outcomes(passed=2)
    seen = json.loads((pytester.path / "environment.json").read_text())
    assert (seen["COPIED_FLAG"], seen["SET_FLAG"]) == ("copied", "from-pytest")
    assert "CANARY_DATABASE_URL" not in seen


def test_run_scenarios_refuses_target_env_it_cannot_apply(two_cells: Path) -> None:
    from harness import run_scenarios

    with pytest.raises(TargetSpecError, match="target_env sets the environment of a target_cmd"):
        run_scenarios([two_cells], target_env=["PATH"])
    with pytest.raises(TargetSpecError, match="a list of NAME or NAME=VALUE strings"):
        run_scenarios([two_cells], target_cmd="my-target", target_env="SECRET=sk-canary")


@pytest.mark.subprocess
def test_run_scenarios_passes_target_env_to_the_command(
    tmp_path: Path, two_cells: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness import run_scenarios

    canaries(monkeypatch)
    command = target(tmp_path, pids, environment_recorder(tmp_path))
    run = run_scenarios([two_cells], target_cmd=command, target_env=["SET_FLAG=library"])
    assert run.passed, run.failures()
    seen = json.loads((tmp_path / "environment.json").read_text())
    assert seen["SET_FLAG"] == "library"
    assert "CANARY_DATABASE_URL" not in seen
