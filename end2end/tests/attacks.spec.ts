// The desk as an attacker tries it (issue 14): hostile text from strangers and models in
// every field they control, opened in every view that shows it; the chain that turned one
// report title into an owner account; the Content-Security-Policy that must stop such a
// script even when escaping fails; and sign-in and sign-out forged from another site.
//
// Fields and where they are seeded (always through the desk's own routes):
// - a stranger's report (title, what happened, expected, steps, contact): POST /api/v1/reports,
//   and typed back into the refused /report form;
// - the reporter's "no" reason: POST /api/v1/track/answer, after `r2r demo drive` asked;
// - an owner's message: POST /api/v1/reports/{id}/messages (owner session);
// - the crew's triage and advisory notes, heartbeat detail, hand-off kind, bug and outcome:
//   the role endpoints with the role tokens;
// - the reproducer's test path, name, source and the assertion it prints: POST
//   /api/v1/bugs/{id}/reproduction (needs the desk's sandbox; skipped where there is none);
// - the fixer's branch name, pull-request title and description and the diff's text and file
//   name: a push to the local forge and POST /api/v1/bugs/{id}/fix.
// Not reachable as HTML: email bodies (text/plain, and no SMTP in this run); the pull
// request's title and description are kept by the forge and shown in no view (they are
// seeded anyway); a branch name with markup is refused (asserted).
//
// The XSS scenarios run in the desktop and mobile projects (a script can only run where
// scripts run; the served HTML they check is the same for every project). The header and
// form-post checks are plain HTTP and run once, in the desktop project.

import { request as requests, type APIRequestContext, type Page } from '@playwright/test';
import { test, expect, jsOff, owner, signIn, waitForHydration, waitForLive, MISSING_PAGE } from './fixtures';
import { CORPUS, packed, place, withoutSpaces, type Payload, type Placed } from './xss-corpus';
import { csrfOf, drive, fileReport, pushBranch, role, tracking, Watch, words, type Filed } from './attack-tools';

const browserOnly = (projectName: string) => test.skip(jsOff(projectName), 'a script can only run where scripts run');
const httpOnly = (projectName: string) => test.skip(projectName !== 'desktop', 'plain HTTP: one project is enough');

/** Splits the corpus into chunks, so that each scenario stays well inside its time. */
function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** A report with payload `p` in each of its fields (each field with its own sentinel). */
function hostileReport(p: Payload): { placed: Placed[]; fields: Record<string, string> } {
  const title = place(p, 'title');
  const what = place(p, 'what');
  const expected = place(p, 'expected');
  const steps = place(p, 'steps');
  const contactPlaced = place(p, 'contact');
  const contact = { ...contactPlaced, text: `${withoutSpaces(contactPlaced.text)}@example.test` };
  return {
    placed: [title, what, expected, steps, contact],
    fields: {
      title: `${words(8)} ${title.text}`,
      what_happened: `The total went below zero. ${what.text}`,
      expected: expected.text,
      steps: `Open ShopLite\n${steps.text}\nRead the total`,
      contact: contact.text,
    },
  };
}

/** Opens a reporter's tracking page as their browser does (the secret in the fragment). */
async function openTracking(page: Page, link: string): Promise<void> {
  await page.goto('about:blank');
  await page.goto(link);
  await waitForHydration(page);
  await expect(page.getByTestId('tracking')).toBeVisible();
}

// ---------------------------------------------------------------------------------------------
// A stranger's report: title, what happened, expected, steps, contact

