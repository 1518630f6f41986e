import AxeBuilder from '@axe-core/playwright';
import { test, expect, jsOff, waitForHydration, openWithoutScripts, MISSING_PAGE } from './fixtures';

const pages = ['/', '/shoplite', '/shoplite?price=200&qty=1&coupon=SAVE300', '/report', '/track', '/demo', MISSING_PAGE];

for (const path of pages) {
  test(`axe finds no accessibility violations on ${path}`, async ({ page, browser, baseURL }, info) => {
    let scanned = page;
    if (jsOff(info.project.name)) {
      // axe runs as JavaScript: scan the script-free page in a context where it can.
      scanned = await openWithoutScripts(browser, baseURL!, path);
    } else {
      await page.goto(path);
      await waitForHydration(page);
    }
    const results = await new AxeBuilder({ page: scanned }).analyze();
    expect(results.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length})`)).toEqual([]);
  });

  test(`no horizontal overflow on ${path}`, async ({ page }, info) => {
    await page.goto(path);
    if (!jsOff(info.project.name)) await waitForHydration(page);
    const overflow = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth,
      client: document.documentElement.clientWidth,
    }));
    expect(overflow.scroll).toBeLessThanOrEqual(overflow.client);
  });
}
