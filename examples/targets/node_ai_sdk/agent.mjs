// An outputSchema agent with deterministic forced completion, on the Vercel AI SDK.
//
// The run is a loop of *work* steps: one model call with every tool plus `__finish__`, then the
// tools it asked for. Calling `__finish__` with output that satisfies the schema completes the
// run. When the run would end without that output, forced completion begins, on one of three
// triggers:
//
// - `terminal_text`: the model ended its turn with prose instead of calling `__finish__`;
// - `max_tokens`: a reply was cut off by the token limit (its cut-off tool calls are dropped);
// - `max_steps`: the step budget was spent on tool calls.
//
// Each forced attempt is one narrowed call: the base system prompt only (no skills, workspace or
// memory), only the `__finish__` tool, `toolChoice: { type: "tool", toolName: "__finish__" }`,
// reasoning off, and a `[completion]` message saying `(attempt N of M)`. The budget M is
// `max_completion_retries`; every failed attempt has exactly one code (errors.mjs maps the SDK's
// errors to them), and a spent budget fails the run with `framework_forced_completion_exhausted`.
//
// The history is the SDK's model messages; the SDK validates `__finish__` input against the
// output schema (with ajv, JSON Schema 2020-12) and reports a refused call instead of throwing.

import { createHash } from "node:crypto";
import Ajv2020 from "ajv/dist/2020.js";
import {
  Codes,
  OutputProblems,
  describeFailure,
  forcedCallFailure,
  forcedReplyCode,
  inputProblems,
  isFailedCall,
} from "./errors.mjs";

export const FINISH = "__finish__";
const FINISH_DESCRIPTION =
  "Finish the run: call this tool once with the final output. Its parameters are the output schema.";
const DEFAULT_COMPLETION_RETRIES = 2;
const MAX_ANSWER_UTF16_UNITS = 65_536; // what the Agent Completion module accepts as an answer

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

const ajv = new Ajv2020({ allErrors: true, strict: false });

// -- the agent ------------------------------------------------------------------------------------

/** The agent block of a harness cell (every key given), and the model it runs on. */
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

  /** `__finish__`, whose input the SDK validates: the output schema, and the answer's length. */
  finishTool() {
    const schema = this.output_schema;
    const check = ajv.compile(schema);
    const validate = (value) => {
      if (!check(value)) {
        const problems = check.errors.map((e) => `${e.instancePath || "/"}: ${e.message}`);
        return { success: false, error: new OutputProblems(problems.slice(0, 10)) };
      }
      if (JSON.stringify(value).length > MAX_ANSWER_UTF16_UNITS) {
        const problem = "agentFinalAnswer exceeds the supported length";
        return { success: false, error: new OutputProblems([problem]) };
      }
      return { success: true, value };
    };
    return { name: FINISH, description: FINISH_DESCRIPTION, parameters: schema, validate };
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
}

/** The forced-completion phase: the durable state a runtime persists with the run. */
class ForcedState {
  constructor(fields) {
    Object.assign(this, { attemptsUsed: 0, status: "active", lastFailureCode: null }, fields);
  }

  with(changes) {
    return new ForcedState({ ...this, ...changes });
  }

  get attemptsLeft() {
    return this.attemptsUsed < this.maxAttempts;
  }

  record() {
    const { trigger, attemptsUsed, maxAttempts, status, lastFailureCode, enteredAtStep } = this;
    return { trigger, attemptsUsed, maxAttempts, status, lastFailureCode, enteredAtStep };
  }

  chunk(phase, { attempt = null, code = null } = {}) {
    const { trigger, maxAttempts } = this;
    return { kind: "forced_completion", phase, trigger, attempt, max_attempts: maxAttempts, code };
  }
}

// -- the run --------------------------------------------------------------------------------------

/** One run of `agent` on `model` (an async function from request to reply, model.mjs). */
export class AgentRun {
  constructor(agent, model, { approve, configOverride = null }) {
    this.agent = agent;
    this.model = model;
    this.approve = approve;
    // (config, phase, forced state or null) => changes or null, before every call
    this.configOverride = configOverride;
    this.hasOutput = Boolean(agent.output_schema);
    this.messages = [];
    this.answers = []; // every complete answer text, for the outcome record
    this.chunks = [];
    this.step = 0;
    this.forced = null;
    this.status = "running";
    this.output = null;
    this.error = null; // { code, message }
    this.limitReached = false;
    this.overrideCalls = [];
    this.memoryExtractions = 0;
  }

