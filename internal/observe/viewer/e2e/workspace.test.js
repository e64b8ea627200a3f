// The viewer's workspace panel in a real browser: a keel dev of the
// wsagent program (./wsagent, built here) runs an agent that writes files
// into its workspace; the page lists the versions per checkpoint, browses
// the tree and downloads a file whose bytes are checked. A file named and
// filled with markup shows as text and runs nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../../../..');
const tmp = mkdtempSync(join(tmpdir(), 'keel-viewer-ws-'));
const data = join(tmp, 'data');
const WAIT = 90_000; // a busy two-core machine

let keel, base, token, browser;
const pageErrors = [];
const dialogs = [];

async function until(what, fn) {
  const end = Date.now() + WAIT;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error('timed out waiting for ' + what + '\nlog:\n' + keel.log().slice(-3000));
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function call(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json', 'Idempotency-Key': body ? 'e2e-ws-' + Math.random() : '' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

before(async () => {
  const bin = join(tmp, 'wsagent');
  execFileSync('go', ['build', '-o', bin, './internal/observe/viewer/e2e/wsagent'], { cwd: repo, stdio: 'inherit' });
  keel = spawn(bin, ['dev', '--data-dir', data, '--addr', '127.0.0.1:0'], {
    env: { ...process.env, KEEL_DATA_DIR: data, KEEL_URL: '', KEEL_TOKEN: '' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  keel.stdout.on('data', (b) => { log += b; });
  keel.stderr.on('data', (b) => { log += b; });
  keel.log = () => log;
  keel.exited = new Promise((r) => keel.on('exit', r));
  base = await until('keel dev to write its url', () => existsSync(join(data, 'url')) && readFileSync(join(data, 'url'), 'utf8').trim());
  token = readFileSync(join(data, 'token'), 'utf8').trim();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close();
  if (keel) { keel.kill('SIGTERM'); await keel.exited; }
  rmSync(tmp, { recursive: true, force: true });
});

test('browse a run\'s workspace per checkpoint and download a file, checked byte for byte', async () => {
  const r = await call('POST', '/v1/runs', { agent: 'coder', input: 'write the files' });
  await until('the run to complete', async () => (await call('GET', `/v1/runs/${r.run_id}`)).status === 'completed');
  const { versions } = await call('GET', `/v1/runs/${r.run_id}/workspace`);
  const last = versions[versions.length - 1];
  assert.equal(last.files, 3, 'three files at the last checkpoint');

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await page.goto(base + '/#/runs/' + r.run_id);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Open' }).click();

  // One row per checkpoint with a workspace, its file count shown.
  const rows = page.locator('#workspace tr[data-checkpoint-id]');
  await until('the workspace rows', async () => (await rows.count()) === versions.length);
  const row = page.locator(`#workspace tr[data-checkpoint-id="${last.checkpoint_id}"]`);
  assert.equal((await row.locator('td').nth(1).textContent()).trim(), '3');

  // Browse: the root holds out/ and src/; src/ holds the markup-named file as text.
  await row.getByRole('button', { name: 'Browse' }).click();
  await page.locator('#ws-tree li.ws-entry', { hasText: 'out' }).waitFor();
  await page.locator('#ws-tree li.ws-entry[data-type="dir"]', { hasText: 'src' }).getByRole('button').click();
  await page.locator('#ws-dir', { hasText: 'src' }).waitFor();
  const evil = page.locator('#ws-tree li.ws-entry', { hasText: '<img src=x onerror=alert(1)>.txt' });
  await evil.waitFor();
  assert.equal(await page.locator('#ws-tree img').count(), 0, 'a file name is text, never markup');

  // Download the markup file: its bytes are the manifest's, and nothing ran.
  const [dl] = await Promise.all([page.waitForEvent('download'), evil.getByRole('button').click()]);
  await page.getByText(/sha256 verified/).waitFor();
  const got = readFileSync(await dl.path(), 'utf8');
  assert.equal(got, '<script>alert(1)</script>');

  // Up to the root, into out/, and download the report.
  await page.getByRole('button', { name: '↑ ..' }).click();
  await page.locator('#ws-tree li.ws-entry[data-type="dir"]', { hasText: 'out' }).getByRole('button').click();
  const [dl2] = await Promise.all([page.waitForEvent('download'), page.locator('#ws-tree li.ws-entry', { hasText: 'report.txt' }).getByRole('button').click()]);
  assert.equal(dl2.suggestedFilename(), 'report.txt');
  assert.equal(readFileSync(await dl2.path(), 'utf8'), 'all tests pass\n');

  assert.deepEqual(dialogs, [], 'no script ran');
  assert.deepEqual(pageErrors, [], 'errors in the page');
  await ctx.close();
});
