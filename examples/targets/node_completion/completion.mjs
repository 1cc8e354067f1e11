// The Agent Completion module (ExecModule v2.0): the terminal boundary of an agent workflow.
//
// It copies the validated answer from `agentFinalAnswer` into `finalAnswer` and emits
// `agentOutcome: "final_answer"`. It calls no model and judges no correctness; it only refuses
// what cannot be a terminal answer, with one of two exact messages that never quote the answer:
//
// - anything that is not a string (absent, null, numbers, booleans, arrays, objects);
// - blank text, where blank means what Java's `String.isBlank()` means;
// - text longer than 65,536 Java characters: UTF-16 code units, which is what a JavaScript
//   string's `length` counts (an astral character such as U+1F680 counts 2).
//
// The output map is cleared first, so a failed execution never leaves an earlier answer behind.

export const REQUIRED_MESSAGE = "agentFinalAnswer is required at agent completion";
export const TOO_LONG_MESSAGE = "agentFinalAnswer exceeds the supported length";
export const MAX_ANSWER_UTF16_UNITS = 65_536;

/** Java's `IllegalArgumentException`: the input is refused, and retrying will not help. */
export class IllegalArgumentException extends Error {
  name = "IllegalArgumentException";
  code = "illegal_argument";
}

// java.lang.Character.isWhitespace: the Unicode space, line and paragraph separators except the
// non-breaking ones, plus tab, line feed, vertical tab, form feed, carriage return and the four
// information separators U+001C..U+001F. JavaScript's `trim()` is not this: it strips U+00A0
// and U+FEFF, which Java keeps, and keeps U+001C..U+001F, which Java strips.
const JAVA_WHITESPACE_CONTROLS = /[\t\n\v\f\r\x1c-\x1f]/;
const SEPARATORS = /[\p{Zs}\p{Zl}\p{Zp}]/u;
const NON_BREAKING_SPACES = new Set(["\u00a0", "\u2007", "\u202f"]);

export function isJavaWhitespace(character) {
  if (JAVA_WHITESPACE_CONTROLS.test(character)) return true;
  return SEPARATORS.test(character) && !NON_BREAKING_SPACES.has(character);
}

/** Whether `text` is empty or only white space, as Java's `String.isBlank()` defines it. */
export function isBlank(text) {
  return [...text].every(isJavaWhitespace);
}

export class AgentCompletionModule {
  #outputs = {};

  /** A copy of the output map of the last execution (empty after a failure). */
  get outputs() {
    return { ...this.#outputs };
  }

  /** Validate `state.agentFinalAnswer`; the outputs, or an `IllegalArgumentException`. */
  execute(state) {
    this.#outputs = {};
    const answer = state.agentFinalAnswer;
    if (typeof answer !== "string" || isBlank(answer)) {
      throw new IllegalArgumentException(REQUIRED_MESSAGE);
    }
    if (answer.length > MAX_ANSWER_UTF16_UNITS) {
      throw new IllegalArgumentException(TOO_LONG_MESSAGE);
    }
    this.#outputs = { finalAnswer: answer, agentOutcome: "final_answer" };
    return this.outputs;
  }
}
