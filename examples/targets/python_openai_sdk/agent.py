"""An outputSchema agent with deterministic forced completion, on any chat model.

The run is a loop of *work* steps: one model call with every tool plus `__finish__`, then the
tools it asked for. Calling `__finish__` with output that satisfies the schema completes the run.
When the run would end without that output, forced completion begins, on one of three triggers:

- `terminal_text`: the model ended its turn with prose instead of calling `__finish__`;
- `max_tokens`: a reply was cut off by the token limit (its cut-off tool calls are dropped);
- `max_steps`: the step budget was spent on tool calls.

Each forced attempt is one narrowed call: the base system prompt only (no skills, workspace or
memory), only the `__finish__` tool, a tool choice naming it, reasoning off, and a `[completion]`
message saying `(attempt N of M)`. The budget M is `max_completion_retries`; every failed attempt
has exactly one code, and a spent budget fails the run with `framework_forced_completion_exhausted`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import rfc8785
from jsonschema import Draft202012Validator

FINISH = "__finish__"
FINISH_DESCRIPTION = (
    "Finish the run: call this tool once with the final output. Its parameters are the output "
    "schema."
)
DEFAULT_COMPLETION_RETRIES = 2
MAX_ANSWER_UTF16_UNITS = 65_536  # what the Agent Completion module accepts as a final answer

LLM_CALL_FAILED = "framework_llm_call_failed"
EXHAUSTED = "framework_forced_completion_exhausted"
PROTOCOL_VIOLATION = "framework_completion_protocol_violation"
TOOL_MISSING = "framework_completion_tool_missing"
TOOL_CHOICE_UNSUPPORTED = "framework_completion_tool_choice_unsupported"
INVALID_OUTPUT = "framework_completion_invalid_output"

SKILL_TOOLS = [
    {
        "name": "load_skill",
        "description": "Load the full instructions of a skill from the catalog.",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    },
    {
        "name": "read_skill_file",
        "description": "Read a file that belongs to a loaded skill.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
]


# -- what the model is asked, and what it answers -----------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text: a reply cut off by the token limit can end mid-JSON


@dataclass(frozen=True)
class Reply:
    text: str
    tool_calls: list[ToolCall]
    stop_reason: str  # end_turn, tool_use, limit_reached or other
    reasoning_blocks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return self.stop_reason == "limit_reached"


@dataclass(frozen=True)
class Request:
    """One model call. Messages are plain dicts: `user`, `assistant` (`content`, `tool_calls`)
    and `tool` (`tool_call_id`, `content`, `is_error`); `tool_choice` is "auto" or a tool name."""

    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tool_choice: str
    max_tokens: int | None
    temperature: float | None
    reasoning: str | None  # an effort, or None / "disabled" for none
    stream: bool


class ModelCallFailed(Exception):
    """The provider answered with an error, or could not be reached."""


class ToolChoiceUnsupportedError(ModelCallFailed):
    """The provider or the model cannot be forced to call a named tool."""


Model = Callable[[Request], Reply]
Approve = Callable[[ToolCall], bool]
ConfigOverride = Callable[[dict[str, Any], str, "ForcedState | None"], dict[str, Any] | None]
"""Called before every model call with the call's config, its phase (`work` or
`forced_completion`) and the forced-completion state (None before the phase); what it returns
replaces those keys of the config."""


# -- the agent ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Agent:
    """The agent block of a harness cell, and the model it runs on."""

    model: str
    system_prompt: str
    user_message: str
    output_schema: dict[str, Any] | None
    max_steps: int
    max_completion_retries: int | None  # None: the runtime's default
    max_tokens: int | None
    temperature: float | None
    reasoning: str | None  # minimal, low, medium, high, disabled
    stream: bool
    tools: list[dict[str, Any]]  # each with its scripted `result` or `error`
    skills: dict[str, Any] | None
    workspace: dict[str, Any] | None
    memory: dict[str, Any] | None
    llm_config_override: dict[str, Any] | None
    deny_approval: list[str]

    @property
    def budget(self) -> int:
        retries = self.max_completion_retries
        return DEFAULT_COMPLETION_RETRIES if retries is None else retries

    def all_tools(self) -> list[dict[str, Any]]:
        """The agent's tools, the skill tools (with skills) and the workspace tools."""
        skills = self.skills or {}
        has_skills = bool(skills.get("catalog") or skills.get("preloaded"))
        workspace_tools = (self.workspace or {}).get("tools", [])
        return [*self.tools, *(SKILL_TOOLS if has_skills else []), *workspace_tools]

    def finish_tool(self) -> dict[str, Any]:
        return {"name": FINISH, "description": FINISH_DESCRIPTION, "parameters": self.output_schema}

    def work_system_prompt(self) -> str:
        """The base prompt, the skills catalog, the preloaded skill bodies, the workspace."""
        skills = self.skills or {}
        catalog = "\n".join(f"- {s['name']}: {s['description']}" for s in skills.get("catalog", []))
        bodies = "\n\n".join(
            f"## Skill: {s['name']}\n{s['body']}" for s in skills.get("preloaded", [])
        )
        fragments = [
            self.system_prompt,
            catalog and f"Available skills (load one with load_skill):\n{catalog}",
            bodies,
            (self.workspace or {}).get("fragment", ""),
        ]
        return "\n\n".join(fragment for fragment in fragments if fragment)

    def memory_recall(self) -> dict[str, Any] | None:
        memories = (self.memory or {}).get("memories") or []
        if not memories:
            return None
        lines = "\n".join(f"- {memory}" for memory in memories)
        return {"role": "user", "content": f"<relevant_memories>\n{lines}\n</relevant_memories>"}


