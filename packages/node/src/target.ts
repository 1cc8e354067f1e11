/**
 * A harness target in a few lines: `runTarget` speaks the target protocol (version 1) on stdin
 * and stdout and calls your handler for each cell.
 *
 *     harness run scenarios/completion --target-cmd "node dist/target.js"
 */

import { Console } from "node:console";
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { HarnessError, invalidArgument } from "./errors.js";
import type * as Protocol from "./generated/target-protocol.js";
import type { JsonValue, ModuleError } from "./generated/target-protocol.js";

/** A scenario kind a target can run: each has its handler. */
export type TargetKind = Protocol.TargetHello["kinds"][number];
/** What a cell may need beyond a plain run; declare only what your runtime really does. */
export type TargetFeature = NonNullable<Protocol.TargetHello["features"]>[number];

const KINDS = ["agent", "decision", "completion"] as const satisfies readonly TargetKind[];
const FEATURES = [
  "faults",
  "llm_config_override",
  "memory",
  "streaming",
  "approval",
  "cancel",
] as const satisfies readonly TargetFeature[];
// `satisfies` refuses a name the protocol lacks; these refuse a protocol name the lists lack.
const everyKind: [Exclude<TargetKind, (typeof KINDS)[number]>] extends [never] ? true : never = true;
const everyFeature: [Exclude<TargetFeature, (typeof FEATURES)[number]>] extends [never] ? true : never = true;
void everyKind;
void everyFeature;

/**
 * An agent cell, as the harness sends it: every field present. Call the model with your usual
 * SDK at `base_urls[provider]` (a `harness serve` session replaying the cell's script or
 * cassette), with any API key and retries off.
 */
export interface AgentCell extends Required<Protocol.AgentCell> {}

/** One execution of a module cell: the state it reads. */
export interface CellExecution {
  input: { [key: string]: JsonValue };
}

interface ModuleCellFields extends Omit<Required<Protocol.ModuleCell>, "kind" | "executions"> {
  /** Every execution, in order: run them through one module instance built with `config`. */
  executions: CellExecution[];
}

/** A completion-module cell, as the harness sends it: every field present. */
export interface CompletionCell extends ModuleCellFields {
  kind: "completion";
}

/**
 * A decision-module cell, as the harness sends it: every field present, with the model catalog
 * (`models`), the `session`, the `tool_policy` and the models' `base_urls`.
 */
export interface DecisionCell extends ModuleCellFields {
  kind: "decision";
}

/**
 * What one execution of a module gave: its outputs, and its typed error (`null` when it
 * succeeded). A failed execution still reports the outputs it left (usually none).
 */
export interface ModuleExecution {
  outputs: { [key: string]: JsonValue };
  error: ModuleError | null;
}

/**
 * An agent run's end: the protocol's `result` without `type` and `id`, which `runTarget` adds
 * (the id is always the cell's). Chunks, the outcome record and the envelope are checked
 * strictly by the harness, with the same wire records the reference produces.
 */
export interface AgentResult extends Omit<Protocol.AgentResult, "type" | "id"> {}

/** A handler may answer at once or later. */
export type Awaitable<T> = T | PromiseLike<T>;

export interface TargetOptions {
  /** The target's name in the harness's reports. */
  name: string;
  /** Runtime profiles the agent cells may ask for (`js`, ...); a cell for another is skipped. */
  runtimes?: readonly string[];
  /** Features your runtime has; a cell needing another is skipped, and counted. */
  features?: readonly TargetFeature[];
  /** The providers whose APIs your agent calls (`openai`, `anthropic`, `gemini`); an agent cell on another is skipped. Unset: every provider. */
  providers?: readonly string[];
  /** Runs one agent cell to its end. Declares the `agent` kind. */
  agent?: (cell: AgentCell) => Awaitable<AgentResult>;
  /** Runs a completion cell's executions in order, one entry each. Declares `completion`. */
  completion?: (cell: CompletionCell) => Awaitable<ModuleExecution[]>;
  /** Runs a decision cell's executions in order, one entry each. Declares `decision`. */
  decision?: (cell: DecisionCell) => Awaitable<ModuleExecution[]>;
}

type Answer = Protocol.TargetHello | Protocol.AgentResult | Protocol.ModuleResult | Protocol.TargetError;

