import type { Page } from '@playwright/test';
import { expect, test } from './harness';

// Every conversation starts with the same question, whose answer changes with every call to a
// real model, and goes on with questions of its own that carry that answer back to the model.
const FIRST_QUESTION = 'What time is it?';
const conversations = [
  { title: 'sets a reminder', followUps: ['Remind me to stretch in an hour.', 'Make it half an hour.'] },
  { title: 'converts the time', followUps: ['What is that in Tokyo?', 'And in New York?'] },
  { title: 'plans lunch', followUps: ['How long until noon?', 'Suggest a lunch that fits in that.'] },
  { title: 'writes a status line', followUps: ['Write a status line with that time.', 'Make it cheerful.'] },
];

/** Sends `message`, waits for its streamed answer to end and returns the answer's text. */
async function send(page: Page, message: string): Promise<string> {
  const answers = page.locator('li[data-role="assistant"]');
  const answer = answers.nth(await answers.count());
  await page.getByLabel('Message').fill(message);
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(answer).toHaveAttribute('data-state', /^(done|error)$/);
  const text = (await answer.textContent()) ?? '';
  // On an error the page shows the app's message: through harness serve, a miss's diagnosis.
  expect(await answer.getAttribute('data-state'), `the answer to "${message}": ${text}`).toBe('done');
  expect(text, `the answer to "${message}"`).not.toBe('');
  return text;
}

for (const { title, followUps } of conversations) {
  test(title, async ({ page, harnessSession }) => {
    await page.goto('/');

    const answers: string[] = [];
    for (const message of [FIRST_QUESTION, ...followUps]) {
      answers.push(await send(page, message));
    }

    // One model call per turn, each carrying every earlier answer as the page showed it.
    const requests = await harnessSession.requests();
    expect(requests).toHaveLength(3);
    requests.forEach((call, turn) => {
      const sent = call.request?.messages.filter((m) => m.kind === 'assistant').map((m) => m.text);
      expect(sent, `the answers turn ${turn + 1} sent back`).toEqual(answers.slice(0, turn));
    });
    await test.info().attach('transcript', {
      body: JSON.stringify(answers),
      contentType: 'application/json',
    });
  });
}
