// An outputSchema agent with deterministic forced completion, as a resumable state machine.
//
// The loop of the Node example (`../node_openai_sdk/agent.mjs`), cut into the units a durable
// runtime persists between. The run is one plain JSON value (`RunState`); `advance(state)`
// performs exactly one unit and names the persistence point that follows it, and a run resumed
// from the last state persisted goes on exactly where it stopped:
//
// - a *work step* (one work call with every tool plus `__finish__`, then the tools it asked for)
//   -> `work_step_persisted`;
// - entering forced completion on a trigger -> `forced_entered`. The triggers: `terminal_text`
//   (prose instead of `__finish__`), `max_tokens` (a reply cut off by the token limit; its
//   cut-off calls are dropped) and `max_steps` (the step budget spent on tool calls);
// - announcing a forced attempt (persisted before the call is made) -> `forced_attempt_persisted`;
// - the forced call and its classification -> `forced_attempt_finished`;
// - the terminal outcome (memory extraction, the `run_finish` chunk) -> `run_finished`.
//
// Each forced attempt is one narrowed call: the base system prompt only (no skills, workspace or
// memory), only the `__finish__` tool, a tool choice naming it, reasoning off, and a
// `[completion]` message saying `(attempt N of M)`. The budget M is `max_completion_retries`;
// every failed attempt has exactly one code, and a spent budget fails the run with
// `framework_forced_completion_exhausted`.
//
// The loop never calls a model or a tool itself: it asks its `effects` to, so a Workflow can run
// each call as a durable step and a Durable Object can simply make it.

// workerd resolves no package names (wrangler bundles them in): the validator is imported by
// its path, a module made for Workers (no `eval`, which workerd refuses and ajv needs).
import { Validator } from "./node_modules/@cfworker/json-schema/dist/esm/index.js";

export const FINISH = "__finish__";
const FINISH_DESCRIPTION =
  "Finish the run: call this tool once with the final output. Its parameters are the output schema.";
const DEFAULT_COMPLETION_RETRIES = 2;
const MAX_ANSWER_UTF16_UNITS = 65_536; // what the Agent Completion module accepts as an answer
const MAX_PROBLEMS = 10;

export const Codes = {
  LLM_CALL_FAILED: "framework_llm_call_failed",
  EXHAUSTED: "framework_forced_completion_exhausted",
  PROTOCOL_VIOLATION: "framework_completion_protocol_violation",
  TOOL_MISSING: "framework_completion_tool_missing",
  TOOL_CHOICE_UNSUPPORTED: "framework_completion_tool_choice_unsupported",
  INVALID_OUTPUT: "framework_completion_invalid_output",
};

