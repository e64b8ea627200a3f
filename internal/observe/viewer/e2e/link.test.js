// A one-time approval link in a real browser: a keel dev of the budget
// program (internal/proof/people/testdata/budgetagent) pauses a run at its
// spend cap; the pause's notification reaches a webhook receiver on
// loopback (this process) with a link; headless chromium opens the link,
// sees the exact action (keel.raise_limit, its args and hash) and clicks
// Approve; the run completes with the raise in its log. Opened again, the
// link offers no button and approves nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../../../..');
const tmp = mkdtempSync(join(tmpdir(), 'keel-viewer-link-'));
const data = join(tmp, 'data');
const WAIT = 90_000; // a busy two-core machine

let keel, base, token, browser, hook;
const messages = new Map(); // by delivery id: the receiver dedups

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
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

before(async () => {
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (b) => { body += b; });
    req.on('end', () => {
      const m = JSON.parse(body);
      messages.set(req.headers['keel-delivery'], m);
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => hook.listen(0, '127.0.0.1', r));
  const bin = join(tmp, 'budgetagent');
  execFileSync('go', ['build', '-o', bin, './internal/proof/people/testdata/budgetagent'], { cwd: repo, stdio: 'inherit' });
  keel = spawn(bin, ['dev', '--data-dir', data, '--addr', '127.0.0.1:0'], {
    env: {
      ...process.env, KEEL_DATA_DIR: data, KEEL_URL: '', KEEL_TOKEN: '', KEEL_NOTIFY_INTERVAL: '200ms',
      KEEL_NOTIFY_WEBHOOK_URL: `http://127.0.0.1:${hook.address().port}/hook`, KEEL_NOTIFY_WEBHOOK_SECRET: 'hook-secret-e2e',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
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
  hook?.close();
  rmSync(tmp, { recursive: true, force: true });
});

test('the link page shows the raise a paused run asks for; Approve raises it once and the run completes', async () => {
  const r = await call('POST', '/v1/runs', { agent: 'budget', input: 'look them up' });
  const paused = await until('the run to pause at its cap', async () => {
    const x = await call('GET', `/v1/runs/${r.run_id}`);
    return x.status === 'awaiting_approval' && x;
  });
  assert.ok(paused.counters.spend_used_micro_usd <= paused.limits.max_spend_micro_usd, 'spend within the cap');
  const { approvals } = await call('GET', `/v1/runs/${r.run_id}/approvals`);
  assert.equal(approvals.length, 1);
  const ap = approvals[0];
  const msg = await until('the notification', () => [...messages.values()].find((m) => m.approval_id === ap.approval_id));
  assert.ok(msg.link.startsWith(base), 'the link points at keel dev');

  const page = await (await browser.newContext()).newPage();
  await page.goto(msg.link);
  const text = await page.textContent('body');
  assert.ok(text.includes('keel.raise_limit'), 'the page names the action');
  assert.ok(text.includes(ap.args_hash), 'the page shows the args hash');
  assert.ok(text.includes('raise_by'), 'the page shows the args');
  await Promise.all([page.waitForNavigation(), page.click('#approve')]);
  assert.match(await page.textContent('body'), /approved/i);

  const done = await until('the run to complete', async () => {
    const x = await call('GET', `/v1/runs/${r.run_id}`);
    return x.status === 'completed' && x;
  });
  assert.equal(done.limits.max_spend_micro_usd, 30000);
  const { events } = await call('GET', `/v1/runs/${r.run_id}/events?limit=1000`);
  const raised = events.filter((e) => e.type === 'budget_raised');
  assert.equal(raised.length, 1);
  assert.equal(raised[0].data.approved_by, 'link:' + msg.delivery_id);

  await page.goto(msg.link);
  assert.equal(await page.locator('#approve').count(), 0, 'a used link offers no button');
});