for (const [index, chunk] of chunks(CORPUS, 13).entries()) {
  const range = `payloads ${chunk[0].n}–${chunk[chunk.length - 1].n}`;

  test(`hostile text in a report's fields stays text on the dashboard, the bug view, the write-to-reporter dialog and the script-free tracking page (${range})`, async ({ page, request }, info) => {
    browserOnly(info.project.name);
    const placed: Placed[] = [];
    const watch = new Watch(page, () => placed);
    // One report per payload: each title is the first of its own bug, and so its page title.
    const reports = chunk.map((p) => ({ p, ...hostileReport(p) }));
    for (const r of reports) placed.push(...r.placed);
    const filed: (Filed & { p: Payload })[] = await Promise.all(reports.map(async (r) => ({ p: r.p, ...(await fileReport(request, r.fields as never)) })));
    const admitted = filed.filter((f) => f.bug_id);
    expect(admitted.length, 'the airlock admits markup that carries no instructions').toBeGreaterThan(0);

    await signIn(page);
    await watch.open('dashboard', '/desk');
    // The dashboard's search box shows back what was searched for.
    const search = packed('search', 200, chunk);
    placed.push(...search.placed);
    await watch.open('dashboard search', `/desk?q=${encodeURIComponent(search.text)}`);
    // The bug the dialog is opened on comes last, so that its page is the one left open.
    const first = admitted[index % admitted.length];
    for (const f of [...admitted.filter((x) => x !== first), first]) {
      await watch.open(`bug view of payload ${f.p.n}`, `/desk/bugs/${f.bug_id}`);
      await expect(page.locator(`article[data-report="${f.report_id}"]`)).toContainText('The total went below zero');
    }

    // The write-to-reporter question: as the script's modal dialog, and as a served page.
    await page.getByRole('button', { name: `Write to the reporter of ${first.report_id}…` }).click();
    await expect(page.getByRole('alertdialog', { name: 'Write to this reporter?' })).toBeVisible();
    await watch.live(`write-to-reporter dialog of payload ${first.p.n}`);
    await watch.render(
      `write-to-reporter page of payload ${first.p.n}`,
      await page.request.get(`/desk/bugs/${first.bug_id}/confirm?action=contact&report=${first.report_id}`),
    );

    // The script-free tracking page (the link pasted into the form) of every report.
    for (const f of filed) {
      await watch.served(`tracking page (form post) of payload ${f.p.n}`, await (await page.request.post('/track', { form: { capability: f.tracking_link } })).text());
    }
    await watch.render(`tracking page (form post) of payload ${first.p.n}`, await page.request.post('/track', { form: { capability: first.tracking_link } }));
    watch.verify();
  });
}

test('a refused report form shows what was typed back as text, in every field', async ({ page }, info) => {
  browserOnly(info.project.name);
  const placed: Placed[] = [];
  const watch = new Watch(page, () => placed);
  // A form post any site can make: the desk answers with the form and the typed text in it.
  // Every payload in each long field at once; the title and contact (attributes) one at a time.
  for (const n of [1, 8, 9, 10, 11, 27]) {
    const p = CORPUS.find((x) => x.n === n)!;
    const typed = { what_happened: packed(`typed_what${n}`, 8_000), expected: packed(`typed_expected${n}`, 4_000), steps: packed(`typed_steps${n}`, 8_000) };
    const title = place(p, 'typed_title');
    const contact = place(p, 'typed_contact');
    contact.text = `${withoutSpaces(contact.text)}@example.test`;
    placed.push(...typed.what_happened.placed, ...typed.expected.placed, ...typed.steps.placed, title, contact);
    const refused = await page.request.post('/report', {
      form: { component: 'no-such-component', title: title.text, what_happened: typed.what_happened.text, expected: typed.expected.text, steps: typed.steps.text, contact: contact.text },
    });
    expect(refused.status()).toBe(422);
    await watch.render(`refused report form (title and contact: payload ${n})`, refused);
  }
  watch.verify();
});

