// What the attack scenarios share: the desk's roles and owner as an attacker's target sees
// them, seeding through the real routes, and the check that hostile text stayed text.

import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { APIRequestContext, APIResponse, Page } from '@playwright/test';
import { expect } from './fixtures';
import { MARK, needles, type Placed } from './xss-corpus';

const execFileAsync = promisify(execFile);
const root = path.resolve(__dirname, '..', '..');

export const secrets = (): Record<string, string> => JSON.parse(process.env.R2R_E2E_SECRETS!);

/** The bearer header of a crew role (`manager`, `reproducer`, `fixer`, `reviewer`, …). */
export function role(name: string): Record<string, string> {
  return { authorization: `Bearer ${secrets()[`R2R_${name.toUpperCase()}_TOKEN`]}` };
}

/** Words no other title shares, so that each report opens a bug of its own. */
export function words(count = 6): string {
  const part = () => Math.random().toString(36).slice(2, 8).replace(/[0-9]/g, 'q');
  return Array.from({ length: count }, part).join(' ');
}

export interface Filed {
  report_id: string;
  bug_id?: string;
  status: string;
  tracking_link: string;
}

export async function fileReport(
  request: APIRequestContext,
  fields: { title: string; what_happened: string; expected?: string; steps?: string; contact?: string },
): Promise<Filed> {
  const response = await request.post('/api/v1/reports', {
    data: { component: 'shoplite', expected: '', steps: '', ...fields },
  });
  expect(response.status(), await response.text()).toBe(201);
  return response.json();
}

/** The tracking API as the reporter's own browser calls it. */
export async function tracking(request: APIRequestContext, link: string): Promise<any> {
  const response = await request.get('/api/v1/track', { headers: { 'x-r2r-capability': link.replace('/track#', '') } });
  expect(response.status()).toBe(200);
  return response.json();
}

/**
 * `r2r demo drive`: plays the crew's measured reproduction (ShopLite's own regression test)
 * against the desk's database, or (`review`) opens a pushed branch of the local forge as the
 * bug's draft — the API opens drafts only for changes the desk measured itself. Without a
 * Docker sandbox on this host it runs that trusted test on the host.
 */
export async function drive(bug: string, to: 'question' | 'review' | 'release', branch?: string): Promise<void> {
  const backend = process.env.R2R_SANDBOX_BACKEND
    ?? (process.env.DOCKER_HOST || fs.existsSync('/var/run/docker.sock') ? 'docker' : 'host');
  const args = ['--env-file', `${process.env.R2R_E2E_DATA_DIR}/absent.env`, 'demo', 'drive', '--bug', bug, '--to', to];
  if (branch !== undefined) args.push('--branch', branch);
  await execFileAsync('./target/release/r2r', args, {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: process.env.R2R_E2E_DATABASE_URL!,
      R2R_LOCAL_FORGE: process.env.R2R_E2E_LOCAL_FORGE!,
      RUST_LOG: 'warn',
      R2R_SANDBOX_BACKEND: backend,
    },
    timeout: 240_000,
  });
}

/** A signed-in owner's CSRF token (the desk's pages and `GET /api/v1/me` both hand it out). */
export async function csrfOf(page: Page): Promise<string> {
  const me = await page.request.get('/api/v1/me');
  expect(me.status()).toBe(200);
  return (await me.json()).csrf_token;
}

