// The model calls, made with the official SDKs: OpenAI Chat Completions and Anthropic Messages.
//
// Each turns the agent's request into the provider's request body and its answer into a reply.
// Neither SDK retries (`maxRetries: 0`): a failed call is the agent's to handle, as a failed
// attempt or a failed run.

import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { ModelCallFailed, ToolChoiceUnsupported } from "./agent.mjs";

const API_KEY = "example-target"; // `harness serve` takes any key and forwards none

// OpenAI models that take no tools at all, and those that take max_completion_tokens.
const OPENAI_NO_TOOLS = /^o1-(mini|preview)/;
const OPENAI_COMPLETION_TOKENS = /^(o[134](-|$)|gpt-5)/;
const OPENAI_REFUSES_TOOLS = new RegExp(
  String.raw`\b(tools?|tool_choice|function calling)\b[^.]*\b(is|are) not supported` +
    String.raw`|unsupported (value|parameter): '(tools|tool_choice)'`,
  "i",
);
const OPENAI_STOPS = { stop: "end_turn", tool_calls: "tool_use", length: "limit_reached" };
// A reasoning model reasons unless told not to: what turns its reasoning off, or as far down as
// it goes (a forced call disables reasoning). The first match wins.
const OPENAI_REASONING_OFF = [
  [/^o1-(mini|preview)/, null], // takes no effort at all
  [/^gpt-5[.\d]*-chat/, null], // does not reason
  [/^gpt-5\.[1-9]/, "none"], // from GPT-5.1 on, reasoning turns off
  [/^gpt-5/, "minimal"], // GPT-5's least
  [/^o[134](-|$)/, "low"], // the o-series' least
];

/** The `reasoning_effort` that disables `model`'s reasoning, or null when none is sent. */
export function openaiReasoningOff(model) {
  return OPENAI_REASONING_OFF.find(([rule]) => rule.test(model))?.[1] ?? null;
}

const ANTHROPIC_VERSION = "2023-06-01"; // the Messages API version this code is written against
const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;
const ANTHROPIC_THINKING_BUDGETS = { minimal: 1024, low: 4096, medium: 8192, high: 16384 };
const ANTHROPIC_STOPS = {
  end_turn: "end_turn",
  stop_sequence: "end_turn",
  tool_use: "tool_use",
  max_tokens: "limit_reached",
  model_context_window_exceeded: "limit_reached",
};

/** The model `provider` serves at `baseURL`, as an async function from request to reply. */
export function connect(provider, baseURL) {
  return provider === "openai" ? openAIChat(baseURL) : anthropicMessages(baseURL);
}

function openAIChat(baseURL) {
  const client = new OpenAI({ baseURL, apiKey: API_KEY, maxRetries: 0 });
  return async (request) => {
    if (request.tools.length && OPENAI_NO_TOOLS.test(request.model)) {
      throw new ToolChoiceUnsupported(`${request.model} takes no tools`);
    }
    try {
      const answer = await client.chat.completions.create(openAIBody(request));
      return request.stream ? await openAIStreamed(answer) : openAIReply(answer);
    } catch (error) {
      throw modelError(error, OpenAI, (message) => OPENAI_REFUSES_TOOLS.test(message));
    }
  };
}

function openAIBody(request) {
  const messages = request.system ? [{ role: "system", content: request.system }] : [];
  for (const message of request.messages) {
    if (message.role === "tool") {
      messages.push({ role: "tool", tool_call_id: message.toolCallId, content: message.content });
    } else if (message.role === "assistant") {
      const rendered = { role: "assistant", content: message.content || null };
      if (message.toolCalls.length) {
        rendered.tool_calls = message.toolCalls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: c.arguments },
        }));
      }
      messages.push(rendered);
    } else {
      messages.push({ role: "user", content: message.content });
    }
  }
  const body = { model: request.model, messages };
  if (request.tools.length) {
    body.tools = request.tools.map(({ name, description, parameters }) => ({
      type: "function",
      function: { name, description, parameters },
    }));
    body.tool_choice =
      request.toolChoice === "auto"
        ? "auto"
        : { type: "function", function: { name: request.toolChoice } };
  }
  if (request.maxTokens != null) {
    body[OPENAI_COMPLETION_TOKENS.test(request.model) ? "max_completion_tokens" : "max_tokens"] =
      request.maxTokens;
  }
  if (request.temperature != null) body.temperature = request.temperature;
  if (request.reasoning === "disabled") {
    const off = openaiReasoningOff(request.model);
    if (off != null) body.reasoning_effort = off;
  } else if (request.reasoning != null) body.reasoning_effort = request.reasoning;
  if (request.stream)
    Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  return body;
}

function openAIReply(completion) {
  const { message, finish_reason: finishReason } = completion.choices[0];
  return {
    text: message.content ?? "",
    toolCalls: (message.tool_calls ?? []).map((c) => ({
      id: c.id,
      name: c.function.name,
      arguments: c.function.arguments ?? "",
    })),
    stopReason: message.refusal ? "other" : (OPENAI_STOPS[finishReason] ?? "other"),
    reasoningBlocks: [],
  };
}