test('hostile text in a report’s fields stays text on the reporter’s own tracking page', async ({ page, request }, info) => {
  browserOnly(info.project.name);
  const placed: Placed[] = [];
  const watch = new Watch(page, () => placed);
  // The page draws the report in the browser: each title carries one payload aimed at the
  // contexts a script could put it in; the account, expectation and steps carry all of them.
  const reports = [1, 9, 27, 31].map((n, i) => {
    const title = place(CORPUS.find((p) => p.n === n)!, `track_title`);
    const what = packed(`track_what${i}`, 8_000);
    const expected = packed(`track_expected${i}`, 4_000);
    const steps = packed(`track_steps${i}`, 8_000);
    placed.push(title, ...what.placed, ...expected.placed, ...steps.placed);
    return { title: `${words(8)} ${title.text}`, what_happened: what.text, expected: expected.text, steps: steps.text };
  });
  const filed = await Promise.all(reports.map((fields) => fileReport(request, fields)));
  for (const [i, f] of filed.entries()) {
    await openTracking(page, f.tracking_link);
    if (f.bug_id) await expect(page.getByTestId('own-title')).toContainText('xss_');
    await watch.live(`tracking page of report ${i + 1}`);
  }
  watch.verify();
});

// ---------------------------------------------------------------------------------------------
// The words around a bug: crew notes, triage, heartbeats and hand-offs, the reporter's "no",
// owners' messages and the notices the concierge delivers

test('hostile text from the crew, the reporter and the owners stays text on the bug view, its live update, the crew page, the tracking page and its inbox', async ({ page, request }, info) => {
  browserOnly(info.project.name);
  test.setTimeout(120_000);
  const placed: Placed[] = [];
  const watch = new Watch(page, () => placed);
  const filed = await fileReport(request, { title: `Shipping estimate blank ${words(6)}`, what_happened: 'The estimate on the cart page is empty.' });
  const bug = filed.bug_id!;
  expect(bug).toBeTruthy();

  // The manager's triage note and every role's advisory notes (model output).
  const triage = packed('triage', 4_000);
  placed.push(...triage.placed);
  const triaged = await request.post(`/api/v1/bugs/${bug}/triage`, { headers: role('manager'), data: { note: triage.text } });
  expect(triaged.status(), await triaged.text()).toBe(200);
  for (const who of ['manager', 'reproducer', 'fixer', 'reviewer']) {
    const note = packed(`note_${who}`, 4_000);
    placed.push(...note.placed);
    const added = await request.post(`/api/v1/bugs/${bug}/notes`, { headers: role(who), data: { note: note.text } });
    expect(added.status(), await added.text()).toBe(200);
  }

  // What a role says it is doing (shown on the crew page, and on the bug view when it names
  // the bug), and a hand-off between roles (kind, bug and outcome are shown).
  const doing = place(CORPUS.find((p) => p.n === 9)!, 'heartbeat');
  placed.push(doing);
  const beat = await request.post('/api/v1/crew/heartbeat', { headers: role('manager'), data: { detail: `${bug} ${doing.text}`.slice(0, 200) } });
  expect(beat.status(), await beat.text()).toBe(200);
  const kind = place(CORPUS.find((p) => p.n === 7)!, 'kind');
  const taskBug = place(CORPUS.find((p) => p.n === 5)!, 'taskbug');
  const outcome = place(CORPUS.find((p) => p.n === 27)!, 'outcome');
  placed.push(kind, taskBug, outcome);
  const sent = await request.post('/api/v1/crew/tasks', {
    headers: role('manager'),
    data: { addressed_to: 'reviewer', kind: kind.text.slice(0, 40), bug: taskBug.text.slice(0, 100), body: 'look at this' },
  });
  expect(sent.status(), await sent.text()).toBe(201);
  const task = await sent.json();
  const taskId = task.id ?? task.task?.id;
  const sha = task.body_sha256 ?? task.task?.body_sha256;
  expect((await request.post(`/api/v1/crew/tasks/${taskId}/accept`, { headers: role('reviewer'), data: { addressed_to: 'reviewer', body_sha256: sha } })).status()).toBe(200);
  expect((await request.post(`/api/v1/crew/tasks/${taskId}/complete`, { headers: role('reviewer'), data: { outcome: outcome.text } })).status()).toBe(200);

  // The reporter is asked about the (measured) failing test and says no, with a reason.
  await drive(bug, 'question');
  const asked = await tracking(request, filed.tracking_link);
  expect(asked.question, 'the reporter is asked').toBeTruthy();
  const reason = packed('reason', 2_000);
  placed.push(...reason.placed);
  const answered = await request.post('/api/v1/track/answer', {
    headers: { 'x-r2r-capability': filed.tracking_link.replace('/track#', '') },
    data: { request_id: asked.question.request_id, kind: asked.question.kind, yes: false, reason: reason.text },
  });
  expect(answered.status(), await answered.text()).toBe(200);

  // The owner writes to the reporter (the concierge delivers it to the inbox too).
  await signIn(page, `/desk/bugs/${bug}`);
  const message = packed('message', 4_000);
  placed.push(...message.placed);
  const written = await page.request.post(`/api/v1/reports/${filed.report_id}/messages`, { headers: { 'x-csrf-token': await csrfOf(page) }, data: { text: message.text } });
  expect(written.status(), await written.text()).toBe(201);

  await watch.open('bug view', `/desk/bugs/${bug}`);
  await expect(page.getByTestId('notes')).toContainText('xss_');
  await expect(page.locator('#ledger')).toContainText('xss_');
  await waitForLive(page);
  // A live update swaps the page's content in place: a fresh note arrives while it is open.
  const late = packed('late_note', 4_000, CORPUS.slice().reverse());
  placed.push(...late.placed);
  const lateNote = await request.post(`/api/v1/bugs/${bug}/notes`, { headers: role('reviewer'), data: { note: late.text } });
  expect(lateNote.status(), await lateNote.text()).toBe(200);
  await expect(page.locator('#live-status')).toContainText('Updated', { timeout: 15_000 });
  await watch.live('bug view after a live update');
  // The reopen question, as a page and as the dialog.
  await watch.render('reopen page', await page.request.get(`/desk/bugs/${bug}/confirm?action=reopen`));
  await watch.open('bug view', `/desk/bugs/${bug}`);
  await page.getByTestId('action-reopen').click();
  await expect(page.getByRole('alertdialog', { name: 'Reopen this bug?' })).toBeVisible();
  await watch.live('reopen dialog');

  await watch.open('crew page', '/desk/crew');
  await expect(page.locator('body')).toContainText('xss_7_kind');
  await watch.open('dashboard', '/desk');
  await watch.open('demo', '/demo');

  // The reporter's side: the hydrated page and the script-free page. (An owner's message
  // shows among the messages; the inbox holds the concierge's notices — and a question the
  // reporter already answered is not among them.)
  await openTracking(page, filed.tracking_link);
  await expect(page.getByTestId('inbox').filter({ hasText: 'Is this the bug you saw?' })).toHaveCount(0);
  await expect(page.getByRole('region', { name: 'Messages from the owners' })).toContainText('xss_');
  await watch.live('tracking page with its messages and inbox');
  await watch.render('tracking page (form post)', await page.request.post('/track', { form: { capability: filed.tracking_link } }));
  watch.verify();
});