/** Pushes a branch with `files` on top of the local forge's main (a fixer's push). */
export async function pushBranch(branch: string, files: Record<string, string>): Promise<void> {
  const forge = process.env.R2R_E2E_LOCAL_FORGE;
  expect(forge, 'r2r setup seeds ShopLite into a local forge').toBeTruthy();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'r2r-attack-push-'));
  try {
    const git = (...args: string[]) => execFileAsync('git', ['-C', work, '-c', 'user.name=attack e2e', '-c', 'user.email=attack@e2e.test', ...args]);
    await execFileAsync('git', ['clone', '--quiet', forge!, work]);
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
      fs.writeFileSync(path.join(work, file), text);
    }
    await git('add', '--all');
    await git('commit', '--quiet', '-m', 'attack scenario');
    await git('push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Did the hostile text stay text?

/**
 * Looks for markup that hostile text could have produced: handlers and script-bearing
 * attributes carrying a sentinel, scripts and styles that are the payload's own, in the live
 * document (`html` null) or in served HTML parsed without running it. Runs in the page.
 */
function injectedMarkup({ html, mark }: { html: string | null; mark: string }): string[] {
  const doc = html === null ? document : new DOMParser().parseFromString(html, 'text/html');
  // Attributes where hostile text may legitimately sit as a value.
  const benign = new Set(['value', 'title', 'alt', 'placeholder', 'aria-label', 'aria-description']);
  const urls = new Set(['href', 'action', 'formaction', 'src', 'cite']);
  const found: string[] = [];
  const walk = (rootNode: ParentNode) => {
    for (const el of Array.from(rootNode.querySelectorAll('*'))) {
      for (const attr of Array.from(el.attributes)) {
        const name = attr.name.toLowerCase();
        if (!attr.value.includes(mark) && !name.includes(mark)) continue;
        const scheme = attr.value.replace(/[\s\u0000-\u001f]/g, '').toLowerCase();
        const safe = benign.has(name) || name.startsWith('data-') || (urls.has(name) && !/^(javascript|data|vbscript):/.test(scheme));
        if (!safe) found.push(`<${el.localName} ${name}="${attr.value.slice(0, 100)}">`);
      }
      const text = el.textContent ?? '';
      if (el.localName === 'script' && /^\s*(window|top)\./.test(text) && text.includes(mark)) found.push(`<script>${text.slice(0, 100)}`);
      if (el.localName === 'style' && text.includes(mark)) found.push(`<style>${text.slice(0, 100)}`);
      if (el instanceof HTMLTemplateElement) walk(el.content);
    }
  };
  walk(doc);
  return found;
}

/**
 * Watches one page for hostile text that ran or became markup: sentinels in any frame,
 * dialogs, injected markup in the live document, and — for the served HTML — payload tags
 * left unescaped. Findings are collected across views and asserted once with `verify`.
 */
export class Watch {
  readonly findings: string[] = [];

  constructor(readonly page: Page, readonly placed: () => Placed[]) {
    page.on('dialog', (dialog) => {
      this.findings.push(`a dialog opened: ${dialog.type()} ${JSON.stringify(dialog.message())} on ${page.url()}`);
      dialog.dismiss().catch(() => {});
    });
  }

  /** Checks the page as it is now (after letting load-time handlers fire), under `view`. */
  async live(view: string): Promise<void> {
    const page = this.page;
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 30)))));
    for (const frame of page.frames()) {
      const set = await frame
        .evaluate((mark) => Object.keys(window).filter((key) => key.startsWith(mark)), MARK)
        .catch(() => [] as string[]);
      for (const key of set) this.findings.push(`${view}: script ran and set ${key}`);
    }
    for (const hit of await page.evaluate(injectedMarkup, { html: null, mark: MARK })) {
      this.findings.push(`${view}: live page holds injected markup ${hit}`);
    }
  }

  /** Checks HTML as the server sent it, without running it. */
  async served(view: string, html: string): Promise<void> {
    for (const placed of this.placed()) {
      for (const needle of needles(placed)) {
        if (html.includes(needle)) this.findings.push(`${view}: served HTML holds payload ${placed.payload.n} (${placed.payload.name}, ${placed.field}) unescaped: ${needle}`);
      }
    }
    for (const hit of await this.page.evaluate(injectedMarkup, { html, mark: MARK })) {
      this.findings.push(`${view}: served HTML parses into injected markup ${hit}`);
    }
  }

  /** Opens `url` in the page, then checks both what was served and what the browser made of it. */
  async open(view: string, url: string): Promise<void> {
    const response = await this.page.goto(url);
    expect(response, url).not.toBeNull();
    expect(response!.status(), `${view}: ${url}`).toBeLessThan(400);
    await this.served(view, await response!.text());
    await this.live(view);
  }

  /**
   * Shows an answer the test fetched itself (a form post's page) in the browser, headers
   * included, so that whatever it holds gets its chance to run; then checks it.
   */
  async render(view: string, response: APIResponse): Promise<void> {
    const html = await response.text();
    await this.served(view, html);
    const url = '/__attack-render__';
    // The answer's own headers (its Content-Security-Policy among them), not its framing.
    const headers = Object.fromEntries(
      Object.entries(response.headers()).filter(([name]) => !['content-length', 'content-encoding', 'transfer-encoding', 'set-cookie'].includes(name)),
    );
    await this.page.route(url, (route) => route.fulfill({ status: 200, headers, body: html }));
    try {
      await this.page.goto(url);
      await this.live(view);
    } finally {
      await this.page.unroute(url);
    }
  }

  verify(): void {
    expect(this.findings, 'hostile text ran or became markup').toEqual([]);
  }
}
