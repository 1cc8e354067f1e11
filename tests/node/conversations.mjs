// Parallel conversations through the official Node `openai` SDK, as parallel end-to-end workers
// run them: each worker holds a three-turn chat whose first turn is the same for every worker,
// and each later turn carries the answers before it. Reads {"workers": [{"baseURL", "worker"}],
// "stream": bool} on stdin; prints one JSON line per worker: {"answers": [...]} or {"error": ...}.
import OpenAI from "openai";

const QUESTION = "What time is it?";
const TURNS = 3;

async function ask(client, messages, stream) {
  if (!stream) {
    const completion = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages,
      temperature: 1,
    });
    return completion.choices[0].message.content;
  }
  const events = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages,
    temperature: 1,
    stream: true,
  });
  let text = "";
  for await (const chunk of events) text += chunk.choices[0]?.delta?.content ?? "";
  return text;
}

async function conversation({ baseURL, worker }, stream) {
  const client = new OpenAI({ baseURL, apiKey: "sk-node-client-dummy", maxRetries: 0 });
  const messages = [{ role: "user", content: QUESTION }];
  const answers = [];
  for (let turn = 0; turn < TURNS; turn += 1) {
    if (turn) messages.push({ role: "user", content: `worker ${worker}, turn ${turn}` });
    const text = await ask(client, messages, stream);
    answers.push(text);
    messages.push({ role: "assistant", content: text });
  }
  return answers;
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { workers, stream } = JSON.parse(input);
const results = await Promise.all(
  workers.map((worker) =>
    conversation(worker, stream).then(
      (answers) => ({ answers }),
      (error) => ({ error: `${error.constructor.name}: ${error.message}` }),
    ),
  ),
);
for (const result of results) process.stdout.write(`${JSON.stringify(result)}\n`);