@dataclass(frozen=True)
class ForcedState:
    """The forced-completion phase: the durable state a runtime persists with the run."""

    trigger: str
    max_attempts: int
    entered_at_step: int
    attempts_used: int = 0
    status: str = "active"  # active, succeeded, exhausted or failed
    last_failure_code: str | None = None

    def record(self) -> dict[str, Any]:
        return {
            "trigger": self.trigger,
            "attemptsUsed": self.attempts_used,
            "maxAttempts": self.max_attempts,
            "status": self.status,
            "lastFailureCode": self.last_failure_code,
            "enteredAtStep": self.entered_at_step,
        }

    def chunk(
        self, phase: str, *, attempt: int | None = None, code: str | None = None
    ) -> dict[str, Any]:
        return {
            "kind": "forced_completion",
            "phase": phase,
            "trigger": self.trigger,
            "attempt": attempt,
            "max_attempts": self.max_attempts,
            "code": code,
        }


# -- the run ------------------------------------------------------------------------------------


class AgentRun:
    """One run of `agent` on `model`, from the user's message to a result."""

    def __init__(
        self,
        agent: Agent,
        model: Model,
        *,
        approve: Approve,
        config_override: ConfigOverride | None = None,
    ) -> None:
        self.agent = agent
        self.model = model
        self.approve = approve
        self.config_override = config_override
        self.validator = (
            Draft202012Validator(agent.output_schema) if agent.output_schema is not None else None
        )
        self.messages: list[dict[str, Any]] = []
        self.answers: list[str] = []  # every complete answer text, for the outcome record
        self.chunks: list[dict[str, Any]] = []
        self.step = 0
        self.forced: ForcedState | None = None
        self.status = "running"
        self.output: Any = None
        self.error: tuple[str, str] | None = None
        self.limit_reached = False
        self.override_calls: list[str] = []
        self.memory_extractions = 0

    def run(self, user_message: str) -> None:
        self.messages.append({"role": "user", "content": user_message})
        trigger = None
        while self.status == "running" and trigger is None:
            trigger = self.work_step()
        if trigger is not None:
            self.force_completion(trigger)
        if self.agent.memory is not None:
            self.memory_extractions += 1  # extraction runs once, at the terminal outcome
        self.chunks.append(
            {
                "kind": "run_finish",
                "status": self.status,
                "error_code": self.error and self.error[0],
            }
        )

    # -- work ---------------------------------------------------------------------------------

    def work_step(self) -> str | None:
        """One work call and its tools; the forced-completion trigger it hit, if any."""
        step = self.step
        config = self.call_config("work")
        recall = self.agent.memory_recall()  # injected into work calls only, never kept
        tools = self.agent.all_tools() + ([self.agent.finish_tool()] if self.validator else [])
        request = Request(
            system=self.agent.work_system_prompt(),
            messages=self.messages + ([recall] if recall else []),
            tools=tools,
            tool_choice="auto",
            reasoning=self.agent.reasoning,
            stream=self.agent.stream,
            **config,
        )
        self.chunks.append({"kind": "step_start", "step": step, "phase": "work"})
        try:
            reply = self.model(request)
        except ModelCallFailed as error:
            self.fail(LLM_CALL_FAILED, f"work call failed at the gateway ({error})")
            return None
        self.chunks.extend(reply_chunks(step, reply))
        self.step += 1
        if reply.truncated:
            # A cut-off reply is no answer, and its cut-off calls are dropped, never run.
            self.messages.extend(text_message(reply.text))
            return self.trigger_or_end("max_tokens")
        if reply.text.strip():
            self.answers.append(reply.text)
        if not reply.tool_calls:
            self.messages.extend(text_message(reply.text))
            return self.trigger_or_end("terminal_text")
        self.messages.append(assistant_message(reply))
        output = self.run_tools(step, reply.tool_calls)
        if output is not None:
            self.complete(output)
            return None
        return self.trigger_or_end("max_steps") if self.step >= self.agent.max_steps else None

    def run_tools(self, step: int, calls: list[ToolCall]) -> Any:
        """Run the sibling calls first, then `__finish__`; every call gets a result, listed in
        the order the model made the calls. The valid `__finish__` output, if any."""
        results: dict[str, dict[str, Any]] = {}
        output = None
        for call in sorted(calls, key=lambda call: call.name == FINISH):
            if call.name == FINISH and self.validator is not None:
                value, problems = self.validate(call.arguments)
                if not problems:
                    output = value
                result: Any = {"acknowledged": not problems}
                if problems:
                    result["errors"] = problems
                is_error = bool(problems)
            else:
                result, is_error = self.run_tool(step, call)
            results[call.id] = tool_result(call, result, is_error)
            self.chunks.append(
                {
                    "kind": "tool_result",
                    "step": step,
                    "tool_call_id": call.id,
                    "name": call.name,
                    "result": result,
                    "is_error": is_error,
                }
            )
        self.messages.extend(results[call.id] for call in calls)
        return output

    def run_tool(self, step: int, call: ToolCall) -> tuple[Any, bool]:
        tool = next((tool for tool in self.agent.all_tools() if tool["name"] == call.name), None)
        if tool is None:
            return {"error": f"unknown tool '{call.name}'"}, True
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            return {"error": "the arguments are not valid JSON"}, True
        if not isinstance(arguments, dict):
            return {"error": "the arguments must be a JSON object"}, True
        if tool.get("requires_approval"):
            granted = self.approve(call)
            self.chunks.append(
                {
                    "kind": "approval",
                    "step": step,
                    "tool_call_id": call.id,
                    "name": call.name,
                    "granted": granted,
                }
            )
            if not granted:
                return {"error": "approval denied"}, True
        if call.name == "load_skill":
            skills = self.agent.skills or {}
            known = [*skills.get("catalog", []), *skills.get("preloaded", [])]
            skill = next((s for s in known if s["name"] == arguments.get("name")), None)
            if skill is None:
                return {"error": "unknown skill"}, True
            return {"name": skill["name"], "body": skill.get("body", "")}, False
        if tool.get("error") is not None:
            return {"error": tool["error"]}, True
        return (tool.get("result") if tool.get("result") is not None else {"ok": True}), False

    def trigger_or_end(self, trigger: str) -> str | None:
        if self.validator is None:
            # Without an output schema the run simply ends; a cut-off is reported as such.
            self.limit_reached = trigger != "terminal_text"
            self.complete(None)
            return None
        return trigger

    # -- forced completion --------------------------------------------------------------------

    def force_completion(self, trigger: str) -> None:
        self.forced = ForcedState(trigger, self.agent.budget, entered_at_step=self.step)
        self.chunks.append(self.forced.chunk("started"))
        if self.forced.attempts_used >= self.forced.max_attempts:
            self.exhausted(replace(self.forced, status="exhausted"))
        while self.status == "running":
            self.forced_attempt(self.forced)

    def forced_attempt(self, forced: ForcedState) -> None:
        attempt = forced.attempts_used + 1
        self.chunks.append(forced.chunk("attempt_started", attempt=attempt))
        config = self.call_config("forced_completion")
        self.messages.append(
            {
                "role": "user",
                "content": f"[completion] Finish now: call {FINISH} with the final output that "
                f"satisfies its schema (attempt {attempt} of {forced.max_attempts}).",
            }
        )
        request = Request(
            system=self.agent.system_prompt,  # the base prompt only: no skills, workspace or memory
            messages=list(self.messages),
            tools=[self.agent.finish_tool()],
            tool_choice=FINISH,
            reasoning="disabled",
            stream=self.agent.stream,
            **config,
        )
        try:
            reply = self.model(request)
        except ToolChoiceUnsupportedError:
            # Not a failed attempt: no attempt of this run can ever succeed, so none is spent.
            self.forced = replace(
                forced, status="failed", last_failure_code=TOOL_CHOICE_UNSUPPORTED
            )
            self.chunks.append(
                self.forced.chunk("attempt_failed", attempt=attempt, code=TOOL_CHOICE_UNSUPPORTED)
            )
            self.fail(
                TOOL_CHOICE_UNSUPPORTED,
                "the provider or model cannot force a named tool call; no attempt was spent",
            )
            return
        except ModelCallFailed:
            self.attempt_failed(forced, attempt, LLM_CALL_FAILED)
            return
        self.chunks.append({"kind": "step_start", "step": self.step, "phase": "forced"})
        self.chunks.extend(reply_chunks(self.step, reply))
        if reply.text.strip():
            self.answers.append(reply.text)
        output, code, problems = self.classify(reply)
        self.messages.extend(self.answered(reply, problems, succeeded=code is None))
        if code is not None:
            self.attempt_failed(forced, attempt, code)
        else:
            self.forced = replace(forced, attempts_used=attempt, status="succeeded")
            self.chunks.append(self.forced.chunk("succeeded", attempt=attempt))
            self.complete(output)

    def classify(self, reply: Reply) -> tuple[Any, str | None, list[str]]:
        """Exactly one valid `__finish__` call succeeds; anything else has one failure code."""
        if not reply.tool_calls:
            return None, TOOL_MISSING, []
        if len(reply.tool_calls) > 1 or reply.tool_calls[0].name != FINISH:
            return None, PROTOCOL_VIOLATION, []
        if reply.truncated:  # cut-off input is incomplete, even when what arrived parses
            return None, INVALID_OUTPUT, ["the reply was cut off by the token limit"]
        output, problems = self.validate(reply.tool_calls[0].arguments)
        return output, INVALID_OUTPUT if problems else None, problems

    def answered(
        self, reply: Reply, problems: list[str], *, succeeded: bool
    ) -> list[dict[str, Any]]:
        """The forced reply for the history, with a result for each of its calls."""
        if not reply.tool_calls or reply.truncated:
            return text_message(reply.text)
        results = []
        for call in reply.tool_calls:
            if call.name != FINISH:
                result: Any = {"error": f"only {FINISH} is available now"}
            elif succeeded:
                result = {"acknowledged": True}
            else:
                result = {"acknowledged": False, "errors": problems or ["rejected"]}
            results.append(tool_result(call, result, not (succeeded and call.name == FINISH)))
        return [assistant_message(reply), *results]

    def attempt_failed(self, forced: ForcedState, attempt: int, code: str) -> None:
        """The one place attempts are counted: the budget is spent when none is left."""
        self.forced = replace(
            forced, attempts_used=forced.attempts_used + 1, last_failure_code=code
        )
        exhausted = self.forced.attempts_used >= self.forced.max_attempts
        if exhausted:
            self.forced = replace(self.forced, status="exhausted")
        self.chunks.append(self.forced.chunk("attempt_failed", attempt=attempt, code=code))
        if exhausted:
            self.exhausted(self.forced)

    def exhausted(self, forced: ForcedState) -> None:
        self.forced = forced
        self.chunks.append(forced.chunk("exhausted", code=EXHAUSTED))
        cause = f"; last cause: {forced.last_failure_code}" if forced.last_failure_code else ""
        self.fail(
            EXHAUSTED,
            f"forced completion exhausted after {forced.attempts_used} of {forced.max_attempts} "
            f"attempt(s){cause}",
        )

    # -- shared -------------------------------------------------------------------------------

    def call_config(self, phase: str) -> dict[str, Any]:
        config = {
            "model": self.agent.model,
            "max_tokens": self.agent.max_tokens,
            "temperature": self.agent.temperature,
        }
        if self.config_override is not None:
            self.override_calls.append(phase)
            config.update(self.config_override(dict(config), phase, self.forced) or {})
        return config

    def validate(self, arguments: str) -> tuple[Any, list[str]]:
        """The `__finish__` output and the problems that make it invalid (none when valid)."""
        assert self.validator is not None
        try:
            output = json.loads(arguments or "{}")
        except ValueError:
            return None, ["the arguments are not valid JSON"]
        errors = sorted(
            self.validator.iter_errors(output), key=lambda e: list(map(str, e.absolute_path))
        )
        problems = [f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors][:10]
        if (
            not problems
            and utf16_length(json.dumps(output, ensure_ascii=False)) > MAX_ANSWER_UTF16_UNITS
        ):
            problems = ["agentFinalAnswer exceeds the supported length"]
        return (None if problems else output), problems

    def complete(self, output: Any) -> None:
        self.status, self.output = "completed", output

    def fail(self, code: str, message: str) -> None:
        self.status, self.error = "failed", (code, message)