  async run(userMessage) {
    this.messages.push({ role: "user", content: userMessage });
    let trigger = null;
    while (this.status === "running" && trigger === null) trigger = await this.workStep();
    if (trigger !== null) await this.forceCompletion(trigger);
    if (this.agent.memory) this.memoryExtractions += 1; // once, at the terminal outcome
    this.chunks.push({
      kind: "run_finish",
      status: this.status,
      error_code: this.error?.code ?? null,
    });
  }

  // -- work ---------------------------------------------------------------------------------------

  /** One work call and its tools; the forced-completion trigger it hit, or null. */
  async workStep() {
    const step = this.step;
    const recall = this.agent.memoryRecall(); // injected into work calls only, never kept
    const reasoning = this.agent.reasoning;
    const history = withoutReasoning(this.messages, reasoning);
    const request = {
      ...this.callConfig("work"),
      system: this.agent.workSystemPrompt(),
      messages: recall ? [...history, recall] : history,
      tools: [...this.agent.allTools(), ...(this.hasOutput ? [this.agent.finishTool()] : [])],
      toolChoice: "auto",
      reasoning,
      stream: this.agent.stream,
    };
    this.chunks.push({ kind: "step_start", step, phase: "work" });
    let reply;
    try {
      reply = await this.model(request);
    } catch (error) {
      if (!isFailedCall(error)) throw error;
      this.fail(
        Codes.LLM_CALL_FAILED,
        `work call failed at the gateway (${describeFailure(error)})`,
      );
      return null;
    }
    this.chunks.push(...replyChunks(step, reply));
    this.step += 1;
    if (reply.stopReason === "limit_reached") {
      // A cut-off reply is no answer, and its cut-off calls are dropped, never run.
      this.messages.push(...textMessage(reply.text));
      return this.triggerOrEnd("max_tokens");
    }
    if (reply.text.trim()) this.answers.push(reply.text);
    if (!reply.toolCalls.length) {
      this.messages.push(...textMessage(reply.text));
      return this.triggerOrEnd("terminal_text");
    }
    this.messages.push(assistantMessage(reply));
    const output = this.runTools(step, reply.toolCalls);
    if (output !== undefined) return this.complete(output);
    return this.step >= this.agent.max_steps ? this.triggerOrEnd("max_steps") : null;
  }

  /** Run the sibling calls first, then `__finish__`; every call gets a result, listed in the
   * order the model made the calls. The valid `__finish__` output, or undefined. */
  runTools(step, calls) {
    const results = new Map();
    let output;
    const ordered = [
      ...calls.filter((c) => c.name !== FINISH),
      ...calls.filter((c) => c.name === FINISH),
    ];
    for (const call of ordered) {
      let result, isError;
      if (call.name === FINISH && this.hasOutput) {
        const problems = call.error ? inputProblems(call.error) : [];
        if (!problems.length) output = call.input;
        result = problems.length
          ? { acknowledged: false, errors: problems }
          : { acknowledged: true };
        isError = problems.length > 0;
      } else {
        [result, isError] = this.runTool(step, call);
      }
      results.set(call.id, toolResult(call, result, isError));
      this.chunks.push({
        kind: "tool_result",
        step,
        tool_call_id: call.id,
        name: call.name,
        result,
        is_error: isError,
      });
    }
    this.messages.push({ role: "tool", content: calls.map((call) => results.get(call.id)) });
    return output;
  }

  runTool(step, call) {
    const tool = this.agent.allTools().find((t) => t.name === call.name);
    if (!tool) return [{ error: `unknown tool '${call.name}'` }, true];
    const args = call.input;
    if (args === null) return [{ error: "the arguments are not valid JSON" }, true];
    if (typeof args !== "object" || Array.isArray(args)) {
      return [{ error: "the arguments must be a JSON object" }, true];
    }
    if (tool.requires_approval) {
      const granted = this.approve(call);
      this.chunks.push({ kind: "approval", step, tool_call_id: call.id, name: call.name, granted });
      if (!granted) return [{ error: "approval denied" }, true];
    }
    if (call.name === "load_skill") {
      const skills = [
        ...(this.agent.skills?.catalog ?? []),
        ...(this.agent.skills?.preloaded ?? []),
      ];
      const skill = skills.find((s) => s.name === args.name);
      return skill
        ? [{ name: skill.name, body: skill.body ?? "" }, false]
        : [{ error: "unknown skill" }, true];
    }
    if (tool.error != null) return [{ error: tool.error }, true];
    return [tool.result ?? { ok: true }, false];
  }

