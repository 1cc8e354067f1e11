// A session's base URLs in every spelling an SDK writes them: with and without `/v1`, one request.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { openSession, startServe } from "completion-harness";
import { harnessBin } from "./support.mjs";

const HARNESS_BIN = harnessBin();
const MESSAGES = { model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "Capital of France?" }] };
const CHAT = { model: "gpt-4o-mini", messages: [{ role: "user", content: "Capital of France?" }] };

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "unused", "anthropic-version": "2023-06-01" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

describe("session.baseUrls", { skip: HARNESS_BIN === null && !process.env.CI && "no harness to serve with" }, () => {
  let cassettes;
  let server;

  before(async () => {
    if (!HARNESS_BIN) throw new Error("no harness to serve with: set HARNESS_BIN (CI must run these tests)");
    cassettes = mkdtempSync(join(tmpdir(), "harness-cassettes-"));
    server = await startServe({ cassettes, recordMode: "none", env: { HARNESS_BIN } });
  });

  after(async () => {
    await server?.stop();
    rmSync(cassettes, { recursive: true, force: true });
  });

  it("answers Anthropic's endpoint as @anthropic-ai/sdk and as @ai-sdk/anthropic call it", async () => {
    const session = await openSession(server.url, { script: [{ text: "One." }, { text: "Two." }, { text: "Three." }], provider: "anthropic" });
    try {
      const answers = [
        await post(`${session.baseUrls.anthropic}/v1/messages`, MESSAGES), // new Anthropic({ baseURL: baseUrls.anthropic })
        await post(`${session.url}/v1/messages`, MESSAGES), // createAnthropic({ baseURL: `${session.url}/v1` })
        await post(`${session.baseUrls.anthropic}/messages`, MESSAGES), // createAnthropic({ baseURL: baseUrls.anthropic })
      ];
      assert.deepEqual(
        answers.map(({ status, body }) => [status, body.content[0].text]),
        [[200, "One."], [200, "Two."], [200, "Three."]],
      );
      assert.deepEqual((await session.requests()).map((request) => request.endpoint), Array(3).fill("/v1/messages"));
    } finally {
      await session.close();
    }
  });

  it("answers OpenAI's endpoint with and without /v1", async () => {
    const session = await openSession(server.url, { script: [{ text: "One." }, { text: "Two." }], provider: "openai" });
    try {
      const answers = [await post(`${session.baseUrls.openai}/chat/completions`, CHAT), await post(`${session.url}/chat/completions`, CHAT)];
      assert.deepEqual(
        answers.map(({ status, body }) => [status, body.choices[0].message.content]),
        [[200, "One."], [200, "Two."]],
      );
      assert.deepEqual((await session.requests()).map((request) => request.endpoint), Array(2).fill("/v1/chat/completions"));
    } finally {
      await session.close();
    }
  });

  it("names the URL to give an SDK that adds /v1 itself when it was given one more", async () => {
    const session = await openSession(server.url, { script: [{ text: "One." }], provider: "anthropic" });
    try {
      const refused = await post(`${session.url}/v1/v1/messages`, MESSAGES); // new Anthropic({ baseURL: `${session.url}/v1` })
      assert.equal(refused.status, 404);
      assert.match(refused.body.error.message, new RegExp(`give it the session's URL, /s/${session.id}, without /v1`));
    } finally {
      await session.close();
    }
  });
});
