// A small chat web app: the page sends the conversation so far, this server asks the model with
// the official `openai` SDK (a streamed chat completion) and streams the answer's text back as it
// arrives. Plain node:http, no framework.
//
// Under test, HARNESS_URL names a running `harness serve`: every model call then goes to the
// harness session named by the request's `x-harness-session` header, which each Playwright test
// sets for its own browser context. Without HARNESS_URL the header is ignored and the SDK talks
// to OpenAI as configured by OPENAI_API_KEY (and OPENAI_BASE_URL).

import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import OpenAI from 'openai';

const PORT = Number(process.env.PORT ?? 3000);
const HOST = process.env.HOST ?? '127.0.0.1';
const MODEL = process.env.CHAT_MODEL ?? 'gpt-4o-mini';
const HARNESS_URL = process.env.HARNESS_URL?.replace(/\/+$/, '');
const SESSION_HEADER = 'x-harness-session';
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/; // becomes a path segment: nothing else gets in
const MAX_BODY_BYTES = 1_000_000;
const SYSTEM_PROMPT = 'You are a concise assistant. Answer in one or two sentences.';
const PAGE = await readFile(new URL('./index.html', import.meta.url));

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Production: one client for the process, made on first use. Under test: a client per request,
// pointed at the caller's harness session (`/s/<id>/v1` is the base URL the OpenAI SDK takes for
// a session).
let productionClient;

function modelClient(request) {
  if (!HARNESS_URL) return (productionClient ??= new OpenAI());
  const session = request.headers[SESSION_HEADER];
  if (typeof session !== 'string' || !SESSION_ID.test(session)) {
    throw new HttpError(400, `send the harness session id in the ${SESSION_HEADER} header`);
  }
  // The harness never forwards this key; maxRetries 0 so a replayed error is not retried into
  // the next recorded answer.
  return new OpenAI({ baseURL: `${HARNESS_URL}/s/${session}/v1`, apiKey: 'unused', maxRetries: 0 });
}

async function readJson(request) {
  const parts = [];
  let size = 0;
  for await (const part of request) {
    size += part.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'the conversation is too long');
    parts.push(part);
  }
  try {
    return JSON.parse(Buffer.concat(parts).toString('utf8'));
  } catch {
    throw new HttpError(400, 'the body is not JSON');
  }
}

function conversation(body) {
  const turns = body?.turns;
  const valid =
    Array.isArray(turns) &&
    turns.length > 0 &&
    turns.every(
      (turn) => ['user', 'assistant'].includes(turn?.role) && typeof turn.content === 'string',
    ) &&
    turns.at(-1).role === 'user';
  if (!valid) {
    throw new HttpError(400, 'send {"turns": [{"role", "content"}, ...]} ending with a user turn');
  }
  return turns.map(({ role, content }) => ({ role, content }));
}

async function chat(request, response) {
  const turns = conversation(await readJson(request));
  const client = modelClient(request);
  // Awaiting the call before answering: a refused call (a replay miss is a 404) becomes an
  // error status for the page instead of a stream cut short.
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'system', content: SYSTEM_PROMPT }, ...turns],
    stream: true,
  });
  response.writeHead(200, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  try {
    for await (const chunk of stream) {
      const text = chunk.choices[0]?.delta?.content;
      if (text) response.write(text);
    }
  } catch (error) {
    console.error(`model call failed (mid-stream): ${error.message}`);
    response.destroy(error); // the page's reader fails instead of showing half an answer
    return;
  }
  response.end();
}

async function handle(request, response) {
  const { pathname } = new URL(request.url, 'http://app');
  if (request.method === 'GET' && pathname === '/') {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(PAGE);
  } else if (request.method === 'GET' && pathname === '/health') {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"status":"ok"}');
  } else if (request.method === 'POST' && pathname === '/api/chat') {
    await chat(request, response);
  } else {
    throw new HttpError(404, `no route ${request.method} ${pathname}`);
  }
}

const server = createServer((request, response) => {
  handle(request, response).catch((error) => {
    // An SDK error carries the provider's status and message: through harness serve, a replay
    // miss is a 404 whose message is the miss's diagnosis (the nearest recorded request).
    const fromModel = error instanceof OpenAI.APIError;
    const status = error instanceof HttpError ? error.status : 502;
    const message = error.message ?? String(error);
    if (fromModel) console.error(`model call failed (${error.status ?? 'no status'}): ${message}`);
    else if (status === 502) console.error(`chat failed: ${error.stack ?? message}`);
    if (response.headersSent) {
      response.destroy();
      return;
    }
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: message }));
  });
});

server.listen(PORT, HOST, () => {
  const mode = HARNESS_URL ? `model calls through ${HARNESS_URL}` : 'model calls to OpenAI';
  console.log(`chat app on http://${HOST}:${PORT} (${mode})`);
});