  triggerOrEnd(trigger) {
    if (this.hasOutput) return trigger;
    // Without an output schema the run simply ends; a cut-off is reported as such.
    this.limitReached = trigger !== "terminal_text";
    return this.complete(null);
  }

  // -- forced completion --------------------------------------------------------------------------

  async forceCompletion(trigger) {
    this.forced = new ForcedState({
      trigger,
      maxAttempts: this.agent.budget,
      enteredAtStep: this.step,
    });
    this.chunks.push(this.forced.chunk("started"));
    if (!this.forced.attemptsLeft) return this.exhausted(this.forced);
    while (this.status === "running") await this.forcedAttempt(this.forced);
  }

  async forcedAttempt(forced) {
    const attempt = forced.attemptsUsed + 1;
    this.chunks.push(forced.chunk("attempt_started", { attempt }));
    const config = this.callConfig("forced_completion");
    this.messages.push({
      role: "user",
      content:
        `[completion] Finish now: call ${FINISH} with the final output that satisfies its schema ` +
        `(attempt ${attempt} of ${forced.maxAttempts}).`,
    });
    const request = {
      ...config,
      system: this.agent.system_prompt, // the base prompt only: no skills, workspace or memory
      messages: withoutReasoning(this.messages, "disabled"),
      tools: [this.agent.finishTool()],
      toolChoice: FINISH,
      reasoning: "disabled",
      stream: this.agent.stream,
    };
    let reply, code;
    try {
      reply = await this.model(request);
      code = forcedReplyCode(reply, FINISH);
    } catch (error) {
      const failure = forcedCallFailure(error);
      if (failure === null) throw error;
      if (failure.code === Codes.TOOL_CHOICE_UNSUPPORTED) {
        // Not a failed attempt: no attempt of this run can ever succeed, so none is spent.
        this.forced = forced.with({ status: "failed", lastFailureCode: failure.code });
        this.chunks.push(this.forced.chunk("attempt_failed", { attempt, code: failure.code }));
        return this.fail(
          failure.code,
          "the provider or model cannot force a named tool call; no attempt was spent",
        );
      }
      if (failure.reply === null) return this.attemptFailed(forced, attempt, failure.code);
      ({ reply, code } = failure); // the model answered, but broke the tool choice
    }
    this.chunks.push(
      { kind: "step_start", step: this.step, phase: "forced" },
      ...replyChunks(this.step, reply),
    );
    if (reply.text.trim()) this.answers.push(reply.text);
    const problems = code === Codes.INVALID_OUTPUT ? this.problemsOf(reply) : [];
    this.messages.push(...answered(reply, problems, code === null));
    if (code !== null) return this.attemptFailed(forced, attempt, code);
    this.forced = forced.with({ attemptsUsed: attempt, status: "succeeded" });
    this.chunks.push(this.forced.chunk("succeeded", { attempt }));
    return this.complete(reply.toolCalls[0].input);
  }

  problemsOf(reply) {
    if (reply.stopReason === "limit_reached") return ["the reply was cut off by the token limit"];
    return inputProblems(reply.toolCalls[0].error);
  }

  /** The one place attempts are counted: the budget is spent when none is left. */
  attemptFailed(forced, attempt, code) {
    this.forced = forced.with({ attemptsUsed: forced.attemptsUsed + 1, lastFailureCode: code });
    const spent = !this.forced.attemptsLeft;
    if (spent) this.forced = this.forced.with({ status: "exhausted" });
    this.chunks.push(this.forced.chunk("attempt_failed", { attempt, code }));
    if (spent) this.exhausted(this.forced);
  }

  exhausted(forced) {
    this.forced = forced.with({ status: "exhausted" });
    this.chunks.push(this.forced.chunk("exhausted", { code: Codes.EXHAUSTED }));
    const cause = forced.lastFailureCode ? `; last cause: ${forced.lastFailureCode}` : "";
    const { attemptsUsed, maxAttempts } = forced;
    this.fail(
      Codes.EXHAUSTED,
      `forced completion exhausted after ${attemptsUsed} of ${maxAttempts} attempt(s)${cause}`,
    );
  }

