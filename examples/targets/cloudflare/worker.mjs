// The Worker: the agent loop of `agent.mjs` on two Cloudflare runtimes, in workerd.
//
// POST / with a harness cell runs the cell's agent to its end (or resumes it: a run is known by
// its `run_id`) and answers `{ state, forcedState }`: the run state and the forced-completion
// state as the run's store holds them.
//
// - `cloudflare-do`: the loop runs inside a Durable Object (`AgentRunObject`, one per run) and
//   keeps the run state in the object's storage, persisted at every persistence point. The
//   object calls the model and the tools itself, and invokes the agent's `llm_config_override`
//   before every call.
// - `cloudflare-workflows`: the loop runs as a Workflow (`AgentRunWorkflow`, one instance per
//   run). Each unit is a durable `step.do`: every model call, every tool call, and every
//   persistence, which writes the run state to a D1 database. A Workflow never invokes
//   `llm_config_override` (the forced-completion migration guide lists this as a known gap).
//
// Either way a run survives the death of workerd: the Durable Object resumes from its storage,
// and the Workflow replays its body, every finished step answered from its record, from where it
// stopped. A Workflow instance stays `running` after a restart until something wakes it; sending
// it an event does.

import { DurableObject, WorkflowEntrypoint } from "cloudflare:workers";
import { Agent, AgentLoop, cancelRun, startRun } from "./agent.mjs";
import { connect } from "./providers.mjs";

const STATE_KEY = "run";
const WAKE_EVENT = "wake";
const POLL_MS = 5;
// A failed model call is a value (see providers.mjs) and a tool call cannot fail, so a step that
// throws has a bug: it fails the run at once instead of being retried for minutes.
const ONCE = { retries: { limit: 0, delay: 0 } };

export default {
  async fetch(request, env) {
    if (request.method !== "POST") return new Response("POST a harness cell", { status: 405 });
    const cell = await request.json();
    if (cell.runtime === "cloudflare-do") {
      const runs = env.AGENT_RUNS;
      return Response.json(await runs.get(runs.idFromName(cell.run_id)).run(cell));
    }
    if (cell.runtime === "cloudflare-workflows") return Response.json(await runWorkflow(env, cell));
    return new Response(`no runtime profile ${cell.runtime}`, { status: 400 });
  },
};

// -- what both runtimes share ---------------------------------------------------------------------

function agentOf(cell) {
  return new Agent(cell.model, cell.agent);
}

/** The cell's approvals: a reviewer denies the tools it lists. */
function approver(agent) {
  return (call) => !agent.deny_approval.includes(call.name);
}

/**
 * The cell's `llm_config_override`: its changes in the forced-completion phase, on the calls
 * whose forced-completion state (the callback's third argument) matches its `when`: a trigger,
 * an attempt from which it applies.
 */
function forcedPhaseOverride(agent) {
  if (!agent.llm_config_override) return null;
  const { model, temperature, max_tokens: maxTokens, when } = agent.llm_config_override;
  const changes = Object.fromEntries(
    Object.entries({ model, temperature, maxTokens }).filter(([, value]) => value != null),
  );
  return (_config, phase, forced) => {
    if (phase !== "forced_completion" || !forced) return null;
    if (when?.trigger && !when.trigger.includes(forced.trigger)) return null;
    if (when?.from_attempt && forced.attemptsUsed + 1 < when.from_attempt) return null;
    return changes;
  };
}

/**
 * Tell the host that `state` was just persisted at `point`, when the cell plans crashes or a
 * cancellation (the host is the harness target, outside workerd: it may kill workerd right
 * now, as a crash there would, or answer that the run was cancelled). Whether it was cancelled.
 */
async function persistedAt(env, cell, state, point) {
  if (!cell.faults.length && !cell.cancel) return false;
  const response = await env.HOST.fetch("http://host/persisted", {
    method: "POST",
    body: JSON.stringify({ runId: cell.run_id, persisted: state.persisted, point }),
  });
  return (await response.json()).cancelled;
}

// -- cloudflare-do --------------------------------------------------------------------------------

/** One agent run in a Durable Object, its state in the object's storage. */
export class AgentRunObject extends DurableObject {
  /** Run the cell's agent, or resume it from storage; the final state. */
  async run(cell) {
    const agent = agentOf(cell);
    const model = connect(cell.provider, cell.base_urls[cell.provider]);
    const approve = approver(agent);
    const loop = new AgentLoop(agent, {
      effects: {
        callModel: (_label, request) => model(request),
        runTool: async (_label, call) => agent.runTool(call, approve),
      },
      configOverride: forcedPhaseOverride(agent),
    });
    const storage = this.ctx.storage;
    const persist = async (state, point) => {
      const saved = { ...state, persisted: state.persisted + 1 };
      await storage.put(STATE_KEY, saved);
      if (!(await persistedAt(this.env, cell, saved, point))) return saved;
      const cancelled = cancelRun(saved);
      await storage.put(STATE_KEY, cancelled); // a cancelled run is saved, as a finished one is
      return cancelled;
    };
    let state = await storage.get(STATE_KEY);
    if (state === undefined) {
      const { run_id: runId, session_id: sessionId, user_message: userMessage } = cell;
      state = await persist(startRun({ runId, sessionId, userMessage }), "run_started");
    }
    while (state.phase !== "finished") state = await persist(...(await loop.advance(state)));
    return { state, forcedState: state.forced };
  }
}

