// The Agent Completion module (ExecModule v2.0) as a harness target, written against the
// documented exports of the `completion-harness` npm package only:
//
//     harness run scenarios/completion --target-cmd "node completion.js"
//
// It copies `agentFinalAnswer` to `finalAnswer` and emits `agentOutcome: "final_answer"`, and
// refuses, with one of two exact messages that never quote the answer, anything that is not a
// string, blank text (Java's `String.isBlank()`, not JavaScript's `trim()`) and text longer than
// 65,536 UTF-16 code units. The output map is cleared before each execution.

import { runTarget, type CompletionCell, type ModuleExecution } from "completion-harness";

const REQUIRED = "agentFinalAnswer is required at agent completion";
const TOO_LONG = "agentFinalAnswer exceeds the supported length";
const MAX_ANSWER_UTF16_UNITS = 65_536;

// java.lang.Character.isWhitespace: the Unicode space, line and paragraph separators except the
// non-breaking ones, plus tab, line feed, vertical tab, form feed, carriage return and the four
// information separators U+001C..U+001F.
const JAVA_WHITESPACE_CONTROLS = /[\t\n\v\f\r\x1c-\x1f]/;
const SEPARATORS = /[\p{Zs}\p{Zl}\p{Zp}]/u;
const NON_BREAKING_SPACES = new Set(["\u00a0", "\u2007", "\u202f"]);

function isJavaWhitespace(character: string): boolean {
  if (JAVA_WHITESPACE_CONTROLS.test(character)) return true;
  return SEPARATORS.test(character) && !NON_BREAKING_SPACES.has(character);
}

function isBlank(text: string): boolean {
  return [...text].every(isJavaWhitespace);
}

/** Java's `IllegalArgumentException`: the input is refused, and retrying will not help. */
class IllegalArgumentException extends Error {
  override name = "IllegalArgumentException";
  readonly code = "illegal_argument";
}

class AgentCompletionModule {
  #outputs: ModuleExecution["outputs"] = {};

  execute(state: CompletionCell["executions"][number]["input"]): ModuleExecution {
    this.#outputs = {};
    try {
      const answer = state["agentFinalAnswer"];
      if (typeof answer !== "string" || isBlank(answer)) throw new IllegalArgumentException(REQUIRED);
      if (answer.length > MAX_ANSWER_UTF16_UNITS) throw new IllegalArgumentException(TOO_LONG);
      this.#outputs = { finalAnswer: answer, agentOutcome: "final_answer" };
      return { outputs: { ...this.#outputs }, error: null };
    } catch (error) {
      if (!(error instanceof IllegalArgumentException)) throw error;
      return {
        outputs: { ...this.#outputs },
        error: { type: error.name, code: error.code, message: error.message },
      };
    }
  }
}

await runTarget({
  name: "typescript completion module",
  // every execution of a cell, in order, through one module instance
  completion: (cell: CompletionCell): ModuleExecution[] => {
    const module = new AgentCompletionModule();
    return cell.executions.map(({ input }) => module.execute(input));
  },
});
