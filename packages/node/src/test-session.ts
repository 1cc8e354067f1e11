/**
 * What the Playwright and Vitest fixtures share: one session per test, opened from the fixture's
 * options and the environment, the way a suite switches between recording and replaying.
 */

import { HarnessError } from "./errors.js";
import { openSession, RECORD_MODES, type HarnessSession, type RecordMode, type SessionOptions } from "./serve.js";

/**
 * The session each test gets. Unset fields come from the environment: `HARNESS_URL` (the
 * server), `HARNESS_CASSETTE` (the cassette, when there is no script), `HARNESS_RECORD_MODE`
 * (none, once, new_episodes or all; unset: the server's own mode) and `HARNESS_CONTROL_TOKEN`.
 */
export interface HarnessFixtureOptions extends SessionOptions {
  /** The `harness serve` URL; `HARNESS_URL` by default. */
  url?: string;
}

export async function openTestSession(options: HarnessFixtureOptions): Promise<HarnessSession> {
  const env = process.env;
  const url = options.url ?? env.HARNESS_URL;
  if (!url) {
    throw new HarnessError(
      "invalid_argument",
      "HARNESS_URL is not set: start harness serve (startServe in a global setup, or your runner's web server) and set HARNESS_URL to its URL, or give the fixture's `url`",
    );
  }
  const { url: _url, ...session } = options;
  if (session.script === undefined) {
    session.cassette ??= env.HARNESS_CASSETTE;
    if (!session.cassette) {
      throw new HarnessError(
        "invalid_argument",
        "the harness fixture needs a cassette or a script: set HARNESS_CASSETTE, or give harnessOptions { cassette: 'chat' } (or { script: [...] })",
      );
    }
    session.recordMode ??= recordModeFromEnvironment(env.HARNESS_RECORD_MODE);
  }
  session.controlToken ??= env.HARNESS_CONTROL_TOKEN || undefined;
  return openSession(url, session);
}

function recordModeFromEnvironment(value: string | undefined): RecordMode | undefined {
  if (value === undefined || value === "") return undefined;
  if ((RECORD_MODES as readonly string[]).includes(value)) return value as RecordMode;
  throw new HarnessError(
    "invalid_argument",
    `expected one of ${RECORD_MODES.join(", ")} (or unset: the server's own mode) but got HARNESS_RECORD_MODE=${JSON.stringify(value)} (type=string)`,
  );
}

/** The session's report as an attachment body: indented JSON. */
export async function reportText(session: HarnessSession): Promise<string> {
  return JSON.stringify(await session.report(), null, 2);
}
