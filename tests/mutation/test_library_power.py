"""How strong is the scenario library: every mutant below is a one-line bug planted in a copy of
the reference, and `harness run` over the repository's scenarios must fail on it, naming the
expectation that catches it. The unmutated copy must pass, so a failure is the mutant's doing.

A mutant names its line exactly; when a refactor moves or rewrites that line, the mutant fails
loudly here (its line is gone) instead of silently testing nothing: update the mutant."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
RUN_LIBRARY = "from harness.cli import main; main()"
TIMEOUT_SECONDS = 300


@dataclass(frozen=True, kw_only=True)
class Mutant:
    """A one-line bug: in `path` (relative to `harness/`), the line `old` becomes `new`. The
    library run over `scenarios` (relative to `scenarios/`) must fail, its report naming
    `caught_by` (an `expect.<key>`, or an error)."""

    name: str
    path: str
    old: str
    new: str
    caught_by: str
    scenarios: tuple[str, ...] = (".",)


MUTANTS = (
    Mutant(
        name="default-budget-3",
        path="agent/definition.py",
        old="DEFAULT_MAX_COMPLETION_RETRIES: Final = 2",
        new="DEFAULT_MAX_COMPLETION_RETRIES: Final = 3",
        caught_by="budget-default-first-attempt-says-1-of-2[js-sqlite]: expect.chunk_sequence",
        scenarios=("forced",),
    ),
    Mutant(
        name="exhausted-chunk-emitted-twice",
        path="agent/loop.py",
        old="        state = state.evolve(forced_completion=exhausted.state).with_chunks(chunk)",
        new="        state = state.evolve(forced_completion=exhausted.state)"
        ".with_chunks(chunk, chunk)",
        caught_by="expect.chunk_sequence",
        scenarios=("forced",),
    ),
    Mutant(
        name="cancelled-spelled-canceled",
        path="protocol/outcome.py",
        old='    "cancelled": "cancelled",',
        new='    "cancelled": "canceled",',
        # the outcome record's stop_reason is a closed vocabulary: the misspelling cannot be built
        caught_by="stop-cancelled[js-memory]: UnexpectedCellError: the cell raised ValidationError",
        scenarios=("records",),
    ),
    Mutant(
        name="completion-keeps-previous-outputs",
        path="modules/completion.py",
        old="        self._outputs.clear()",
        new="        pass",
        caught_by="expect.executions.1.outputs",
        scenarios=("completion",),
    ),
    Mutant(
        name="forced-request-keeps-skills-fragments",
        path="agent/prompt.py",
        old="    return (SystemFragment(name=FRAGMENT_BASE, text=agent.system_prompt),)",
        new="    return work_fragments(agent)",
        caught_by="expect.forced_request.system_fragments",
        scenarios=("forced",),
    ),
    Mutant(
        name="budget-off-by-one",
        path="agent/forced.py",
        old="        if state.attempts_used >= state.max_attempts:",
        new="        if state.attempts_used > state.max_attempts:",
        # one attempt too many: the run asks the model for more replies than the contract allows
        caught_by="ScriptExhaustedError",
        scenarios=("forced",),
    ),
    Mutant(
        name="budget-one-short",
        path="agent/forced.py",
        old="        if state.attempts_used >= state.max_attempts:",
        new="        if state.attempts_used + 1 >= state.max_attempts:",
        caught_by="expect.forced_calls",
        scenarios=("forced",),
    ),
    Mutant(
        name="is-blank-as-python-strip",
        path="modules/completion.py",
        old="        if is_java_blank(text):",
        new="        if not text.strip():",
        caught_by="expect.status",
        scenarios=("completion",),
    ),
    Mutant(
        name="answer-limit-off-by-one",
        path="modules/completion.py",
        old="        if units > MAX_ANSWER_UTF16_UNITS:",
        new="        if units >= MAX_ANSWER_UTF16_UNITS:",
        caught_by="expect.status",
        scenarios=("completion",),
    ),
    Mutant(
        name="final-message-is-every-answer",
        path="agent/result.py",
        old='            final_message=answers[-1] if answers else "",',
        new='            final_message="\\n".join(answers),',
        caught_by="expect.outcome_record",
        scenarios=("records",),
    ),
    Mutant(
        name="forced-call-keeps-reasoning",
        path="agent/loop.py",
        old="            reasoning=ReasoningDisabled(),",
        new="            reasoning=self.agent.reasoning,",
        caught_by="expect.forced_request.reasoning",
        scenarios=("forced",),
    ),
    Mutant(
        name="truncated-forced-reply-accepted",
        path="agent/forced.py",
        old="    if response.truncated:",
        new="    if False:",
        caught_by="expect.status",
        scenarios=("forced",),
    ),
    Mutant(
        name="last-failure-cause-not-recorded",
        path="agent/forced.py",
        old="            attempts_used=self.state.attempts_used + 1, last_failure_code=code",
        new="            attempts_used=self.state.attempts_used + 1",
        caught_by="expect.store",
        scenarios=("forced",),
    ),
    Mutant(
        name="temporal-needs-no-forced-completion-activity",
        path="runtimes/profiles.py",
        old="    needs_forced_completion_activity=True,",
        new="    needs_forced_completion_activity=False,",
        caught_by="expect.error_code",
        scenarios=("runtimes",),
    ),
    Mutant(
        name="blank-reply-counts-as-answer",
        path="agent/loop.py",
        old="    return answers if is_java_blank(response.text) else (*answers, response.text)",
        new="    return answers if not response.text else (*answers, response.text)",
        caught_by="record-blank-forced-reply-is-no-answer[js-sqlite]: expect.outcome_record",
        scenarios=("records",),
    ),
    Mutant(
        name="denied-tool-runs-anyway",
        path="agent/tools.py",
        old="        if not granted:",
        new="        if False:",
        caught_by="approval-denied-run-continues[js-sqlite]: expect.chunks_in_order",
        scenarios=("runtimes/tool-step.yaml",),
    ),
    Mutant(
        name="tool-results-in-execution-order",
        path="agent/loop.py",
        old="        return [results[call.id] for call in calls], output, chunks",
        new="        return list(results.values()), output, chunks",
        caught_by="tool-results-in-call-order[js-sqlite]: expect.forced_request.contains_text",
        scenarios=("runtimes/tool-step.yaml",),
    ),
    Mutant(
        name="attempt-started-after-forced-step-start",
        path="agent/loop.py",
        old="        state = state.evolve(messages=history, answers=answers).with_chunks(*chunks)",
        # the attempt's announcement (the last chunk so far) moved after the step's step_start
        new="        state = state.evolve(messages=history, answers=answers, chunks=(*state.chunks[:-1]"
        ", chunks[0], state.chunks[-1], *chunks[1:]))",
        caught_by="chunks-interleaved-with-steps[js-sqlite]: expect.chunks_in_order",
        scenarios=("forced",),
    ),
    Mutant(
        name="completion-length-checked-before-blank",
        path="modules/completion.py",
        old="        if is_java_blank(text):",
        # blank only within the limit: a long blank answer falls through to the length check
        new="        if is_java_blank(text) and utf16_length(text) <= MAX_ANSWER_UTF16_UNITS:",
        caught_by="completion-blank-above-limit-is-required: expect.error_message",
        scenarios=("completion",),
    ),
    Mutant(
        name="forced-attempt-advances-the-step",
        path="agent/loop.py",
        old="        state = state.evolve(messages=history, answers=answers).with_chunks(*chunks)",
        # each forced attempt counted as a new step, as a work step is
        new="        state = state.evolve(messages=history, answers=answers, step=step + 1)"
        ".with_chunks(*chunks)",
        caught_by="chunks-forced-attempts-share-a-step[js-sqlite]: expect.chunks_in_order",
        scenarios=("forced",),
    ),
    Mutant(
        name="finish-handled-before-siblings",
        path="agent/loop.py",
        old="        ordered = sorted(calls, key=lambda call: call.name == FINISH_TOOL)",
        new="        ordered = sorted(calls, key=lambda call: call.name != FINISH_TOOL)",
        caught_by="finish-listed-first-siblings-run-before-it-work-phase[js-sqlite]: "
        "expect.chunks_in_order",
        scenarios=("forced/finish-siblings.yaml",),
    ),
    Mutant(
        name="forced-sibling-runs-anyway",
        path="agent/loop.py",
        old='                result: JsonValue = {"error": f"only {FINISH_TOOL} is available now"}',
        new="                result = run_tool(self.agent, call, self.approve).result",
        caught_by="finish-listed-first-sibling-never-runs-forced-phase[js-sqlite]: "
        "expect.forced_request.absent_text",
        scenarios=("forced/finish-siblings.yaml",),
    ),
    Mutant(
        name="forced-history-drops-completion-messages",
        path="agent/loop.py",
        old="            messages=request.messages,",
        # the attempt's [completion] message is sent but not kept: the next attempt lacks it
        new="            messages=state.messages,",
        caught_by="history-invalid-then-text-then-success-openai[js-sqlite]: "
        "expect.forced_history[1]",
        scenarios=("forced",),
    ),
    Mutant(
        name="forced-history-drops-the-reply",
        path="agent/loop.py",
        old="        history = (*state.messages, *self._answered(response, reply.problems, "
        "reply.succeeded))",
        new="        history = state.messages",
        caught_by="history-text-then-invalid-exhausted-openai[js-sqlite]: expect.forced_history[1]",
        scenarios=("forced",),
    ),
    Mutant(
        name="forced-history-drops-the-tool-results",
        path="agent/loop.py",
        old="        return results",
        # the forced reply kept without the results of its calls
        new="        return results[:1]",
        caught_by="history-other-tool-then-success-openai[js-sqlite]: expect.forced_history[1]",
        scenarios=("forced",),
    ),
    Mutant(
        name="forced-rejected-finish-acknowledged",
        path="agent/loop.py",
        old='                result = {"acknowledged": False, "errors": list(problems) or '
        '["rejected"]}',
        new="                result = FINISH_ACKNOWLEDGED",
        caught_by="history-invalid-then-text-then-success-openai[js-sqlite]: "
        "expect.forced_history[1][4].result",
        scenarios=("forced",),
    ),
    Mutant(
        name="forced-error-result-not-flagged",
        path="agent/loop.py",
        old="                    is_error=not (succeeded and call.name == FINISH_TOOL),",
        new="                    is_error=False,",
        caught_by="history-invalid-then-text-then-success-anthropic[js-sqlite]: "
        "expect.forced_history[1][4].is_error",
        scenarios=("forced",),
    ),
    Mutant(
        name="cancellation-ignored",
        path="runtimes/base.py",
        old="            state = state.cancelled()",
        new="            pass",
        caught_by="CancelNotReachedError",
        scenarios=("records", "runtimes"),
    ),
    Mutant(
        name="anthropic-forced-call-keeps-thinking",
        path="llm/anthropic.py",
        old="            if thinking:",
        new="            if True:",  # every turn's thinking sent, thinking on or off
        caught_by="thinking-max-steps-anthropic[js-sqlite]: expect.forced_request.reasoning_turns",
        scenarios=("forced/thinking.yaml",),
    ),
    Mutant(
        name="forced-max-tokens-keeps-the-thinking-budget",
        path="llm/anthropic.py",
        old="    budget = thinking_budget(thinking, request.max_tokens) if thinking else 0",
        new="    budget = thinking_budget(thinking, request.max_tokens) if thinking else 4096",
        caught_by="thinking-terminal-text-anthropic[js-sqlite]: expect.forced_request.max_tokens",
        scenarios=("forced/thinking.yaml",),
    ),
    Mutant(
        name="thinking-spent-cap-is-terminal-text",
        path="agent/loop.py",
        old="        if response.truncated:",
        new="        if response.truncated and (response.text or response.tool_calls):",
        caught_by="thinking-used-up-max-tokens-anthropic[js-sqlite]: expect.chunk_sequence",
        scenarios=("forced/thinking.yaml",),
    ),
    Mutant(
        name="forced-call-strips-all-reasoning",
        path="agent/loop.py",
        old="            messages=(*state.messages, nudge),",
        new="            messages=(*(m.evolve(reasoning_blocks=()) if isinstance(m, AssistantMessage)"
        " else m for m in state.messages), nudge),",
        caught_by="thinking-max-steps-gemini[js-sqlite]: expect.forced_request.reasoning_turns",
        scenarios=("forced/thinking.yaml",),
    ),
    Mutant(
        name="openai-disabled-reasoning-unsaid",
        path="llm/openai.py",
        old='            body["reasoning_effort"] = off',
        new="            pass",  # a reasoning model left at its default effort
        caught_by="reasoning-terminal-text-openai-o4-mini[js-sqlite]: "
        "expect.forced_request.reasoning",
        scenarios=("forced/thinking.yaml",),
    ),
    Mutant(
        name="override-given-no-forced-state",
        path="agent/loop.py",
        old="            execution_phase=phase, forced_completion=state.forced_completion, "
        "step=state.step",
        new="            execution_phase=phase, forced_completion=None, step=state.step",
        caught_by="config-override-reads-the-attempt-from-the-forced-state[js-memory]: "
        "expect.forced_requests[1].model",
        scenarios=("runtimes/config-override.yaml",),
    ),
)


def _copy_with(mutant: Mutant | None, destination: Path) -> Path:
    """A copy of `harness/` under `destination`, with `mutant` applied; returns the folder to
    put on PYTHONPATH."""
    shutil.copytree(
        ROOT / "harness", destination / "harness", ignore=shutil.ignore_patterns("__pycache__")
    )
    if mutant is not None:
        target = destination / "harness" / mutant.path
        lines = target.read_text(encoding="utf-8").split("\n")
        where = [index for index, line in enumerate(lines) if line == mutant.old]
        assert len(where) == 1, (
            f"mutant {mutant.name}: expected the line {mutant.old!r} exactly once in "
            f"harness/{mutant.path}, found it {len(where)} times; update the mutant"
        )
        lines[where[0]] = mutant.new
        target.write_text("\n".join(lines), encoding="utf-8")
    return destination


def _run(source: Path, workdir: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`python -c <arguments>` with only `source` ahead of the installed packages, in
    `workdir` (where `harness run` keeps its default SQLite store). The harness's own settings
    and coverage's subprocess hooks are left out: the run measures the library alone."""
    workdir.mkdir(exist_ok=True)
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HARNESS_", "PYTHON", "COV"))
    }
    environment["PYTHONPATH"] = str(source)
    return subprocess.run(
        [sys.executable, "-c", *arguments],
        cwd=workdir,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )


