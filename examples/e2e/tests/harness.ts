import { test as base, expect } from '@playwright/test';

// One harness session per test: opened on the shared cassette before the test, its id sent with
// every request of the test's browser context (the app server routes the model calls by it),
// deleted after the test. A session replays the cassette from its start, so tests running at
// the same time, in any order, each get the answers their own requests were recorded with.

const HARNESS_URL = process.env.HARNESS_URL ?? 'http://127.0.0.1:8787';
const CASSETTE = process.env.HARNESS_CASSETTE ?? 'chat';
const RECORD_MODE = process.env.HARNESS_RECORD_MODE; // unset: the server's own mode
export const SESSION_HEADER = 'x-harness-session';

/** One request a session received, as `GET /_harness/sessions/<id>` reports it. */
export type SessionRequest = {
  index: number;
  endpoint: string;
  kind?: 'work' | 'forced';
  request?: { messages: Array<{ kind: string; content?: string; text?: string }> };
  error?: string;
};

export type HarnessSession = {
  id: string;
  /** Every model call the app made in this test, in order. */
  requests(): Promise<SessionRequest[]>;
};

async function control(method: string, path: string, body?: object) {
  const response = await fetch(`${HARNESS_URL}/_harness${path}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : undefined,
    body: body ? JSON.stringify(body) : undefined,
  });
  const payload = await response.json();
  if (!response.ok) {
    throw new Error(`${method} /_harness${path}: ${payload.error?.message ?? response.status}`);
  }
  return payload;
}

export const test = base.extend<{ harnessSession: HarnessSession }>({
  harnessSession: [
    async ({ context }, use, testInfo) => {
      const opened = await control('POST', '/sessions', {
        cassette: CASSETTE,
        ...(RECORD_MODE ? { record_mode: RECORD_MODE } : {}),
      });
      await context.setExtraHTTPHeaders({ [SESSION_HEADER]: opened.id });
      const report = () => control('GET', `/sessions/${opened.id}`);
      try {
        await use({ id: opened.id, requests: async () => (await report()).requests });
      } finally {
        // What the session received, kept with the test's results; then the session is closed
        // (a recording session saves its cassette).
        await testInfo.attach('harness-session', {
          body: JSON.stringify(await report(), null, 2),
          contentType: 'application/json',
        });
        await control('DELETE', `/sessions/${opened.id}`);
      }
    },
    { auto: true },
  ],
});

export { expect };
