// ValkyrAI's Agent Decision module (ExecModule v2.0): the model boundary of a durable
// decide-act-observe loop.
//
// One execution:
//
// 1. clears the output map, so a failed run leaves neither a decision nor an approval flag;
// 2. resolves one ACL-visible model (`llmDetailsId`, else the `modelSelection` policy);
// 3. projects the bounded control state and the server-authorized tool catalog;
// 4. calls the model once, through the gateway it is given (no retry: a repeated call can cost
//    credits and decide differently);
// 5. turns the reply into one typed AgentDecision, or refuses it;
// 6. emits the decision, safe usage values, the exact catalog sent, optional content-free
//    retrieval lineage, and `agentApprovalGranted: false`.
//
// It never runs a tool, never grants an approval and never treats free-form text as authority.
// Every failure is one of four typed exceptions, each with a stable code; no message quotes the
// workflow state, a credential or the rejected reply.

// -- limits and fixed texts -----------------------------------------------------------------------

export const MAX_DEPTH = 8; // nested levels of a projected value
export const MAX_ITEMS = 64; // items kept per array or object
export const MAX_TEXT_UNITS = 16_000; // per text value, in UTF-16 code units (Java characters)
export const MAX_STATE_CHARACTERS = 600_000; // the whole serialised control state
export const MAX_DESCRIPTION_UNITS = 1_024; // per tool description
export const MAX_CORRECTION_UNITS = 1_000; // the protocol correction handed to the next attempt
export const MAX_RETRIEVAL_EVIDENCE = 4;
export const DECISION_MAX_TOKENS = 4_096;
export const PROTOCOL_VERSION = "agent-decision/2.0";
export const ASK_USER_TOOL = "agent.ask_user";
export const WAIT_APPROVAL_TOOL = "agent.wait_approval";
const OMITTED = "$omitted";

export const CONFIGURATION_DEFAULTS = Object.freeze({
  llmDetailsId: null,
  modelSelection: "session-default-valor",
  taskField: "agentTask",
  sessionField: "sessionId",
});
export const SELECTION_POLICIES = [
  "session-default-valor",
  "first-visible",
  "name:<visible model name>",
];

export const DECISION_PROTOCOL_PROMPT =
  "You decide the next step of a durable agent workflow. The user message is the control " +
  "state as JSON. Reply with exactly one of: calls to tools from the catalog (arguments are " +
  "JSON objects); a final answer as plain text when the task is complete; a call to " +
  `${ASK_USER_TOOL} with a question when you need the user; or a call to ` +
  `${WAIT_APPROVAL_TOOL} with a reason before a consequential action that needs approval. ` +
  "Never claim an action happened unless an observation shows it.";

// -- the four failures ----------------------------------------------------------------------------

/** Invalid input, configuration or model selection: not retryable until corrected. */
export class IllegalArgumentException extends Error {
  name = "IllegalArgumentException";
  code = "illegal_argument";
  retryable = false;
}

/** Contextual tool filtering was requested and the server policy cannot give it. */
export class SecurityException extends Error {
  name = "SecurityException";
  code = "security_policy_unavailable";
  retryable = false;
}

/** The gateway failed or answered a non-success status: the durable loop may try again. */
export class AgentDecisionCallException extends Error {
  name = "AgentDecisionCallException";
  code = "agent_decision_call_failed";
  retryable = true;

  constructor(message, { status = null, errorType = null, provider = null } = {}) {
    super(message);
    this.status = status;
    this.errorType = errorType;
    this.provider = provider;
  }
}

/** The reply is not a typed decision. It is never executed; `correction` is what the loop passes
 * back as `agentPreviousFailure` on its next bounded attempt. */
export class AgentDecisionProtocolException extends Error {
  name = "AgentDecisionProtocolException";
  code = "agent_decision_protocol_invalid";
  retryable = true;

  constructor(message, correction) {
    super(message);
    this.correction = correction;
  }
}