/**
 * Speak the target protocol on this process's stdin and stdout until `shutdown` or the end of
 * stdin, then resolve.
 *
 * `hello` is answered with `name`, `runtimes`, `features`, `providers` (when given) and the
 * kinds of the handlers given.
 * Messages are handled one at a time, in order; each cell's answer carries the cell's id. A
 * handler that throws (or rejects) fails that cell only: the harness gets
 * `{"type": "error", "id", "message": "<name>: <message>"}`, the stack goes to stderr, and the
 * next cell runs. stdout carries the protocol only: while `runTarget` runs, `console.log` and
 * the other console methods write to stderr (restored when it returns); write nothing else to
 * `process.stdout`.
 *
 * Rejects at once, with a `HarnessError` (`invalid_argument`), when the options are not a
 * target: no handler, an empty name, a feature the protocol does not have.
 */
export async function runTarget(options: TargetOptions): Promise<void> {
  const hello = helloFor(options);
  const restoreConsole = consoleToStderr();
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (line.trim() === "") continue;
      const answer = await answerTo(line, hello, options);
      if (answer === "shutdown") break;
      await writeLine(serialized(answer));
    }
  } finally {
    lines.close(); // stops reading stdin, so a harness that keeps it open does not keep us alive
    restoreConsole();
  }
}

function helloFor(options: TargetOptions): Protocol.TargetHello {
  if (typeof options !== "object" || options === null) {
    throw invalidArgument("an options object", "options", options);
  }
  if (typeof options.name !== "string" || options.name.trim() === "") {
    throw invalidArgument("a non-empty string", "name", options.name);
  }
  for (const kind of KINDS) {
    if (options[kind] !== undefined && typeof options[kind] !== "function") {
      throw invalidArgument(`a function (the ${kind} handler)`, kind, options[kind]);
    }
  }
  const kinds = KINDS.filter((kind) => options[kind] !== undefined);
  if (kinds.length === 0) {
    throw new HarnessError(
      "invalid_argument",
      "expected at least one handler (agent, completion or decision) but got none: runTarget infers the kinds it declares from them",
    );
  }
  const runtimes = options.runtimes ?? [];
  if (!Array.isArray(runtimes) || !runtimes.every((runtime) => typeof runtime === "string" && runtime !== "")) {
    throw invalidArgument("an array of runtime profile names", "runtimes", runtimes);
  }
  const features = options.features ?? [];
  const known: readonly string[] = FEATURES;
  if (!Array.isArray(features) || !features.every((feature) => known.includes(feature))) {
    throw invalidArgument(`an array of features among ${FEATURES.join(", ")}`, "features", features);
  }
  const hello: Protocol.TargetHello = {
    type: "hello",
    protocol: 1,
    name: options.name,
    kinds,
    runtimes: [...runtimes],
    features: [...features],
  };
  if (options.providers !== undefined) {
    const providers = options.providers;
    if (!Array.isArray(providers) || !providers.every((provider) => typeof provider === "string" && provider !== "")) {
      throw invalidArgument("an array of provider names", "providers", providers);
    }
    hello.providers = [...providers];
  }
  return hello;
}

async function answerTo(
  line: string,
  hello: Protocol.TargetHello,
  options: TargetOptions,
): Promise<Answer | "shutdown"> {
  let message: unknown;
  try {
    message = readMessage(line);
  } catch (error) {
    return { type: "error", message: `the target could not read a message: it is not JSON (${describe(error)})` };
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    return { type: "error", message: "the target could not read a message: it is not a JSON object" };
  }
  const fields = message as { type?: unknown; id?: unknown; kind?: unknown };
  const id = typeof fields.id === "string" ? fields.id : null;
  switch (fields.type) {
    case "hello":
      return hello;
    case "shutdown":
      return "shutdown";
    case "cell":
      if (id === null) return { type: "error", message: "the target got a cell without a string id" };
      return runCell(id, message, options);
    default:
      return { type: "error", id, message: `the target does not know messages of type ${JSON.stringify(fields.type)}` };
  }
}

/**
 * One message of the harness. A workflow state may hold a number JSON has no spelling for (a
 * scenario's `.nan`, which a module must refuse): the harness, a Python program, writes it as
 * `NaN`, `Infinity` or `-Infinity`, as Python's `json` does. Those tokens, outside strings, are
 * read as the numbers they name, so a handler sees the value a workflow engine would give it;
 * anything else that is not JSON is still refused.
 */
