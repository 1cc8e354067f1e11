"""This example agent as a `harness` target: the JSON-lines protocol on stdin and stdout.

    harness run scenarios --runtime js --target-cmd "python examples/targets/python_openai_sdk/target.py"

Each line on stdin is one message of the harness (`hello`, `cell`, `shutdown`); each answer is
one line on stdout. Anything else this process prints goes to stderr, which the harness shows
next to a failing cell.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any

from agent import Agent, AgentRun, ForcedState, ToolCall, envelope, outcome_record
from providers import connect

HELLO = {
    "type": "hello",
    "protocol": 1,
    "name": "python openai sdk example",
    "kinds": ["agent"],
    "runtimes": ["js"],
    # Not "faults": this agent keeps its run in memory, so it cannot resume after a crash.
    "features": ["llm_config_override", "memory", "streaming", "approval"],
    # the APIs its model calls speak: a Gemini cell is skipped
    "providers": ["openai", "anthropic"],
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    if message["type"] == "hello":
        return HELLO
    if message["type"] == "cell":
        try:
            return run_cell(message)
        except Exception as error:  # the harness fails this cell with the message, and goes on
            traceback.print_exc()
            return {
                "type": "error",
                "id": message.get("id"),
                "message": f"{type(error).__name__}: {error}",
            }
    return None  # shutdown


def run_cell(cell: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    agent = Agent(model=cell["model"], **cell["agent"])
    model = connect(cell["provider"], cell["base_urls"][cell["provider"]])
    run = AgentRun(
        agent,
        model,
        approve=lambda call: approve(agent, call),
        config_override=forced_phase_override(agent),
    )
    run.run(agent.user_message)
    code, message = run.error or (None, None)
    return {
        "type": "result",
        "id": cell["id"],
        "status": run.status,
        "error_code": code,
        "error_message": message,
        "output": run.output,
        "chunks": run.chunks,
        "outcome_record": outcome_record(run, cell["session_id"]),
        "envelope": envelope(
            run, run_id=cell["run_id"], session_id=cell["session_id"], started=started
        ),
        "counters": {
            "memory_extractions": run.memory_extractions,
            "llm_config_override_calls": run.override_calls,
            "crashes": 0,
            "forced_state": run.forced and run.forced.record(),
        },
    }


def approve(agent: Agent, call: ToolCall) -> bool:
    """The cell says which approval-gated tools a reviewer denies."""
    return call.name not in agent.deny_approval


def forced_phase_override(agent: Agent) -> Any:
    """The cell's `llm_config_override`: its changes in the forced-completion phase, on the
    calls whose forced-completion state matches its `when` (a trigger, an attempt from)."""
    if agent.llm_config_override is None:
        return None
    override = dict(agent.llm_config_override)
    when = override.pop("when", None) or {}
    changes = {k: v for k, v in override.items() if v is not None}

    def callback(config: dict[str, Any], phase: str, forced: ForcedState | None) -> Any:
        if phase != "forced_completion" or forced is None:
            return None
        if when.get("trigger") is not None and forced.trigger not in when["trigger"]:
            return None
        if when.get("from_attempt") is not None and forced.attempts_used + 1 < when["from_attempt"]:
            return None
        return changes

    return callback


def main() -> None:
    for line in sys.stdin:
        reply = answer(json.loads(line))
        if reply is not None:
            print(json.dumps(reply, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