  // -- shared -------------------------------------------------------------------------------------

  callConfig(phase) {
    const config = {
      model: this.agent.model,
      maxTokens: this.agent.max_tokens,
      temperature: this.agent.temperature,
    };
    if (!this.configOverride) return config;
    this.overrideCalls.push(phase);
    return { ...config, ...this.configOverride({ ...config }, phase, this.forced?.record() ?? null) };
  }

  complete(output) {
    this.status = "completed";
    this.output = output;
    return null;
  }

  fail(code, message) {
    this.status = "failed";
    this.error = { code, message };
  }
}

// -- the records a finished run is reported in ----------------------------------------------------

/** The agent-outcome record: every answer, the last one, and the canonical stop reason. */
export function outcomeRecord(run, sessionId) {
  let stopReason = "end_turn";
  if (run.status === "failed") stopReason = "error";
  else if (run.limitReached && !run.hasOutput) stopReason = "limit_reached";
  return {
    text: run.answers.join("\n"),
    final_message: run.answers.at(-1) ?? "",
    stop_reason: stopReason,
    session_id: sessionId,
  };
}

/** The `xema/agent@v1` outputs: a valid output is promoted to a `json_payload` artifact. */
export function envelope(run, { runId, sessionId, started }) {
  const output = run.output;
  const succeeded =
    run.status === "completed" &&
    output !== null &&
    typeof output === "object" &&
    !Array.isArray(output);
  let outcome = "empty-response";
  if (succeeded) outcome = "succeeded";
  else if (run.answers.some((answer) => answer.trim())) outcome = "partial";
  const hash = "sha256:" + createHash("sha256").update(canonicalJson(output)).digest("hex");
  return {
    allocationId: `alloc-${runId}`,
    outcome,
    structuredOutput: succeeded
      ? {
          artifactId: `artifact-${runId}`,
          versionId: `artifact-${runId}-v1`,
          version: 1,
          hash,
          type: "json_payload",
        }
      : null,
    agentResult: succeeded ? output : null,
    response: null,
    durationMs: Math.round(performance.now() - started),
    sessionId,
    workspaceId: run.agent.workspace ? `ws-${runId}` : null,
    workerName: null,
    workerUrl: null,
    workerProxyUrl: null,
    allocationStatus: null,
  };
}

// -- small helpers --------------------------------------------------------------------------------

/** Compact JSON with every object's keys sorted: equal values give equal text. */
function canonicalJson(value) {
  return JSON.stringify(value, (_key, item) =>
    item && typeof item === "object" && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
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
  const results = reply.toolCalls.map((call) => {
    let result = { acknowledged: false, errors: problems.length ? problems : ["rejected"] };
    if (call.name !== FINISH) result = { error: `only ${FINISH} is available now` };
    else if (succeeded) result = { acknowledged: true };
    return toolResult(call, result, !(succeeded && call.name === FINISH));
  });
  return [assistantMessage(reply), { role: "tool", content: results }];
}

/** The history as a call sends it: reasoning goes back only while reasoning is on (Messages
 * refuses thinking blocks otherwise; Chat Completions has none). */
function withoutReasoning(messages, reasoning) {
  if (reasoning != null && reasoning !== "disabled") return [...messages];
  return messages.map((message) =>
    message.role === "assistant" && Array.isArray(message.content)
      ? { ...message, content: message.content.filter((part) => part.type !== "reasoning") }
      : message,
  );
}

function textMessage(text) {
  return text ? [{ role: "assistant", content: [{ type: "text", text }] }] : [];
}

function assistantMessage(reply) {
  return {
    role: "assistant",
    content: [
      ...reply.reasoning,
      ...(reply.text ? [{ type: "text", text: reply.text }] : []),
      ...reply.toolCalls.map((call) => ({
        type: "tool-call",
        toolCallId: call.id,
        toolName: call.name,
        // the parsed input, which the SDK sends as its own JSON.stringify (the harness compares
        // arguments by value); input that is no JSON object goes back as `{}`, as the SDK does
        input: isObject(call.input) ? call.input : {},
      })),
    ],
  };
}

function toolResult(call, result, isError) {
  return {
    type: "tool-result",
    toolCallId: call.id,
    toolName: call.name,
    output: { type: isError ? "error-text" : "text", value: JSON.stringify(result) },
  };
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
