// The Agent Completion module as a `harness` target: the JSON-lines protocol on stdin and stdout.
//
//     harness run scenarios/completion --target-cmd "node examples/targets/node_completion/target.mjs"
//
// A cell carries one or more `executions`, run in order through one module instance, as a
// workflow would run them; each gets its outputs, or the module's error, in the answer.

import { createInterface } from "node:readline";
import { AgentCompletionModule, IllegalArgumentException } from "./completion.mjs";

const HELLO = {
  type: "hello",
  protocol: 1,
  name: "node completion module example",
  kinds: ["completion"],
};

function answer(message) {
  if (message.type === "hello") return HELLO;
  if (message.type !== "cell") return null; // shutdown
  const module = new AgentCompletionModule();
  const executions = message.executions.map(({ input }) => {
    try {
      return { outputs: module.execute(input), error: null };
    } catch (error) {
      if (!(error instanceof IllegalArgumentException)) throw error;
      const { name: type, code, message: text } = error;
      return { outputs: module.outputs, error: { type, code, message: text } };
    }
  });
  return { type: "result", id: message.id, executions };
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const reply = answer(JSON.parse(line));
  if (reply !== null) process.stdout.write(JSON.stringify(reply) + "\n");
}