/** Whether `error` is one of the module's own typed failures (anything else is a bug). */
export function isDecisionFailure(error) {
  return (
    error instanceof IllegalArgumentException ||
    error instanceof SecurityException ||
    error instanceof AgentDecisionCallException ||
    error instanceof AgentDecisionProtocolException
  );
}

// -- models under ACL -----------------------------------------------------------------------------

/** The authenticated session: a principal, its groups and its default model (if any). */
export class AuthenticatedSession {
  constructor({
    principal = "alice",
    groups = [],
    default_llm_details_id: defaultModel = null,
  } = {}) {
    this.principal = principal;
    this.groups = [...groups];
    this.defaultLlmDetailsId =
      defaultModel == null ? null : modelUuid(defaultModel, "session default_llm_details_id");
  }

  identities() {
    return new Set([this.principal, ...this.groups, "*"]);
  }
}

/** Model discovery under ACL: it never returns a record the session cannot see. Each record is
 * `{ id, name, provider, model, visible_to }`; `"*"` in `visible_to` means every session. */
export class LlmDetailsService {
  constructor(records) {
    this.records = records.map((record) => ({
      ...record,
      id: modelUuid(record.id, "model id"),
      visible_to: record.visible_to ?? ["*"],
    }));
  }

  /** The records `session` may see, in configuration order. */
  visible(session) {
    const identities = session.identities();
    return this.records.filter((record) => record.visible_to.some((who) => identities.has(who)));
  }

  /** The record with `id` if `session` may see it; null for unknown and invisible alike. */
  findVisible(session, id) {
    return this.visible(session).find((record) => record.id === id) ?? null;
  }
}

/**
 * The canonical spelling of a model UUID, read as the harness's own module reads one (any case,
 * hyphens or none, `{...}` or `urn:uuid:` around it), or an `IllegalArgumentException` naming
 * `field` and the type found, never the value.
 */
export function modelUuid(value, field) {
  if (value == null) return null;
  const hex =
    typeof value === "string"
      ? value
          .replaceAll("urn:", "")
          .replaceAll("uuid:", "")
          .replace(/^[{}]+|[{}]+$/g, "")
          .replaceAll("-", "")
      : "";
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) {
    throw new IllegalArgumentException(
      `${field} must be a model UUID but got a value of type ${typeName(value)} that is not one`,
    );
  }
  const d = hex.toLowerCase();
  return `${d.slice(0, 8)}-${d.slice(8, 12)}-${d.slice(12, 16)}-${d.slice(16, 20)}-${d.slice(20)}`;
}

// -- bounded projection ---------------------------------------------------------------------------

/** `text` cut to at most `limit` UTF-16 code units, never splitting a surrogate pair. A
 * JavaScript string's `length` counts exactly these units, as Java's `String.length()` does. */
export function truncateUtf16(text, limit = MAX_TEXT_UNITS) {
  if (text.length <= limit) return text;
  const last = text.charCodeAt(limit - 1);
  const next = text.charCodeAt(limit);
  const splitsPair = last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
  return text.slice(0, splitsPair ? limit - 1 : limit);
}

/**
 * The bounded projection of `value`, the workflow-state field `field`: at most 8 nested levels,
 * 64 items per collection and 16,000 units per text. Cycles, excess depth and the items past the
 * 64th become content-free markers (`{"$omitted": "cycle" | "depth" | "items", "count": n}`; an
 * object's own marker is its `"$omitted": "items", "$omittedCount": n` keys). A value JSON cannot
 * carry (a non-finite number, `undefined`, a function, a Map...) is an `IllegalArgumentException`
 * naming `field` and what it contains, never the content.
 */
export function project(value, field) {
  return projectValue(value, field, 1, new Set());
}

