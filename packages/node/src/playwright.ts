/**
 * `completion-harness/playwright`: Playwright's `test` with a `harness` fixture, a session of
 * `harness serve` for each test.
 *
 *     import { test, expect } from "completion-harness/playwright";
 *     test.use({ harnessOptions: { cassette: "chat" } }); // or HARNESS_CASSETTE
 *
 * Before each test it opens a session (record or replay: `HARNESS_RECORD_MODE`, the server at
 * `HARNESS_URL`) and sets `x-harness-session: <id>` on every request of the test's browser
 * context, for the app's server to route its model calls by. After the test, the session's
 * report (every request it received) is attached to the test's results as `harness-session`,
 * and the session is closed (a recording session saves its cassette).
 */

import { test as base, expect } from "@playwright/test";
import { SESSION_HEADER, type HarnessSession } from "./serve.js";
import { openTestSession, reportText, type HarnessFixtureOptions } from "./test-session.js";

export interface HarnessFixtures {
  /** This test's session: its id, base URLs, header, and the requests it received. */
  harness: HarnessSession;
  /** How the session is opened; `test.use({ harnessOptions: {...} })`. */
  harnessOptions: HarnessFixtureOptions;
}

export const test = base.extend<HarnessFixtures>({
  harnessOptions: [{}, { option: true }],
  harness: [
    async ({ context, extraHTTPHeaders, harnessOptions }, use, testInfo) => {
      const session = await openTestSession(harnessOptions);
      try {
        // setExtraHTTPHeaders replaces the context's headers: keep the ones the suite set
        await context.setExtraHTTPHeaders({ ...extraHTTPHeaders, [SESSION_HEADER]: session.id });
        await use(session);
      } finally {
        try {
          await testInfo.attach("harness-session", {
            body: await reportText(session),
            contentType: "application/json",
          });
        } finally {
          await session.close();
        }
      }
    },
    { auto: true },
  ],
});

export { expect, SESSION_HEADER };
export type { HarnessFixtureOptions, HarnessSession };