// ---------------------------------------------------------------------------------------------
// The fixer's pull request: branch name, title, description and the diff it brings

test('a fixer’s branch name cannot carry markup, and its pull request’s title, description and diff stay text', async ({ page, request }, info) => {
  browserOnly(info.project.name);
  test.setTimeout(120_000);
  const placed: Placed[] = [];
  const watch = new Watch(page, () => placed);
  const filed = await fileReport(request, { title: `Gift wrap fee doubled ${words(6)}`, what_happened: 'The gift wrap fee shows twice.' });
  const bug = filed.bug_id!;
  await drive(bug, 'question');
  const asked = await tracking(request, filed.tracking_link);
  const yes = await request.post('/api/v1/track/answer', {
    headers: { 'x-r2r-capability': filed.tracking_link.replace('/track#', '') },
    data: { request_id: asked.question.request_id, kind: asked.question.kind, yes: true },
  });
  expect(yes.status(), await yes.text()).toBe(200);
  const started = await request.post(`/api/v1/bugs/${bug}/fix/start`, { headers: role('fixer') });
  expect(started.status(), await started.text()).toBe(200);

  // The diff is the fixer's (a model's) text: a file full of payloads, under a hostile name.
  const source = packed('diff', 6_000);
  const file = place(CORPUS.find((p) => p.n === 5)!, 'path');
  placed.push(...source.placed, file);
  const branch = `attack-${words(1)}-${Date.now()}`;
  await pushBranch(branch, { [`src/${file.text.replace(/\//g, '_')}.txt`]: `${source.text}\n` });

  // The fixer's token opens no draft, whatever it writes: only the desk opens one, for a
  // change it measured, with words from its own evidence.
  const description = packed('pr_body', 6_000);
  const refused = await request.post(`/api/v1/bugs/${bug}/fix`, { headers: role('fixer'), data: { branch, description: description.text } });
  expect([404, 405], 'the fixer cannot open a draft').toContain(refused.status());
  // A branch name is refused unless it is a plain name: markup never reaches a view.
  for (const p of [CORPUS.find((x) => x.n === 7)!, CORPUS.find((x) => x.n === 9)!]) {
    await expect(drive(bug, 'review', place(p, 'branch').text), 'a branch name with markup').rejects.toThrow();
  }
  await drive(bug, 'review', branch);

  await signIn(page, `/desk/bugs/${bug}`);
  await watch.open('bug view with the fix', `/desk/bugs/${bug}`);
  await expect(page.getByTestId('diff')).toContainText('xss_');
  await page.getByTestId('action-approve').click();
  await expect(page.getByRole('alertdialog', { name: 'Approve this exact head?' })).toBeVisible();
  await watch.live('approve dialog');
  await watch.render('approve page', await page.request.get(`/desk/bugs/${bug}/confirm?action=approve`));
  await watch.open('dashboard', '/desk');
  watch.verify();
});

