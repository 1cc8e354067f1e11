// Performs SDK calls with the official `openai` and `@anthropic-ai/sdk` packages and prints what
// each SDK parsed, for tests/serve/test_node_sdk.py.
//
// stdin: a JSON list of calls, each
//   {"provider": "openai" | "anthropic", "baseURL": "...", "apiKey": "...",
//    "method": "chat.completions.create" | "responses.create" | "messages.create" |
//              "messages.stream",
//    "params": {...the request body...},
//    "headers": {...request headers; null removes one the SDK sends by default...},
//    "query": {...query parameters...}}
// stdout: one JSON line per call, in order, and nothing else:
//   {"response": ...}                     a plain answer, as the SDK returned it
//   {"events": [...]}                     a stream: every event or chunk the SDK yielded
//   {"events": [...], "final": ...}       messages.stream: and the message it accumulated
//   {"events": [...], "error": {"class", "status", "body", "message"}}
//                                          the SDK raised; `body` is the error's `.error`
// Calls run one after the other: a cassette answers repeated identical requests in order.
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

// An SDK that logs with console.log must not corrupt the results on stdout.
console.log = console.error;
console.info = console.error;

const METHODS = {
  'chat.completions.create': (client, params, options) =>
    client.chat.completions.create(params, options),
  'responses.create': (client, params, options) => client.responses.create(params, options),
  'messages.create': (client, params, options) => client.messages.create(params, options),
  'messages.stream': (client, params, options) => client.messages.stream(params, options),
};

function client(call) {
  // No retries: a retried request would be a second request to the cassette.
  const options = { baseURL: call.baseURL, apiKey: call.apiKey ?? 'sk-node-dummy', maxRetries: 0 };
  if (call.provider === 'openai') return new OpenAI(options);
  if (call.provider === 'anthropic') return new Anthropic(options);
  throw new TypeError(`unknown provider ${JSON.stringify(call.provider)}`);
}

function failure(error) {
  return {
    class: error?.constructor?.name ?? typeof error,
    status: error?.status ?? null,
    body: error?.error ?? null,
    message: String(error?.message ?? error),
  };
}

async function perform(call) {
  const method = METHODS[call.method];
  if (method === undefined) throw new TypeError(`unknown method ${JSON.stringify(call.method)}`);
  // Copies: messages.stream() accumulates its final message into the `message_start` event.
  const events = [];
  try {
    const options = { headers: call.headers ?? {}, query: call.query ?? {} };
    const answer = await method(client(call), call.params, options);
    if (call.method === 'messages.stream') {
      for await (const event of answer) events.push(structuredClone(event));
      return { events, final: await answer.finalMessage() };
    }
    if (!call.params.stream) return { response: answer };
    for await (const event of answer) events.push(event);
    return { events };
  } catch (error) {
    return { events, error: failure(error) };
  }
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function write(line) {
  if (!process.stdout.write(line + '\n')) {
    await new Promise((resolve) => process.stdout.once('drain', resolve));
  }
}

const calls = JSON.parse(await readStdin());
if (!Array.isArray(calls)) throw new TypeError('stdin must hold a JSON list of calls');
for (const call of calls) await write(JSON.stringify(await perform(call)));
