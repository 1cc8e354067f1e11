"""The Cloudflare example (examples/targets/cloudflare): the Node agent loop inside workerd, on the
`cloudflare-do` and `cloudflare-workflows` runtime profiles.

A part of the library (every trigger and failure code, the cassettes, streaming, the
`llm_config_override` difference between the profiles, a planned crash and a cancellation) passes
on both profiles with no difference from the reference; the whole library runs the same way
(`harness run --runtime cloudflare-do --target-cmd ...`, see the example's README).

A run survives workerd being killed mid-run, while it waits for a model call: killed alone (the
target starts a new workerd on the same folder) or with the whole target (a new target process on
the same folder is sent the cell again). Either way the run goes on from what it persisted (the
Durable Object's storage; the Workflow's steps, whose instance is woken by an event) and ends
exactly as the uninterrupted run does: the calls made before the kill are not made again, and
only the call in flight is.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Final

import pytest

from harness.scenarios import load_scenarios
from harness.targets.protocol import AGENT_REPLY, AgentResult
from tests.support.fake_provider import (
    Answer,
    ReceivedRequest,
    Reply,
    ToolCall,
    openai_chat_reply,
    serve,
)
from tests.support.node import installed_node

ROOT: Final = Path(__file__).resolve().parents[2]
EXAMPLE: Final = ROOT / "examples" / "targets" / "cloudflare"
HARNESS: Final = Path(sys.executable).with_name("harness")
PROFILES: Final = ("cloudflare-do", "cloudflare-workflows")
RUN_SECONDS: Final = 120.0
ANSWER_SECONDS: Final = 60.0
"""How long the target may take to answer: starting Node and workerd takes a few seconds."""
HOLD_SECONDS: Final = 30.0

# A part of the library on both profiles: sqlite cells of these files whose id or tags hold a word.
LIBRARY_PART: Final = ("scenarios/forced", "scenarios/wire", "scenarios/runtimes")
SELECTED: Final = (
    "trigger or code or cassette-terminal or wire or config-override or crash-after-forced-entered "
    "or cancel-after-a-crash"
)

# The crash-and-resume scenarios' run: search, prose (the trigger), a forced attempt without a
# tool call (failed), a forced attempt with a valid __finish__ (succeeded).
SCENARIO: Final = ROOT / "scenarios" / "runtimes" / "crash-resume.yaml"
ANSWERS: Final = (
    Answer(tool_calls=(ToolCall(id="call_1", name="search", arguments={"q": "capital"}),)),
    Answer(text="The capital of France is Paris."),
    Answer(text="Paris."),
    Answer(
        tool_calls=(
            ToolCall(
                id="call_2", name="__finish__", arguments={"city": "Paris", "confidence": 0.9}
            ),
        )
    ),
)
MUTATED_LINE: Final = "invokeConfigOverride: false,"
MUTANT: Final = "invokeConfigOverride: true,"
MUTANT_FAILURE: Final = re.escape(
    "FAIL scenarios/runtimes/config-override.yaml:LINE config-override-not-invoked-elsewhere"
    "[cloudflare-workflows-memory]: expect.llm_config_override_calls: expected [], got "
    '["work", "work", "forced_completion", "forced_completion"]\n'
).replace("LINE", r"\d+")

KILLED_DURING: Final = 3
"""The request workerd is killed while waiting for: the first forced call."""


@pytest.mark.subprocess
def test_a_part_of_the_library_passes_on_both_profiles(tmp_path: Path) -> None:
    target = shlex.join([installed_node(EXAMPLE), str(EXAMPLE / "target.mjs")])
    report = tmp_path / "report.json"
    runtimes = [option for profile in PROFILES for option in ("--runtime", profile)]
    selection = [*LIBRARY_PART, *runtimes, "--store", "sqlite", "-k", SELECTED]
    checks = ["--target-cmd", target, "--compare-reference", "--json", str(report)]

    completed = harness_run(*selection, *checks)

    assert completed.returncode == 0, completed.stdout + completed.stderr
    cells: list[dict[str, Any]] = json.loads(report.read_text(encoding="utf-8"))["cells"]
    # the agent calls the OpenAI and Anthropic APIs, and its hello says so: Gemini's are skipped
    skipped = {cell["skipped"] for cell in cells if cell["skipped"] is not None}
    assert skipped <= {"the target does not speak the gemini API (hello.providers)"}, skipped
    cells = [cell for cell in cells if cell["skipped"] is None]
    assert [cell["id"] for cell in cells if not cell["passed"]] == []
    assert all(not cell["differences_from_reference"] for cell in cells)
    ids = {cell["id"] for cell in cells}
    assert len(ids) >= 30
    for profile in PROFILES:
        assert f"crash-after-forced-entered[{profile}-sqlite]" in ids
        assert f"cancel-after-a-crash-and-resume[{profile}-sqlite]" in ids
    assert "config-override-invoked-on-js-and-cloudflare-do[cloudflare-do-sqlite]" in ids
    assert "config-override-not-invoked-elsewhere[cloudflare-workflows-sqlite]" in ids


@pytest.mark.subprocess
def test_the_mutant_workflow_that_invokes_the_override_fails(tmp_path: Path) -> None:
    node = installed_node(EXAMPLE)
    copy = tmp_path / "cloudflare"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("node_modules", ".install.lock"))
    (copy / "node_modules").symlink_to(EXAMPLE / "node_modules", target_is_directory=True)
    worker = copy / "worker.mjs"
    source = worker.read_text(encoding="utf-8")
    assert source.count(MUTATED_LINE) == 1
    worker.write_text(source.replace(MUTATED_LINE, MUTANT), encoding="utf-8")

    completed = harness_run(
        "scenarios/runtimes/config-override.yaml",
        *("--runtime", "cloudflare-workflows", "--store", "memory"),
        *("--target-cmd", shlex.join([node, str(copy / "target.mjs")])),
    )

    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert re.search(MUTANT_FAILURE, completed.stdout), completed.stdout


@pytest.mark.subprocess
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="finds workerd through /proc")
@pytest.mark.parametrize("runtime", PROFILES)
def test_a_run_resumes_after_workerd_is_killed_mid_run(runtime: str, tmp_path: Path) -> None:
    node = installed_node(EXAMPLE)
    state = tmp_path / "state"
    with Target(node, state, tmp_path / "stderr-1.txt") as target:
        with model(HeldScript(hold=None)) as (_, base_url):
            baseline = target.run(cell(runtime, "uninterrupted", base_url))

        with model(HeldScript(hold=KILLED_DURING)) as (script, base_url):
            target.send(cell(runtime, "workerd-killed", base_url))
            script.await_held()
            os.kill(workerd_of(target.pid), signal.SIGKILL)
            script.release.set()
            resumed = target.receive()
        assert script.order == [1, 2, 3, 3, 4]  # only the call in flight is made again

        with model(HeldScript(hold=KILLED_DURING)) as (script, base_url):
            target.send(cell(runtime, "target-killed", base_url))
            script.await_held()
            target.kill_group()
            script.release.set()
            with Target(node, state, tmp_path / "stderr-2.txt") as again:
                # the cell again, with its run id: the new workerd finds the run on disk
                again.send(cell(runtime, "target-killed", base_url))
                restarted = again.receive()
        assert script.order == [1, 2, 3, 3, 4]

    assert resumed.status == "completed"
    assert resumed.output == {"city": "Paris", "confidence": 0.9}
    assert resumed.counters.crashes == 1
    assert restarted.counters.crashes == 0  # the new process saw no crash of its own
    assert contract(resumed, "workerd-killed") == contract(baseline, "uninterrupted")
    assert contract(restarted, "target-killed") == contract(baseline, "uninterrupted")


def harness_run(*arguments: str) -> subprocess.CompletedProcess[str]:
    """`harness run ARGUMENTS` in the repository root, without colours."""
    return subprocess.run(
        [str(HARNESS), "run", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        env={**os.environ, "NO_COLOR": "1"},
    )


# -- the model: the scenario's replies, one request held ------------------------------------------


class HeldScript:
    """The scenario's replies, each to the request it answers: a request is known by its body,
    so one sent again (the call a killed runtime was waiting for) gets the same reply. The first
    arrival of request number `hold` waits until `release` is set; `order` is the number of every
    request in the order they arrived."""

    def __init__(self, *, hold: int | None) -> None:
        self.hold = hold
        self.held = threading.Event()
        self.release = threading.Event()
        self.order: list[int] = []
        self._numbers: dict[bytes, int] = {}

    def __call__(self, request: ReceivedRequest) -> Reply:
        number = self._numbers.setdefault(request.body, len(self._numbers) + 1)
        self.order.append(number)
        if number == self.hold and self.order.count(number) == 1:
            self.held.set()
            self.release.wait(HOLD_SECONDS)
        return openai_chat_reply(ANSWERS[number - 1])

    def await_held(self) -> None:
        assert self.held.wait(HOLD_SECONDS), f"request {self.hold} never arrived: {self.order}"


@contextmanager
def model(script: HeldScript) -> Iterator[tuple[HeldScript, str]]:
    """The fake OpenAI provider answering with `script`, and the base URL an SDK takes."""
    with serve(script) as provider:
        try:
            yield script, f"{provider.base_url}/v1"
        finally:
            script.release.set()


def cell(runtime: str, run: str, base_url: str) -> dict[str, Any]:
    """The crash-and-resume scenario's agent cell, as the harness sends it, for run `run`."""
    (loaded,) = [
        loaded
        for loaded in load_scenarios([SCENARIO])
        if loaded.scenario.name == "crash-none-baseline"
    ]
    spec = loaded.scenario.agent
    assert spec is not None
    return {
        "type": "cell",
        "id": f"{run}[{runtime}-sqlite]",
        "kind": "agent",
        "scenario": loaded.scenario.name,
        "runtime": runtime,
        "store": "sqlite",
        "provider": "openai",
        "model": "gpt-4o-mini",
        "base_urls": {"openai": base_url},
        "agent": spec.model_dump(mode="json"),
        "user_message": spec.user_message,
        "run_id": f"run-{run}",
        "session_id": "session-crash",
        "faults": [],
        "cancel": None,
        "temporal": None,
    }


