import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, describe, it } from "node:test";
import { HarnessError, openSession, startServe } from "completion-harness";
import { openTestSession } from "../dist/test-session.js"; // internal: what both fixtures call
import { harnessBin, needs } from "./support.mjs";

const HARNESS_BIN = harnessBin();
const env = { HARNESS_BIN: HARNESS_BIN ?? undefined };
const QUESTION = { model: "gpt-4o-mini", messages: [{ role: "user", content: "Capital of France?" }] };

async function chat(baseUrl, body = QUESTION) {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer unused" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

function rejectsWith(code, pattern) {
  return (error) => {
    assert.ok(error instanceof HarnessError, `not a HarnessError: ${error}`);
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return true;
  };
}

describe("startServe and openSession", { skip: HARNESS_BIN === null && !process.env.CI && "no harness to serve with" }, () => {
  let cassettes;
  let server;

  before(async () => {
    if (!HARNESS_BIN) throw new Error("no harness to serve with: set HARNESS_BIN (CI must run these tests)");
    cassettes = mkdtempSync(join(tmpdir(), "harness-cassettes-"));
    server = await startServe({ cassettes, recordMode: "none", env });
  });

  after(async () => {
    await server?.stop();
    rmSync(cassettes, { recursive: true, force: true });
  });

  it("serves a script session and reports every request it received", async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const session = await openSession(server.url, { script: [{ text: "Paris." }], provider: "openai" });
    assert.deepEqual(session.baseUrls, { openai: `${session.url}/v1`, anthropic: session.url, gemini: session.url });
    assert.equal(session.url, `${server.url}/s/${session.id}`);
    assert.deepEqual(session.headers, { "x-harness-session": session.id });

    const answered = await chat(session.baseUrls.openai);
    const missed = await chat(session.baseUrls.openai); // the script has one reply

    assert.equal(answered.status, 200);
    assert.equal(answered.body.choices[0].message.content, "Paris.");
    assert.equal(missed.status, 404);
    const requests = await session.requests();
    assert.deepEqual(
      requests.map(({ index, endpoint, provider, kind }) => ({ index, endpoint, provider, kind })),
      [
        { index: 0, endpoint: "/v1/chat/completions", provider: "openai", kind: "work" },
        { index: 1, endpoint: "/v1/chat/completions", provider: "openai", kind: "work" },
      ],
    );
    // the keys NeutralRequest and NeutralMessage declare (src/serve.ts): a new one fails here
    assert.deepEqual(Object.keys(requests[0].request).sort(), [
      "max_tokens", "messages", "model", "reasoning", "response_format", "stop_sequences",
      "stream", "system", "temperature", "tool_choice", "tools", "top_p",
    ]);
    assert.deepEqual(requests[0].request.messages, [{ kind: "user", content: "Capital of France?", metadata: {} }]);
    const report = await session.report();
    assert.deepEqual(Object.keys(report).sort(), ["id", "misses", "output_tool", "requests"]);
    assert.equal(report.output_tool, "__finish__");
    assert.deepEqual(await session.misses(), [
      "the script has 1 repl(ies) and the code under test made call #2, a work call (POST /v1/chat/completions); add a reply",
    ]);
    assert.deepEqual(report.misses, await session.misses());

    await session.close();
    await session.close(); // a second close does nothing
    await assert.rejects(session.requests(), rejectsWith("control_failed", /^GET \/_harness\/sessions\/\w+ answered 404: no session/));
    assert.equal((await chat(session.baseUrls.openai)).status, 404);
  });

  it("calls a forced request forced", async () => {
    const session = await openSession(server.url, { script: [{ text: "ok" }], provider: "openai", outputTool: "submit" });
    const tool = { type: "function", function: { name: "submit", parameters: { type: "object", properties: {} } } };
    await chat(session.baseUrls.openai, { ...QUESTION, tools: [tool], tool_choice: { type: "function", function: { name: "submit" } } });
    assert.deepEqual((await session.requests()).map((request) => request.kind), ["forced"]);
    await session.close();
  });

  it("passes the server's refusal on, with its status", async () => {
    await assert.rejects(
      openSession(server.url, { cassette: "chat", recordMode: "once" }),
      (error) =>
        rejectsWith("control_failed", /^POST \/_harness\/sessions answered 403: .*--allow-session-record/)(error) &&
        error.status === 403,
    );
    await assert.rejects(
      openSession(server.url, { cassette: "never-recorded" }),
      rejectsWith("control_failed", /answered 400: cassette never-recorded\.json does not exist and --record-mode is none/),
    );
    await assert.rejects(
      openSession(server.url, { cassette: "chat", recordMode: "sometimes" }),
      rejectsWith("invalid_argument", /^expected one of none, once, new_episodes, all but got recordMode="sometimes" \(type=string\)$/),
    );
  });

  it("says when no server answers", async () => {
    await assert.rejects(
      openSession("http://127.0.0.1:9", { script: [] }),
      rejectsWith("server_unreachable", /^POST \/_harness\/sessions: no harness serve answered at http:\/\/127\.0\.0\.1:9 \(.+\); is it running\?$/),
    );
    await assert.rejects(openSession("127.0.0.1:8787"), rejectsWith("invalid_argument", /^expected the server's URL/));
  });

  it("records a cassette through a session, then replays it on a server of its own", async () => {
    const provider = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        response.setHeader("content-type", "application/json");
        response.end(JSON.stringify({
          id: "chatcmpl-1", object: "chat.completion", created: 1, model: "gpt-4o-mini",
          choices: [{ index: 0, message: { role: "assistant", content: "Recorded Paris." }, finish_reason: "stop" }],
          usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
        }));
      });
    });
    await new Promise((resolve) => provider.listen(0, "127.0.0.1", resolve));
    const folder = mkdtempSync(join(tmpdir(), "harness-record-"));
    try {
      const recorder = await startServe({
        cassettes: folder,
        recordMode: "once",
        env: { ...env, OPENAI_BASE_URL: `http://127.0.0.1:${provider.address().port}/v1`, OPENAI_API_KEY: "sk-test" },
      });
      try {
        const session = await openSession(recorder.url, { cassette: "capital" });
        assert.equal((await chat(session.baseUrls.openai)).body.choices[0].message.content, "Recorded Paris.");
        await session.close();
      } finally {
        await recorder.stop();
      }
      assert.ok(existsSync(join(folder, "capital.json")));
      assert.doesNotMatch(readFileSync(join(folder, "capital.json"), "utf8"), /sk-test/);

      const replayer = await startServe({ cassettes: folder, recordMode: "none", env, pace: "off", identicalRequests: "shared" });
      try {
        const session = await openSession(replayer.url, { cassette: "capital" });
        assert.equal((await chat(session.baseUrls.openai)).body.choices[0].message.content, "Recorded Paris.");
        // recorded once, shared by identical requests (the default for a new cassette)
        assert.equal((await chat(session.baseUrls.openai)).body.choices[0].message.content, "Recorded Paris.");
        const other = { ...QUESTION, messages: [{ role: "user", content: "Capital of Italy?" }] };
        const missed = await chat(session.baseUrls.openai, other);
        assert.equal(missed.status, 404);
        const misses = await session.misses();
        assert.equal(misses.length, 1);
        assert.equal(misses[0], missed.body.error.message); // the diagnosis the client got
        assert.match(misses[0], /Capital of Italy/);
        await session.close();
      } finally {
        await replayer.stop();
      }
      assert.match(replayer.output(), /cassette=capital openai \/v1\/chat\/completions \w+ replayed 200/);
      await assert.rejects(fetch(`${replayer.url}/_harness/health`)); // stopped
    } finally {
      provider.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("fails to start with what the server printed", async () => {
    await assert.rejects(
      startServe({ cassettes, recordMode: "none", env, args: ["--no-such-option"] }),
      rejectsWith("serve_exited", /serve --cassettes .* --no-such-option` exited \(exit 2\) before it was ready; it printed:\n[\s\S]*No such option '--no-such-option'/),
    );
    await assert.rejects(
      startServe({ cassettes, recordMode: "none", env, readyTimeoutMs: 1 }),
      rejectsWith("serve_timeout", /was not ready within 1 ms \(readyTimeoutMs\)/),
    );
    await assert.rejects(
      startServe({ cassettes, recordMode: "none", env: { HARNESS_BIN: join(cassettes, "no-harness-here") } }),
      rejectsWith("harness_not_found", /^could not start `.*no-harness-here serve .*` \(spawn .* ENOENT\): set HARNESS_BIN/),
    );
    await assert.rejects(
      startServe({ cassettes, recordMode: "replay" }),
      rejectsWith("invalid_argument", /^expected one of none, once, new_episodes, all but got recordMode="replay" \(type=string\)$/),
    );
    await assert.rejects(startServe({ cassettes, recordMode: "none", pace: 0 }), rejectsWith("invalid_argument", /pace=0 \(type=number\)$/));
    for (const pace of [0.0009, 1_000_001, Infinity, NaN]) {
      await assert.rejects(
        startServe({ cassettes, recordMode: "none", pace }),
        rejectsWith("invalid_argument", /^expected 'off', 'recorded' or a number of times faster from 0\.001 to 1000000 but got pace=/),
      );
    }
  });
});

describe("the fixtures' session", { skip: HARNESS_BIN === null && !process.env.CI && "no harness to serve with" }, () => {
  const saved = { ...process.env };
  let cassettes;
  let server;

  before(async () => {
    if (!HARNESS_BIN) throw new Error("no harness to serve with: set HARNESS_BIN (CI must run these tests)");
    cassettes = mkdtempSync(join(tmpdir(), "harness-cassettes-"));
    server = await startServe({ cassettes, recordMode: "none", env });
  });

  after(async () => {
    await server?.stop();
    rmSync(cassettes, { recursive: true, force: true });
  });

  afterEach(() => {
    for (const name of ["HARNESS_URL", "HARNESS_CASSETTE", "HARNESS_RECORD_MODE", "HARNESS_CONTROL_TOKEN"]) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  it("needs the server's URL and a cassette or a script, and says where to give them", async () => {
    delete process.env.HARNESS_URL;
    delete process.env.HARNESS_CASSETTE;
    await assert.rejects(openTestSession({ cassette: "chat" }), rejectsWith("invalid_argument", /^HARNESS_URL is not set: start harness serve/));
    process.env.HARNESS_URL = server.url;
    await assert.rejects(openTestSession({}), rejectsWith("invalid_argument", /^the harness fixture needs a cassette or a script: set HARNESS_CASSETTE/));
  });

  it("takes the cassette and the record mode from the environment, the options first", async () => {
    process.env.HARNESS_URL = server.url;
    process.env.HARNESS_CASSETTE = "chat";
    process.env.HARNESS_RECORD_MODE = "once";
    // the server records nothing, so a session asking to is refused: the mode was sent
    await assert.rejects(openTestSession({}), rejectsWith("control_failed", /^POST \/_harness\/sessions answered 403: record_mode 'once' is refused/));
    const scripted = await openTestSession({ script: [{ text: "hi" }], provider: "openai" }); // no record mode for a script
    await scripted.close();
    process.env.HARNESS_RECORD_MODE = "";
    // the cassette HARNESS_CASSETTE names, which this server has not recorded
    await assert.rejects(openTestSession({}), rejectsWith("control_failed", /answered 400: cassette chat\.json does not exist/));
    process.env.HARNESS_RECORD_MODE = "replay";
    await assert.rejects(
      openTestSession({ cassette: "chat" }),
      rejectsWith("invalid_argument", /^expected one of none, once, new_episodes, all \(or unset: the server's own mode\) but got HARNESS_RECORD_MODE="replay" \(type=string\)$/),
    );
    await assert.rejects(openTestSession({ cassette: "chat", recordMode: "none", url: "http://127.0.0.1:9" }), rejectsWith("server_unreachable", /127\.0\.0\.1:9/));
  });
});
