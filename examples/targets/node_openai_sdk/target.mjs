// This example agent as a `harness` target: the JSON-lines protocol on stdin and stdout.
//
//     harness run scenarios --runtime js --target-cmd "node examples/targets/node_openai_sdk/target.mjs"
//
// Each line on stdin is one message of the harness (`hello`, `cell`, `shutdown`); each answer is
// one line on stdout. Anything else this process prints goes to stderr, which the harness shows
// next to a failing cell.

import { createInterface } from "node:readline";
import { Agent, AgentRun, envelope, outcomeRecord } from "./agent.mjs";
import { connect } from "./providers.mjs";

const HELLO = {
  type: "hello",
  protocol: 1,
  name: "node openai sdk example",
  kinds: ["agent"],
  runtimes: ["js"],
  // Not "faults": this agent keeps its run in memory, so it cannot resume after a crash.
  features: ["llm_config_override", "memory", "streaming", "approval"],
  // the APIs its model calls speak: a Gemini cell is skipped
  providers: ["openai", "anthropic"],
};

async function answer(message) {
  if (message.type === "hello") return HELLO;
  if (message.type !== "cell") return null; // shutdown
  try {
    return await runCell(message);
  } catch (error) {
    // the harness fails this cell with the message, and goes on
    console.error(error);
    return { type: "error", id: message.id, message: `${error.name}: ${error.message}` };
  }
}

async function runCell(cell) {
  const started = performance.now();
  const agent = new Agent(cell.model, cell.agent);
  const run = new AgentRun(agent, connect(cell.provider, cell.base_urls[cell.provider]), {
    // The cell says which approval-gated tools a reviewer denies.
    approve: (call) => !agent.deny_approval.includes(call.name),
    configOverride: forcedPhaseOverride(agent),
  });
  await run.run(agent.user_message);
  return {
    type: "result",
    id: cell.id,
    status: run.status,
    error_code: run.error?.code ?? null,
    error_message: run.error?.message ?? null,
    output: run.output,
    chunks: run.chunks,
    outcome_record: outcomeRecord(run, cell.session_id),
    envelope: envelope(run, { runId: cell.run_id, sessionId: cell.session_id, started }),
    counters: {
      memory_extractions: run.memoryExtractions,
      llm_config_override_calls: run.overrideCalls,
      crashes: 0,
      forced_state: run.forced?.record() ?? null,
    },
  };
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

// One message at a time, in order: each cell's answer is written before the next line is read.
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const reply = await answer(JSON.parse(line));
  if (reply !== null) process.stdout.write(JSON.stringify(reply) + "\n");
}