const SKILL_TOOLS = [
  {
    name: "load_skill",
    description: "Load the full instructions of a skill from the catalog.",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  },
  {
    name: "read_skill_file",
    description: "Read a file that belongs to a loaded skill.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
];

// Keywords whose error only says that a subschema failed; the subschema's own errors, which
// follow it, say why. Counting those alone counts each failure once, as most validators do.
const WRAPPERS = new Set([
  "properties",
  "patternProperties",
  "additionalProperties",
  "unevaluatedProperties",
  "propertyNames",
  "dependentSchemas",
  "items",
  "prefixItems",
  "additionalItems",
  "unevaluatedItems",
  "allOf",
  "if",
  "$ref",
  "$recursiveRef",
]);
// Keywords whose one error stands for its subschema's failures, which are left out instead.
const SUMMARIES = new Set(["anyOf", "oneOf", "contains"]);

// -- the agent ------------------------------------------------------------------------------------

/**
 * The agent block of a harness cell (every key given), and the model it runs on.
 * A reply is `{ text, toolCalls: [{ id, name, arguments }], stopReason, reasoningBlocks }`, where
 * `arguments` is raw JSON text and `stopReason` is end_turn, tool_use, limit_reached or other.
 */
export class Agent {
  constructor(model, spec) {
    Object.assign(this, spec, { model });
  }

  get budget() {
    return this.max_completion_retries ?? DEFAULT_COMPLETION_RETRIES;
  }

  /** The agent's tools, the skill tools (with skills) and the workspace tools. */
  allTools() {
    const skills = this.skills ?? {};
    const hasSkills = Boolean(skills.catalog?.length || skills.preloaded?.length);
    return [...this.tools, ...(hasSkills ? SKILL_TOOLS : []), ...(this.workspace?.tools ?? [])];
  }

  finishTool() {
    return { name: FINISH, description: FINISH_DESCRIPTION, parameters: this.output_schema };
  }

  /** The base prompt, the skills catalog, the preloaded skill bodies, the workspace. */
  workSystemPrompt() {
    const catalog = (this.skills?.catalog ?? []).map((s) => `- ${s.name}: ${s.description}`);
    const bodies = (this.skills?.preloaded ?? []).map((s) => `## Skill: ${s.name}\n${s.body}`);
    return [
      this.system_prompt,
      catalog.length ? `Available skills (load one with load_skill):\n${catalog.join("\n")}` : "",
      bodies.join("\n\n"),
      this.workspace?.fragment ?? "",
    ]
      .filter(Boolean)
      .join("\n\n");
  }

  memoryRecall() {
    const memories = this.memory?.memories ?? [];
    if (!memories.length) return null;
    const lines = memories.map((memory) => `- ${memory}`).join("\n");
    return { role: "user", content: `<relevant_memories>\n${lines}\n</relevant_memories>` };
  }

  /** Run one tool call (not `__finish__`): `{ result, isError, approval }`, where `approval`
   * is whether a reviewer granted an approval-gated tool (null for the others). */
  runTool(call, approve) {
    const outcome = (result, isError, approval = null) => ({ result, isError, approval });
    const tool = this.allTools().find((t) => t.name === call.name);
    if (!tool) return outcome({ error: `unknown tool '${call.name}'` }, true);
    let args;
    try {
      args = JSON.parse(call.arguments || "{}");
    } catch {
      return outcome({ error: "the arguments are not valid JSON" }, true);
    }
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      return outcome({ error: "the arguments must be a JSON object" }, true);
    }
    let approval = null;
    if (tool.requires_approval) {
      approval = approve(call);
      if (!approval) return outcome({ error: "approval denied" }, true, false);
    }
    if (call.name === "load_skill") {
      const skills = [...(this.skills?.catalog ?? []), ...(this.skills?.preloaded ?? [])];
      const skill = skills.find((s) => s.name === args.name);
      return skill
        ? outcome({ name: skill.name, body: skill.body ?? "" }, false, approval)
        : outcome({ error: "unknown skill" }, true, approval);
    }
    if (tool.error != null) return outcome({ error: tool.error }, true, approval);
    return outcome(tool.result ?? { ok: true }, false, approval);
  }
}

// -- the forced-completion state --------------------------------------------------------------------

/** The forced-completion phase as a runtime persists it (`ForcedCompletionState`). */
function forcedState(trigger, maxAttempts, enteredAtStep) {
  return {
    trigger,
    attemptsUsed: 0,
    maxAttempts,
    status: "active",
    lastFailureCode: null,
    enteredAtStep,
  };
}

function forcedChunk(forced, phase, { attempt = null, code = null } = {}) {
  const { trigger, maxAttempts } = forced;
  return { kind: "forced_completion", phase, trigger, attempt, max_attempts: maxAttempts, code };
}

// -- the run --------------------------------------------------------------------------------------

/** A new run's state (persist it at `run_started`). */
export function startRun({ runId, sessionId, userMessage }) {
  return {
    runId,
    sessionId,
    phase: "work", // work, forced, finishing, finished
    status: "running",
    messages: [{ role: "user", content: userMessage }],
    answers: [], // every complete answer text, for the outcome record
    chunks: [],
    step: 0,
    pendingTrigger: null, // the trigger a work step hit, entered by the next unit
    pendingAttempt: null, // the forced attempt announced, made by the next unit
    forced: null,
    output: null,
    error: null, // { code, message }
    limitReached: false,
    overrideCalls: [],
    memoryExtractions: 0,
    persisted: 0, // how many times the run was persisted (a runtime's bookkeeping)
  };
}

/** The run ended from outside before `run_finished`: no output, no error and no memory
 * extraction; the transcript, the answers and the forced-completion state stay as they were. */
export function cancelRun(state) {
  return {
    ...state,
    phase: "finished",
    status: "cancelled",
    output: null,
    error: null,
    chunks: [...state.chunks, { kind: "run_finish", status: "cancelled", error_code: null }],
  };
}

