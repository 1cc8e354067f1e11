"""The outputSchema agent loop: work steps, triggers, and the durable forced-completion phase.

`AgentLoop.advance(state)` performs exactly one unit of work and names the persistence point
that follows it; a runtime persists the returned state there (and a crash between two points
resumes from the last one). The loop never knows which runtime or store it runs on.

Units, in order: a *work step* (one work call, its tools) -> `work_step_persisted`; entering the
forced phase -> `forced_entered`; announcing an attempt (state persisted before the call) ->
`forced_attempt_persisted`; the forced call and its classification -> `forced_attempt_finished`;
the terminal outcome (memory extraction included) -> `run_finished`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import Field, JsonValue, PositiveInt, ValidationError

from harness.agent.definition import FINISH_TOOL, AgentDefinition
from harness.agent.forced import ForcedCompletion, ForcedCompletionExhausted, classify
from harness.agent.output import InvalidOutput, output_validator, validate_output
from harness.agent.prompt import (
    completion_message,
    finish_tool,
    forced_fragments,
    memory_message,
    work_fragments,
    work_tools,
)
from harness.agent.state import OverrideCall, PersistencePoint, RunState, SentRequest
from harness.agent.tools import (
    FINISH_ACKNOWLEDGED,
    ApprovalPolicy,
    ToolOutcome,
    approve_all,
    run_tool,
)
from harness.errors import (
    AgentDecisionCallException,
    IllegalArgumentException,
    ToolChoiceUnsupportedError,
)
from harness.llm.gateway import Completer
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    LlmResponse,
    LlmToolCall,
    Message,
    NamedToolChoice,
    ReasoningDisabled,
    ToolResultMessage,
    UserMessage,
)
from harness.modules.completion import is_java_blank
from harness.protocol._base import WireModel
from harness.protocol.chunks import (
    ApprovalChunk,
    ForcedCompletionChunk,
    RunFinishChunk,
    StepFinishChunk,
    StepStartChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallChunk,
    ToolResultChunk,
)
from harness.protocol.forced import CompletionCode, ForcedCompletionState, ForcedTrigger

_log = logging.getLogger(__name__)

LLM_CALL_FAILED: Final = "framework_llm_call_failed"
"""A work call failed at the gateway (a forced call's failure counts as a failed attempt)."""


class LlmCallConfig(WireModel):
    """What `llm_config_override` may change for one call."""

    model: str = Field(min_length=1)
    max_tokens: PositiveInt | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)


@dataclass(frozen=True, kw_only=True)
class OverrideContext:
    """The third argument of `llm_config_override`: which phase, and the forced state."""

    execution_phase: Literal["work", "forced_completion"]
    forced_completion: ForcedCompletionState | None
    step: int


LlmConfigOverride = Callable[
    [LlmCallConfig, OverrideContext], LlmCallConfig | Mapping[str, object] | None
]


def _overridden(config: LlmCallConfig, override: object) -> LlmCallConfig:
    """`config` with the changes an `llm_config_override` callback returned, each validated as
    its field is when a config is built.

    Refuses, with an `IllegalArgumentException` naming each field and what the config allows, a
    result that is not a mapping, a field the config does not have (a misspelt `temprature`)
    and a value its field refuses (`max_tokens=-3`), as an invalid `output_schema` is refused:
    no call is made with a configuration the agent could not have been given.
    """
    allowed = ", ".join(LlmCallConfig.model_fields)
    if not isinstance(override, Mapping):
        raise IllegalArgumentException(
            "expected llm_config_override to return an LlmCallConfig, a mapping of changes to "
            f"{allowed}, or None, but got a value of type {type(override).__name__}"
        )
    refused: list[str] = []
    for name, value in override.items():
        if not isinstance(name, str) or name not in LlmCallConfig.model_fields:
            refused.append(f"{_shown(name, value)}, which is no field of the call config")
            continue
        try:
            config.evolve(**{name: value})
        except ValidationError as error:
            refused.append(f"{_shown(name, value)}: {error.errors()[0]['msg']}")
    if refused:
        raise IllegalArgumentException(
            f"expected llm_config_override to return changes to {allowed} that the call config "
            f"accepts but got {'; '.join(refused)}"
        )
    return config.evolve(**override)


