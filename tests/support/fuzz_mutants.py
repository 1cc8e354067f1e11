"""Python targets for `harness fuzz` tests: the reference with one thing changed in its answers."""

from __future__ import annotations

from typing import Any

from harness.scenarios.reference import run as reference


def wrong_code_after_max_tokens(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, except that a run failing after forced completion was entered on a
    `max_tokens` cut reports `framework_llm_call_failed` instead of its code."""
    answer = reference(message)
    if answer is None or answer.get("type") != "result" or answer.get("status") != "failed":
        return answer
    triggers = {
        chunk.get("trigger") for chunk in answer["chunks"] if chunk["kind"] == "forced_completion"
    }
    if "max_tokens" in triggers:
        answer["error_code"] = "framework_llm_call_failed"
        for chunk in answer["chunks"]:
            if chunk["kind"] == "run_finish":
                chunk["error_code"] = "framework_llm_call_failed"
    return answer


def drops_second_attempt_started(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, except that the `attempt_started` chunk of a second forced attempt is
    never emitted."""
    answer = reference(message)
    if answer is None or answer.get("type") != "result":
        return answer
    answer["chunks"] = [
        chunk
        for chunk in answer["chunks"]
        if not (
            chunk["kind"] == "forced_completion"
            and chunk.get("phase") == "attempt_started"
            and chunk.get("attempt") == 2
        )
    ]
    return answer


def without_features(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, declaring no optional feature and the `js` profile alone: a target that
    streams nothing, keeps no memory and asks for no approval."""
    answer = reference(message)
    if answer is not None and answer.get("type") == "hello":
        return {**answer, "runtimes": ["js"], "features": []}
    return answer


def without_counters(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, reporting none of its counters (`counters` keys are optional): a runtime
    that cannot count its override calls, memory extractions or crashes, nor read its store."""
    answer = reference(message)
    if answer is not None and answer.get("type") == "result":
        answer.pop("counters", None)
    return answer


def default_budget_of_three(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, except that an agent given no forced-completion budget gets 3, not 2."""
    agent = message.get("agent")
    if isinstance(agent, dict) and agent.get("max_completion_retries") is None:
        message = {**message, "agent": {**agent, "max_completion_retries": 3}}
    return reference(message)


def ignores_config_override(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, except that the agent's `llm_config_override` is never invoked: every
    call keeps the agent's own model, temperature and token cap."""
    agent = message.get("agent")
    if isinstance(agent, dict) and agent.get("llm_config_override") is not None:
        message = {**message, "agent": {**agent, "llm_config_override": None}}
    return reference(message)


def ignores_cancel(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, except that a cancellation from outside is never honoured: the run goes
    on to its own end."""
    if message.get("cancel") is not None:
        message = {**message, "cancel": None}
    return reference(message)


def completion_blank_is_strip(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, except that the completion module calls an answer blank when Python's
    `str.strip()` does (a no-break space alone is then refused, which Java keeps as content)."""
    answer = reference(message)
    if answer is None or answer.get("type") != "result" or message.get("kind") != "completion":
        return answer
    for execution, done in zip(message["executions"], answer["executions"], strict=True):
        value = execution["input"].get("agentFinalAnswer")
        if isinstance(value, str) and not value.strip() and done.get("error") is None:
            done["outputs"] = {}
            done["error"] = {
                "type": "IllegalArgumentException",
                "code": "illegal_argument",
                "message": "agentFinalAnswer is required at agent completion",
            }
    return answer


def approval_kept_granted(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, except that a decision passes `agentApprovalGranted` through instead of
    resetting it to false."""
    answer = reference(message)
    if answer is None or answer.get("type") != "result" or message.get("kind") != "decision":
        return answer
    (state,) = [execution["input"] for execution in message["executions"]]
    for done in answer["executions"]:
        if done.get("error") is None and state.get("agentApprovalGranted") is True:
            done["outputs"]["agentApprovalGranted"] = True
    return answer


def only(kinds: list[str]) -> Any:
    """The reference, declaring only `kinds` of cell (and no runtime profile without agents)."""

    def run(message: dict[str, Any]) -> dict[str, Any] | None:
        answer = reference(message)
        if answer is not None and answer.get("type") == "hello":
            return {**answer, "kinds": kinds} | ({} if "agent" in kinds else {"runtimes": []})
        return answer

    return run


completion_only = only(["completion"])
agent_only = only(["agent"])


def forgets_its_crashes(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reference, except that it reports no crash survived: a runtime that resumes after a
    crash but does not count it."""
    answer = reference(message)
    if answer is not None and answer.get("type") == "result" and "counters" in answer:
        answer["counters"]["crashes"] = 0
    return answer
