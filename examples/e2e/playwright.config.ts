import { defineConfig } from '@playwright/test';

// The suite replays one shared cassette through `harness serve`, four workers at once: every test
// opens a harness session of its own on that cassette (tests/harness.ts), so no test sees another's
// answers, and the app server sends each model call to the session named by the request.
//
//   npx playwright test                                   replay (record mode none: a miss fails)
//   HARNESS_RECORD_MODE=once npx playwright test          record what the cassette lacks
//   HARNESS_URL=http://127.0.0.1:8080 npx playwright test use a harness serve you started
//
// Without HARNESS_URL, `harness serve` (pip install completion-harness) is started here, on
// cassettes/ in this folder.

const appPort = Number(process.env.APP_PORT ?? 3000);
const harnessPort = Number(process.env.HARNESS_PORT ?? 8787);
const startHarness = !process.env.HARNESS_URL;
// Set before the workers start, so the fixture in tests/harness.ts reads the same URL.
process.env.HARNESS_URL ??= `http://127.0.0.1:${harnessPort}`;
const harnessUrl = process.env.HARNESS_URL;
const recordMode = process.env.HARNESS_RECORD_MODE ?? 'none';

export default defineConfig({
  testDir: './tests',
  fullyParallel: true,
  workers: 4,
  forbidOnly: !!process.env.CI,
  reporter: process.env.CI ? 'line' : 'list',
  use: {
    baseURL: `http://127.0.0.1:${appPort}`,
    browserName: 'chromium',
    // The system's Chromium (Debian's chromium package): nothing downloads a browser.
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: [
    ...(startHarness
      ? [
          {
            name: 'harness',
            command: `harness serve --cassettes cassettes --port ${harnessPort} --record-mode ${recordMode}`,
            url: `${harnessUrl}/_harness/health`,
            // Ctrl-C is how harness serve stops cleanly, its recordings saved.
            gracefulShutdown: { signal: 'SIGINT' as const, timeout: 10_000 },
            reuseExistingServer: false,
          },
        ]
      : []),
    {
      name: 'app',
      command: 'node server.mjs',
      url: `http://127.0.0.1:${appPort}/health`,
      env: { PORT: String(appPort), HARNESS_URL: harnessUrl },
      // Never a running app of your own: it would call the real provider.
      reuseExistingServer: false,
    },
  ],
});