// ---------------------------------------------------------------------------------------------
// The reproducer's proposed test: path, name, source and the assertion it prints

test('a reproducer’s proposed test path, name, source and assertion text stay text on the bug view and the tracking page', async ({ page, request }, info) => {
  browserOnly(info.project.name);
  test.skip(info.project.name !== 'desktop', 'one sandbox run is enough; the views are the same pages as the other scenarios');
  test.setTimeout(300_000);
  const placed: Placed[] = [];
  const watch = new Watch(page, () => placed);
  const filed = await fileReport(request, { title: `Loyalty points vanish ${words(6)}`, what_happened: 'Points earned yesterday are gone.' });
  const bug = filed.bug_id!;
  expect((await request.post(`/api/v1/bugs/${bug}/reproduction/start`, { headers: role('reproducer') })).status()).toBe(200);

  const assertion = packed('assertion', 1_800);
  const comment = packed('source', 6_000);
  placed.push(...assertion.placed, ...comment.placed);
  const rustString = (text: string) => JSON.stringify(text).replace(/\{/g, '{{').replace(/\}/g, '}}');
  const testSource = [
    ...comment.text.split('\n').map((line) => `// ${line}`),
    '#[test]',
    'fn loyalty_points_survive_a_day() {',
    `    assert_eq!(1, 2, ${rustString(assertion.text)});`,
    '}',
    '',
  ].join('\n');
  const path = `tests/loyalty_${Date.now()}.rs`;
  const hostilePath = place(CORPUS.find((p) => p.n === 5)!, 'test_path');
  const hostileName = place(CORPUS.find((p) => p.n === 9)!, 'test_name');
  placed.push(hostilePath, hostileName);
  const propose = (data: Record<string, string>) => request.post(`/api/v1/bugs/${bug}/reproduction`, { headers: role('reproducer'), data, timeout: 290_000 });

  // A path that is markup is refused before anything is stored.
  const badPath = await propose({ test_path: `tests/${hostilePath.text.replace(/\//g, '_')}.rs`, test_name: 'loyalty_points_survive_a_day', test_source: testSource });
  test.skip(badPath.status() === 503, `no sandbox here: ${await badPath.text()}`);
  // A name that is markup is measured and stored as evidence (it does not reproduce).
  const badName = await propose({ test_path: `tests/loyalty_name_${Date.now()}.rs`, test_name: hostileName.text, test_source: testSource, model: hostileName.text });
  test.skip(badName.status() === 503, `no sandbox here: ${await badName.text()}`);
  const proposed = await propose({ test_path: path, test_name: 'loyalty_points_survive_a_day', test_source: testSource, provider: 'scripted' });
  test.skip(proposed.status() === 503, `no sandbox here: ${await proposed.text()}`);
  expect(proposed.status(), await proposed.text()).toBe(200);

  await signIn(page, `/desk/bugs/${bug}`);
  await watch.open('bug view with the evidence', `/desk/bugs/${bug}`);
  await expect(page.locator('#evidence')).toContainText('xss_');
  await openTracking(page, filed.tracking_link);
  await expect(page.getByTestId('test-failure')).not.toBeEmpty();
  await watch.live('tracking page with the proposed test');
  await watch.render('tracking page (form post) with the proposed test', await page.request.post('/track', { form: { capability: filed.tracking_link } }));
  watch.verify();
});

