import { test, expect, jsOff, waitForHydration, MISSING_PAGE } from './fixtures';

test('the home page says what the desk is and links the demo', async ({ page }) => {
  await page.goto('/');
  await expect(page).toHaveTitle(/Reporter-to-Release/);
  await expect(page.getByRole('heading', { level: 1 })).toContainText('bug report to a release');
  await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'ShopLite demo' })).toBeVisible();
});

test('the health button works once the page is hydrated', async ({ page }, info) => {
  test.skip(jsOff(info.project.name), 'needs JavaScript');
  await page.goto('/');
  await waitForHydration(page);
  const button = page.getByRole('button', { name: 'Check desk health' });
  await expect(button).toBeEnabled();
  await button.click();
  await expect(page.getByTestId('health-result')).toContainText('reporter-to-release');
  await expect(page.getByTestId('health-result')).toContainText('storage sqlite');
  await expect(page.getByTestId('health-result')).toContainText(' ok');
});

test('without JavaScript the health button is disabled and the plain link works', async ({ page }, info) => {
  test.skip(!jsOff(info.project.name), 'only meaningful without JavaScript');
  await page.goto('/');
  await expect(page.getByRole('button', { name: 'Check desk health' })).toBeDisabled();
  const response = await page.request.get('/api/health');
  expect(response.status()).toBe(200);
  expect((await response.json()).service).toBe('reporter-to-release');
});

test('an unknown page answers 404 with a way home', async ({ page }) => {
  const response = await page.goto(MISSING_PAGE);
  expect(response?.status()).toBe(404);
  await expect(page.getByRole('heading', { name: 'Nothing here' })).toBeVisible();
});