def contract(answer: AgentResult, run: str) -> dict[str, Any]:
    """What two runs of one cell must agree on: the answer but its id, duration and crash count,
    with the run's own id taken out of the envelope's identifiers."""
    dumped = answer.model_dump(mode="json", by_alias=True, exclude={"id"})
    dumped["envelope"].pop("durationMs")
    dumped["counters"].pop("crashes")
    loaded: dict[str, Any] = json.loads(json.dumps(dumped).replace(f"run-{run}", "RUN"))
    return loaded


# -- the target ------------------------------------------------------------------------------------


class Target:
    """examples/targets/cloudflare/target.mjs, spoken to in JSON lines, in a process group of
    its own (with its workerd), keeping its runs in `state`."""

    def __init__(self, node: str, state: Path, stderr: Path) -> None:
        self._stderr = stderr
        self._stderr_file = stderr.open("wb")
        self.process = subprocess.Popen(
            [node, str(EXAMPLE / "target.mjs")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr_file,
            env={**os.environ, "CLOUDFLARE_EXAMPLE_STATE": str(state)},
            start_new_session=True,
        )
        self.pid = self.process.pid
        self._lines: queue.Queue[bytes] = queue.Queue()
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()
        self.send({"type": "hello", "protocol": 1})
        hello = self._receive_line()
        assert hello["runtimes"] == list(PROFILES), hello

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self._lines.put(line)

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            try:
                self.send({"type": "shutdown"})
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.kill_group()
        self._reader.join(timeout=10)
        for stream in (self.process.stdin, self.process.stdout, self._stderr_file):
            if stream is not None:
                with contextlib.suppress(OSError):  # a pipe to a killed process
                    stream.close()

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def _receive_line(self) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=ANSWER_SECONDS)
        except queue.Empty:
            pytest.fail(f"the target did not answer within {ANSWER_SECONDS:g}s:\n{self.stderr()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def receive(self) -> AgentResult:
        answer = AGENT_REPLY.validate_python(self._receive_line())
        assert isinstance(answer, AgentResult), f"{answer}\n{self.stderr()}"
        return answer

    def run(self, message: dict[str, Any]) -> AgentResult:
        self.send(message)
        return self.receive()

    def kill_group(self) -> None:
        """SIGKILL the target and its workerd at once, as the harness ends a hung target."""
        os.killpg(self.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stderr(self) -> str:
        return self._stderr.read_text(encoding="utf-8", errors="replace")


def workerd_of(pid: int) -> int:
    """The workerd process that the target `pid` started (read from /proc)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text(encoding="utf-8")
        except OSError:  # the process ended while the folder was listed
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        parent = int(text[text.rindex(")") + 2 :].split()[1])
        if parent == pid and name == "workerd":
            return int(stat.parent.name)
    raise AssertionError(f"the target {pid} runs no workerd")