// ---------------------------------------------------------------------------------------------
// The chain the outside review found

test('an anonymous report title that closes </title> and posts an owner invitation does nothing when the owner opens the bug', async ({ page, request }, info) => {
  browserOnly(info.project.name);
  const tag = words(1);
  const script = "fetch('/api/v1/me').then(r=>r.json()).then(m=>fetch('/api/v1/owners/invites',{method:'POST',headers:{'x-csrf-token':m.csrf_token}}))";
  const title = `Crew eta froze ${tag}</title><script>window.__xss_chain=1;${script}</script>`;
  expect(title.length).toBeLessThanOrEqual(200);
  const filed = await fileReport(request, { title, what_happened: 'The crew page ETA stopped updating.' });
  expect(filed.status, 'the airlock sees no instructions in markup').toBe('admitted');

  const invites: string[] = [];
  page.on('response', (r) => {
    if (r.url().includes('/api/v1/owners/invites')) invites.push(`${r.request().method()} ${new URL(r.url()).pathname} answered ${r.status()}`);
  });
  const watch = new Watch(page, () => [{ payload: { n: 0, name: 'the reviewer’s chain', text: () => title }, field: 'title', sentinel: '__xss_chain', text: title }]);
  await signIn(page);
  await watch.open('the owner’s bug view', `/desk/bugs/${filed.bug_id}`);
  // The payload's requests would go out at once; give them time to.
  await page.waitForResponse(/\/api\/v1\/owners\/invites/, { timeout: 2_000 }).catch(() => null);
  expect(invites, 'no invitation was requested from the owner’s browser').toEqual([]);
  expect(await page.title()).toContain('Crew eta froze');
  watch.verify();
});

// ---------------------------------------------------------------------------------------------
// Content-Security-Policy

interface Csp {
  raw: string;
  directives: Map<string, string[]>;
}

function csp(headers: Record<string, string>, where: string): Csp {
  const raw = headers['content-security-policy'];
  expect(raw, `${where}: a Content-Security-Policy header`).toBeTruthy();
  const directives = new Map<string, string[]>();
  for (const part of raw.split(';')) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) directives.set(name.toLowerCase(), values);
  }
  return { raw, directives };
}

function nonceOf(policy: Csp, where: string): string {
  const scriptSrc = policy.directives.get('script-src');
  expect(scriptSrc, `${where}: script-src in ${policy.raw}`).toBeTruthy();
  const nonces = scriptSrc!.filter((v) => /^'nonce-[^']+'$/.test(v));
  expect(nonces, `${where}: one nonce in script-src (${policy.raw})`).toHaveLength(1);
  for (const loose of ["'unsafe-inline'", "'unsafe-eval'", '*', 'data:', 'http:', 'https:']) {
    expect(scriptSrc, `${where}: script-src allows ${loose}`).not.toContain(loose);
  }
  for (const [name, value] of [['object-src', "'none'"], ['base-uri', "'none'"], ['frame-ancestors', "'none'"]]) {
    expect(policy.directives.get(name), `${where}: ${name} ${value} in ${policy.raw}`).toEqual([value]);
  }
  return nonces[0].slice("'nonce-".length, -1);
}

