/**
 * completion-harness for Node: write a harness target in TypeScript (`runTarget`), and replay
 * model calls per test from `harness serve` (`startServe`, `openSession`). The Playwright and
 * Vitest fixtures are `completion-harness/playwright` and `completion-harness/vitest`.
 *
 * Every wire record is exported as a type, generated from the harness's own models; the
 * messages exactly as the protocol's schema gives them are under `Protocol`.
 */

export { runTarget } from "./target.js";
export type {
  AgentCell,
  AgentResult,
  Awaitable,
  CellExecution,
  CompletionCell,
  DecisionCell,
  ModuleExecution,
  TargetFeature,
  TargetKind,
  TargetOptions,
} from "./target.js";
export { openSession, startServe, RECORD_MODES, SESSION_HEADER } from "./serve.js";
export type {
  BaseUrls,
  HarnessServer,
  HarnessSession,
  IdenticalRequests,
  NeutralMessage,
  NeutralRequest,
  Pace,
  RecordMode,
  ServeOptions,
  SessionOptions,
  SessionReport,
  SessionRequest,
} from "./serve.js";
export { HarnessError } from "./errors.js";
export type { HarnessErrorCode } from "./errors.js";
export type * from "./generated/index.js";
export type * as Protocol from "./generated/target-protocol.js";
export type { ScriptedReply } from "./generated/scenario.js";
