import AxeBuilder from '@axe-core/playwright';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import type { Page } from '@playwright/test';
import { test, expect, jsOff, waitForHydration } from './fixtures';

// The crew and the people are not services yet: `r2r demo drive` plays their part against the
// same database (a measured reproduction of ShopLite's real regression test; a scripted fix,
// review, merge and deployment), always through the engine.
function drive(bug: string, to: 'question' | 'release'): void {
  const root = path.resolve(__dirname, '..', '..');
  execFileSync(
    './target/release/r2r',
    ['--env-file', `${process.env.R2R_E2E_DATA_DIR}/absent.env`, 'demo', 'drive', '--bug', bug, '--to', to],
    { cwd: root, env: { ...process.env, DATABASE_URL: process.env.R2R_E2E_DATABASE_URL!, RUST_LOG: 'warn' }, stdio: 'pipe', timeout: 240_000 },
  );
}

/** A title no other scenario's title resembles (so clustering keeps scenarios apart). */
function uniqueTitle(): string {
  const token = () => Math.random().toString(36).slice(2, 8);
  return `Negative total ${token()} ${token()} ${token()} ${token()}`;
}

async function axe(page: Page): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze();
  expect(results.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length})`)).toEqual([]);
}

async function fillReport(page: Page, title: string): Promise<void> {
  await page.getByLabel('Where').selectOption('shoplite');
  await page.getByLabel('Title').fill(title);
  await page.getByLabel('What happened').fill('With SAVE300 on the ₹200 tea set I was asked to pay −₹100. Mail me at reporter@example.org.');
  await page.getByLabel('What you expected').fill('A total of ₹0.');
  await page.getByLabel('Steps to reproduce').fill('Open ShopLite\nApply coupon SAVE300');
}

test.describe.configure({ timeout: 300_000 });

/** Declares refusals the scenario provokes on purpose (the browser logs them as errors). */
function expectRefusals(...statuses: number[]): void {
  for (const status of statuses) test.info().annotations.push({ type: 'allow-http-status', description: String(status) });
}

test('a reporter files, confirms the test, and reopens a fix that does not work (JavaScript)', async ({ page, request }, info) => {
  test.skip(jsOff(info.project.name), 'the script-free path has its own scenario');
  expectRefusals(422);
  // Every call the pages make to the desk, to check which doors they use.
  const calls: string[] = [];
  page.on('request', (r) => {
    if (r.resourceType() !== 'fetch' && r.resourceType() !== 'xhr') return;
    const url = new URL(r.url());
    if (!url.pathname.startsWith('/pkg/')) calls.push(`${r.method()} ${url.pathname}${url.search}`);
  });
  const title = uniqueTitle();
  await page.goto('/report');
  await waitForHydration(page);
  await fillReport(page, title);
  await page.getByRole('button', { name: 'Send report' }).click();
  const receipt = page.getByTestId('receipt');
  await expect(receipt).toBeVisible();
  await expect(page.getByTestId('receipt-message')).toContainText('opened a new bug');
  const bug = (await page.getByTestId('bug-id').textContent())!.trim();
  const link = (await page.getByTestId('tracking-link').textContent())!.trim();
  // The whole address, to paste anywhere, with a Copy button that really copies it.
  expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/track#[0-9a-f]{64}$/);
  const secret = link.split('#')[1];
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.getByTestId('copy-link').click();
  await expect(page.getByTestId('copy-status')).toHaveText('Copied.');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(link);
  await axe(page);
  expect(page.url()).not.toContain(secret); // the secret is not in the address bar
  // "Your report" in the menu reopens it from this browser's memory (never the server's).
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Your report' }).click();
  await waitForHydration(page);
  const reportId = (await page.getByTestId('remembered').getByRole('link').first().textContent())!.replace('Report ', '').trim();
  await page.getByTestId('remembered').getByRole('link').first().click();
  await expect(page.getByTestId('own-title')).toHaveText(title);
  expect(reportId).toMatch(/^r-/);

  // A second reporter of the same bug: one cluster, two links.
  const second = await request.post('/api/v1/reports', {
    data: { component: 'shoplite', title, what_happened: 'Same here: −₹100.', expected: '₹0', steps: '' },
  });
  expect(second.status()).toBe(201);
  expect((await second.json()).bug_id).toBe(bug);

  await page.goto('/');
  await page.goto(link);
  await waitForHydration(page);
  await expect(page.getByTestId('bug-state')).toContainText('waiting for triage');
  await expect(page.getByTestId('own-title')).toHaveText(title);
  await expect(page.getByTestId('redactions')).toContainText('1 email');
  await expect(page.getByText('2 report(s) of it')).toBeVisible();
  await expect(page.getByText('Same here')).toHaveCount(0);

  drive(bug, 'question');
  await page.reload();
  await waitForHydration(page);
  const question = page.getByTestId('question');
  await expect(question.getByRole('heading')).toHaveText('Is this the bug you saw?');
  await expect(page.getByTestId('test-failure')).not.toBeEmpty();
  await expect(page.getByTestId('test-summary')).toContainText('you expected to pay ₹0');
  await expect(page.getByText('Technical details')).toBeVisible();
  await axe(page);
  // "No" needs a reason: refused, nothing recorded.
  await question.getByRole('button', { name: 'No' }).click();
  // Said next to the field, which gets the focus (not at the top of the page).
  await expect(page.getByTestId('reason-error')).toContainText('reason');
  await expect(question.getByRole('textbox')).toBeFocused();
  await expect(question.getByRole('textbox')).toHaveAttribute('aria-invalid', 'true');
  const [yesBox, noBox] = [await question.getByRole('button', { name: 'Yes' }).boundingBox(), await question.getByRole('button', { name: 'No' }).boundingBox()];
  expect(noBox!.x - (yesBox!.x + yesBox!.width) >= 8 || noBox!.y - (yesBox!.y + yesBox!.height) >= 8, 'Yes and No do not touch').toBe(true);
  await expect(page.getByTestId('bug-state')).toHaveAttribute('data-state', 'awaiting_reporter');
  await page.getByTestId('question').getByRole('button', { name: 'Yes' }).click();
  await expect(page.getByTestId('answer-notice')).toContainText('draft a fix');
  await expect(page.getByTestId('bug-state')).toHaveAttribute('data-state', 'confirmed');

  drive(bug, 'release');
  await page.reload();
  await waitForHydration(page);
  const fix = page.getByTestId('question');
  await expect(fix.getByRole('heading')).toHaveText('Does the live fix work for you?');
  await expect(page.getByTestId('release-commit')).toHaveText(/^[0-9a-f]{40}$/);
  await fix.getByLabel(/still goes wrong/).fill('Two tea sets with SAVE300 still give a negative total.');
  await fix.getByRole('button', { name: 'No' }).click();
  await expect(page.getByTestId('bug-state')).toHaveAttribute('data-state', 'reopened');
  await expect(page.getByTestId('timeline')).toContainText('A reporter said the fix does not work; reopened');
  await axe(page);
  // The hydrated pages reach the desk only through their server functions, the private
  // link only ever in a POST body: never the JSON API, never in an address.
  for (const call of ['POST /report/fn/file', 'POST /track/fn/view', 'POST /track/fn/answer']) expect(calls).toContain(call);
  expect(calls.filter((c) => !/^POST \/(report|track)\/fn\//.test(c))).toEqual([]);
  expect(calls.filter((c) => c.includes(secret))).toEqual([]);
});

test('the whole reporter path works without JavaScript', async ({ page }, info) => {
  test.skip(!jsOff(info.project.name), 'JavaScript projects run the hydrated path');
  expectRefusals(422);
  // Every call the pages make to the desk, to check which doors they use.
  const calls: string[] = [];
  page.on('request', (r) => {
    if (r.resourceType() !== 'fetch' && r.resourceType() !== 'xhr') return;
    const url = new URL(r.url());
    if (!url.pathname.startsWith('/pkg/')) calls.push(`${r.method()} ${url.pathname}${url.search}`);
  });
  const title = uniqueTitle();
  await page.goto('/report');
  // Refused first: the typed text comes back with the field's reason.
  await page.getByLabel('What happened').fill('kept words 42');
  await page.getByRole('button', { name: 'Send report' }).click();
  await expect(page.getByTestId('error-title')).toContainText('required');
  await expect(page.getByLabel('What happened')).toHaveValue('kept words 42');
  await fillReport(page, title);
  await page.getByRole('button', { name: 'Send report' }).click();
  await expect(page.getByTestId('receipt')).toBeVisible();
  const bug = (await page.getByTestId('bug-id').textContent())!.trim();
  const link = (await page.getByTestId('tracking-link').textContent())!.trim();

  const open = async () => {
    await page.goto('/track');
    await page.getByLabel('Your private link').fill(`http://127.0.0.1${link}`);
    await page.getByRole('button', { name: 'Open' }).click();
    await expect(page.getByTestId('tracking')).toBeVisible();
  };
  await open();
  await expect(page.getByTestId('own-title')).toHaveText(title);

  drive(bug, 'question');
  await open();
  await page.getByTestId('question').getByRole('button', { name: 'No' }).click();
  await expect(page.getByTestId('track-refused')).toContainText('reason');
  await open();
  await page.getByTestId('question').getByRole('button', { name: 'Yes' }).click();
  await expect(page.getByTestId('bug-state')).toHaveAttribute('data-state', 'confirmed');

  drive(bug, 'release');
  await open();
  await expect(page.getByTestId('question').getByRole('heading')).toHaveText('Does the live fix work for you?');
  await page.getByLabel(/still goes wrong/).fill('Still negative.');
  await page.getByTestId('question').getByRole('button', { name: 'No' }).click();
  await expect(page.getByTestId('bug-state')).toHaveAttribute('data-state', 'reopened');
});