function projectValue(value, field, depth, ancestors) {
  if (value === null || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw unserialisable(field, "a non-finite number");
    return value;
  }
  if (typeof value === "string") return truncateUtf16(value);
  const isArray = Array.isArray(value);
  if (!isArray && !isPlainObject(value))
    throw unserialisable(field, `a value of type ${typeName(value)}`);
  if (ancestors.has(value)) return omission("cycle");
  if (depth > MAX_DEPTH) return omission("depth");
  ancestors.add(value);
  try {
    if (isArray) {
      const projected = value
        .slice(0, MAX_ITEMS)
        .map((item) => projectValue(item, field, depth + 1, ancestors));
      if (value.length > MAX_ITEMS) projected.push(omission("items", value.length - MAX_ITEMS));
      return projected;
    }
    const projected = {};
    const entries = Object.entries(value);
    for (const [position, [key, item]] of entries.entries()) {
      if (position === MAX_ITEMS) {
        setOwn(projected, OMITTED, "items");
        setOwn(projected, "$omittedCount", entries.length - MAX_ITEMS);
        break;
      }
      setOwn(projected, truncateUtf16(key), projectValue(item, field, depth + 1, ancestors));
    }
    return projected;
  } finally {
    ancestors.delete(value);
  }
}

function omission(reason, count) {
  return count === undefined ? { [OMITTED]: reason } : { [OMITTED]: reason, count };
}

function unserialisable(field, what) {
  return new IllegalArgumentException(
    `workflow state field ${field} is not serialisable: it contains ${what}; supply JSON-safe ` +
      "values (objects with string keys, arrays, strings, finite numbers, booleans, null)",
  );
}

const units = (count) => count.toLocaleString("en-US"); // 600,000

/** The compact JSON of the control state, or an `IllegalArgumentException` above the cap. */
export function checkStateSize(envelope) {
  const text = JSON.stringify(envelope);
  if (text.length > MAX_STATE_CHARACTERS) {
    throw new IllegalArgumentException(
      `the serialised decision state has ${units(text.length)} characters, above the ` +
        `${units(MAX_STATE_CHARACTERS)}-character cap; reduce agentProjectContext, ` +
        "agentObservation or agentTask",
    );
  }
  return text;
}

// -- the tool catalog -----------------------------------------------------------------------------

const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/;

/** The provider spelling of a catalog name: provider tool names cannot hold dots. */
export function wireToolName(name) {
  return name.replace(/[^A-Za-z0-9_-]/g, "_");
}

/** An ordered set of server-authorized tools, unique by name and by provider (wire) name. */
export class ToolCatalog {
  constructor(tools) {
    const seen = new Map();
    for (const tool of tools) {
      const wire = wireToolName(tool.name);
      if (seen.has(wire)) {
        throw new CatalogClash(
          `tools '${seen.get(wire)}' and '${tool.name}' have the same provider name ` +
            `'${wire}'; rename one`,
        );
      }
      seen.set(wire, tool.name);
    }
    this.tools = Object.freeze([...tools]);
    Object.freeze(this);
  }

  /** Parse the `agentToolCatalog` input, `{"tools": [{name, description, parameters}]}`. */
  static fromInput(value) {
    if (!isPlainObject(value)) {
      throw new IllegalArgumentException(
        "agentToolCatalog must be an object with a 'tools' array but got a value of type " +
          typeName(value),
      );
    }
    const invalid = (where, problem) =>
      new IllegalArgumentException(`agentToolCatalog is invalid at ${where}: ${problem}`);
    const extra = Object.keys(value).find((key) => key !== "tools");
    if (extra !== undefined) throw invalid(extra, "extra inputs are not permitted");
    const tools = Object.hasOwn(value, "tools") ? value.tools : [];
    if (!Array.isArray(tools)) throw invalid("tools", "it must be an array");
    const parsed = tools.map((tool, index) => {
      const where = `tools.${index}`;
      if (!isPlainObject(tool)) throw invalid(where, "each tool must be an object");
      const unknown = Object.keys(tool).find(
        (key) => !["name", "description", "parameters"].includes(key),
      );
      if (unknown !== undefined)
        throw invalid(`${where}.${unknown}`, "extra inputs are not permitted");
      if (typeof tool.name !== "string" || !TOOL_NAME.test(tool.name)) {
        throw invalid(`${where}.name`, `it must be a string matching ${TOOL_NAME.source}`);
      }
      const description = Object.hasOwn(tool, "description") ? tool.description : "";
      if (typeof description !== "string")
        throw invalid(`${where}.description`, "it must be a string");
      const parameters = Object.hasOwn(tool, "parameters") ? tool.parameters : { type: "object" };
      if (!isPlainObject(parameters)) throw invalid(`${where}.parameters`, "it must be an object");
      return {
        name: tool.name,
        description: truncateUtf16(description, MAX_DESCRIPTION_UNITS),
        parameters,
      };
    });
    try {
      return new ToolCatalog(parsed);
    } catch (error) {
      if (error instanceof CatalogClash) throw invalid("(root)", error.message);
      throw error;
    }
  }

