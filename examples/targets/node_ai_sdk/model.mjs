// The model calls, made with the Vercel AI SDK: `openai.chat(model)` (Chat Completions, the wire
// the scenarios' scripts and cassettes speak) and `anthropic(model)` (Messages), each one step of
// `generateText`, or of `streamText` when the agent streams.
//
// The tools carry no `execute`, so the SDK never runs one: each call returns the model's text and
// tool calls, and the agent decides what runs. Retries are off (`maxRetries: 0`): a failed call is
// the agent's to handle, as a failed attempt or a failed run.

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import {
  generateText,
  jsonSchema,
  streamText,
  tool,
  ToolChoiceViolationError,
  UnsupportedFunctionalityError,
  wrapLanguageModel,
} from "ai";

const API_KEY = "example-target"; // `harness serve` takes any key and forwards none

// OpenAI models that take no tools at all: the SDK would send them tools anyway.
const OPENAI_NO_TOOLS = /^o1-(mini|preview)/;

const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;
const ANTHROPIC_THINKING_BUDGETS = { minimal: 1024, low: 4096, medium: 8192, high: 16384 };
// The provider adds this beta to every request with a function tool on a model that has
// structured outputs; it only matters for `strict` tools and `output_format`, which this agent
// never sends.
const STRUCTURED_OUTPUTS_BETA = "structured-outputs-2025-11-13";

// The SDK's finish reasons as the agent's stop reasons.
const STOPS = { stop: "end_turn", "tool-calls": "tool_use", length: "limit_reached" };

/**
 * The model `provider` serves at `baseURL`, as an async function from request to reply.
 *
 * A request is `{ model, system, messages (AI SDK model messages), tools: [{ name, description,
 * parameters, validate? }], toolChoice ("auto" or a tool name), maxTokens, temperature, reasoning,
 * stream }`. A reply is `{ text, toolCalls: [{ id, name, input, arguments, error }], stopReason,
 * reasoning }`: `arguments` is the call's JSON text, `error` the SDK's `NoSuchToolError` or
 * `InvalidToolInputError` for a call it could not accept (null otherwise), `stopReason` end_turn,
 * tool_use, limit_reached or other, and `reasoning` the reply's reasoning parts.
 *
 * It throws what the SDK throws: `APICallError` for a provider error, `ToolChoiceViolationError`
 * when a reply to a named tool choice has no call to that tool (streamed replies included, which
 * the SDK itself does not check), and `UnsupportedFunctionalityError` for tools on a model that
 * takes none.
 */
export function connect(provider, baseURL) {
  const models = provider === "openai" ? openAIModels(baseURL) : anthropicModels(baseURL);
  const settings = provider === "openai" ? openAISettings : anthropicSettings;
  return async (request) => {
    const argumentTexts = new Map();
    const call = {
      model: wrapLanguageModel({
        model: models(request.model),
        middleware: keepArgumentTexts(argumentTexts),
      }),
      system: request.system || undefined,
      messages: request.messages,
      tools: Object.fromEntries(request.tools.map((t) => [t.name, asTool(t)])),
      toolChoice:
        request.toolChoice === "auto" ? "auto" : { type: "tool", toolName: request.toolChoice },
      maxRetries: 0,
      ...settings(request),
    };
    return request.stream ? streamed(call, argumentTexts) : generated(call, argumentTexts);
  };
}

/**
 * Each tool call's arguments as the provider sent them, by call id. The SDK hands back parsed
 * input; the reply reports the text as it came, because a cut-off call has only its text (the
 * history sends the parsed input back, which the SDK spells its own way).
 */
function keepArgumentTexts(texts) {
  const keep = (part) => {
    if (part.type === "tool-call") texts.set(part.toolCallId, part.input);
  };
  return {
    specificationVersion: "v3",
    wrapGenerate: async ({ doGenerate }) => {
      const result = await doGenerate();
      result.content.forEach(keep);
      return result;
    },
    wrapStream: async ({ doStream }) => {
      const { stream, ...rest } = await doStream();
      const kept = new TransformStream({
        transform(part, controller) {
          keep(part);
          controller.enqueue(part);
        },
      });
      return { stream: stream.pipeThrough(kept), ...rest };
    },
  };
}

function openAIModels(baseURL) {
  const openai = createOpenAI({ baseURL, apiKey: API_KEY });
  return (name) =>
    wrapLanguageModel({
      model: openai.chat(name),
      middleware: {
        specificationVersion: "v3",
        transformParams: async ({ params }) => refuseTools(name, params),
      },
    });
}

/** The cell's Anthropic base URL is the official SDK's, which adds `/v1/messages`; the AI SDK
 * adds only `/messages`, so its base URL ends in `/v1`. */
function anthropicModels(baseURL) {
  const anthropic = createAnthropic({
    baseURL: `${baseURL.replace(/\/+$/, "")}/v1`,
    apiKey: API_KEY,
    fetch: recordedMessagesWire,
  });
  return (name) => anthropic(name);
}

/** The SDK sends tools to any model; o1-mini and o1-preview refuse them, so nothing is sent. */
function refuseTools(name, params) {
  if (params.tools?.length && OPENAI_NO_TOOLS.test(name)) {
    throw new UnsupportedFunctionalityError({ functionality: `tools on ${name}` });
  }
  return params;
}

// A reasoning model reasons unless told not to: what turns its reasoning off, or as far down as
// it goes (a forced call disables reasoning). The first match wins.
const OPENAI_REASONING_OFF = [
  [/^o1-(mini|preview)/, null], // takes no effort at all
  [/^gpt-5[.\d]*-chat/, null], // does not reason
  [/^gpt-5\.[1-9]/, "none"], // from GPT-5.1 on, reasoning turns off
  [/^gpt-5/, "minimal"], // GPT-5's least
  [/^o[134](-|$)/, "low"], // the o-series' least
];