/** Every HTML page the desk serves, signed out and signed in, GET and form answers. */
async function htmlResponses(request: APIRequestContext, signedOut: APIRequestContext, baseURL: string): Promise<{ where: string; fetch: () => Promise<{ headers: Record<string, string>; body: string; status: number }> }[]> {
  const read = async (response: Awaited<ReturnType<APIRequestContext['get']>>) => ({ headers: response.headers(), body: await response.text(), status: response.status() });
  const filed = await fileReport(request, { title: `Wishlist heart unclickable ${words(6)}`, what_happened: 'The heart icon does nothing.' });
  await signInSameOrigin(request, baseURL);
  const get = (path: string) => () => request.get(path, { maxRedirects: 0 }).then(read);
  return [
    { where: 'home', fetch: get('/') },
    { where: '/report', fetch: get('/report') },
    { where: '/track', fetch: get('/track') },
    { where: '/shoplite', fetch: get('/shoplite') },
    { where: '/demo', fetch: get('/demo') },
    { where: 'the 404 page', fetch: get(MISSING_PAGE) },
    { where: '/desk', fetch: get('/desk') },
    { where: '/desk/crew', fetch: get('/desk/crew') },
    { where: '/desk/owners', fetch: get('/desk/owners') },
    { where: '/desk/bugs/{id}', fetch: get(`/desk/bugs/${filed.bug_id}`) },
    { where: '/desk/invite', fetch: get('/desk/invite') },
    { where: 'the desk’s problem page', fetch: get('/desk/bugs/no-such-bug') },
    { where: 'the write-to-reporter page', fetch: get(`/desk/bugs/${filed.bug_id}/confirm?action=contact&report=${filed.report_id}`) },
    { where: 'the refused report form', fetch: () => request.post('/report', { form: { component: 'no-such-component', title: 'x', what_happened: 'y' } }).then(read) },
    { where: 'the script-free tracking page', fetch: () => request.post('/track', { form: { capability: filed.tracking_link } }).then(read) },
    { where: '/desk/sign-in', fetch: () => signedOut.get('/desk/sign-in').then(read) },
  ];
}

test('every HTML response carries a Content-Security-Policy with a fresh script nonce, no plugins, no base URL and no framing', async ({ request, baseURL }, info) => {
  httpOnly(info.project.name);
  const problems: string[] = [];
  const signedOut = await requests.newContext({ baseURL });
  for (const { where, fetch } of await htmlResponses(request, signedOut, baseURL!)) {
    const first = await fetch();
    expect(first.headers['content-type'] ?? '', where).toContain('text/html');
    const second = await fetch();
    try {
      const a = nonceOf(csp(first.headers, where), where);
      const b = nonceOf(csp(second.headers, where), where);
      expect(a, `${where}: two responses, two nonces`).not.toBe(b);
      expect(a.length, `${where}: a nonce of at least 128 bits`).toBeGreaterThanOrEqual(16);
      // Every inline script the page carries is one the server vouched for.
      for (const tag of first.body.match(/<script\b[^>]*>/gi) ?? []) {
        if (/\ssrc=/i.test(tag)) continue;
        expect(tag, `${where}: an inline script without this response's nonce`).toContain(`nonce="${a}"`);
      }
    } catch (error) {
      problems.push((error as Error).message.split('\n').slice(0, 3).join(' '));
    }
  }
  await signedOut.dispose();
  expect(problems).toEqual([]);
});