/**
 * The units of one agent's runs. `effects.callModel(label, request)` answers `{ reply }` or
 * `{ failure: { unsupported, message } }`; `effects.runTool(label, call)` answers what
 * `Agent.runTool` does. `label` names the unit uniquely within the run (a Workflow's step name).
 * `configOverride(config, phase, forced)` (the forced-completion state, or null before the phase) is called before every model call when given and
 * `invokeConfigOverride` is on; its changes apply to that call.
 */
export class AgentLoop {
  constructor(agent, { effects, configOverride = null, invokeConfigOverride = true }) {
    this.agent = agent;
    this.effects = effects;
    this.configOverride = invokeConfigOverride ? configOverride : null;
    this.validator = agent.output_schema
      ? new Validator(agent.output_schema, "2020-12", false)
      : null;
  }

  /** Perform the next unit of work on a copy of `state`: `[next state, persistence point]`. */
  async advance(state) {
    const run = structuredClone(state);
    if (run.phase === "work") {
      if (run.pendingTrigger !== null) return [this.enterForced(run), "forced_entered"];
      return [await this.workStep(run), "work_step_persisted"];
    }
    if (run.phase === "forced") {
      if (run.pendingAttempt === null)
        return [this.announceAttempt(run), "forced_attempt_persisted"];
      return [await this.forcedAttempt(run), "forced_attempt_finished"];
    }
    if (run.phase === "finishing") return [this.finish(run), "run_finished"];
    throw new Error(`run ${run.runId} is already finished`);
  }

  // -- work ---------------------------------------------------------------------------------------

  async workStep(run) {
    const step = run.step;
    const recall = this.agent.memoryRecall(); // injected into work calls only, never kept
    const request = {
      ...this.callConfig(run, "work"),
      system: this.agent.workSystemPrompt(),
      messages: recall ? [...run.messages, recall] : [...run.messages],
      tools: [...this.agent.allTools(), ...(this.validator ? [this.agent.finishTool()] : [])],
      toolChoice: "auto",
      reasoning: this.agent.reasoning,
      stream: this.agent.stream,
    };
    run.chunks.push({ kind: "step_start", step, phase: "work" });
    const { reply, failure } = await this.effects.callModel(`work call, step ${step}`, request);
    if (failure) {
      return fail(
        run,
        Codes.LLM_CALL_FAILED,
        `work call failed at the gateway (${failure.message})`,
      );
    }
    run.chunks.push(...replyChunks(step, reply));
    run.step += 1;
    if (reply.stopReason === "limit_reached") {
      // A cut-off reply is no answer, and its cut-off calls are dropped, never run.
      run.messages.push(...textMessage(reply.text));
      return this.triggerOrEnd(run, "max_tokens");
    }
    if (reply.text.trim()) run.answers.push(reply.text);
    if (!reply.toolCalls.length) {
      run.messages.push(...textMessage(reply.text));
      return this.triggerOrEnd(run, "terminal_text");
    }
    run.messages.push(assistantMessage(reply));
    const output = await this.runTools(run, step, reply.toolCalls);
    if (output !== undefined) return complete(run, output);
    return run.step >= this.agent.max_steps ? this.triggerOrEnd(run, "max_steps") : run;
  }

  /** Run the sibling calls first, then `__finish__`; every call gets a result, listed in the
   * order the model made the calls. The valid `__finish__` output, or undefined. */
  async runTools(run, step, calls) {
    const results = new Map();
    let output;
    const ordered = [
      ...calls.filter((c) => c.name !== FINISH),
      ...calls.filter((c) => c.name === FINISH),
    ];
    for (const [index, call] of ordered.entries()) {
      let result, isError;
      if (call.name === FINISH && this.validator) {
        const checked = this.check(call.arguments);
        if (!checked.problems.length) output = checked.output;
        result = checked.problems.length
          ? { acknowledged: false, errors: checked.problems }
          : { acknowledged: true };
        isError = checked.problems.length > 0;
      } else {
        const label = `tool call ${index + 1} of step ${step}: ${call.name}`;
        const ran = await this.effects.runTool(label, call);
        if (ran.approval !== null) {
          const { id, name } = call;
          run.chunks.push({
            kind: "approval",
            step,
            tool_call_id: id,
            name,
            granted: ran.approval,
          });
        }
        ({ result, isError } = ran);
      }
      results.set(call.id, toolResult(call, result, isError));
      run.chunks.push({
        kind: "tool_result",
        step,
        tool_call_id: call.id,
        name: call.name,
        result,
        is_error: isError,
      });
    }
    run.messages.push(...calls.map((call) => results.get(call.id)));
    return output;
  }

