import { defineConfig, devices } from '@playwright/test';
import * as os from 'node:os';
import * as path from 'node:path';
import * as fs from 'node:fs';
import { execFileSync } from 'node:child_process';

// The desk under test: the release binary built by `cargo leptos build --release`, on a fresh
// SQLite file, on a loopback port of its own.
const port = Number(process.env.R2R_E2E_PORT ?? 3107);
const baseURL = `http://127.0.0.1:${port}`;
// The config is evaluated in the runner and again in every worker: create the folder once.
const dataDir = process.env.R2R_E2E_DATA_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'r2r-e2e-'));
const databaseUrl = `sqlite://${dataDir}/desk.db`;
// Scenarios that play the crew's part (`r2r demo drive`) write to the same database.
process.env.R2R_E2E_DATABASE_URL = databaseUrl;
process.env.R2R_E2E_DATA_DIR = dataDir;

// The desk's secrets for this run, written once by `r2r setup` (fresh each run, never in the
// repository): the first owner (its one-time password kept for the desk scenarios), the
// session key and the role tokens. The config is evaluated again in every worker: once only.
// Run from the repository root, setup also seeds ShopLite into a local forge beside the env
// file (`${dataDir}/data/shoplite.git`), which the full-loop scenario drafts and merges into.
const envFile = `${dataDir}/desk.env`;
const ownerFile = `${dataDir}/owner.json`;
if (!fs.existsSync(ownerFile)) {
  const printed = execFileSync(path.resolve(__dirname, '..', 'target/release/r2r'), ['--env-file', envFile, 'setup', '--owner-email', 'owner@e2e.test'], {
    cwd: path.resolve(__dirname, '..'),
    env: { ...process.env, RUST_LOG: 'warn', DATABASE_URL: databaseUrl },
  }).toString();
  const password = /One-time password:\s+(\S+)/.exec(printed)?.[1];
  if (!password) throw new Error(`r2r setup printed no password:\n${printed}`);
  fs.writeFileSync(ownerFile, JSON.stringify({ email: 'owner@e2e.test', password }));
}
const secrets: Record<string, string> = {};
let localForge: string | undefined;
for (const line of fs.readFileSync(envFile, 'utf8').split('\n')) {
  const match = /^(R2R_[A-Z_]+)='?([^']*)'?$/.exec(line.trim());
  if (match && (match[1].endsWith('_TOKEN') || ['R2R_OWNER_EMAIL', 'R2R_OWNER_PASSWORD_HASH', 'R2R_SESSION_KEY'].includes(match[1]))) {
    secrets[match[1]] = match[2];
  }
  if (match && match[1] === 'R2R_LOCAL_FORGE') localForge = match[2];
}
process.env.R2R_E2E_ENV_FILE = envFile;
if (localForge) process.env.R2R_E2E_LOCAL_FORGE = localForge;
process.env.R2R_E2E_OWNER_FILE = ownerFile;
process.env.R2R_E2E_SECRETS = JSON.stringify(secrets);

// Debian's Chromium; Playwright never downloads a browser here.
const launchOptions = {
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  // The machine has no outside network: keep Chromium from trying to reach it.
  args: ['--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
};

export default defineConfig({
  testDir: './tests',
  fullyParallel: true,
  forbidOnly: true,
  retries: 0,
  workers: 2,
  reporter: [['list']],
  timeout: 30_000,
  use: {
    baseURL,
    launchOptions,
    trace: 'retain-on-failure',
  },
  projects: [
    { name: 'desktop', use: { ...devices['Desktop Chrome'], launchOptions } },
    { name: 'mobile', use: { ...devices['Pixel 7'], launchOptions } },
    { name: 'js-off', use: { ...devices['Desktop Chrome'], javaScriptEnabled: false, launchOptions } },
  ],
  webServer: {
    command: `./target/release/r2r --env-file ${dataDir}/absent.env serve --addr 127.0.0.1:${port}`,
    cwd: '..',
    url: `${baseURL}/api/health`,
    reuseExistingServer: false,
    timeout: 60_000,
    env: {
      DATABASE_URL: databaseUrl,
      // Every scenario files from 127.0.0.1: lift the per-client limits (tested in Rust).
      R2R_RATE_INTAKE: '1000/60s',
      R2R_RATE_ANSWERS: '5000/60s',
      // Every desk scenario signs the same owner in from 127.0.0.1 (the limit is tested in Rust).
      R2R_RATE_LOGIN: '1000/60s',
      // …and the crew's per-address budget of new bugs (the stranger's budget, tested in Rust).
      R2R_STRANGER_BUGS_PER_HOUR: '10000',
      LEPTOS_SITE_ROOT: 'target/site',
      // The owner and the roles (no crew runs here: the scenarios play the crew's part).
      ...secrets,
      R2R_CREW: 'off',
      // ShopLite in its local forge: the desk re-runs proposed tests and fixes on snapshots of
      // it (in the sandbox: R2R_SANDBOX_IMAGE and DOCKER_HOST come from the environment),
      // opens draft pull requests there and merges them.
      ...(localForge ? { R2R_LOCAL_FORGE: localForge } : {}),
      // …and releases every new head of its main branch: built in the sandbox, started on a
      // loopback port, served at /live/shoplite and recorded by the in-process recorder.
      ...(localForge ? { R2R_DEPLOY: 'on', R2R_DEPLOY_DIR: `${dataDir}/releases` } : {}),
      RUST_LOG: 'warn',
    },
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
