import { defineConfig, devices } from '@playwright/test';
import * as os from 'node:os';
import * as path from 'node:path';
import * as fs from 'node:fs';

// The desk under test: the release binary built by `cargo leptos build --release`, on a fresh
// SQLite file, on a loopback port of its own.
const port = Number(process.env.R2R_E2E_PORT ?? 3107);
const baseURL = `http://127.0.0.1:${port}`;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'r2r-e2e-'));

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
      DATABASE_URL: `sqlite://${dataDir}/desk.db`,
      LEPTOS_SITE_ROOT: 'target/site',
      RUST_LOG: 'warn',
    },
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