# -- the records a finished run is reported in --------------------------------------------------


def outcome_record(run: AgentRun, session_id: str) -> dict[str, str]:
    """The agent-outcome record: every answer, the last one, and the canonical stop reason."""
    if run.status == "failed":
        stop_reason = "error"
    elif run.limit_reached and run.validator is None:
        stop_reason = "limit_reached"
    else:
        stop_reason = "end_turn"
    return {
        "text": "\n".join(run.answers),
        "final_message": run.answers[-1] if run.answers else "",
        "stop_reason": stop_reason,
        "session_id": session_id,
    }


def envelope(run: AgentRun, *, run_id: str, session_id: str, started: float) -> dict[str, Any]:
    """The `xema/agent@v1` outputs: a valid output is promoted to a `json_payload` artifact."""
    succeeded = run.status == "completed" and isinstance(run.output, dict)
    if succeeded:
        outcome = "succeeded"
    elif any(answer.strip() for answer in run.answers):
        outcome = "partial"
    else:
        outcome = "empty-response"
    canonical = rfc8785.dumps(run.output)  # the JSON JavaScript hashes: 1.0 is written 1
    return {
        "allocationId": f"alloc-{run_id}",
        "outcome": outcome,
        "structuredOutput": {
            "artifactId": f"artifact-{run_id}",
            "versionId": f"artifact-{run_id}-v1",
            "version": 1,
            "hash": "sha256:" + hashlib.sha256(canonical).hexdigest(),
            "type": "json_payload",
        }
        if succeeded
        else None,
        "agentResult": run.output if succeeded else None,
        "response": None,
        "durationMs": int((time.monotonic() - started) * 1000),
        "sessionId": session_id,
        "workspaceId": f"ws-{run_id}" if run.agent.workspace is not None else None,
        "workerName": None,
        "workerUrl": None,
        "workerProxyUrl": None,
        "allocationStatus": None,
    }


# -- small helpers ------------------------------------------------------------------------------


def reply_chunks(step: int, reply: Reply) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    if reply.text:
        chunks.append({"kind": "text_delta", "step": step, "text": reply.text})
    chunks.extend(
        {
            "kind": "tool_call",
            "step": step,
            "tool_call_id": c.id,
            "name": c.name,
            "arguments": c.arguments,
        }
        for c in reply.tool_calls
    )
    chunks.append({"kind": "step_finish", "step": step, "stop_reason": reply.stop_reason})
    return chunks


def text_message(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": text, "tool_calls": []}] if text else []


def assistant_message(reply: Reply) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": reply.text or None,
        "tool_calls": reply.tool_calls,
        "reasoning_blocks": reply.reasoning_blocks,
    }


def tool_result(call: ToolCall, result: Any, is_error: bool) -> dict[str, Any]:
    content = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return {"role": "tool", "tool_call_id": call.id, "content": content, "is_error": is_error}


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2