def _run_library(
    source: Path, workdir: Path, paths: tuple[str, ...]
) -> subprocess.CompletedProcess[str]:
    return _run(source, workdir, RUN_LIBRARY, "run", *(str(SCENARIOS / p) for p in paths))


@pytest.mark.subprocess
def test_the_reference_passes_the_whole_library(tmp_path: Path) -> None:
    source = _copy_with(None, tmp_path / "source")
    located = _run(source, tmp_path / "work", "import harness; print(harness.__file__)")
    assert located.stdout.strip() == str(source / "harness" / "__init__.py"), (
        "the library must run the copy, or no mutant is ever tested"
    )
    result = _run_library(source, tmp_path / "work", (".",))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " 0 failed" in result.stdout


@pytest.mark.subprocess
@pytest.mark.parametrize("mutant", MUTANTS, ids=[mutant.name for mutant in MUTANTS])
def test_the_library_catches_the_mutant(mutant: Mutant, tmp_path: Path) -> None:
    source = _copy_with(mutant, tmp_path / "source")
    result = _run_library(source, tmp_path / "work", mutant.scenarios)
    report = result.stdout + result.stderr
    # exit 1 is failing cells; 0 the mutant went unnoticed, 2 the mutant broke the harness itself
    assert result.returncode == 1, (
        f"mutant {mutant.name}: expected failing cells (exit 1), got exit {result.returncode}:\n"
        f"{report[-3000:]}"
    )
    assert mutant.caught_by in report, (
        f"mutant {mutant.name} failed the library, but not at {mutant.caught_by!r}:\n"
        + "\n".join(line for line in report.splitlines() if "FAIL" in line or "Error" in line)[
            -4000:
        ]
    )