  triggerOrEnd(run, trigger) {
    if (this.validator) {
      run.pendingTrigger = trigger;
      return run;
    }
    // Without an output schema the run simply ends; a cut-off is reported as such.
    run.limitReached = trigger !== "terminal_text";
    return complete(run, null);
  }

  // -- forced completion --------------------------------------------------------------------------

  enterForced(run) {
    run.forced = forcedState(run.pendingTrigger, this.agent.budget, run.step);
    run.pendingTrigger = null;
    run.phase = "forced";
    run.chunks.push(forcedChunk(run.forced, "started"));
    if (run.forced.attemptsUsed >= run.forced.maxAttempts) return exhausted(run);
    return run;
  }

  announceAttempt(run) {
    run.pendingAttempt = run.forced.attemptsUsed + 1;
    run.chunks.push(forcedChunk(run.forced, "attempt_started", { attempt: run.pendingAttempt }));
    return run;
  }

  async forcedAttempt(run) {
    const attempt = run.pendingAttempt;
    run.pendingAttempt = null;
    const config = this.callConfig(run, "forced_completion");
    run.messages.push({
      role: "user",
      content:
        `[completion] Finish now: call ${FINISH} with the final output that satisfies its schema ` +
        `(attempt ${attempt} of ${run.forced.maxAttempts}).`,
    });
    const request = {
      ...config,
      system: this.agent.system_prompt, // the base prompt only: no skills, workspace or memory
      messages: [...run.messages],
      tools: [this.agent.finishTool()],
      toolChoice: FINISH,
      reasoning: "disabled",
      stream: this.agent.stream,
    };
    const label = `forced call, attempt ${attempt}`;
    const { reply, failure } = await this.effects.callModel(label, request);
    if (failure?.unsupported) {
      // Not a failed attempt: no attempt of this run can ever succeed, so none is spent.
      const code = Codes.TOOL_CHOICE_UNSUPPORTED;
      run.forced = { ...run.forced, status: "failed", lastFailureCode: code };
      run.chunks.push(forcedChunk(run.forced, "attempt_failed", { attempt, code }));
      return fail(
        run,
        code,
        "the provider or model cannot force a named tool call; no attempt was spent",
      );
    }
    if (failure) return attemptFailed(run, attempt, Codes.LLM_CALL_FAILED);
    run.chunks.push(
      { kind: "step_start", step: run.step, phase: "forced" },
      ...replyChunks(run.step, reply),
    );
    if (reply.text.trim()) run.answers.push(reply.text);
    const { output, code, problems } = this.classify(reply);
    run.messages.push(...answered(reply, problems, code === null));
    if (code !== null) return attemptFailed(run, attempt, code);
    run.forced = { ...run.forced, attemptsUsed: attempt, status: "succeeded" };
    run.chunks.push(forcedChunk(run.forced, "succeeded", { attempt }));
    return complete(run, output);
  }

  /** Exactly one valid `__finish__` call succeeds; anything else has one failure code. */
  classify(reply) {
    const calls = reply.toolCalls;
    if (!calls.length) return { code: Codes.TOOL_MISSING, problems: [] };
    if (calls.length > 1 || calls[0].name !== FINISH)
      return { code: Codes.PROTOCOL_VIOLATION, problems: [] };
    if (reply.stopReason === "limit_reached") {
      // cut-off input is incomplete, even when what arrived parses
      return { code: Codes.INVALID_OUTPUT, problems: ["the reply was cut off by the token limit"] };
    }
    const { output, problems } = this.check(calls[0].arguments);
    return { output, code: problems.length ? Codes.INVALID_OUTPUT : null, problems };
  }

  // -- the end ------------------------------------------------------------------------------------

  /** The terminal outcome: memory extraction (once), the finish chunk. */
  finish(run) {
    if (this.agent.memory) run.memoryExtractions += 1;
    run.phase = "finished";
    run.chunks.push({
      kind: "run_finish",
      status: run.status,
      error_code: run.error?.code ?? null,
    });
    return run;
  }

  // -- shared -------------------------------------------------------------------------------------

