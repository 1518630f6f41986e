import { test, expect, jsOff, waitForHydration } from './fixtures';

test('SAVE300 on a ₹200 cart asks for −₹100, computed in the browser', async ({ page }, info) => {
  test.skip(jsOff(info.project.name), 'needs JavaScript');
  await page.goto('/shoplite');
  await waitForHydration(page);
  await expect(page.getByTestId('computed-by')).toContainText('in your browser');
  await expect(page.getByTestId('payable')).toHaveText('₹200.00');
  // Typing updates the total at once: the shoplite crate runs as WebAssembly.
  await page.getByLabel('Coupon code').fill('SAVE300');
  await expect(page.getByTestId('discount')).toHaveText('₹300.00');
  await expect(page.getByTestId('payable')).toHaveText('−₹100.00');
});

test('a price of 1e308 overflows the total to infinity in the browser', async ({ page }, info) => {
  test.skip(jsOff(info.project.name), 'needs JavaScript');
  await page.goto('/shoplite');
  await waitForHydration(page);
  await page.getByLabel('Quantity').fill('2');
  await page.getByLabel('Unit price (₹)').fill('1e308');
  await expect(page.getByTestId('payable')).toHaveText('₹∞');
});

test('SAVE300 on a ₹200 cart asks for −₹100 without JavaScript, computed on the server', async ({ page }, info) => {
  test.skip(!jsOff(info.project.name), 'only meaningful without JavaScript');
  await page.goto('/shoplite');
  await expect(page.getByTestId('computed-by')).toContainText('on the server');
  await page.getByLabel('Coupon code').fill('SAVE300');
  await page.getByRole('button', { name: 'Update total' }).click();
  await expect(page).toHaveURL(/coupon=SAVE300/);
  await expect(page.getByTestId('payable')).toHaveText('−₹100.00');
});

test('a bad price is refused with a reason', async ({ page }, info) => {
  await page.goto('/shoplite?price=abc&qty=1&coupon=');
  await expect(page.getByTestId('quote-error')).toContainText('“abc” is not a price');
  if (!jsOff(info.project.name)) {
    await waitForHydration(page);
    await page.getByLabel('Unit price (₹)').fill('250');
    await expect(page.getByTestId('payable')).toHaveText('₹250.00');
  }
});

test('the deliberate bugs are labelled as deliberate', async ({ page }) => {
  await page.goto('/shoplite');
  const bugs = page.getByRole('region', { name: 'Deliberate bugs' });
  await expect(bugs).toContainText('SAVE300');
  await expect(bugs).toContainText('1e308');
});
