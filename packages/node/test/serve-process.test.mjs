// startServe cannot hang: stop() ends everything the command started, a command that is never
// ready is given up at readyTimeoutMs however much it prints, and a timeout that could never
// fire is refused.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import { HarnessError, startServe } from "completion-harness";
import { harnessBin, needs } from "./support.mjs";

const HARNESS_BIN = harnessBin();
const POSIX = process.platform !== "win32";

/** The live processes in process group `group`, or whose command line names `folder`. */
function processesOf(group, folder) {
  const table = execFileSync("ps", ["-A", "-o", "pid=,pgid=,stat=,args="], { encoding: "utf8" });
  return table
    .split("\n")
    .map((line) => line.trim().match(/^(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/))
    .filter((row) => row !== null && !row[3].startsWith("Z"))
    .filter(([, , pgid, , args]) => Number(pgid) === group || args.includes(folder))
    .map(([, pid, , , args]) => `${pid} ${args}`);
}

/** An executable shell script in `folder`. */
function script(folder, name, body) {
  const path = join(folder, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

function shellQuoted(text) {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

describe("startServe cannot hang", { skip: !POSIX && "process groups are POSIX" }, () => {
  let folder;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), "harness-serve-process-"));
  });

  afterEach(() => {
    rmSync(folder, { recursive: true, force: true });
  });

  it("stops the server a HARNESS_BIN wrapper runs without exec, and the wrapper", { timeout: 30_000 }, async (t) => {
    if (!needs(t, "harness", HARNESS_BIN)) return;
    // the shell stays the server's parent: SIGINT to the shell alone leaves the server running
    const wrapper = script(folder, "harness-wrapper", `echo $$ > "$0.pid"\n${shellQuoted(HARNESS_BIN)} "$@"`);
    const server = await startServe({ cassettes: folder, recordMode: "none", env: { HARNESS_BIN: wrapper } });
    const group = Number(readFileSync(`${wrapper}.pid`, "utf8"));
    assert.ok(processesOf(group, folder).length >= 2, "the wrapper and the server it runs");

    await server.stop();

    assert.deepEqual(processesOf(group, folder), []);
    await assert.rejects(fetch(`${server.url}/_harness/health`)); // nothing listens on its port
    await server.stop(); // a second stop resolves too
  });

  // Never ready, deaf to SIGINT and SIGTERM, and with children of its own: it floods stderr
  // with lines and stdout with one line that never ends. The test's timeout is the hang guard
  // (before, startServe waited 10 s for it to obey SIGINT, then for ever for its children).
  it("gives up at readyTimeoutMs on a command that floods its output, and ends all it started", { timeout: 5_000 }, async () => {
    const flood = script(folder, "flood", `trap '' INT TERM\necho $$ > "$0.pid"\nyes "$0" >&2 &\nyes "$0" | tr -d '\\n'`);

    await assert.rejects(
      startServe({ cassettes: folder, recordMode: "none", env: { HARNESS_BIN: flood }, readyTimeoutMs: 500 }),
      (error) => {
        assert.ok(error instanceof HarnessError, `not a HarnessError: ${error}`);
        assert.equal(error.code, "serve_timeout", error.message);
        assert.match(error.message, /^`.*flood serve .*` was not ready within 500 ms \(readyTimeoutMs\); it printed:\n/);
        assert.ok(error.message.length < 65 * 1024, `the message keeps only the last 64 KiB, not ${error.message.length} characters`);
        assert.ok(error.message.split("printed:\n")[1].includes(flood), "it holds the last of what was printed");
        return true;
      },
    );

    const group = Number(readFileSync(`${flood}.pid`, "utf8"));
    assert.deepEqual(processesOf(group, folder), []);
  });

  it("refuses a readyTimeoutMs that is not a finite number of milliseconds above 0, and starts nothing", async () => {
    const started = join(folder, "started");
    const harness = script(folder, "harness", `touch ${shellQuoted(started)}`);
    const options = { cassettes: folder, recordMode: "none", env: { HARNESS_BIN: harness } };
    for (const [readyTimeoutMs, shown] of [
      [Number.NaN, "NaN (type=number)"],
      [-1, "-1 (type=number)"],
      [0, "0 (type=number)"],
      [Number.POSITIVE_INFINITY, "Infinity (type=number)"],
      ["5000", '"5000" (type=string)'],
      [null, "null (type=null)"],
    ]) {
      await assert.rejects(startServe({ ...options, readyTimeoutMs }), (error) => {
        assert.ok(error instanceof HarnessError, `not a HarnessError: ${error}`);
        assert.equal(error.code, "invalid_argument");
        assert.equal(
          error.message,
          `expected a finite number of milliseconds above 0 (60000 when not given) but got readyTimeoutMs=${shown}`,
        );
        return true;
      });
    }
    assert.ok(!existsSync(started), "nothing was started");
  });
});
