// The LLM gateway of the Agent Decision module: one call to the selected model with the official
// SDKs, OpenAI Chat Completions (`openai`) or Anthropic Messages (`@anthropic-ai/sdk`).
//
// Each gateway turns the module's provider-neutral request into the provider's body and the answer
// into a reply: text, tool calls (arguments as the raw JSON text the model wrote), why it stopped,
// usage, credits and the gateway's retrieval metadata. A non-success answer, a timeout or a
// transport failure is an `AgentDecisionCallException` carrying the status and the provider's
// error type; its message never quotes the provider's text (a provider may quote the key it
// refused) nor the request. Neither SDK retries (`maxRetries: 0`): a repeated call can cost
// credits and decide differently, so retrying is the durable loop's decision.
//
// The API keys are the server's (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, which each SDK reads from
// the environment), never workflow input.

import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { AgentDecisionCallException } from "./decision.mjs";

const TIMEOUT_MS = 60_000;
const ANTHROPIC_VERSION = "2023-06-01"; // the Messages API version this code is written against

// OpenAI reasoning models take `max_completion_tokens` instead of `max_tokens`.
const OPENAI_COMPLETION_TOKENS = /^(o[134](-|$)|gpt-5)/;
const OPENAI_STOPS = {
  stop: "end_turn",
  tool_calls: "tool_use",
  function_call: "tool_use",
  length: "limit_reached",
};
const ANTHROPIC_STOPS = {
  end_turn: "end_turn",
  stop_sequence: "end_turn",
  tool_use: "tool_use",
  max_tokens: "limit_reached",
  model_context_window_exceeded: "limit_reached",
};

/** The gateway of a model record (`provider` is `openai` or `anthropic`), at the provider's base
 * URL in `baseUrls`. */
export function gatewayFor(record, baseUrls) {
  const baseURL = baseUrls[record.provider];
  if (record.provider === "openai" && baseURL) return openAIChat(baseURL);
  if (record.provider === "anthropic" && baseURL) return anthropicMessages(baseURL);
  throw new Error(
    `this gateway calls the OpenAI and Anthropic APIs; the model ${record.name} is on ` +
      record.provider,
  );
}

// -- OpenAI Chat Completions ----------------------------------------------------------------------

function openAIChat(baseURL) {
  const client = new OpenAI({ baseURL, maxRetries: 0, timeout: TIMEOUT_MS });
  return {
    async complete(request) {
      const body = {
        model: request.model,
        messages: [
          { role: "system", content: request.system },
          { role: "user", content: request.user },
        ],
        tools: request.tools.map(({ name, description, parameters }) => ({
          type: "function",
          function: { name, description, parameters },
        })),
        tool_choice: request.toolChoice,
        [OPENAI_COMPLETION_TOKENS.test(request.model) ? "max_completion_tokens" : "max_tokens"]:
          request.maxTokens,
      };
      let completion;
      try {
        completion = await client.chat.completions.create(body);
      } catch (error) {
        throw callFailed(error, OpenAI, "OpenAI", "openai", (apiError) =>
          errorTypeOf(apiError.error),
        );
      }
      return openAIReply(completion);
    },
  };
}

function openAIReply(completion) {
  if (completion?.error != null && !("choices" in completion)) {
    // an OpenAI-compatible gateway may answer a failure with HTTP 200
    throw new AgentDecisionCallException(
      "OpenAI-compatible reply carried an error " +
        (errorTypeOf(completion.error) ?? "without a type"),
      { errorType: errorTypeOf(completion.error), provider: "openai" },
    );
  }
  const choice = completion?.choices?.[0];
  if (!choice?.message || typeof choice.finish_reason !== "string") {
    throw invalidReply("OpenAI", "openai", "the reply has no choices[0].message or finish_reason");
  }
  const { message, finish_reason: finishReason } = choice;
  const usage = completion.usage ?? {};
  const cost = usage.cost; // OpenRouter reports the call's cost here
  return {
    text: message.content ?? "",
    toolCalls: (message.tool_calls ?? []).map((call) => ({
      id: call.id ?? "",
      name: call.function?.name ?? "",
      arguments: call.function?.arguments ?? "",
    })),
    // a message carrying a refusal ended in a refusal, whatever its finish_reason says
    stop: message.refusal ? "other" : (OPENAI_STOPS[finishReason] ?? "other"),
    usage: {
      totalTokens:
        usage.total_tokens ?? (usage.prompt_tokens ?? 0) + (usage.completion_tokens ?? 0),
    },
    credits: typeof cost === "number" && cost >= 0 ? cost : null,
    retrieval: completion.retrieval ?? null, // the LLM compatibility gateway's extension
  };
}