test('under the Content-Security-Policy the public pages still hydrate and the desk’s scripts still run, with no violation', async ({ page, request }, info) => {
  browserOnly(info.project.name);
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __cspViolations: string[] }).__cspViolations = seen;
    document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile}:${e.lineNumber})`));
  });
  const violations = async () => page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations);
  const unprotected: string[] = [];
  for (const path of ['/', '/report', '/track']) {
    const response = await page.goto(path);
    if (!response!.headers()['content-security-policy']) unprotected.push(path);
    await waitForHydration(page);
    expect(await violations(), path).toEqual([]);
  }
  // The desk's own scripts (the confirmation dialog, live updates) run under it as well.
  const filed = await fileReport(request, { title: `Size chart upside down ${words(6)}`, what_happened: 'The size chart renders upside down.' });
  await signIn(page, `/desk/bugs/${filed.bug_id}`);
  if (!(await page.request.get(`/desk/bugs/${filed.bug_id}`)).headers()['content-security-policy']) unprotected.push('/desk/bugs/{id}');
  await page.getByRole('button', { name: `Write to the reporter of ${filed.report_id}…` }).click();
  await expect(page.locator('dialog[open]')).toBeVisible();
  expect(await violations(), 'the desk').toEqual([]);
  // Only then: the pages above must have been under a policy at all.
  expect(unprotected, 'pages served without a Content-Security-Policy').toEqual([]);
});

// ---------------------------------------------------------------------------------------------
// Sign-in and sign-out forged from another site

const EVIL = { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site', referer: 'http://evil.example/' };

/** The session cookie a response sets, if it sets a non-empty one. */
function sessionSet(headers: { name: string; value: string }[]): string | undefined {
  for (const { name, value } of headers) {
    if (name.toLowerCase() !== 'set-cookie') continue;
    const match = /(?:^|\n)\s*r2r_session=([^;\n]*)/.exec(value);
    if (match && match[1]) return match[1];
  }
  return undefined;
}

/** Signs the owner in as their own browser does: the form as served, from the desk's origin. */
async function signInSameOrigin(request: APIRequestContext, baseURL: string): Promise<string> {
  const form = await (await request.get('/desk/sign-in')).text();
  const hidden: Record<string, string> = {};
  for (const [, name, value] of form.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) hidden[name] = value;
  const { email, password } = owner();
  const response = await request.post('/desk/sign-in', {
    form: { ...hidden, email, password, next: '/desk' },
    headers: { origin: new URL(baseURL).origin, 'sec-fetch-site': 'same-origin', referer: `${baseURL}/desk/sign-in` },
    maxRedirects: 0,
  });
  const session = sessionSet(response.headersArray());
  expect(session, `the desk's own sign-in form signs in (${response.status()})`).toBeTruthy();
  return session!;
}

async function sessionWorks(baseURL: string, session: string): Promise<boolean> {
  const fresh = await requests.newContext({ baseURL, extraHTTPHeaders: { cookie: `r2r_session=${session}` } });
  try {
    return (await fresh.get('/api/v1/me')).status() === 200;
  } finally {
    await fresh.dispose();
  }
}

test('a sign-in form posted from another site does not sign the browser in', async ({ request, baseURL }, info) => {
  httpOnly(info.project.name);
  const { email, password } = owner();
  const forged = await request.post('/desk/sign-in', { form: { email, password, next: '/desk' }, headers: EVIL, maxRedirects: 0 });
  expect(sessionSet(forged.headersArray()), `a session cookie for a cross-site sign-in (${forged.status()})`).toBeUndefined();
  expect((await request.get('/api/v1/me')).status()).toBe(401);
  // The desk's own form from the desk's own page still works.
  expect(await sessionWorks(baseURL!, await signInSameOrigin(request, baseURL!))).toBe(true);
});

test('a sign-out posted from another site without the session’s token leaves the session alone', async ({ request, baseURL }, info) => {
  httpOnly(info.project.name);
  const session = await signInSameOrigin(request, baseURL!);
  const victim = await requests.newContext({ baseURL, extraHTTPHeaders: { cookie: `r2r_session=${session}` } });
  try {
    await victim.post('/desk/sign-out', { form: {}, headers: EVIL, maxRedirects: 0 });
  } finally {
    await victim.dispose();
  }
  expect(await sessionWorks(baseURL!, session), 'the session survives a forged sign-out').toBe(true);
});
