/**
 * `completion-harness/vitest`: Vitest's `test` with a `harness` fixture, a session of
 * `harness serve` for each test.
 *
 *     import { test, expect } from "completion-harness/vitest";
 *     const chat = test.extend({ harnessOptions: { cassette: "chat" } }); // or HARNESS_CASSETTE
 *     chat("answers", async ({ harness }) => { ... harness.baseUrls.openai ... });
 *
 * Before each test it opens a session (record or replay: `HARNESS_RECORD_MODE`, the server at
 * `HARNESS_URL`); give the code under test `harness.baseUrls` (or `harness.headers`, for an app
 * server that routes by `x-harness-session`). After the test, the session's report is kept in
 * the test's metadata as `harnessSession` (reporters read it: `testCase.meta().harnessSession`,
 * and the JSON reporter writes it), and the session is closed (a recording session saves its
 * cassette).
 */

import { test as base } from "vitest";
import { SESSION_HEADER, type HarnessSession, type SessionReport } from "./serve.js";
import { openTestSession, type HarnessFixtureOptions } from "./test-session.js";

declare module "vitest" {
  interface TaskMeta {
    /** What the test's harness session received (`completion-harness/vitest`). */
    harnessSession?: SessionReport;
  }
}

export interface HarnessFixtures {
  /** This test's session: its id, base URLs, header, and the requests it received. */
  harness: HarnessSession;
  /** How the session is opened; override with `test.extend({ harnessOptions: {...} })`. */
  harnessOptions: HarnessFixtureOptions;
}

export const test = base.extend<HarnessFixtures>({
  harnessOptions: {},
  harness: [
    async ({ harnessOptions, task }, use) => {
      const session = await openTestSession(harnessOptions);
      try {
        await use(session);
      } finally {
        try {
          // Task metadata, not an annotation: Vitest takes annotations only while the test
          // body runs, and the report is complete only after it.
          task.meta.harnessSession = await session.report();
        } finally {
          await session.close();
        }
      }
    },
    { auto: true },
  ],
});

export { expect } from "vitest";
export { SESSION_HEADER };
export type { HarnessFixtureOptions, HarnessSession };