function openAISettings(request) {
  const effort =
    request.reasoning === "disabled"
      ? (OPENAI_REASONING_OFF.find(([rule]) => rule.test(request.model))?.[1] ?? null)
      : request.reasoning;
  return {
    maxOutputTokens: request.maxTokens ?? undefined,
    temperature: request.temperature ?? undefined,
    providerOptions: effort ? { openai: { reasoningEffort: effort } } : undefined,
  };
}

/** Messages counts thinking toward `max_tokens`, and the SDK adds the thinking budget to
 * `maxOutputTokens`: the budget is taken out of it, so `max_tokens` is the agent's. */
function anthropicSettings(request) {
  const effort = request.reasoning === "disabled" ? null : request.reasoning;
  let budget = effort ? ANTHROPIC_THINKING_BUDGETS[effort] : 0;
  const maxTokens = request.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS + budget;
  if (effort && request.maxTokens != null) {
    budget = Math.max(1024, Math.min(budget, maxTokens - 1));
  }
  return {
    maxOutputTokens: maxTokens - budget,
    temperature: request.temperature ?? undefined,
    providerOptions: effort
      ? { anthropic: { thinking: { type: "enabled", budgetTokens: budget } } }
      : undefined,
  };
}

/**
 * The SDK's Messages request without the structured-outputs beta, which the provider adds for
 * every function tool and which only matters for `strict` tools and `output_format`, never sent
 * here. The header changes what Anthropic does, so a cassette keys it: a recording made without
 * the beta is not replayed for a request that asks for it.
 */
async function recordedMessagesWire(url, init) {
  const headers = new Headers(init.headers);
  const betas = (headers.get("anthropic-beta") ?? "")
    .split(",")
    .map((beta) => beta.trim())
    .filter((beta) => beta && beta !== STRUCTURED_OUTPUTS_BETA);
  if (betas.length) headers.set("anthropic-beta", betas.join(","));
  else headers.delete("anthropic-beta");
  return fetch(url, { ...init, headers });
}

function asTool({ description, parameters, validate }) {
  return tool({
    description,
    inputSchema: jsonSchema(parameters ?? { type: "object", properties: {} }, { validate }),
    // A streamed Messages call would ask for fine-grained (unbuffered) tool input streaming,
    // which the recorded requests never did.
    providerOptions: { anthropic: { eagerInputStreaming: false } },
  });
}

// -- one step ---------------------------------------------------------------------------------------

async function generated(call, argumentTexts) {
  const result = await generateText(call);
  return reply(result.content, result.finishReason, argumentTexts);
}

/** The stream's parts collected into one reply; an error part is thrown. */
async function streamed(call, argumentTexts) {
  const content = [];
  const open = new Map(); // text and reasoning parts by id, as their deltas arrive
  let finishReason = "other";
  const result = streamText({ ...call, onError: () => {} }); // errors arrive as parts below
  for await (const part of result.fullStream) {
    if (part.type === "error") throw part.error;
    if (part.type === "text-start" || part.type === "reasoning-start") {
      const type = part.type === "text-start" ? "text" : "reasoning";
      open.set(part.id, { type, text: "", providerMetadata: part.providerMetadata });
      content.push(open.get(part.id));
    } else if (part.type === "text-delta" || part.type === "reasoning-delta") {
      const opened = open.get(part.id);
      opened.text += part.text;
      // Anthropic's thinking signature arrives as metadata of a delta or of the end
      if (part.providerMetadata) opened.providerMetadata = part.providerMetadata;
    } else if (part.type === "reasoning-end" && part.providerMetadata) {
      open.get(part.id).providerMetadata = part.providerMetadata;
    } else if (part.type === "tool-call") content.push(part);
    else if (part.type === "finish-step") finishReason = part.finishReason;
  }
  const choice = call.toolChoice;
  // `streamText` enforces only a `none` tool choice; a named one is checked here as
  // `generateText` checks it, with the same error (its content: the provider's parts).
  if (
    choice.type === "tool" &&
    !content.some((p) => p.type === "tool-call" && p.toolName === choice.toolName)
  ) {
    throw new ToolChoiceViolationError({
      toolChoice: choice,
      finishReason,
      provider: call.model.provider,
      modelId: call.model.modelId,
      content: content.map((p) =>
        p.type === "tool-call" ? { ...p, input: argumentTexts.get(p.toolCallId) ?? "" } : p,
      ),
    });
  }
  return reply(content, finishReason, argumentTexts);
}

/** Content parts (the SDK's, or a `ToolChoiceViolationError`'s) and a finish reason as a reply. */
export function reply(content, finishReason, argumentTexts = new Map()) {
  const replied = {
    text: "",
    toolCalls: [],
    stopReason: STOPS[finishReason] ?? "other",
    reasoning: [],
  };
  for (const part of content) {
    if (part.type === "text") replied.text += part.text;
    else if (part.type === "reasoning") {
      replied.reasoning.push({
        type: "reasoning",
        text: part.text,
        providerOptions: part.providerMetadata,
      });
    } else if (part.type === "tool-call") {
      // a call the SDK accepted has parsed input; a refused one, and a violation's, its raw text
      const raw = typeof part.input === "string" ? part.input : null;
      replied.toolCalls.push({
        id: part.toolCallId,
        name: part.toolName,
        input: raw === null ? part.input : parsedOrNull(raw),
        arguments: argumentTexts.get(part.toolCallId) ?? raw ?? JSON.stringify(part.input),
        error: part.invalid ? part.error : null,
      });
    }
  }
  return replied;
}

function parsedOrNull(text) {
  try {
    return JSON.parse(text || "{}");
  } catch {
    return null;
  }
}
