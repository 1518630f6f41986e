import { test, expect, jsOff, waitForHydration } from './fixtures';

// `/demo` walks the loop on sample data; its actions are labelled as sandbox actions and
// touch nothing real.

test('the demo is labelled and walks the loop to verified with sandbox actions only', async ({ page, request }, info) => {
  const before = await (await request.get('/api/health')).json();
  await page.goto('/demo');
  await expect(page.getByTestId('demo-label')).toContainText('Sandbox actions only');
  await expect(page.getByTestId('demo-label')).toContainText('simulated demo');
  if (jsOff(info.project.name)) {
    // Without JavaScript the whole example is shown at once, every step labelled.
    await expect(page.getByTestId('demo-steps').locator('li')).toHaveCount(8);
    await expect(page.getByTestId('demo-steps').getByText('simulated demo')).toHaveCount(8);
    await expect(page.getByTestId('demo-action')).toHaveCount(0);
    return;
  }
  await waitForHydration(page);
  const names: string[] = [];
  for (let step = 0; step < 8; step++) {
    const action = page.getByTestId('demo-action');
    await expect(action).toHaveCount(1);
    const name = (await action.textContent())!.trim();
    expect(name).toMatch(/\(sandbox action\)$/);
    names.push(name);
    await action.click();
  }
  expect(names).toContain('Record example human review (sandbox action)');
  await expect(page.getByTestId('demo-done')).toContainText('verified');
  // Nothing real changed: the desk's health and state are what they were.
  const after = await (await request.get('/api/health')).json();
  expect(after.instance).toBe(before.instance);
});