test('a wrong link and a missing one look the same', async ({ page }, info) => {
  expectRefusals(404);
  await page.goto(`/track#${'0'.repeat(64)}`);
  if (jsOff(info.project.name)) {
    await expect(page.getByLabel('Your private link')).toBeVisible();
    return;
  }
  await waitForHydration(page);
  await expect(page.getByTestId('track-missing')).toContainText('No report matches this link');
});

test('on a 360 px phone the tracking page reads without sideways scrolling: state, what happens next, the question, the inbox', async ({ page, request }, info) => {
  test.skip(jsOff(info.project.name), 'the tracking link lives in the fragment; the script-free path has its own scenario');
  await page.setViewportSize({ width: 360, height: 740 });
  const filed = await (await request.post('/api/v1/reports', {
    data: { component: 'shoplite', title: uniqueTitle(), what_happened: 'SAVE300 on the ₹200 tea set: the total is −₹100, see https://shoplite.example/checkout?cart=teaset-200&coupon=SAVE300', expected: '₹0', steps: 'Open ShopLite\nApply coupon SAVE300', contact: 'reporter@example.test' },
  })).json();
  drive(filed.bug_id, 'question');
  await page.goto(filed.tracking_link);
  await waitForHydration(page);
  await expect(page.getByTestId('next-step')).toContainText('Nothing is fixed until a reporter says');
  await expect(page.getByTestId('question')).toBeVisible();
  // The concierge runs inside the desk under test: its notice arrives in the inbox.
  await expect(async () => {
    await page.reload();
    await waitForHydration(page);
    await expect(page.getByTestId('inbox')).toContainText('Is this the bug you saw?', { timeout: 1_000 });
  }).toPass({ timeout: 20_000 });
  const overflow = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
    // What sticks out, to name it when this fails.
    wide: Array.from(document.querySelectorAll('body *'))
      .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5
        || (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible'))
      .slice(0, 5)
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}[${el.getAttribute('data-testid') ?? ''}] ${Math.round(el.getBoundingClientRect().width)}px`),
  }));
  expect(overflow.client).toBe(360);
  expect(overflow.scroll, overflow.wide.join('; ')).toBeLessThanOrEqual(overflow.client);
  await axe(page);
});
