// ValkyrAI's Agent Decision module as a `harness` target, on `runTarget` of the
// `completion-harness` package (packages/node), which speaks the JSON-lines protocol on stdin and
// stdout:
//
//     harness run scenarios/decision --target-cmd "node examples/targets/node_decision/target.mjs"
//
// `runTarget` answers the harness's hello with `kinds: ["decision"]` (the kind of the handler it
// is given) and calls `runCell` for each decision cell. A cell carries the module's
// configuration, the model records and who may see them, the authenticated session, the server's
// tool-visibility policy, the base URL of each provider (a `harness serve` session replaying the
// cell's script or cassette) and one or more executions, run in order through one module
// instance, as a workflow would run them. Each gets its outputs, or the module's typed error.

import { runTarget } from "completion-harness";
import {
  AgentDecisionModule,
  AuthenticatedSession,
  LlmDetailsService,
  PolicyUnavailableError,
  ToolCatalog,
  isDecisionFailure,
} from "./decision.mjs";
import { gatewayFor } from "./gateway.mjs";

/** One decision cell: its executions through one module, each answered in order. */
async function runCell(cell) {
  const module = new AgentDecisionModule(cell.config, {
    models: new LlmDetailsService(cell.models),
    session: new AuthenticatedSession(cell.session ?? {}),
    completerFor: (record) => gatewayFor(record, cell.base_urls),
    toolPolicy: cell.tool_policy == null ? null : scenarioToolPolicy(cell.tool_policy),
  });
  const executions = [];
  for (const { input } of cell.executions) {
    try {
      executions.push({ outputs: await module.execute(input), error: null });
    } catch (error) {
      if (!isDecisionFailure(error)) throw error; // a bug, not the module's answer: the cell fails
      const { name: type, code, message } = error;
      executions.push({ outputs: module.outputs, error: { type, code, message } });
    }
  }
  return executions;
}

/** The server tool-visibility policy the cell describes: unavailable, or the tools it keeps
 * (`allow: null` keeps every tool). In production this is the server's own policy service. */
function scenarioToolPolicy({ available = true, allow = null }) {
  return {
    filter(catalog) {
      if (!available) throw new PolicyUnavailableError("the tool-visibility policy is unavailable");
      if (allow === null) return catalog;
      return new ToolCatalog(catalog.tools.filter((tool) => allow.includes(tool.name)));
    },
  };
}

await runTarget({
  name: "node agent decision module example",
  // the APIs its gateway calls: `harness fuzz` generates no Gemini model for it
  providers: ["openai", "anthropic"],
  decision: runCell,
});
