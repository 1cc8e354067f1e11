// The AI SDK's errors as the contract's failure codes.
//
// A forced call names the output tool (`toolChoice: { type: "tool", toolName }`). When the reply
// breaks that choice, `generateText` throws `ToolChoiceViolationError` (and `model.mjs` throws the
// same for a streamed reply); a reply that does call the tool can still carry calls the SDK
// refused, marked with `NoSuchToolError` (a tool not offered) or `InvalidToolInputError` (input
// that is not JSON, or fails the output schema: a `TypeValidationError` from the tool's
// validator). Reported as "the call failed", each of these would hide what the model did; each
// has its own code instead:
//
//   ToolChoiceViolationError, no tool call            framework_completion_tool_missing
//   ToolChoiceViolationError, calls to other tools    framework_completion_protocol_violation
//   a refused call beside the output tool's           framework_completion_protocol_violation
//     (NoSuchToolError), or more than one call
//   InvalidToolInputError on the output tool          framework_completion_invalid_output
//     (JSONParseError or TypeValidationError), or a call cut off by the token limit
//   UnsupportedFunctionalityError (tools on a model   framework_completion_tool_choice_unsupported
//     that takes none), APICallError 400 refusing
//     the forced tool choice
//   any other APICallError, RetryError,               framework_llm_call_failed
//     TypeValidationError or JSONParseError of the
//     provider's reply

import {
  APICallError,
  InvalidToolInputError,
  JSONParseError,
  NoSuchToolError,
  RetryError,
  ToolChoiceViolationError,
  TypeValidationError,
  UnsupportedFunctionalityError,
} from "ai";
import { reply } from "./model.mjs";

export const Codes = {
  LLM_CALL_FAILED: "framework_llm_call_failed",
  EXHAUSTED: "framework_forced_completion_exhausted",
  PROTOCOL_VIOLATION: "framework_completion_protocol_violation",
  TOOL_MISSING: "framework_completion_tool_missing",
  TOOL_CHOICE_UNSUPPORTED: "framework_completion_tool_choice_unsupported",
  INVALID_OUTPUT: "framework_completion_invalid_output",
};

// What a provider says when it refuses to force a tool (Anthropic with thinking on; OpenAI).
const REFUSES_TOOL_CHOICE = new RegExp(
  String.raw`tool_choice[^.]*\b(thinking|forces tool use)\b|thinking[^.]*\btool_choice\b` +
    String.raw`|\b(tools?|tool_choice|function calling)\b[^.]*\b(is|are) not supported` +
    String.raw`|unsupported (value|parameter): '(tools|tool_choice)'`,
  "i",
);

/** The output failed its schema: what is wrong with it, one line each. */
export class OutputProblems extends Error {
  constructor(problems) {
    super(problems.join("; "));
    this.name = "OutputProblems";
    this.problems = problems;
  }
}

/**
 * A failed forced call as `{ code, reply }` (`reply`: what the model answered, when it answered),
 * or null for an error that is no model call's (a bug: the caller rethrows it).
 */
export function forcedCallFailure(error) {
  if (ToolChoiceViolationError.isInstance(error)) {
    const replied = reply(error.content, error.finishReason);
    const code = replied.toolCalls.length ? Codes.PROTOCOL_VIOLATION : Codes.TOOL_MISSING;
    return { code, reply: replied };
  }
  if (refusesToolChoice(error)) return { code: Codes.TOOL_CHOICE_UNSUPPORTED, reply: null };
  if (isFailedCall(error)) return { code: Codes.LLM_CALL_FAILED, reply: null };
  return null;
}

/** The code of a forced reply that calls the output tool, or null when it is the one valid call. */
export function forcedReplyCode(reply, outputTool) {
  const calls = reply.toolCalls;
  if (!calls.length) return Codes.TOOL_MISSING;
  if (
    calls.length > 1 ||
    calls[0].name !== outputTool ||
    NoSuchToolError.isInstance(calls[0].error)
  )
    return Codes.PROTOCOL_VIOLATION;
  // cut-off input is incomplete, even when what arrived parses
  if (reply.stopReason === "limit_reached" || calls[0].error) return Codes.INVALID_OUTPUT;
  return null;
}

/** Why the SDK refused a call's input: the schema's problems, or that it is not JSON. */
export function inputProblems(error) {
  if (!InvalidToolInputError.isInstance(error)) return [];
  const cause = error.cause;
  if (TypeValidationError.isInstance(cause) && cause.cause instanceof OutputProblems) {
    return cause.cause.problems;
  }
  if (JSONParseError.isInstance(cause)) return ["the arguments are not valid JSON"];
  return [cause?.message ?? error.message];
}

/** A model call that failed: the provider's error, or a reply the SDK could not read. */
export function isFailedCall(error) {
  return (
    APICallError.isInstance(error) ||
    RetryError.isInstance(error) ||
    TypeValidationError.isInstance(error) ||
    JSONParseError.isInstance(error) ||
    UnsupportedFunctionalityError.isInstance(error)
  );
}

/** What a failed call's error says, short and without the request or the reply. */
export function describeFailure(error) {
  if (APICallError.isInstance(error) && error.statusCode != null)
    return `status ${error.statusCode}`;
  return error.name;
}

function refusesToolChoice(error) {
  if (UnsupportedFunctionalityError.isInstance(error)) return true;
  return (
    APICallError.isInstance(error) &&
    error.statusCode === 400 &&
    REFUSES_TOOL_CHOICE.test(error.message)
  );
}