  names() {
    return this.tools.map((tool) => tool.name);
  }

  /** This catalog plus `tools`, except those whose name it already has. */
  withTools(...tools) {
    const present = new Set(this.names());
    try {
      return new ToolCatalog([...this.tools, ...tools.filter((tool) => !present.has(tool.name))]);
    } catch (error) {
      if (error instanceof CatalogClash)
        throw new IllegalArgumentException(`agentToolCatalog is invalid: ${error.message}`);
      throw error;
    }
  }

  byWireName() {
    return new Map(this.tools.map((tool) => [wireToolName(tool.name), tool]));
  }

  /** The tools as the gateway sends them: provider-safe names. */
  toDefinitions() {
    return this.tools.map(({ name, description, parameters }) => ({
      name: wireToolName(name),
      description,
      parameters,
    }));
  }

  /** The `agentToolCatalog` output: exactly what was offered, by catalog name (a copy, so a
   * downstream step that edits it cannot change the catalog). */
  toOutput() {
    return structuredClone({
      tools: this.tools.map(({ name, description, parameters }) => ({
        name,
        description,
        parameters,
      })),
    });
  }
}

class CatalogClash extends Error {}

const objectOf = (properties, required) => ({ type: "object", properties, required });

/** The two control tools, always offered: a lone call to one is ASK_USER or WAIT_APPROVAL. */
export const CONTROL_TOOLS = Object.freeze([
  {
    name: ASK_USER_TOOL,
    description: "Ask the user one question when the task cannot continue without an answer.",
    parameters: objectOf({ question: { type: "string" } }, ["question"]),
  },
  {
    name: WAIT_APPROVAL_TOOL,
    description: "Stop and wait for a human approval before a consequential action.",
    parameters: objectOf({ reason: { type: "string" } }, ["reason"]),
  },
]);

/** The governed catalog used when the workflow supplies none. */
export const BUILT_IN_CATALOG = new ToolCatalog([
  {
    name: "workflow.execution.inspect",
    description: "Read the status, steps and outputs of one workflow execution.",
    parameters: objectOf({ executionId: { type: "string" } }, ["executionId"]),
  },
  {
    name: "workflow.execution.list",
    description: "List recent executions of a workflow.",
    parameters: objectOf({ workflowId: { type: "string" }, limit: { type: "integer" } }, [
      "workflowId",
    ]),
  },
  {
    name: "artifact.read",
    description: "Read one artifact version by reference.",
    parameters: objectOf({ artifactRef: { type: "string" } }, ["artifactRef"]),
  },
  {
    name: "deployment.status",
    description: "Read the health of a deployment and its production route.",
    parameters: objectOf({ deploymentId: { type: "string" } }, ["deploymentId"]),
  },
]);

/** What a server tool-visibility policy throws when it cannot decide right now. The module never
 * lets it through: it fails closed with `SecurityException`, with no unfiltered fallback. */
export class PolicyUnavailableError extends Error {
  name = "PolicyUnavailableError";
}

// -- the module -----------------------------------------------------------------------------------