FUZZ_BUDGET = 300
"""Generated cells `harness fuzz --runtime js --seed 1` may take to find each mutant below; where
it finds each is tabled in docs/targets.md (`__finish__` handled before its siblings at its
third cell, the thinking budget kept in a forced call at its fourth, the misplaced chunk at its
12th, the blank reply at its 17th, ... the reasoning a forced call drops at its 130th). A forced
reply, or its results, left out of the next attempt's request it finds within the budget, as a
tool result missing from that request."""
FOUND_BY_FUZZ = (
    "blank-reply-counts-as-answer",
    "denied-tool-runs-anyway",
    "tool-results-in-execution-order",
    "attempt-started-after-forced-step-start",
    "forced-attempt-advances-the-step",
    "finish-handled-before-siblings",
    "forced-history-drops-the-reply",
    "forced-history-drops-the-tool-results",
    "forced-max-tokens-keeps-the-thinking-budget",
    "thinking-spent-cap-is-terminal-text",
    "forced-call-strips-all-reasoning",
)
"""The blind-spot mutants: `harness fuzz` finds each with no scenario written for it. Two others
only the library catches: `completion-length-checked-before-blank` (no generated answer is both
blank and over the length limit) and `forced-sibling-runs-anyway` (the contract comparison reads
which call each tool result answers, not what it says). Nor does it find, with any option, a
rejected `__finish__` answered as acknowledged (`forced-rejected-finish-acknowledged`) or an
error result without its error flag (`forced-error-result-not-flagged`): the comparison does not
read what the messages of a request say; `scenarios/forced/history.yaml` catches them. Earlier
`[completion]` messages left out of a forced request (`forced-history-drops-completion-messages`)
it finds within the budget, but only on a Gemini cell, whose requests carry no call ids: the
harness numbers the calls it reads back by their place in the conversation, so a message left out
shifts the ids of the tool results after it. That is not the difference itself, and the cell it
writes does not catch the mutant, so it is not listed here. Claude's thinking sent on a forced
call (`anthropic-forced-call-keeps-thinking`) and an override given no forced-completion state
(`override-given-no-forced-state`) it finds within the budget on other seeds only (0 and 2), and
a forced call that leaves an OpenAI reasoning model reasoning (`openai-disabled-reasoning-unsaid`)
on none: it generates OpenAI agents on models that do not reason."""


