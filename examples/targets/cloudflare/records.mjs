// The records a finished run is reported in, made from its state by the target (in Node.js).

import { createHash } from "node:crypto";

/** The agent-outcome record: every answer, the last one, and the canonical stop reason. */
export function outcomeRecord(state, agent) {
  let stopReason = "end_turn";
  if (state.status === "failed") stopReason = "error";
  else if (state.status === "cancelled") stopReason = "cancelled";
  else if (state.limitReached && !agent.output_schema) stopReason = "limit_reached";
  return {
    text: state.answers.join("\n"),
    final_message: state.answers.at(-1) ?? "",
    stop_reason: stopReason,
    session_id: state.sessionId,
  };
}

/** The `xema/agent@v1` outputs: a valid output is promoted to a `json_payload` artifact. */
export function envelope(state, agent, { durationMs }) {
  const { output, runId } = state;
  const succeeded =
    state.status === "completed" &&
    output !== null &&
    typeof output === "object" &&
    !Array.isArray(output);
  let outcome = "empty-response";
  if (succeeded) outcome = "succeeded";
  else if (state.answers.some((answer) => answer.trim())) outcome = "partial";
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
    durationMs,
    sessionId: state.sessionId,
    workspaceId: agent.workspace ? `ws-${runId}` : null,
    workerName: null,
    workerUrl: null,
    workerProxyUrl: null,
    allocationStatus: null,
  };
}

/** Compact JSON with every object's keys sorted: equal values give equal text. */
function canonicalJson(value) {
  return JSON.stringify(value, (_key, item) =>
    item && typeof item === "object" && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}