  callConfig(run, phase) {
    const config = {
      model: this.agent.model,
      maxTokens: this.agent.max_tokens,
      temperature: this.agent.temperature,
    };
    if (!this.configOverride) return config;
    run.overrideCalls.push(phase);
    return { ...config, ...this.configOverride({ ...config }, phase, run.forced ?? null) };
  }

  /** The `__finish__` output and the problems that make it invalid (none when valid). */
  check(text) {
    let output;
    try {
      output = JSON.parse(text || "{}");
    } catch {
      return { output: null, problems: ["the arguments are not valid JSON"] };
    }
    const { valid, errors } = this.validator.validate(output);
    if (!valid) return { output: null, problems: schemaProblems(errors).slice(0, MAX_PROBLEMS) };
    if (JSON.stringify(output).length > MAX_ANSWER_UTF16_UNITS) {
      return { output: null, problems: ["agentFinalAnswer exceeds the supported length"] };
    }
    return { output, problems: [] };
  }
}

// -- state changes shared by the units ------------------------------------------------------------

function complete(run, output) {
  run.status = "completed";
  run.phase = "finishing";
  run.output = output;
  return run;
}

function fail(run, code, message) {
  run.status = "failed";
  run.phase = "finishing";
  run.error = { code, message };
  return run;
}

/** The one place attempts are counted: the budget is spent when none is left. */
function attemptFailed(run, attempt, code) {
  const used = run.forced.attemptsUsed + 1;
  run.forced = { ...run.forced, attemptsUsed: used, lastFailureCode: code };
  const spent = used >= run.forced.maxAttempts;
  if (spent) run.forced.status = "exhausted";
  run.chunks.push(forcedChunk(run.forced, "attempt_failed", { attempt, code }));
  return spent ? exhausted(run) : run;
}

function exhausted(run) {
  const { attemptsUsed, maxAttempts, lastFailureCode } = run.forced;
  run.forced = { ...run.forced, status: "exhausted" };
  run.chunks.push(forcedChunk(run.forced, "exhausted", { code: Codes.EXHAUSTED }));
  const cause = lastFailureCode ? `; last cause: ${lastFailureCode}` : "";
  return fail(
    run,
    Codes.EXHAUSTED,
    `forced completion exhausted after ${attemptsUsed} of ${maxAttempts} attempt(s)${cause}`,
  );
}

// -- small helpers --------------------------------------------------------------------------------

/** Each failing keyword once, as `path: message`: a wrapper's error is left out for its
 * subschema's, and the subschema errors of an `anyOf`, `oneOf` or `contains` for its own. */
function schemaProblems(errors) {
  const summarised = errors
    .filter((e) => SUMMARIES.has(e.keyword))
    .map((e) => `${e.keywordLocation}/`);
  return errors
    .filter((e) => !WRAPPERS.has(e.keyword))
    .filter((e) => !summarised.some((prefix) => e.keywordLocation.startsWith(prefix)))
    .map((e) => `${e.instanceLocation.replace(/^#/, "") || "/"}: ${e.error}`);
}

function replyChunks(step, reply) {
  return [
    ...(reply.text ? [{ kind: "text_delta", step, text: reply.text }] : []),
    ...reply.toolCalls.map((c) => ({
      kind: "tool_call",
      step,
      tool_call_id: c.id,
      name: c.name,
      arguments: c.arguments,
    })),
    { kind: "step_finish", step, stop_reason: reply.stopReason },
  ];
}

/** The forced reply for the history, with a result for each of its calls. */
function answered(reply, problems, succeeded) {
  if (!reply.toolCalls.length || reply.stopReason === "limit_reached")
    return textMessage(reply.text);
  return [
    assistantMessage(reply),
    ...reply.toolCalls.map((call) => {
      let result = { acknowledged: false, errors: problems.length ? problems : ["rejected"] };
      if (call.name !== FINISH) result = { error: `only ${FINISH} is available now` };
      else if (succeeded) result = { acknowledged: true };
      return toolResult(call, result, !(succeeded && call.name === FINISH));
    }),
  ];
}

function textMessage(text) {
  return text ? [{ role: "assistant", content: text, toolCalls: [] }] : [];
}

function assistantMessage(reply) {
  return {
    role: "assistant",
    content: reply.text || null,
    toolCalls: reply.toolCalls,
    reasoningBlocks: reply.reasoningBlocks,
  };
}

function toolResult(call, result, isError) {
  return { role: "tool", toolCallId: call.id, content: JSON.stringify(result), isError };
}
