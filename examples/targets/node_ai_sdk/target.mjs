// This example agent as a `harness` target, on `runTarget` of the `completion-harness` package
// (packages/node), which speaks the JSON-lines protocol on stdin and stdout:
//
//     harness run scenarios --runtime js --target-cmd "node examples/targets/node_ai_sdk/target.mjs"
//
// `runTarget` answers the harness's hello with what this agent declares and calls `runCell` for
// each agent cell; what it returns is the cell's result, and an error it throws fails that cell.
// Anything this process prints goes to stderr, which the harness shows next to a failing cell.

import { runTarget } from "completion-harness";
import { Agent, AgentRun, envelope, outcomeRecord } from "./agent.mjs";
import { connect } from "./model.mjs";

/** One agent cell: the run on the cell's model server, reported as the protocol's result. */
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

await runTarget({
  name: "node ai sdk example",
  runtimes: ["js"],
  // Not "faults" or "cancel": this agent keeps its run in memory, so it can neither resume after
  // a crash nor stop at a persistence point.
  features: ["llm_config_override", "memory", "streaming", "approval"],
  // the APIs its model calls speak: a Gemini cell is skipped
  providers: ["openai", "anthropic"],
  agent: runCell,
});
