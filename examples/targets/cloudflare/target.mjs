// The Cloudflare example as a `harness` target: the JSON-lines protocol on stdin and stdout, and
// the agent loop inside workerd, Cloudflare's runtime, started through miniflare.
//
//     harness run scenarios --runtime cloudflare-do --target-cmd "node examples/targets/cloudflare/target.mjs"
//
// One workerd serves every cell of a run (it starts with the hello). Each cell is sent to the
// Worker (`worker.mjs`), which runs it in a Durable Object or as a Workflow, per the cell's
// runtime profile, and answers the run's final state; this process turns that state into the
// harness's answer. Anything else it prints goes to stderr, workerd's output included.
//
// Runs are kept on disk (Durable Object storage, Workflow state, a D1 database), in a temporary
// folder removed at the end, or in $CLOUDFLARE_EXAMPLE_STATE when set (kept, so another target
// process can resume a run). When workerd dies mid-run (a crash the cell plans, or a kill from
// outside), a new workerd is started on the same folder and the cell is sent again: the run
// resumes from what was persisted.

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { envelope, outcomeRecord } from "./records.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const COMPATIBILITY_DATE = "2026-04-01";
const UNPLANNED_RESTARTS = 2; // restarts a cell may take beyond the crashes it plans

// The two Cloudflare runtime profiles; `llm_config_override` is declared for both, but only the
// Durable Object invokes it (the Workflow never does, as the profile says).
const runtimes = ["cloudflare-do", "cloudflare-workflows"];
const HELLO = {
  type: "hello",
  protocol: 1,
  name: "cloudflare example (workerd)",
  kinds: ["agent"],
  runtimes,
  features: ["llm_config_override", "memory", "streaming", "approval", "faults", "cancel"],
  // the APIs its model calls speak: a Gemini cell is skipped
  providers: ["openai", "anthropic"],
};

/** workerd through miniflare: started when first needed, started again after it died. */
class Workerd {
  constructor(folder) {
    this.folder = folder;
    this.miniflare = null;
    this.stopping = null;
    this.plans = new Map(); // run id -> the crashes and the cancellation its cell plans
  }

  options() {
    const on = (name) => join(this.folder, name);
    return {
      modules: true,
      scriptPath: join(HERE, "worker.mjs"),
      modulesRoot: HERE, // module names are paths from here, whatever the working folder
      // the validator package is ES modules named *.js, which miniflare would read as CommonJS
      modulesRules: [{ type: "ESModule", include: ["**/*.mjs", "**/*.js"] }],
      compatibilityDate: COMPATIBILITY_DATE,
      cf: false, // no request to Cloudflare for the `cf` object: nothing here leaves the machine
      durableObjects: { AGENT_RUNS: { className: "AgentRunObject", useSQLite: true } },
      workflows: { AGENT_WORKFLOW: { name: "agent-run", className: "AgentRunWorkflow" } },
      d1Databases: ["RUN_STORE"],
      serviceBindings: { HOST: (request) => this.persisted(request) },
      durableObjectsPersist: on("durable-objects"),
      workflowsPersist: on("workflows"),
      d1Persist: on("d1"),
      // stdout carries the protocol alone
      handleRuntimeStdio(stdout, stderr) {
        stdout.pipe(process.stderr, { end: false });
        stderr.pipe(process.stderr, { end: false });
      },
    };
  }

  async start() {
    if (this.stopping) await this.stopping;
    if (this.miniflare) return;
    const miniflare = new Miniflare(this.options());
    await miniflare.ready;
    this.miniflare = miniflare;
  }

  /** Kill workerd (miniflare ends it with SIGKILL) and forget it; what it persisted stays. */
  stop() {
    if (!this.stopping) {
      const miniflare = this.miniflare;
      this.miniflare = null;
      this.stopping = Promise.resolve(miniflare?.dispose()).finally(() => {
        this.stopping = null;
      });
    }
    return this.stopping;
  }

