import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HarnessError, runTarget } from "completion-harness";
import { join } from "node:path";
import { completionCell, FIXTURES, startTarget } from "./support.mjs";

describe("runTarget", () => {
  it("answers hello with the kinds of its handlers, its runtimes and features", async () => {
    const target = startTarget();
    target.send({ type: "hello", protocol: 1 });
    assert.deepEqual(await target.next(), {
      type: "hello",
      protocol: 1,
      name: "test target",
      kinds: ["agent", "completion"],
      runtimes: ["js"],
      features: ["streaming"],
    });
    target.child.stdin.end();
    assert.equal(await target.exited, 0);
  });

  it("answers hello with the providers its agent calls, when it names them", async () => {
    const target = startTarget(join(FIXTURES, "providers-target.mjs"));
    target.send({ type: "hello", protocol: 1 });
    const hello = await target.next();
    assert.deepEqual(hello.providers, ["openai", "anthropic"]);
    target.child.stdin.end();
    assert.equal(await target.exited, 0);
  });

  it("answers each cell with its id, in order; a handler that throws fails that cell only", async () => {
    const target = startTarget();
    target.send(completionCell("first[a]", [{ echo: "one" }, { echo: "two" }]));
    target.send(completionCell("throws[a]", [{ echo: "one" }, { throw: "no answer here" }]));
    target.send(completionCell("slow[a]", [{ wait: 30, echo: "late" }]));
    assert.deepEqual(await target.next(), {
      type: "result",
      id: "first[a]",
      executions: [
        { outputs: { echo: "one" }, error: null },
        { outputs: { echo: "two" }, error: null },
      ],
    });
    assert.deepEqual(await target.next(), { type: "error", id: "throws[a]", message: "RangeError: no answer here" });
    assert.deepEqual(await target.next(), {
      type: "result",
      id: "slow[a]",
      executions: [{ outputs: { echo: "late" }, error: null }],
    });
    target.child.stdin.end();
    assert.equal(await target.exited, 0);
    assert.match(target.stderr(), /cell throws\[a\] failed: RangeError: no answer here\n\s+at /);
  });

  it("writes the console to stderr, so stdout carries the protocol only", async () => {
    const target = startTarget();
    target.send(completionCell("logs", [{ log: "a stray log line", echo: "kept" }]));
    target.send({ type: "shutdown" });
    assert.deepEqual(await target.next(), {
      type: "result",
      id: "logs",
      executions: [{ outputs: { echo: "kept" }, error: null }],
    });
    assert.equal(await target.next(), null); // nothing else on stdout
    assert.equal(await target.exited, 0);
    assert.match(target.stderr(), /a stray log line/);
  });

  it("ends on shutdown while the harness keeps stdin open", async () => {
    const target = startTarget();
    target.send({ type: "shutdown" });
    const timeout = new Promise((resolve) => setTimeout(resolve, 5000, "still running").unref());
    const code = await Promise.race([target.exited, timeout]);
    target.child.kill();
    assert.equal(code, 0);
    assert.match(target.stderr(), /runTarget returned/);
  });

  it("fails a cell whose answer breaks the protocol, naming what is wrong", async () => {
    const target = startTarget();
    target.send(completionCell("too-many", [{ echo: "one" }, { echo: "two" }], { extra: true }));
    target.send(completionCell("bigint", [{ bigint: true }]));
    target.send("{not json");
    target.send({ type: "rewind", id: "r" });
    target.send(completionCell("after", [{ echo: "still here" }]));
    assert.deepEqual(await target.next(), {
      type: "error",
      id: "too-many",
      message: "the completion handler answered 3 execution(s) for a cell of 2; answer one per execution, in order",
    });
    const bigint = await target.next();
    assert.equal(bigint.id, "bigint");
    assert.match(bigint.message, /^the answer is not JSON: TypeError: Do not know how to serialize a BigInt/);
    const unreadable = await target.next();
    assert.equal(unreadable.type, "error");
    assert.equal(unreadable.id, undefined);
    assert.match(unreadable.message, /^the target could not read a message: it is not JSON/);
    assert.deepEqual(await target.next(), {
      type: "error",
      id: "r",
      message: 'the target does not know messages of type "rewind"',
    });
    assert.equal((await target.next()).id, "after");
    target.child.stdin.end();
    assert.equal(await target.exited, 0);
  });

  it("reads NaN, Infinity and -Infinity outside strings as numbers, as the harness writes them", async () => {
    const target = startTarget();
    // a scenario's `.nan` in a workflow state, written by the harness's Python `json`
    const cell = JSON.stringify(completionCell("non-finite", [{ describe: ["X1", "X2", "X3", 'NaN "Infinity"', 1] }]));
    target.send(cell.replace('"X1"', "NaN").replace('"X2"', "Infinity").replace('"X3"', "-Infinity"));
    target.send('{"type": "cell", "id": "broken", "kind": "completion", "executions": [NaNa]}');
    assert.deepEqual(await target.next(), {
      type: "result",
      id: "non-finite",
      executions: [
        {
          outputs: { echo: ["number NaN", "number Infinity", "number -Infinity", 'string NaN "Infinity"', "number 1"] },
          error: null,
        },
      ],
    });
    const unreadable = await target.next();
    assert.equal(unreadable.id, undefined);
    assert.match(unreadable.message, /^the target could not read a message: it is not JSON/);
    target.child.stdin.end();
    assert.equal(await target.exited, 0);
  });

  it("answers an agent cell with the handler's result under the cell's id", async () => {
    const target = startTarget();
    target.send({ type: "cell", id: "agent[js-memory]", kind: "agent", user_message: "hi", session_id: "s" });
    const answer = await target.next();
    assert.equal(answer.type, "result");
    assert.equal(answer.id, "agent[js-memory]");
    assert.equal(answer.output, "hi");
    assert.deepEqual(answer.outcome_record, { text: "a", final_message: "a", stop_reason: "end_turn", session_id: "s" });
    target.child.stdin.end();
    assert.equal(await target.exited, 0);
  });

  it("refuses options that are no target, saying what is expected", async () => {
    const refusals = [
      [{ name: "x" }, /^expected at least one handler \(agent, completion or decision\) but got none/],
      [{ name: "", completion: () => [] }, /^expected a non-empty string but got name="" \(type=string\)$/],
      [{ name: "x", completion: "yes" }, /^expected a function \(the completion handler\) but got completion="yes" \(type=string\)$/],
      [
        { name: "x", completion: () => [], features: ["streaming", "telepathy"] },
        /^expected an array of features among faults, llm_config_override, memory, streaming, approval, cancel but got features=\["streaming","telepathy"\] \(type=array\)$/,
      ],
      [
        { name: "x", completion: () => [], providers: ["openai", ""] },
        /^expected an array of provider names but got providers=\["openai",""\] \(type=array\)$/,
      ],
    ];
    for (const [options, message] of refusals) {
      await assert.rejects(runTarget(options), (error) => {
        assert.ok(error instanceof HarnessError);
        assert.equal(error.code, "invalid_argument");
        assert.match(error.message, message);
        return true;
      });
    }
  });
});
