// What each entry point exports at run time is what the README documents, and no more: a new
// export is a decision, made here and in the README together.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import { PACKAGE } from "./support.mjs";

const EXPORTS = {
  "completion-harness": ["HarnessError", "RECORD_MODES", "SESSION_HEADER", "openSession", "runTarget", "startServe"],
  "completion-harness/playwright": ["SESSION_HEADER", "expect", "test"],
  // completion-harness/vitest loads only under Vitest: test/fixtures/vitest checks it
};

for (const [entry, names] of Object.entries(EXPORTS)) {
  it(`${entry} exports ${names.join(", ")}`, async () => {
    assert.deepEqual(Object.keys(await import(entry)).sort(), names);
  });
}

it("the README documents every value export", () => {
  const readme = readFileSync(join(PACKAGE, "README.md"), "utf8");
  for (const name of new Set(Object.values(EXPORTS).flat())) {
    assert.match(readme, new RegExp(`\\b${name}\\b`), name);
  }
});

it("the package declares every entry point it builds, types first", () => {
  const manifest = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8"));
  assert.deepEqual(Object.keys(manifest.exports), [".", "./playwright", "./vitest", "./package.json"]);
  for (const [entry, target] of Object.entries(manifest.exports)) {
    if (entry === "./package.json") continue;
    assert.deepEqual(Object.keys(target), ["types", "default"], entry);
  }
  assert.equal(manifest.dependencies, undefined);
});
