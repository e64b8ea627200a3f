// The viewer's sub-agent links in a real browser: a keel dev of
// examples/subagents (built here) runs the coordinator, whose two
// sub-agent calls start two child runs; the parent's page lists them with
// links, a child's page links back to the run that started it, and once
// the publisher's approval is given the parent's page shows both
// children completed.
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
const tmp = mkdtempSync(join(tmpdir(), 'keel-viewer-sub-'));
const data = join(tmp, 'data');
const WAIT = 90_000; // a busy two-core machine

let keel, base, token, browser;
const pageErrors = [];

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
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json', 'Idempotency-Key': body ? 'e2e-sub-' + Math.random() : '' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

before(async () => {
  const bin = join(tmp, 'subagents');
  execFileSync('go', ['build', '-o', bin, '.'], { cwd: join(repo, 'examples/subagents'), stdio: 'inherit' });
  keel = spawn(bin, ['dev', '--data-dir', data, '--addr', '127.0.0.1:0'], {
    env: { ...process.env, KEEL_DATA_DIR: data, KEEL_URL: '', KEEL_TOKEN: '', TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'],
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

test('a parent lists its child runs, a child links back, and both show completed', async () => {
  const parent = (await call('POST', '/v1/runs', { agent: 'coordinator', input: 'Report on Q3' })).run_id;
  const kids = await until('two child runs', async () => {
    const { runs } = await call('GET', `/v1/runs?parent=${parent}`);
    return runs.length === 2 && runs;
  });
  const publisher = kids.find((k) => k.agent === 'publisher');
  assert.ok(publisher, 'a publisher child');

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
  await page.goto(base + '/#/runs/' + parent);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Open' }).click();

  const items = page.locator('#children li');
  await until('the child list', async () => (await items.count()) === 2);
  for (const k of kids) {
    assert.equal(await page.locator(`#children a[href="#/runs/${k.run_id}"]`).count(), 1, `a link to ${k.agent}'s run`);
  }

  // Into the publisher's run, and back up through its caller.
  await page.locator(`#children a[href="#/runs/${publisher.run_id}"]`).click();
  await page.waitForURL((u) => u.hash.endsWith(publisher.run_id), { timeout: WAIT });
  const back = page.locator(`#started-by a[href="#/runs/${parent}"]`);
  await back.waitFor({ timeout: WAIT });
  assert.match(await page.locator('#started-by').textContent(), /depth 1/);

  // The publisher waits for a person; approve it, and the parent completes.
  const ap = await until('the publisher\'s approval', async () => (await call('GET', `/v1/runs/${publisher.run_id}/approvals`)).approvals.find((a) => a.status === 'pending'));
  await call('POST', `/v1/runs/${publisher.run_id}/approvals/${ap.approval_id}`, { decision: 'approve', args_hash: ap.args_hash });
  await until('the parent to complete', async () => (await call('GET', `/v1/runs/${parent}`)).status === 'completed');

  await back.click();
  await page.waitForURL((u) => u.hash.endsWith(parent), { timeout: WAIT });
  await until('both children shown completed', async () => (await page.locator('#children .badge.s-completed').count()) === 2);
  assert.deepEqual(pageErrors, [], 'errors in the page');
  await ctx.close();
});