// -- cloudflare-workflows -------------------------------------------------------------------------

/** One agent run as a Workflow: every model call, tool call and persistence is a step. */
export class AgentRunWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    const cell = event.payload;
    const agent = agentOf(cell);
    const model = connect(cell.provider, cell.base_urls[cell.provider]);
    const approve = approver(agent);
    const loop = new AgentLoop(agent, {
      effects: {
        callModel: (label, request) => step.do(label, ONCE, () => model(request)),
        runTool: (label, call) => step.do(label, ONCE, async () => agent.runTool(call, approve)),
      },
      configOverride: forcedPhaseOverride(agent),
      invokeConfigOverride: false, // the Workflows runtime never invokes it (a known gap)
    });
    const store = new RunStore(this.env.RUN_STORE);
    const persist = async (state, point) => {
      const saved = { ...state, persisted: state.persisted + 1 };
      const cancelled = await step.do(`persist ${saved.persisted}: ${point}`, ONCE, async () => {
        await store.save(saved);
        return persistedAt(this.env, cell, saved, point);
      });
      if (!cancelled) return saved;
      const ended = cancelRun(saved);
      await step.do(`persist ${saved.persisted}: cancelled`, ONCE, () => store.save(ended));
      return ended;
    };
    const { run_id: runId, session_id: sessionId, user_message: userMessage } = cell;
    let state = await persist(startRun({ runId, sessionId, userMessage }), "run_started");
    while (state.phase !== "finished") state = await persist(...(await loop.advance(state)));
    return { status: state.status };
  }
}

/** Run the cell's Workflow instance to its end (creating it, or waking it after a restart of
 * workerd), then read the run from the store. */
async function runWorkflow(env, cell) {
  const id = await instanceId(cell.run_id);
  let instance = null;
  try {
    instance = await env.AGENT_WORKFLOW.get(id);
  } catch {
    instance = await env.AGENT_WORKFLOW.create({ id, params: cell });
  }
  let { status, error } = await instance.status();
  if (status === "running" || status === "queued") {
    // After a restart the instance is still marked running, but nothing runs it until an event
    // arrives. Sending one replays its body from the start; every step that finished before
    // answers from its record, so the run goes on at the step it was in. (While it really
    // runs, the event is only queued; the workflow waits for no event, so it changes nothing.)
    await instance.sendEvent({ type: WAKE_EVENT, payload: null });
  }
  while (status === "running" || status === "queued" || status === "waiting") {
    await scheduler.wait(POLL_MS);
    ({ status, error } = await instance.status());
  }
  if (status !== "complete") {
    throw new Error(`workflow instance ${id} ended ${status}: ${error?.name}: ${error?.message}`);
  }
  const stored = await new RunStore(env.RUN_STORE).load(cell.run_id);
  if (stored === null) throw new Error(`workflow instance ${id} completed without a stored run`);
  return stored;
}

/** A Workflow instance id (letters, digits, `-` and `_`, at most 100) for a run id. */
async function instanceId(runId) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(runId));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `run-${hex.slice(0, 40)}`;
}

/** The runs table of a D1 database: the run state, and the forced-completion state in a column
 * of its own, as a runtime's state store keeps it. */
class RunStore {
  static #ready = new WeakMap();

  constructor(database) {
    this.database = database;
  }

  async #table() {
    let ready = RunStore.#ready.get(this.database);
    if (!ready) {
      ready = this.database
        .prepare(
          "CREATE TABLE IF NOT EXISTS agent_runs (run_id TEXT PRIMARY KEY, status TEXT NOT NULL, " +
            "state TEXT NOT NULL, forced_completion TEXT)",
        )
        .run();
      RunStore.#ready.set(this.database, ready);
    }
    await ready;
  }

  async save(state) {
    await this.#table();
    await this.database
      .prepare(
        "INSERT INTO agent_runs (run_id, status, state, forced_completion) VALUES (?1, ?2, ?3, ?4) " +
          "ON CONFLICT (run_id) DO UPDATE SET status = ?2, state = ?3, forced_completion = ?4",
      )
      .bind(state.runId, state.status, JSON.stringify(state), JSON.stringify(state.forced))
      .run();
  }

  /** `{ state, forcedState }`, or null when the run was never saved. */
  async load(runId) {
    await this.#table();
    const row = await this.database
      .prepare("SELECT state, forced_completion FROM agent_runs WHERE run_id = ?1")
      .bind(runId)
      .first();
    if (row === null) return null;
    return { state: JSON.parse(row.state), forcedState: JSON.parse(row.forced_completion) };
  }
}
