// What the tests share: a target process driven line by line, and the harness to serve with.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const FIXTURES = join(PACKAGE, "test", "fixtures");
const REPOSITORY = resolve(PACKAGE, "..", "..");

/** A target process: `send` writes a message, `next` reads its next answer (or null at exit). */
export function startTarget(script = join(FIXTURES, "target.mjs")) {
  const child = spawn(process.execPath, [script], { stdio: ["pipe", "pipe", "pipe"] });
  const answers = [];
  const waiting = [];
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  lines.on("line", (line) => (waiting.length ? waiting.shift()(line) : answers.push(line)));
  const exited = new Promise((resolve) => child.once("close", (code) => resolve(code)));
  exited.then(() => waiting.splice(0).forEach((resolve) => resolve(null)));
  return {
    child,
    exited,
    stderr: () => stderr,
    send: (message) => child.stdin.write(`${typeof message === "string" ? message : JSON.stringify(message)}\n`),
    /** The next line of stdout, parsed; fails the test when it is not JSON. */
    next: () =>
      new Promise((resolve) => (answers.length ? resolve(answers.shift()) : waiting.push(resolve))).then((line) =>
        line === null ? null : JSON.parse(line),
      ),
  };
}

/** The harness executable: HARNESS_BIN, else this repository's .venv/bin/harness; null if neither. */
export function harnessBin() {
  if (process.env.HARNESS_BIN) return process.env.HARNESS_BIN;
  const venv = join(REPOSITORY, ".venv", "bin", "harness");
  return existsSync(venv) ? venv : null;
}

/** Skip a test that needs something missing; under CI, where everything is installed, fail it. */
export function needs(t, what, present) {
  if (present) return true;
  if (process.env.CI) throw new Error(`${what} is missing, and CI must run this test`);
  t.skip(`${what} is missing`);
  return false;
}

export function completionCell(id, inputs, config = {}) {
  return {
    type: "cell",
    id,
    kind: "completion",
    scenario: id,
    config,
    executions: inputs.map((input) => ({ input })),
    base_urls: {},
    models: [],
    session: null,
    tool_policy: null,
  };
}
