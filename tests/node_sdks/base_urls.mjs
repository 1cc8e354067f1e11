// Sends one plain and one streamed request with each Node.js SDK whose base URL setting
// docs/serve.md gives, set as the docs say, for tests/serve/test_sdk_base_urls.py.
//
// stdin: a JSON list of runs, each
//   {"sdk": "openai" | "@anthropic-ai/sdk" | "@ai-sdk/openai" | "@ai-sdk/anthropic" |
//           "@ai-sdk/google" | "@langchain/openai" | "@langchain/anthropic",
//    "via": "option" | "variable",   the SDK's option, or the environment variable it reads
//    "variable": "OPENAI_BASE_URL",  the variable, for "variable"
//    "baseURL": "http://127.0.0.1:PORT/s/<id>/v1"}
// stdout: one JSON line per run, in order, and nothing else:
//   {"plain": "<the answer's text>", "streamed": "<the streamed text, joined>"}
//   {"error": "<class>: <message>"}   the SDK raised
import Anthropic from '@anthropic-ai/sdk';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';

// An SDK that logs with console.log (or warns) must not corrupt the results on stdout.
console.log = console.error;
console.info = console.error;
console.warn = console.error;

const KEY = 'sk-node-client-dummy';
const PROMPT = 'Capital of France?';
const OPENAI_MODEL = 'gpt-4o-mini';
const ANTHROPIC_MODEL = 'claude-sonnet-4-5';
const GEMINI_MODEL = 'gemini-2.5-flash';

async function joined(stream, text) {
  let whole = '';
  for await (const piece of stream) whole += text(piece) ?? '';
  return whole;
}

async function aiSdk(model) {
  const plain = await generateText({ model, prompt: PROMPT, maxRetries: 0 });
  const streamed = streamText({
    model,
    prompt: PROMPT,
    maxRetries: 0,
    onError: () => {}, // rethrown by `text` below, with the SDK's own error
  });
  return { plain: plain.text, streamed: await streamed.text };
}

async function langChain(chat) {
  const plain = await chat.invoke(PROMPT);
  const streamed = await joined(await chat.stream(PROMPT), (chunk) => chunk.content);
  return { plain: plain.content, streamed };
}

// Each SDK as a user sets it up: `baseURL` is undefined when the environment variable holds it.
const SDKS = {
  openai: async (baseURL) => {
    const client = new OpenAI({ baseURL, apiKey: KEY, maxRetries: 0 });
    const body = { model: OPENAI_MODEL, messages: [{ role: 'user', content: PROMPT }] };
    const plain = await client.chat.completions.create(body);
    const stream = await client.chat.completions.create({ ...body, stream: true });
    return {
      plain: plain.choices[0].message.content,
      streamed: await joined(stream, (chunk) => chunk.choices[0]?.delta?.content),
    };
  },
  '@anthropic-ai/sdk': async (baseURL) => {
    const client = new Anthropic({ baseURL, apiKey: KEY, maxRetries: 0 });
    const body = {
      model: ANTHROPIC_MODEL,
      max_tokens: 64,
      messages: [{ role: 'user', content: PROMPT }],
    };
    const plain = await client.messages.create(body);
    const stream = await client.messages.create({ ...body, stream: true });
    return {
      plain: plain.content[0].text,
      streamed: await joined(stream, (event) => event.delta?.text),
    };
  },
  '@ai-sdk/openai': (baseURL) => aiSdk(createOpenAI({ baseURL, apiKey: KEY })(OPENAI_MODEL)),
  '@ai-sdk/anthropic': (baseURL) =>
    aiSdk(createAnthropic({ baseURL, apiKey: KEY })(ANTHROPIC_MODEL)),
  '@ai-sdk/google': (baseURL) =>
    aiSdk(createGoogleGenerativeAI({ baseURL, apiKey: KEY })(GEMINI_MODEL)),
  '@langchain/openai': (baseURL) =>
    langChain(
      new ChatOpenAI({ model: OPENAI_MODEL, apiKey: KEY, maxRetries: 0, configuration: { baseURL } }),
    ),
  '@langchain/anthropic': (baseURL) =>
    langChain(
      new ChatAnthropic({
        model: ANTHROPIC_MODEL,
        apiKey: KEY,
        maxRetries: 0,
        anthropicApiUrl: baseURL,
      }),
    ),
};

// None of the variables any SDK here reads may leak in from the caller's environment.
for (const name of ['OPENAI_BASE_URL', 'OPENAI_API_BASE', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_URL']) {
  delete process.env[name];
}

async function perform(run) {
  const sdk = SDKS[run.sdk];
  if (sdk === undefined) throw new TypeError(`unknown SDK ${JSON.stringify(run.sdk)}`);
  if (run.via === 'option') return sdk(run.baseURL);
  process.env[run.variable] = run.baseURL;
  try {
    return await sdk(undefined);
  } finally {
    delete process.env[run.variable];
  }
}

const input = await new Promise((resolve) => {
  let text = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (piece) => (text += piece));
  process.stdin.on('end', () => resolve(text));
});

for (const run of JSON.parse(input)) {
  let result;
  try {
    result = await perform(run);
  } catch (error) {
    result = { error: `${error?.constructor?.name ?? typeof error}: ${error?.message ?? error}` };
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