  /** Run `cell` to its end: `{ state, forcedState, crashes }`. */
  async run(cell) {
    const plan = { faults: cell.faults, cancel: cell.cancel, decided: new Map(), seen: {} };
    this.plans.set(cell.run_id, plan);
    const restarts = cell.faults.length + UNPLANNED_RESTARTS;
    try {
      for (let crashes = 0; ; crashes++) {
        await this.start();
        let response;
        try {
          response = await this.miniflare.dispatchFetch("http://agent.example/", {
            method: "POST",
            body: JSON.stringify(cell),
          });
        } catch (error) {
          // workerd is gone: start it again on the same folder, and the run resumes
          if (crashes >= restarts) throw error;
          console.error(`workerd died during ${cell.id} (${error.message}); restarting it`);
          await this.stop();
          continue;
        }
        if (!response.ok) {
          throw new Error(`the Worker answered ${response.status}: ${await response.text()}`);
        }
        return { ...(await response.json()), crashes };
      }
    } finally {
      this.plans.delete(cell.run_id);
    }
  }

  /**
   * The Worker persisted a run's state (`HOST` binding, called only for a cell that plans a
   * crash or a cancellation). A crash due after this persistence kills workerd now, before the
   * Worker hears back; a cancellation due is answered `cancelled`. Each persistence is decided
   * once: a Workflow that replays after a crash reports the same persistence again.
   */
  async persisted(request) {
    const { runId, persisted, point } = await request.json();
    const plan = this.plans.get(runId);
    if (!plan) return Response.json({ cancelled: false });
    let decision = plan.decided.get(persisted);
    if (decision === undefined) {
      const occurrence = (plan.seen[point] ?? 0) + 1;
      plan.seen[point] = occurrence;
      const due = (after, when) => after === point && (when ?? 1) === occurrence;
      if (plan.faults.some((f) => due(f.crash_after, f.occurrence))) decision = "crash";
      else if (plan.cancel && due(plan.cancel.after, plan.cancel.occurrence)) decision = "cancel";
      else decision = "none";
      plan.decided.set(persisted, decision);
      if (decision === "crash") {
        this.stop();
        return new Promise(() => {}); // never answered: workerd is being killed
      }
    }
    return Response.json({ cancelled: decision === "cancel" });
  }
}

async function runCell(workerd, cell) {
  const started = performance.now();
  const { state, forcedState, crashes } = await workerd.run(cell);
  const durationMs = Math.round(performance.now() - started);
  return {
    type: "result",
    id: cell.id,
    status: state.status,
    error_code: state.error?.code ?? null,
    error_message: state.error?.message ?? null,
    output: state.output,
    chunks: state.chunks,
    outcome_record: outcomeRecord(state, cell.agent),
    envelope: envelope(state, cell.agent, { durationMs }),
    counters: {
      memory_extractions: state.memoryExtractions,
      llm_config_override_calls: state.overrideCalls,
      crashes,
      forced_state: forcedState ?? null,
    },
  };
}

async function answer(workerd, message) {
  if (message.type === "hello") {
    await workerd.start();
    return HELLO;
  }
  if (message.type !== "cell") return null; // shutdown
  try {
    return await runCell(workerd, message);
  } catch (error) {
    // the harness fails this cell with the message, and goes on
    console.error(error);
    return { type: "error", id: message.id, message: `${error.name}: ${error.message}` };
  }
}

function stateFolder() {
  const kept = process.env.CLOUDFLARE_EXAMPLE_STATE;
  if (kept) {
    mkdirSync(kept, { recursive: true });
    return { folder: kept, remove: () => {} };
  }
  const folder = mkdtempSync(join(tmpdir(), "harness-cloudflare-"));
  return { folder, remove: () => rmSync(folder, { recursive: true, force: true }) };
}

const { folder, remove } = stateFolder();
const workerd = new Workerd(folder);
try {
  // One message at a time, in order: each cell's answer is written before the next line is read.
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    const message = JSON.parse(line);
    const reply = await answer(workerd, message);
    if (reply !== null) process.stdout.write(JSON.stringify(reply) + "\n");
    if (message.type === "shutdown") break;
  }
} finally {
  await workerd.stop();
  remove();
  process.stdin.destroy(); // exit at `shutdown` even while stdin stays open
}
