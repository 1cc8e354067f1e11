// An agent target's reading of the cell, written against the documented exports of the
// `completion-harness` npm package only: every part of the agent cell's input is typed, so
// `tsc --strict` refuses a misspelt field instead of handing the handler `undefined`.
//
// It answers without calling a model (the test only compiles it); a real agent calls the model
// at `cell.base_urls[cell.provider]`.

import {
  runTarget,
  type AgentCell,
  type AgentResult,
  type AgentSpec,
  type AgentTool,
  type CancelSpec,
  type FaultSpec,
} from "completion-harness";

function toolNames(agent: AgentSpec): string[] {
  const tools: AgentTool[] = [...agent.tools, ...(agent.workspace?.tools ?? [])];
  return tools.map((tool) => tool.name);
}

function crashesAt(faults: FaultSpec[]): string[] {
  return faults.map((fault) => `${fault.crash_after}#${fault.occurrence}`);
}

function cancelledAfter(cancel: CancelSpec | null): string | null {
  return cancel === null ? null : cancel.after;
}

function answer(cell: AgentCell): AgentResult {
  const agent = cell.agent;
  const budget: number = agent.max_completion_retries ?? 2;
  const override = agent.llm_config_override?.model ?? cell.model;
  const text = [
    agent.system_prompt,
    agent.user_message,
    toolNames(agent).join(","),
    String(agent.max_steps),
    String(budget),
    override,
    agent.reasoning ?? "unset",
    crashesAt(cell.faults).join(","),
    cancelledAfter(cell.cancel) ?? "",
    String(cell.temporal?.register_persist_forced_completion ?? true),
    agent.memory?.memories.join(",") ?? "",
    agent.skills?.catalog.map((skill) => skill.name).join(",") ?? "",
    agent.deny_approval.join(","),
  ].join("|");
  return {
    status: "failed",
    error_code: "not_implemented",
    error_message: text,
    chunks: [{ kind: "run_finish", status: "failed", error_code: "not_implemented" }],
    outcome_record: { text: "", final_message: "", stop_reason: "error", session_id: cell.session_id },
    envelope: {
      allocationId: cell.run_id,
      outcome: "partial",
      structuredOutput: null,
      agentResult: null,
      durationMs: 0,
      sessionId: cell.session_id,
      workspaceId: null,
    },
  };
}

await runTarget({ name: "typed agent cell", runtimes: ["js"], agent: answer });