/** Text deltas joined, tool-call fragments joined by index, the last finish reason. */
async function openAIStreamed(stream) {
  let text = "";
  let finishReason = null;
  const calls = new Map();
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      text += choice.delta.content ?? "";
      for (const part of choice.delta.tool_calls ?? []) {
        const call = calls.get(part.index) ?? { id: "", name: "", arguments: "" };
        call.id ||= part.id ?? "";
        call.name ||= part.function?.name ?? "";
        call.arguments += part.function?.arguments ?? "";
        calls.set(part.index, call);
      }
      finishReason = choice.finish_reason ?? finishReason;
    }
  }
  const toolCalls = [...calls.keys()].sort((a, b) => a - b).map((index) => calls.get(index));
  return {
    text,
    toolCalls,
    stopReason: OPENAI_STOPS[finishReason] ?? "other",
    reasoningBlocks: [],
  };
}

function anthropicMessages(baseURL) {
  const client = new Anthropic({
    baseURL,
    apiKey: API_KEY,
    maxRetries: 0,
    defaultHeaders: { "anthropic-version": ANTHROPIC_VERSION },
  });
  return async (request) => {
    const body = anthropicBody(request);
    try {
      if (!request.stream) return anthropicReply(await client.messages.create(body), new Map());
      // Arguments are kept as the raw JSON text that arrived: when the token limit cuts a call
      // off, that text is incomplete and the SDK's parsed input is only a guess.
      const stream = client.messages.stream(body);
      const partial = new Map();
      for await (const event of stream) {
        if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") {
          partial.set(event.index, (partial.get(event.index) ?? "") + event.delta.partial_json);
        }
      }
      return anthropicReply(await stream.finalMessage(), partial);
    } catch (error) {
      throw modelError(error, Anthropic, (message) => {
        const lowered = message.toLowerCase();
        return (
          lowered.includes("tool_choice") &&
          (lowered.includes("thinking") || lowered.includes("forces tool use"))
        );
      });
    }
  };
}

function anthropicBody(request) {
  const effort = request.reasoning === "disabled" ? null : request.reasoning;
  let budget = effort ? ANTHROPIC_THINKING_BUDGETS[effort] : 0;
  const maxTokens = request.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS + budget;
  if (effort && request.maxTokens != null) {
    budget = Math.max(1024, Math.min(budget, maxTokens - 1)); // thinking counts toward max_tokens
  }
  const body = { model: request.model, max_tokens: maxTokens };
  if (request.system) body.system = request.system;
  body.messages = anthropicHistory(request.messages, Boolean(effort));
  if (request.tools.length) {
    body.tools = request.tools.map(({ name, description, parameters }) => ({
      name,
      description,
      input_schema: parameters,
    }));
    body.tool_choice =
      request.toolChoice === "auto" ? { type: "auto" } : { type: "tool", name: request.toolChoice };
  }
  if (effort) body.thinking = { type: "enabled", budget_tokens: budget };
  if (request.temperature != null) body.temperature = request.temperature;
  return body;
}

/** Consecutive user text and tool results go into one `user` message; a turn's thinking is sent
 * back before its tool calls while thinking is on. */
function anthropicHistory(messages, thinking) {
  const rendered = [];
  for (const message of messages) {
    if (message.role === "assistant") {
      const blocks = thinking ? [...(message.reasoningBlocks ?? [])] : [];
      if (message.content) blocks.push({ type: "text", text: message.content });
      for (const c of message.toolCalls) {
        blocks.push({
          type: "tool_use",
          id: c.id,
          name: c.name,
          input: JSON.parse(c.arguments || "{}"),
        });
      }
      rendered.push({ role: "assistant", content: blocks });
      continue;
    }
    const block =
      message.role === "tool"
        ? {
            type: "tool_result",
            tool_use_id: message.toolCallId,
            content: message.content,
            ...(message.isError ? { is_error: true } : {}),
          }
        : { type: "text", text: message.content };
    if (rendered.at(-1)?.role !== "user") rendered.push({ role: "user", content: [] });
    rendered.at(-1).content.push(block);
  }
  return rendered;
}

function anthropicReply(message, partial) {
  const reply = {
    text: "",
    toolCalls: [],
    stopReason: ANTHROPIC_STOPS[message.stop_reason] ?? "other",
    reasoningBlocks: [],
  };
  message.content.forEach((block, index) => {
    if (block.type === "text") reply.text += block.text;
    else if (block.type === "tool_use") {
      const args = partial.get(index) || JSON.stringify(block.input);
      reply.toolCalls.push({ id: block.id, name: block.name, arguments: args });
    } else if (block.type === "thinking" || block.type === "redacted_thinking")
      reply.reasoningBlocks.push(block);
  });
  return reply;
}

/** The SDK's error as the agent's: a refused tool choice, or a failed call. */
function modelError(error, sdk, refusesToolChoice) {
  if (error instanceof sdk.APIError && error.status != null && refusesToolChoice(error.message)) {
    return new ToolChoiceUnsupported(error.message);
  }
  if (error instanceof sdk.APIError) {
    return new ModelCallFailed(
      error.status != null ? `status ${error.status}` : error.constructor.name,
    );
  }
  return error;
}