/**
 * Ask one ACL-visible model for the next provider-neutral decision.
 *
 * `completerFor(record)` returns the gateway for a selected model record, an object whose
 * `complete(request)` resolves to a reply (`{ text, toolCalls: [{ id, name, arguments }], stop,
 * usage: { totalTokens }, credits, retrieval }`, `stop` one of `end_turn`, `tool_use`,
 * `limit_reached`, `other`) or throws `AgentDecisionCallException`. Provider hosts and keys are
 * server configuration, never workflow input. `toolPolicy` is the server-owned
 * `{ filter(catalog, { task, session }) }` used when `securityContextualToolVisibility` is true.
 */
export class AgentDecisionModule {
  static moduleName = "AgentDecisionModule";
  static version = "2.0";

  #config;
  #models;
  #session;
  #completerFor;
  #toolPolicy;
  #builtInCatalog;
  #outputs = {};

  constructor(
    config,
    { models, session, completerFor, toolPolicy = null, catalog = BUILT_IN_CATALOG },
  ) {
    this.#config = { ...(config ?? {}) };
    this.#models = models;
    this.#session = session;
    this.#completerFor = completerFor;
    this.#toolPolicy = toolPolicy;
    this.#builtInCatalog = catalog;
    /** The request of the last execution that reached the gateway (null otherwise). */
    this.lastRequest = null;
    /** The correction of the last refused reply (null otherwise). */
    this.protocolCorrection = null;
  }

  /** A copy of the output map of the last execution (empty after a failure). */
  get outputs() {
    return { ...this.#outputs };
  }

  /** Run one decision on the workflow `state`: exactly one gateway call, no retry. */
  async execute(state) {
    this.#outputs = {};
    this.lastRequest = null;
    this.protocolCorrection = null;
    const config = parseConfiguration(this.#config);
    const record = this.#selectModel(state, config);
    const envelope = controlEnvelope(state, config);
    const catalog = this.#catalog(state, envelope.task ?? null);
    const request = {
      model: record.model,
      system: DECISION_PROTOCOL_PROMPT,
      user: checkStateSize(envelope),
      sessionId: sessionId(state, config),
      tools: catalog.toDefinitions(),
      toolChoice: "auto",
      maxTokens: DECISION_MAX_TOKENS,
    };
    this.lastRequest = request;
    const reply = await this.#call(record, request);
    const decision = this.#decision(reply, catalog);
    const outputs = {
      agentDecision: decision,
      agentDecisionOutcome: decision.outcome.toLowerCase(),
      costTokens: Math.max(0, reply.usage?.totalTokens ?? 0),
      costCredits: reply.credits ? Math.max(0, reply.credits) : 0,
      agentToolCatalog: catalog.toOutput(),
      agentApprovalGranted: false, // an approval never outlives the decision it was given for
    };
    const evidence = retrievalEvidence(reply.retrieval);
    if (evidence.length) {
      outputs.agentRetrievalEvidence = evidence;
      outputs.retrievalReceiptRef = evidence[0].receiptId;
    }
    this.#outputs = outputs;
    return this.outputs;
  }

  /** The one gateway call. A failure that is not already typed is still the gateway failing,
   * named by its type only: its message may carry a credential or the request. */
  async #call(record, request) {
    const completer = this.#completerFor(record);
    try {
      return await completer.complete(request);
    } catch (error) {
      if (isDecisionFailure(error)) throw error;
      throw new AgentDecisionCallException(
        `the LLM gateway failed: ${error?.name ?? typeof error}`,
        {
          errorType: "completer_error",
          provider: record.provider,
        },
      );
    }
  }

  #selectModel(state, config) {
    const policy = config.modelSelection;
    const named = policy.startsWith("name:") && policy.length > "name:".length;
    if (policy !== "session-default-valor" && policy !== "first-visible" && !named) {
      // fail closed even when a pinned model makes the fallback policy moot
      throw new IllegalArgumentException(
        `unsupported modelSelection policy; allowed: ${SELECTION_POLICIES.join(", ")}`,
      );
    }
    const pinned = modelUuid(field(state, "llmDetailsId"), "llmDetailsId") ?? config.llmDetailsId;
    if (pinned !== null) {
      const record = this.#models.findVisible(this.#session, pinned);
      // unknown and invisible get the same answer, so discovery leaks nothing
      if (record === null) {
        throw new IllegalArgumentException(
          "llmDetailsId does not name an ACL-visible model; choose a model visible to this session",
        );
      }
      return record;
    }
    if (policy === "session-default-valor") {
      const fallback = this.#session.defaultLlmDetailsId;
      const record = fallback === null ? null : this.#models.findVisible(this.#session, fallback);
      if (record === null) {
        throw new IllegalArgumentException(
          "modelSelection session-default-valor: the session has no ACL-visible default model; " +
            "set llmDetailsId or another modelSelection policy",
        );
      }
      return record;
    }
    const visible = this.#models.visible(this.#session);
    if (policy === "first-visible") {
      if (!visible.length) {
        throw new IllegalArgumentException(
          "modelSelection first-visible: no model is ACL-visible to this session",
        );
      }
      return visible[0];
    }
    const wanted = policy.slice("name:".length);
    const record = visible.find((candidate) => candidate.name === wanted);
    if (record === undefined) {
      throw new IllegalArgumentException(
        "modelSelection name:<model>: no ACL-visible model has that name",
      );
    }
    return record;
  }