@pytest.mark.subprocess
@pytest.mark.parametrize("name", FOUND_BY_FUZZ)
def test_harness_fuzz_finds_the_blind_spot_mutant(name: str, tmp_path: Path) -> None:
    (mutant,) = [mutant for mutant in MUTANTS if mutant.name == name]
    source = _copy_with(mutant, tmp_path / "source")
    target = tmp_path / "target.py"
    target.write_text(  # an agent runtime: it declares agent cells only
        "import json, sys\n"
        "from harness.scenarios.reference import run\n"
        "for line in sys.stdin:\n"
        "    answer = run(json.loads(line))\n"
        "    if answer is not None:\n"
        "        if answer['type'] == 'hello':\n"
        "            answer['kinds'] = ['agent']\n"
        "        print(json.dumps(answer), flush=True)\n",
        encoding="utf-8",
    )
    command = f"env PYTHONPATH={source} {sys.executable} {target}"
    out = tmp_path / "found"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            RUN_LIBRARY,
            "fuzz",
            "--target-cmd",
            command,
            "--target-env",
            "PATH",
            "--runtime",
            "js",
            "--cells",
            str(FUZZ_BUDGET),
            "--seed",
            "1",
            "--no-shrink",  # found is what this measures; tests/scenarios/test_fuzz.py shrinks
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert "the target differs from the reference" in result.stdout
    assert len(list(out.glob("*.yaml"))) == 1