/** OpenAI's error type: `error.type`, or `error.code` when there is no type. */
function errorTypeOf(error) {
  if (typeof error?.type === "string" && error.type) return error.type;
  if (typeof error?.code === "string" || Number.isInteger(error?.code)) return String(error.code);
  return null;
}

// -- Anthropic Messages ---------------------------------------------------------------------------

function anthropicMessages(baseURL) {
  const client = new Anthropic({
    baseURL,
    maxRetries: 0,
    timeout: TIMEOUT_MS,
    // pinned: an SDK release that changes its default version changes the request
    defaultHeaders: { "anthropic-version": ANTHROPIC_VERSION },
  });
  return {
    async complete(request) {
      const body = {
        model: request.model,
        max_tokens: request.maxTokens,
        system: request.system,
        messages: [{ role: "user", content: request.user }],
        tools: request.tools.map(({ name, description, parameters }) => ({
          name,
          description,
          input_schema: parameters,
        })),
        tool_choice: { type: request.toolChoice },
      };
      let message;
      try {
        message = await client.messages.create(body);
      } catch (error) {
        throw callFailed(error, Anthropic, "Anthropic", "anthropic", (apiError) => {
          const type = apiError.error?.error?.type;
          return typeof type === "string" && type ? type : null;
        });
      }
      return anthropicReply(message);
    },
  };
}

function anthropicReply(message) {
  if (
    message?.type !== "message" ||
    !Array.isArray(message.content) ||
    typeof message.stop_reason !== "string"
  ) {
    throw invalidReply(
      "Anthropic",
      "anthropic",
      "the reply is not a message with content and a stop_reason",
    );
  }
  const reply = { text: "", toolCalls: [], stop: ANTHROPIC_STOPS[message.stop_reason] ?? "other" };
  for (const block of message.content) {
    if (block.type === "text") reply.text += block.text;
    else if (block.type === "tool_use") {
      reply.toolCalls.push({
        id: block.id,
        name: block.name,
        arguments: JSON.stringify(block.input),
      });
    }
  }
  const usage = message.usage ?? {};
  const input =
    (usage.input_tokens ?? 0) +
    (usage.cache_creation_input_tokens ?? 0) +
    (usage.cache_read_input_tokens ?? 0);
  reply.usage = { totalTokens: input + (usage.output_tokens ?? 0) };
  reply.credits = null; // Messages reports no cost
  reply.retrieval = message.retrieval ?? null;
  return reply;
}

// -- failures -------------------------------------------------------------------------------------

/** The SDK's error as the module's: a non-success answer with its status and the provider's
 * error type, a timeout, or a transport failure. */
function callFailed(error, sdk, label, provider, errorType) {
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return new AgentDecisionCallException(
      `${provider} call timed out after ${TIMEOUT_MS / 1000}s`,
      {
        errorType: "timeout",
        provider,
      },
    );
  }
  if (error instanceof sdk.APIError && error.status != null) {
    const type = errorType(error);
    const message =
      type === null && !isErrorObject(error.error, provider)
        ? `${label} answered HTTP ${error.status} with a body that is not an ${label} error object`
        : `${label} answered HTTP ${error.status} ${type ?? "without an error type"}`;
    return new AgentDecisionCallException(message, {
      status: error.status,
      errorType: type,
      provider,
    });
  }
  if (error instanceof sdk.APIError) {
    return new AgentDecisionCallException(
      `${provider} call failed in transport: ${error.constructor.name}`,
      {
        errorType: "transport",
        provider,
      },
    );
  }
  return error; // not the SDK's: the module names it by its type
}

function isErrorObject(error, provider) {
  // OpenAI's SDK keeps the body's `error` member, Anthropic's the whole body
  const object = provider === "openai" ? error : error?.error;
  return object !== null && typeof object === "object" && !Array.isArray(object);
}

function invalidReply(label, provider, detail) {
  return new AgentDecisionCallException(
    `${label} answered a reply the gateway cannot read: ${detail}`,
    {
      errorType: "invalid_response",
      provider,
    },
  );
}