  #catalog(state, task) {
    const supplied = field(state, "agentToolCatalog");
    let catalog = supplied == null ? this.#builtInCatalog : ToolCatalog.fromInput(supplied);
    if (optional(state, "securityContextualToolVisibility", isBoolean, "a boolean")) {
      if (this.#toolPolicy === null) {
        throw new SecurityException(
          "contextual tool visibility was requested but no server tool-visibility policy is " +
            "configured; restore the shared policy (no unfiltered fallback)",
        );
      }
      let filtered;
      try {
        filtered = this.#toolPolicy.filter(catalog, { task, session: this.#session });
      } catch {
        // PolicyUnavailableError, or the policy itself failing: fail closed
        throw new SecurityException(
          "contextual tool visibility was requested but the server tool-visibility policy is " +
            "unavailable; restore it (no unfiltered fallback)",
        );
      }
      if (!(filtered instanceof ToolCatalog)) {
        throw new SecurityException(
          "contextual tool visibility was requested but the server tool-visibility policy " +
            `returned ${typeName(filtered)}, not a ToolCatalog; restore it (no unfiltered ` +
            "fallback)",
        );
      }
      catalog = filtered;
    }
    return catalog.withTools(...CONTROL_TOOLS);
  }

  // -- the reply ----------------------------------------------------------------------------------

  #decision(reply, catalog) {
    if (reply.stop === "limit_reached") {
      // incomplete even when its tool calls parse: a later call may be missing
      throw this.#protocol("the reply was cut off by the token limit");
    }
    if (reply.toolCalls.length) return this.#toolDecision(reply.toolCalls, catalog);
    if (reply.stop === "end_turn" && !isBlank(reply.text))
      return { outcome: "FINAL_ANSWER", text: reply.text };
    if (isBlank(reply.text)) throw this.#protocol("the reply had neither tool calls nor text");
    throw this.#protocol(`the reply ended with stop reason '${reply.stop}'`);
  }

  #toolDecision(replyCalls, catalog) {
    const byWireName = catalog.byWireName();
    const calls = replyCalls.map((call) => {
      const tool = byWireName.get(call.name);
      if (tool === undefined)
        throw this.#protocol("it called a tool that is not in the catalog it was given");
      const args = parseJson(call.arguments || "{}");
      if (args === INVALID)
        throw this.#protocol(`the arguments of ${tool.name} are not valid JSON`);
      if (!isPlainObject(args))
        throw this.#protocol(`the arguments of ${tool.name} are not a JSON object`);
      return call.id
        ? { id: call.id, name: tool.name, arguments: args }
        : { name: tool.name, arguments: args };
    });
    const control = calls.filter(
      (call) => call.name === ASK_USER_TOOL || call.name === WAIT_APPROVAL_TOOL,
    );
    if (!control.length) return { outcome: "TOOL_CALLS", toolCalls: calls };
    if (calls.length > 1)
      throw this.#protocol(`${control[0].name} must be the only call of its reply`);
    const [call] = control;
    const [outcome, key] =
      call.name === ASK_USER_TOOL ? ["ASK_USER", "question"] : ["WAIT_APPROVAL", "reason"];
    const text = field(call.arguments, key);
    if (typeof text !== "string" || isBlank(text)) {
      throw this.#protocol(`${call.name} needs a non-empty string '${key}'`);
    }
    return { outcome, text };
  }

  #protocol(reason) {
    const correction = truncateUtf16(
      `Your previous reply was not a valid decision: ${reason}. Reply with calls to tools from ` +
        `the catalog, a final answer as text, or a call to ${ASK_USER_TOOL} or ` +
        `${WAIT_APPROVAL_TOOL}.`,
      MAX_CORRECTION_UNITS,
    );
    this.protocolCorrection = correction;
    return new AgentDecisionProtocolException(
      `provider output failed typed AgentDecision parsing: ${reason}; the reply was not executed`,
      correction,
    );
  }
}

