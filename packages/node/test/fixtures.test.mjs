// The Playwright and Vitest fixtures, each run by its own runner on a suite of two tests, against
// a harness serve started here: every test gets a session of its own, and its report.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startServe } from "completion-harness";
import { startApp } from "./fixtures/app.mjs";
import { FIXTURES, PACKAGE, harnessBin, needs } from "./support.mjs";

const HARNESS_BIN = harnessBin();
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Run a runner of node_modules/.bin without blocking: the app and the server live in this process. */
function run(bin, args, env) {
  const child = spawn(join(PACKAGE, "node_modules", ".bin", bin), args, {
    cwd: PACKAGE,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  return new Promise((resolve) => child.once("close", (status) => resolve({ status, output })));
}

describe("the test fixtures", { skip: HARNESS_BIN === null && !process.env.CI && "no harness to serve with" }, () => {
  let folder;
  let server;

  before(async () => {
    if (!HARNESS_BIN) throw new Error("no harness to serve with: set HARNESS_BIN (CI must run these tests)");
    folder = mkdtempSync(join(tmpdir(), "harness-fixtures-"));
    server = await startServe({ cassettes: folder, recordMode: "none", env: { HARNESS_BIN } });
  });

  after(async () => {
    await server?.stop();
    rmSync(folder, { recursive: true, force: true });
  });

  it("completion-harness/playwright opens a session per test, sends its header and attaches its report", async (t) => {
    if (!needs(t, `Chromium (${CHROMIUM})`, existsSync(CHROMIUM))) return;
    const app = await startApp(server.url);
    const report = join(folder, "playwright.json");
    try {
      const { status, output } = await run(
        "playwright",
        ["test", "--config", join(FIXTURES, "playwright", "playwright.config.mjs")],
        { HARNESS_URL: server.url, APP_URL: app.url, REPORT_FILE: report, OUTPUT_DIR: join(folder, "results") },
      );
      assert.equal(status, 0, output);
    } finally {
      app.close();
    }
    const tests = JSON.parse(readFileSync(report, "utf8")).suites.flatMap((suite) => suite.specs);
    assert.equal(tests.length, 2);
    const sessions = new Set();
    for (const spec of tests) {
      const [result] = spec.tests[0].results;
      assert.equal(result.status, "passed", spec.title);
      const attachment = result.attachments.find((attached) => attached.name === "harness-session");
      assert.equal(attachment.contentType, "application/json");
      const attached = JSON.parse(Buffer.from(attachment.body, "base64").toString("utf8"));
      assert.deepEqual(attached.requests.map((request) => request.endpoint), ["/v1/chat/completions"]);
      sessions.add(attached.id);
    }
    assert.equal(sessions.size, 2);
    // closed after its test
    const closed = await fetch(`${server.url}/_harness/sessions/${[...sessions][0]}`);
    assert.equal(closed.status, 404);
  });

  it("completion-harness/vitest opens a session per test and keeps its report in the test's metadata", async () => {
    const report = join(folder, "vitest.json");
    const { status, output } = await run(
      "vitest",
      ["run", "--root", join(FIXTURES, "vitest"), "--reporter", "default", "--reporter", join(FIXTURES, "vitest", "reporter.mjs")],
      { HARNESS_URL: server.url, REPORT_FILE: report, VITE_CACHE_DIR: join(folder, "vite") },
    );
    assert.equal(status, 0, output);
    const tests = JSON.parse(readFileSync(report, "utf8"));
    assert.deepEqual(tests.map((test) => [test.name, test.state]), [
      ["gives the test a session of its own", "passed"],
      ["and the next test another", "passed"],
      ["the entry point exports test, expect and SESSION_HEADER", "passed"],
    ]);
    assert.deepEqual(
      tests.map((test) => test.harnessSession.requests.map((request) => request.kind)),
      [["work"], ["work"], []],
    );
    assert.equal(new Set(tests.map((test) => test.harnessSession.id)).size, 3);
  });
});
