// The model calls, made with `fetch`: OpenAI Chat Completions and Anthropic Messages.
//
// The Node example (`../node_openai_sdk`) makes these calls with the official SDKs. Inside
// workerd a Worker has no package resolution (wrangler would bundle the SDKs in), so this file
// sends the very request bodies those SDKs send, with the headers that matter
// (`anthropic-version`), and reads the answers, streamed or not, the way the SDKs do. Nothing is
// retried: a failed call is the agent's to handle, as a failed attempt or a failed run.
//
// Every function here returns plain JSON values, so a Workflow step can return a reply as is.

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

/** The provider answered with an error, or could not be reached. */
export class ModelCallFailed extends Error {}

/** The provider or the model cannot be forced to call a named tool. */
export class ToolChoiceUnsupported extends ModelCallFailed {}

/**
 * The model `provider` serves at `baseURL`, as an async function from the agent's request to
 * `{ reply }` or `{ failure: { unsupported, message } }`: a failure is a value, not an exception,
 * so a Workflow step that made a failed call completes (and is never retried) like any other.
 */
export function connect(provider, baseURL) {
  const call = provider === "openai" ? openAIChat(baseURL) : anthropicMessages(baseURL);
  return async (request) => {
    try {
      return { reply: await call(request) };
    } catch (error) {
      if (!(error instanceof ModelCallFailed)) throw error;
      return {
        failure: { unsupported: error instanceof ToolChoiceUnsupported, message: error.message },
      };
    }
  };
}

/** POST `body` as JSON; the response, or ModelCallFailed when there is none. */
async function post(url, headers, body) {
  try {
    return await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...headers },
      body: JSON.stringify(body),
    });
  } catch (error) {
    throw new ModelCallFailed(`the model could not be reached (${error.name})`);
  }
}

/** The error a non-2xx response stands for: a refused tool choice, or a failed call. */
async function statusError(response, refusesToolChoice) {
  const text = await response.text();
  if (refusesToolChoice(text)) return new ToolChoiceUnsupported(`status ${response.status}`);
  return new ModelCallFailed(`status ${response.status}`);
}

/** The `data` of each server-sent event of `text`, with its event name. */
function serverSentEvents(text) {
  const events = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event = null;
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length) events.push({ event, data: data.join("\n") });
  }
  return events;
}

// -- OpenAI ---------------------------------------------------------------------------------------

function openAIChat(baseURL) {
  const url = `${baseURL.replace(/\/$/, "")}/chat/completions`;
  const refuses = (text) => OPENAI_REFUSES_TOOLS.test(text);
  return async (request) => {
    if (request.tools.length && OPENAI_NO_TOOLS.test(request.model)) {
      throw new ToolChoiceUnsupported(`${request.model} takes no tools`);
    }
    const response = await post(url, { authorization: `Bearer ${API_KEY}` }, openAIBody(request));
    if (!response.ok) throw await statusError(response, refuses);
    if (!request.stream) return openAIReply(await response.json());
    return openAIStreamed(await response.text());
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
    const off = OPENAI_REASONING_OFF.find(([rule]) => rule.test(request.model))?.[1] ?? null;
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

/** Text deltas joined, tool-call fragments joined by index, the last finish reason; an error
 * event fails the call, as the SDK raises it. */
function openAIStreamed(text) {
  let content = "";
  let finishReason = null;
  const calls = new Map();
  for (const { event, data } of serverSentEvents(text)) {
    if (data.startsWith("[DONE]")) break;
    const chunk = JSON.parse(data);
    if (event === "error" || chunk.error) throw new ModelCallFailed("the stream reported an error");
    for (const choice of chunk.choices ?? []) {
      content += choice.delta?.content ?? "";
      for (const part of choice.delta?.tool_calls ?? []) {
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
    text: content,
    toolCalls,
    stopReason: OPENAI_STOPS[finishReason] ?? "other",
    reasoningBlocks: [],
  };
}

// -- Anthropic ------------------------------------------------------------------------------------

function anthropicMessages(baseURL) {
  const url = `${baseURL.replace(/\/$/, "")}/v1/messages`;
  const headers = { "x-api-key": API_KEY, "anthropic-version": ANTHROPIC_VERSION };
  const refuses = (text) => {
    const lowered = text.toLowerCase();
    return (
      lowered.includes("tool_choice") &&
      (lowered.includes("thinking") || lowered.includes("forces tool use"))
    );
  };
  return async (request) => {
    const body = anthropicBody(request);
    const response = await post(url, headers, request.stream ? { ...body, stream: true } : body);
    if (!response.ok) throw await statusError(response, refuses);
    if (!request.stream) return anthropicReply(await response.json(), new Map());
    return anthropicStreamed(await response.text());
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

/** The message the events build, as the SDK's message stream accumulates it. Tool arguments are
 * kept as the raw JSON text that arrived: when the token limit cuts a call off, that text is
 * incomplete, and a parsed input would only be a guess. */
function anthropicStreamed(text) {
  let message = null;
  const partial = new Map();
  for (const { event, data } of serverSentEvents(text)) {
    const payload = JSON.parse(data);
    const type = payload.type ?? event;
    if (type === "error") throw new ModelCallFailed("the stream reported an error");
    if (type === "message_start") message = { ...payload.message, content: [] };
    else if (type === "content_block_start") message.content[payload.index] = payload.content_block;
    else if (type === "content_block_delta") {
      const block = message.content[payload.index];
      const delta = payload.delta;
      if (delta.type === "text_delta") block.text += delta.text;
      else if (delta.type === "input_json_delta")
        partial.set(payload.index, (partial.get(payload.index) ?? "") + delta.partial_json);
      else if (delta.type === "thinking_delta") block.thinking += delta.thinking;
      else if (delta.type === "signature_delta") block.signature = delta.signature;
    } else if (type === "message_delta") {
      message.stop_reason = payload.delta.stop_reason ?? message.stop_reason;
    }
  }
  if (message === null) throw new ModelCallFailed("the stream held no message");
  return anthropicReply(message, partial);
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