// -- configuration and workflow state -------------------------------------------------------------

function parseConfiguration(config) {
  const values = { ...CONFIGURATION_DEFAULTS };
  for (const [name, value] of Object.entries(config)) {
    if (!Object.hasOwn(CONFIGURATION_DEFAULTS, name)) {
      throw new IllegalArgumentException(
        `unknown configuration field '${name}'; allowed: ` +
          Object.keys(CONFIGURATION_DEFAULTS).join(", "),
      );
    }
    values[name] = value;
  }
  for (const name of ["modelSelection", "taskField", "sessionField"]) {
    if (typeof values[name] !== "string" || values[name] === "") {
      throw new IllegalArgumentException(
        `configuration field ${name} must be a non-empty string but got a value of type ` +
          typeName(values[name]),
      );
    }
  }
  return { ...values, llmDetailsId: modelUuid(values.llmDetailsId, "configuration llmDetailsId") };
}

/** The control envelope the model reads: every input of the contract, bounded, in this order
 * (its compact JSON is the request's user message, so the order is part of the request). */
function controlEnvelope(state, config) {
  const envelope = { protocol: PROTOCOL_VERSION, step: nonNegativeInt(state, "agentStep") };
  const task = field(state, config.taskField);
  if (task != null) envelope.task = project(task, config.taskField);
  const userMessage = optional(state, "agentUserMessage", isString, "a string");
  if (userMessage !== null) envelope.userMessage = truncateUtf16(userMessage);
  const context = optional(state, "agentProjectContext", isPlainObject, "an object");
  if (context !== null) envelope.projectContext = project(context, "agentProjectContext");
  const observation = field(state, "agentObservation");
  if (observation != null) envelope.observation = project(observation, "agentObservation");
  const artifacts = optional(state, "agentArtifactRefs", Array.isArray, "an array");
  if (artifacts !== null) envelope.artifactRefs = project(artifacts, "agentArtifactRefs");
  const granted = optional(state, "agentApprovalGranted", isBoolean, "a boolean") ?? false;
  const approvalRequest = optional(state, "agentApprovalRequest", isPlainObject, "an object");
  if (granted && approvalRequest === null) {
    throw new IllegalArgumentException(
      "agentApprovalGranted is true but no agentApprovalRequest is supplied; an approval " +
        "authorizes only the exact request it was given for",
    );
  }
  if (approvalRequest !== null) {
    envelope.approval = { request: project(approvalRequest, "agentApprovalRequest"), granted };
  }
  const failure = optional(state, "agentPreviousFailure", isString, "a string");
  if (failure !== null) envelope.previousFailure = truncateUtf16(failure, MAX_CORRECTION_UNITS * 2);
  envelope.failureAttempts = nonNegativeInt(state, "agentFailureAttempts");
  return envelope;
}