function readMessage(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch (error) {
    const marker = `\u0000harness-non-finite-${randomUUID()}:`;
    const rewritten = withNonFiniteMarked(line, marker);
    if (rewritten === null) throw error;
    const numbers: Record<string, number> = { NaN, Infinity, "-Infinity": -Infinity };
    try {
      return JSON.parse(rewritten, (_key, value: unknown) =>
        typeof value === "string" && value.startsWith(marker) ? numbers[value.slice(marker.length)] : value,
      );
    } catch {
      throw error; // what is wrong with the line as it came, not with its rewriting
    }
  }
}

const NON_FINITE = ["-Infinity", "Infinity", "NaN"] as const;

/** `line` with each `NaN`, `Infinity` and `-Infinity` outside a string replaced by a string
 * holding `marker` and the token, or null when it has none. */
function withNonFiniteMarked(line: string, marker: string): string | null {
  let rewritten = "";
  let found = false;
  let inString = false;
  for (let index = 0; index < line.length; index++) {
    const character = line.charAt(index);
    if (inString) {
      rewritten += character;
      if (character === "\\") rewritten += line.charAt(++index);
      else if (character === '"') inString = false;
      continue;
    }
    if (character === '"') inString = true;
    const token = NON_FINITE.find((name) => line.startsWith(name, index));
    if (token === undefined) {
      rewritten += character;
      continue;
    }
    rewritten += JSON.stringify(marker + token);
    index += token.length - 1;
    found = true;
  }
  return found ? rewritten : null;
}

async function runCell(id: string, cell: object, options: TargetOptions): Promise<Answer> {
  const kind = (cell as { kind?: unknown }).kind;
  try {
    if (kind === "agent" && options.agent) {
      const result = await options.agent(cell as AgentCell);
      if (typeof result !== "object" || result === null || Array.isArray(result)) {
        return failed(id, `the agent handler answered ${typeOf(result)}; expected an object (AgentResult)`);
      }
      const { type: _type, id: _id, ...fields } = result as AgentResult & { type?: unknown; id?: unknown };
      return { type: "result", id, ...fields };
    }
    if (kind === "completion" && options.completion) {
      return moduleResult(id, "completion", cell, await options.completion(cell as CompletionCell));
    }
    if (kind === "decision" && options.decision) {
      return moduleResult(id, "decision", cell, await options.decision(cell as DecisionCell));
    }
    return failed(id, `this target has no handler for cells of kind ${JSON.stringify(kind)}`);
  } catch (error) {
    process.stderr.write(`cell ${id} failed: ${error instanceof Error && error.stack ? error.stack : describe(error)}\n`);
    return failed(id, describe(error));
  }
}

function moduleResult(id: string, kind: TargetKind, cell: object, executions: unknown): Answer {
  const sent = (cell as { executions?: unknown }).executions;
  const expected = Array.isArray(sent) ? sent.length : 0;
  if (!Array.isArray(executions)) {
    return failed(id, `the ${kind} handler answered ${typeOf(executions)}; expected an array (ModuleExecution[])`);
  }
  if (executions.length !== expected) {
    return failed(
      id,
      `the ${kind} handler answered ${executions.length} execution(s) for a cell of ${expected}; answer one per execution, in order`,
    );
  }
  return { type: "result", id, executions: executions as ModuleExecution[] };
}

/** The answer as one line; a handler's answer that is not JSON fails its cell instead. */
function serialized(answer: Answer): string {
  try {
    return JSON.stringify(answer);
  } catch (error) {
    const id = "id" in answer && typeof answer.id === "string" ? answer.id : null;
    return JSON.stringify({ type: "error", id, message: `the answer is not JSON: ${describe(error)}` });
  }
}

function failed(id: string, message: string): Protocol.TargetError {
  return { type: "error", id, message };
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "undefined" ? "nothing" : `a ${typeof value}`;
}

function writeLine(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(`${text}\n`, (error) => (error ? reject(error) : resolve()));
  });
}

/**
 * Point every console method at stderr until the returned function is called: a stray
 * `console.log` in a handler (or a library it calls) would otherwise be read as an answer.
 */
function consoleToStderr(): () => void {
  const target = console as unknown as Record<string, unknown>;
  const toStderr = new Console({ stdout: process.stderr, stderr: process.stderr }) as unknown as Record<
    string,
    unknown
  >;
  const saved = new Map<string, unknown>();
  for (const key of Object.keys(target)) {
    const method = toStderr[key];
    if (typeof target[key] === "function" && typeof method === "function") {
      saved.set(key, target[key]);
      target[key] = method;
    }
  }
  return () => {
    for (const [key, method] of saved) target[key] = method;
  };
}