def _shown(name: object, value: object) -> str:
    """`name=value (type=T)`, the value cut short: a callback may return anything."""
    text = repr(value)
    text = text if len(text) <= 60 else f"{text[:57]}..."
    return f"{name}={text} (type={type(value).__name__})"


MemoryExtractor = Callable[[tuple[Message, ...]], None]


class AgentLoop:
    """Drive one agent over a `Completer` (the gateway in every real run)."""

    def __init__(
        self,
        agent: AgentDefinition,
        completer: Completer,
        *,
        llm_config_override: LlmConfigOverride | None = None,
        invoke_config_override: bool = True,
        approve: ApprovalPolicy = approve_all,
        extract_memories: MemoryExtractor | None = None,
    ) -> None:
        self.agent = agent
        self.completer = completer
        self.llm_config_override = llm_config_override
        self.invoke_config_override = invoke_config_override
        self.approve = approve
        self.extract_memories = extract_memories
        self.validator = (
            output_validator(agent.output_schema) if agent.output_schema is not None else None
        )

    def start(self, *, run_id: str, session_id: str, user_message: str) -> RunState:
        """The initial state (persist it at `run_started`)."""
        return RunState(
            run_id=run_id,
            session_id=session_id,
            messages=(UserMessage(content=user_message),),
        )

    def advance(self, state: RunState) -> tuple[RunState, PersistencePoint]:
        """Perform the next unit of work; see the module docstring."""
        if state.phase == "work":
            if state.pending_trigger is not None:
                return self._enter_forced(state, state.pending_trigger), "forced_entered"
            return self._work_step(state), "work_step_persisted"
        if state.phase == "forced":
            if state.pending_forced_attempt is None:
                return self._announce_attempt(state), "forced_attempt_persisted"
            return self._forced_attempt(state), "forced_attempt_finished"
        if state.phase == "finishing":
            return self._finish(state), "run_finished"
        raise RuntimeError(f"run {state.run_id} is already finished")

    # -- work -------------------------------------------------------------------------------------

    def _call_config(
        self, state: RunState, phase: Literal["work", "forced_completion"]
    ) -> tuple[LlmCallConfig, RunState]:
        config = LlmCallConfig(
            model=self.agent.model,
            max_tokens=self.agent.max_tokens,
            temperature=self.agent.temperature,
        )
        if self.llm_config_override is None or not self.invoke_config_override:
            return config, state
        context = OverrideContext(
            execution_phase=phase, forced_completion=state.forced_completion, step=state.step
        )
        override: object = self.llm_config_override(config, context)
        call = OverrideCall(
            execution_phase=phase, step=state.step, forced_completion=state.forced_completion
        )
        state = state.evolve(override_calls=(*state.override_calls, call))
        if override is None:
            return config, state
        if isinstance(override, LlmCallConfig):
            return override, state
        return _overridden(config, override), state

    def _work_step(self, state: RunState) -> RunState:
        step = state.step
        config, state = self._call_config(state, "work")
        messages = state.messages
        if self.agent.memory is not None and self.agent.memory.memories:
            messages = (*messages, memory_message(self.agent.memory.memories))
            state = state.evolve(memory_recalls=state.memory_recalls + 1)
        request = LlmRequest(
            model=config.model,
            system=work_fragments(self.agent),
            messages=messages,
            tools=work_tools(self.agent),
            tool_choice="auto",
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            reasoning=self.agent.reasoning,
            stream=self.agent.stream,
        )
        sent = SentRequest(kind="work", step=step, request=request)
        state = state.evolve(requests=(*state.requests, sent))
        try:
            response = self.completer.complete(request)
        except AgentDecisionCallException as error:
            return self._fail(
                state.with_chunks(StepStartChunk(step=step, phase="work")),
                LLM_CALL_FAILED,
                f"work call failed at the gateway ({error.code}, status {error.status})",
            )
        chunks: list[StreamChunk] = [
            StepStartChunk(step=step, phase="work"),
            *_reply_chunks(step, response),
        ]
        answers = _with_answer(state.answers, response)
        update: dict[str, object] = {"step": step + 1, "answers": answers}

        if response.truncated:
            # Calls cut off mid-arguments are dropped: none is left without a result.
            history = (*state.messages, *_text_message(response.text))
            update["answers"] = state.answers
            state = state.evolve(**update, messages=history).with_chunks(*chunks)
            return self._trigger_or_end(state, "max_tokens")

        if response.tool_calls:
            results, finish_output, tool_chunks = self._run_calls(step, response.tool_calls)
            history = (
                *state.messages,
                AssistantMessage(
                    text=response.text or None,
                    tool_calls=response.tool_calls,
                    reasoning_blocks=response.reasoning_blocks,
                ),
                *results,
            )
            state = state.evolve(**update, messages=history).with_chunks(*chunks, *tool_chunks)
            if finish_output is not None:
                return self._complete(state, finish_output)
            if state.step >= self.agent.max_steps:
                return self._trigger_or_end(state, "max_steps")
            return state

        history = (*state.messages, *_text_message(response.text))
        state = state.evolve(**update, messages=history).with_chunks(*chunks)
        if self.agent.output_schema is None:
            return self._complete(state, None)
        return self._trigger_or_end(state, "terminal_text")

    def _run_calls(
        self, step: int, calls: tuple[LlmToolCall, ...]
    ) -> tuple[list[ToolResultMessage], JsonValue, list[StreamChunk]]:
        """Run sibling calls first, then `__finish__`; every call gets a result."""
        results: dict[str, ToolResultMessage] = {}
        chunks: list[StreamChunk] = []
        output: JsonValue = None
        ordered = sorted(calls, key=lambda call: call.name == FINISH_TOOL)
        for call in ordered:
            if call.name == FINISH_TOOL and self.validator is not None:
                try:
                    output = validate_output(self.validator, call.arguments)
                    outcome = ToolOutcome(FINISH_ACKNOWLEDGED)
                except InvalidOutput as invalid:
                    errors: list[JsonValue] = list(invalid.problems)
                    outcome = ToolOutcome({"acknowledged": False, "errors": errors}, is_error=True)
            else:
                outcome = run_tool(self.agent, call, self.approve)
            if outcome.approval is not None:
                chunks.append(
                    ApprovalChunk(
                        step=step, tool_call_id=call.id, name=call.name, granted=outcome.approval
                    )
                )
            results[call.id] = ToolResultMessage(
                tool_call_id=call.id,
                name=call.name,
                content=outcome.content(),
                is_error=outcome.is_error,
            )
            chunks.append(
                ToolResultChunk(
                    step=step,
                    tool_call_id=call.id,
                    name=call.name,
                    result=outcome.result,
                    is_error=outcome.is_error,
                )
            )
        # results are listed in the order the model made the calls
        return [results[call.id] for call in calls], output, chunks

    def _trigger_or_end(self, state: RunState, trigger: ForcedTrigger) -> RunState:
        if self.agent.output_schema is None:
            # An agent without an output schema simply stops; a cut-off is reported as such.
            ended = state.evolve(limit_reached=trigger != "terminal_text")
            return self._complete(ended, None)
        return state.evolve(pending_trigger=trigger)

    # -- forced completion ------------------------------------------------------------------------

    def _enter_forced(self, state: RunState, trigger: ForcedTrigger) -> RunState:
        forced = ForcedCompletion.enter(trigger, self.agent.max_completion_retries, state.step)
        started = ForcedCompletionChunk(
            phase="started", trigger=trigger, max_attempts=forced.state.max_attempts
        )
        state = state.evolve(
            phase="forced", pending_trigger=None, forced_completion=forced.state
        ).with_chunks(started)
        try:
            forced.check_budget()
        except ForcedCompletionExhausted as exhausted:
            return self._exhausted(state, exhausted)
        return state

    def _announce_attempt(self, state: RunState) -> RunState:
        forced = _forced_state(state)
        attempt = forced.next_attempt
        chunk = ForcedCompletionChunk(
            phase="attempt_started",
            trigger=forced.trigger,
            attempt=attempt,
            max_attempts=forced.max_attempts,
        )
        return state.evolve(pending_forced_attempt=attempt).with_chunks(chunk)

    def _forced_attempt(self, state: RunState) -> RunState:
        forced = _forced_state(state)
        attempt = forced.next_attempt
        config, state = self._call_config(state, "forced_completion")
        nudge = completion_message(forced)
        request = LlmRequest(
            model=config.model,
            system=forced_fragments(self.agent),
            messages=(*state.messages, nudge),
            tools=(finish_tool(self.agent),),
            tool_choice=NamedToolChoice(name=FINISH_TOOL),
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            reasoning=ReasoningDisabled(),
            stream=self.agent.stream,
        )
        sent = SentRequest(kind="forced", step=state.step, attempt=attempt, request=request)
        state = state.evolve(
            requests=(*state.requests, sent),
            # the attempt's message stays in the conversation: the next attempt's request holds it
            messages=request.messages,
            pending_forced_attempt=None,
        )
        phase = ForcedCompletion(forced)
        try:
            response = self.completer.complete(request)
        except ToolChoiceUnsupportedError as refusal:
            if refusal.status is None:  # refused by the capability check: nothing was sent
                state = state.evolve(requests=state.requests[:-1])
            failed = phase.fail(CompletionCode.TOOL_CHOICE_UNSUPPORTED)
            chunk = self._attempt_chunk(
                "attempt_failed", failed, attempt, CompletionCode.TOOL_CHOICE_UNSUPPORTED
            )
            state = state.evolve(forced_completion=failed).with_chunks(chunk)
            return self._fail(
                state,
                CompletionCode.TOOL_CHOICE_UNSUPPORTED,
                "the provider or model cannot force a named tool call; no attempt was spent",
            )
        except AgentDecisionCallException:
            return self._attempt_failed(state, phase, attempt, LLM_CALL_FAILED)
        state = state.evolve(forced_calls_returned=state.forced_calls_returned + 1)
        step = state.step
        chunks: list[StreamChunk] = [
            StepStartChunk(step=step, phase="forced"),
            *_reply_chunks(step, response),
        ]
        assert self.validator is not None  # forced completion exists only with a schema
        reply = classify(response, self.validator)
        history = (*state.messages, *self._answered(response, reply.problems, reply.succeeded))
        answers = _with_answer(state.answers, response)
        state = state.evolve(messages=history, answers=answers).with_chunks(*chunks)
        if reply.succeeded:
            succeeded = phase.succeed()
            chunk = self._attempt_chunk("succeeded", succeeded, attempt, None)
            state = state.evolve(forced_completion=succeeded).with_chunks(chunk)
            return self._complete(state, reply.output)
        assert reply.code is not None
        return self._attempt_failed(state, phase, attempt, reply.code)

    def _answered(
        self, response: LlmResponse, problems: tuple[str, ...], succeeded: bool
    ) -> list[Message]:
        """The forced reply and a result for each of its calls, so none is left dangling.

        Calls cut off by the token limit are dropped, as in the work phase: their input is
        incomplete, and some providers cannot even be sent it again.
        """
        if not response.tool_calls or response.truncated:
            return list(_text_message(response.text))
        results: list[Message] = [
            AssistantMessage(
                text=response.text or None,
                tool_calls=response.tool_calls,
                reasoning_blocks=response.reasoning_blocks,
            )
        ]
        for call in response.tool_calls:
            if call.name != FINISH_TOOL:
                result: JsonValue = {"error": f"only {FINISH_TOOL} is available now"}
            elif succeeded:
                result = FINISH_ACKNOWLEDGED
            else:
                result = {"acknowledged": False, "errors": list(problems) or ["rejected"]}
            results.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    name=call.name,
                    content=ToolOutcome(result).content(),
                    is_error=not (succeeded and call.name == FINISH_TOOL),
                )
            )
        return results

    def _attempt_failed(
        self, state: RunState, phase: ForcedCompletion, attempt: int, code: str
    ) -> RunState:
        try:
            after = phase.consume_attempt(code)
        except ForcedCompletionExhausted as exhausted:
            chunk = self._attempt_chunk("attempt_failed", exhausted.state, attempt, code)
            return self._exhausted(state.with_chunks(chunk), exhausted)
        chunk = self._attempt_chunk("attempt_failed", after, attempt, code)
        return state.evolve(forced_completion=after).with_chunks(chunk)

    def _exhausted(self, state: RunState, exhausted: ForcedCompletionExhausted) -> RunState:
        chunk = ForcedCompletionChunk(
            phase="exhausted",
            trigger=exhausted.state.trigger,
            max_attempts=exhausted.state.max_attempts,
            code=CompletionCode.EXHAUSTED,
        )
        state = state.evolve(forced_completion=exhausted.state).with_chunks(chunk)
        return self._fail(state, CompletionCode.EXHAUSTED, str(exhausted))

    @staticmethod
    def _attempt_chunk(
        phase: Literal["attempt_failed", "succeeded"],
        forced: ForcedCompletionState,
        attempt: int,
        code: str | None,
    ) -> ForcedCompletionChunk:
        return ForcedCompletionChunk(
            phase=phase,
            trigger=forced.trigger,
            attempt=attempt,
            max_attempts=forced.max_attempts,
            code=code,
        )

    # -- the end ----------------------------------------------------------------------------------

    def _complete(self, state: RunState, output: JsonValue) -> RunState:
        return state.evolve(status="completed", phase="finishing", output=output)

    def _fail(self, state: RunState, code: str, message: str) -> RunState:
        return state.evolve(
            status="failed",
            phase="finishing",
            error_code=code,
            error_message=message,
        )

    def _finish(self, state: RunState) -> RunState:
        """The terminal outcome: memory extraction (once), the finish chunk."""
        extractions = state.memory_extractions
        if self.agent.memory is not None:
            if self.extract_memories is not None:
                self.extract_memories(state.messages)
            extractions += 1
        status: Literal["completed", "failed"] = (
            "failed" if state.status == "failed" else "completed"
        )
        chunk = RunFinishChunk(status=status, error_code=state.error_code)
        return state.evolve(phase="finished", memory_extractions=extractions).with_chunks(chunk)


def _forced_state(state: RunState) -> ForcedCompletionState:
    if state.forced_completion is None:
        raise RuntimeError(f"run {state.run_id} is in the forced phase without its state")
    return state.forced_completion


def _text_message(text: str) -> tuple[AssistantMessage, ...]:
    return (AssistantMessage(text=text),) if text else ()


def _with_answer(answers: tuple[str, ...], response: LlmResponse) -> tuple[str, ...]:
    """`answers` and the reply's text, unless that text is blank (Java's `String.isBlank()`, as
    the Agent Completion module reads it): a reply of white space alone answers nothing, in the
    work phase as in the forced one."""
    return answers if is_java_blank(response.text) else (*answers, response.text)


def _reply_chunks(step: int, response: LlmResponse) -> list[StreamChunk]:
    chunks: list[StreamChunk] = []
    if response.text:
        chunks.append(TextDeltaChunk(step=step, text=response.text))
    chunks.extend(
        ToolCallChunk(step=step, tool_call_id=call.id, name=call.name, arguments=call.arguments)
        for call in response.tool_calls
    )
    chunks.append(StepFinishChunk(step=step, stop_reason=response.stop.canonical_stop_reason()))
    return chunks
