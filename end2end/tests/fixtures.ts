import * as fs from 'node:fs';
import { test as base, expect, type Browser, type Page } from '@playwright/test';

/** Whether the running project has JavaScript turned off. */
export function jsOff(projectName: string): boolean {
  return projectName === 'js-off';
}

/** Waits until the WebAssembly bundle has hydrated the page. */
export async function waitForHydration(page: Page): Promise<void> {
  // Effects run only in the browser; the app's first one marks the document.
  await page.locator('html[data-hydrated="true"]').waitFor({ state: 'attached', timeout: 15_000 });
}

/** Waits until the page listens for the desk's changes (a change made before is caught up silently). */
export async function waitForLive(page: Page): Promise<void> {
  await expect(page.locator('#live-status')).toContainText('Live', { timeout: 15_000 });
}

/**
 * Every test fails if the page logged a console error or threw: a broken hydration or a
 * missing asset shows up here first.
 */
export const test = base.extend<{ consoleErrors: string[] }>({
  consoleErrors: [
    async ({ page }, use, testInfo) => {
      const errors: string[] = [];
      // A scenario that provokes a refusal declares the statuses it expects the browser to log.
      const allowed = () => testInfo.annotations.filter((a) => a.type === 'allow-http-status').map((a) => a.description);
      page.on('console', (message) => {
        if (message.type() !== 'error') return;
        // A page that is meant to be missing logs its own 404; nothing else may.
        const intended404 = message.text().includes('404') && message.location().url.includes(MISSING_PAGE);
        const status = /status of (\d{3})/.exec(message.text())?.[1];
        if (status && allowed().includes(status)) return;
        if (!intended404) errors.push(`${message.text()} (${message.location().url})`);
      });
      page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
      await use(errors);
      expect(errors, 'console errors').toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };

/** A path the desk does not serve, used to check the 404 page. */
export const MISSING_PAGE = '/no-such-page';

/**
 * Opens `path` as a visitor without JavaScript sees it, in a context where JavaScript still
 * works for the test's own tools (axe needs it): the server's HTML with every script removed.
 */
export async function openWithoutScripts(browser: Browser, baseURL: string, path: string): Promise<Page> {
  const context = await browser.newContext({ baseURL, javaScriptEnabled: true });
  const page = await context.newPage();
  await page.route((url) => url.pathname === new URL(path, baseURL).pathname, async (route) => {
    const response = await route.fetch();
    const html = (await response.text())
      .replace(/<script\b[\s\S]*?<\/script>/gi, '')
      .replace(/<link[^>]*rel="modulepreload"[^>]*>/gi, '')
      .replace(/<link[^>]*as="fetch"[^>]*>/gi, '');
    await route.fulfill({ response, body: html });
  });
  await page.goto(path);
  return page;
}

/** The first owner `r2r setup` created for this run (its one-time password kept by the config). */
export function owner(): { email: string; password: string } {
  return JSON.parse(fs.readFileSync(process.env.R2R_E2E_OWNER_FILE!, 'utf8'));
}

/** Opens a desk page as a signed-out visitor, signs the owner in and lands on that page. */
export async function signIn(page: Page, next = '/desk'): Promise<void> {
  const { email, password } = owner();
  await page.goto(next);
  await expect(page).toHaveURL(/\/desk\/sign-in/);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('desk-owner')).toHaveText(email);
}
