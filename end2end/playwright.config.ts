import { defineConfig, devices } from '@playwright/test';
import * as os from 'node:os';
import * as path from 'node:path';
import * as fs from 'node:fs';

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
      LEPTOS_SITE_ROOT: 'target/site',
      RUST_LOG: 'warn',
    },
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