/** The session identifier the gateway is given (the `sessionField` of the state), if any. */
function sessionId(state, config) {
  const value = field(state, config.sessionField);
  if (value == null) return null;
  if (typeof value !== "string") {
    throw new IllegalArgumentException(
      `${config.sessionField} must be a string session identifier but got a value of type ` +
        typeName(value),
    );
  }
  return value;
}

/** `state[name]` when `state` has it as its own field: a field named `constructor` or
 * `__proto__` is workflow data like any other, never something inherited. */
function field(state, name) {
  return isPlainObject(state) && Object.hasOwn(state, name) ? state[name] : undefined;
}

function optional(state, name, accepts, expected) {
  const value = field(state, name);
  if (value == null) return null;
  if (!accepts(value)) {
    throw new IllegalArgumentException(
      `${name} must be ${expected} but got a value of type ${typeName(value)}`,
    );
  }
  return value;
}

function nonNegativeInt(state, name) {
  const value = field(state, name);
  if (value == null) return 0;
  if (!Number.isInteger(value) || value < 0) {
    throw new IllegalArgumentException(
      `${name} must be a non-negative integer but got a value of type ${typeName(value)}`,
    );
  }
  return value;
}

// -- retrieval lineage ----------------------------------------------------------------------------

const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const DECISION_WORD = /^[a-z][a-z_-]{0,31}$/;

/**
 * Up to four content-free receipt projections of the gateway's `retrieval` metadata
 * (`{"receipts": [{receiptId, policyId, decision, ...}]}`), or none when any receipt is invalid.
 * Only the three identifiers are copied: never retrieved content, never tenant identifiers.
 */
export function retrievalEvidence(metadata) {
  const receipts = field(metadata, "receipts");
  if (!Array.isArray(receipts) || !receipts.length) return [];
  const projections = [];
  for (const receipt of receipts) {
    const [receiptId, policyId, decision] = ["receiptId", "policyId", "decision"].map((key) =>
      field(receipt, key),
    );
    const valid =
      typeof receiptId === "string" &&
      IDENTIFIER.test(receiptId) &&
      typeof policyId === "string" &&
      IDENTIFIER.test(policyId) &&
      typeof decision === "string" &&
      DECISION_WORD.test(decision);
    if (!valid) return [];
    projections.push({ receiptId, policyId, decision });
  }
  return projections.slice(0, MAX_RETRIEVAL_EVIDENCE);
}

// -- small helpers --------------------------------------------------------------------------------

/** Blank as the reference module reads it (Python's `str.strip()`): empty, or only the white
 * space Python strips. JavaScript's `trim()` differs (it strips U+FEFF and keeps U+001C..U+001F
 * and U+0085), so it is not used. */
export function isBlank(text) {
  return /^[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/.test(
    text,
  );
}

const INVALID = Symbol("invalid JSON");

/** `text` read as JSON as RFC 8259 defines it, or INVALID: `JSON.parse` reads a number too large
 * for a double as Infinity, which JSON cannot write back. */
function parseJson(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return INVALID;
  }
  return allFinite(value) ? value : INVALID;
}

function allFinite(value) {
  if (typeof value === "number") return Number.isFinite(value);
  if (value !== null && typeof value === "object") return Object.values(value).every(allFinite);
  return true;
}

function isPlainObject(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

const isString = (value) => typeof value === "string";
const isBoolean = (value) => typeof value === "boolean";

/** A value's JSON type, for messages that name the type found and never the value. */
function typeName(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "object")
    return isPlainObject(value) ? "object" : (value.constructor?.name ?? "object");
  return typeof value;
}

/** `object[key] = value` that also works for the key `__proto__`. */
function setOwn(object, key, value) {
  Object.defineProperty(object, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}
