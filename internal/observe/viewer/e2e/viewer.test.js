// The web run viewer in a real browser: Debian's chromium driven by
// playwright-core, against the stock program's `keel dev` (built here from
// this checkout). Run by `make test-viewer` (part of `make test`).
//
//   KEEL_BIN     a built `keel` to use instead of building ./cmd/keel
//   CHROMIUM     the browser (default /usr/bin/chromium)
//   VIEWER_OUT   where screenshots go (default ./out)
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, readdirSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../../../..');
const out = resolve(process.env.VIEWER_OUT || join(here, 'out'));
const tmp = mkdtempSync(join(tmpdir(), 'keel-viewer-'));
const data = join(tmp, 'data');
const WAIT = 90_000; // a busy two-core machine: a research run takes seconds, allow minutes

let keel, bin, base, token, browser;
let addr = '127.0.0.1:0';
const requests = []; // every URL and header set the pages sent
const pageErrors = []; // uncaught errors in the pages: none expected

function startDev() {
  rmSync(join(data, 'url'), { force: true });
  const child = spawn(bin, ['dev', '--data-dir', data, '--addr', addr], {
    env: { ...process.env, KEEL_DATA_DIR: data, RESEARCH_PUBLISH: '', KEEL_URL: '', KEEL_TOKEN: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (b) => { log += b; });
  child.stderr.on('data', (b) => { log += b; });
  child.log = () => log;
  child.exited = new Promise((r) => child.on('exit', r));
  return child;
}

async function until(what, fn, ms = WAIT) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error('timed out waiting for ' + what + (keel ? '\nkeel dev log:\n' + keel.log().slice(-3000) : ''));
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function waitReady() {
  base = await until('keel dev to write its url', () => existsSync(join(data, 'url')) && readFileSync(join(data, 'url'), 'utf8').trim());
  token = readFileSync(join(data, 'token'), 'utf8').trim();
  await until('healthz', async () => (await fetch(base + '/healthz')).ok);
  addr = new URL(base).host;
}

async function call(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json', 'Idempotency-Key': body ? 'e2e-' + Math.random() : '' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

const newRun = (input) => call('POST', '/v1/runs', { agent: 'research', input });
const approvalsOf = async (id) => (await call('GET', `/v1/runs/${id}/approvals`)).approvals;
const publications = () => existsSync(join(data, 'published')) ? readdirSync(join(data, 'published')).filter((f) => f.endsWith('.md')) : [];

async function openPage(hash, viewport = { width: 1280, height: 900 }) {
  const ctx = await browser.newContext({ viewport, acceptDownloads: true });
  const page = await ctx.newPage();
  page.on('request', (r) => requests.push({ url: r.url(), headers: r.headers(), method: r.method(), body: r.postData() }));
  page.on('pageerror', (e) => pageErrors.push(e));
  await page.goto(base + '/' + (hash || ''));
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Open' }).click();
  return page;
}

before(async () => {
  mkdirSync(out, { recursive: true });
  bin = process.env.KEEL_BIN;
  if (!bin) {
    bin = join(tmp, 'keel');
    execFileSync('go', ['build', '-o', bin, './cmd/keel'], { cwd: repo, stdio: 'inherit' });
  }
  keel = startDev();
  await waitReady();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

afterEach(() => assert.deepEqual(pageErrors.splice(0), [], 'errors in the page'));

after(async () => {
  await browser?.close();
  if (keel) { keel.kill('SIGTERM'); await keel.exited; }
  rmSync(tmp, { recursive: true, force: true });
});

test('approve from the page: the run completes with one publication', async () => {
  const page = await openPage();
  const r = await newRun('Write a short report on durable agents');
  // The runs page shows the new run, live, and its status reaches the approval.
  const row = page.locator(`tr[data-run-id="${r.run_id}"]`);
  await row.waitFor({ timeout: WAIT });
  await row.getByText('awaiting approval').waitFor({ timeout: WAIT });
  await page.screenshot({ path: join(out, 'runs-awaiting.png'), fullPage: true });

  await row.getByRole('link', { name: r.run_id }).click();
  const card = page.locator('form.approval');
  await card.waitFor({ timeout: WAIT });
  const [a] = await approvalsOf(r.run_id);
  assert.equal(a.status, 'pending');
  assert.equal(await card.locator('h3 code').textContent(), a.tool);
  assert.equal(await card.locator('code.hash').textContent(), a.args_hash);
  assert.deepEqual(JSON.parse(await card.locator('pre.args').textContent()), a.args);
  // The next move names the person and the exact command.
  const next = await page.locator('#run-next').textContent();
  assert.match(next, /^person: /);
  assert.ok(next.includes(`keel approve ${r.run_id} ${a.approval_id}`), next);
  await page.screenshot({ path: join(out, 'run-approval.png'), fullPage: true });
  // The README's picture (docs/viewer.png is a copy): the top of the page.
  await page.screenshot({ path: join(out, 'readme.png'), clip: { x: 0, y: 0, width: 1280, height: 820 } });

  // Every control has a name a screen reader can say.
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button, progress')]
    .filter((e) => !(e.labels?.length || e.getAttribute('aria-label') || (e.tagName === 'BUTTON' && e.textContent.trim())))
    .map((e) => e.outerHTML.slice(0, 80)));
  assert.deepEqual(unlabelled, []);

  await card.getByLabel('Reason (optional)').fill('checked in the e2e test');
  await card.getByRole('button', { name: 'Approve' }).click();
  await page.locator('#run-status', { hasText: 'completed' }).waitFor({ timeout: WAIT });
  await page.locator('#stream-state', { hasText: 'ended: completed' }).waitFor({ timeout: WAIT });

  // The decision went through the CLI's API path, with the hash shown.
  const sent = requests.filter((q) => q.method === 'POST' && q.url.endsWith(`/v1/runs/${r.run_id}/approvals/${a.approval_id}`));
  assert.equal(sent.length, 1);
  assert.deepEqual(JSON.parse(sent[0].body), { decision: 'approve', args_hash: a.args_hash, reason: 'checked in the e2e test' });
  const [decided] = await approvalsOf(r.run_id);
  assert.equal(decided.status, 'approved');
  assert.equal(decided.reason, 'checked in the e2e test');
  assert.equal(publications().length, 1, 'one publication');

  // The page shows the finished run: its plan, its artifacts, its output.
  await page.locator('tr[data-plan-item]', { hasText: 'publish_report' }).getByText('completed').waitFor();
  assert.ok((await page.locator('#run-output').textContent()).length > 0);
  assert.ok(await page.locator('li.artifact').count() >= 1);
  const seqs = await page.locator('#events li').evaluateAll((ls) => ls.map((l) => +l.dataset.seq));
  const run = await call('GET', `/v1/runs/${r.run_id}`);
  assert.deepEqual(seqs, Array.from({ length: run.counters.events }, (_, i) => i + 1), 'every event once, in order');
  // The agent version the run was created under (issue #28), short form.
  assert.equal(run.agent_version.length, 64);
  assert.equal(await page.locator('#run-agent-version').textContent(), run.agent_version.slice(0, 12));

  // A download is checked against its sha256 before it is saved.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('li.artifact button').first().click()]);
  assert.ok(dl.suggestedFilename());
  await page.getByText(/sha256 verified/).waitFor();
  await page.screenshot({ path: join(out, 'run.png'), fullPage: true });

  await page.goto(base + '/#/');
  await page.locator(`tr[data-run-id="${r.run_id}"]`).getByText('completed').waitFor({ timeout: WAIT });
  await page.screenshot({ path: join(out, 'runs.png'), fullPage: true });

  // A narrow screen: one column, nothing cut off sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(base + '/#/runs/' + r.run_id);
  await page.locator('#run-status', { hasText: 'completed' }).waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `page wider than the screen by ${overflow}px`);
  await page.screenshot({ path: join(out, 'run-narrow.png'), fullPage: false });
  await page.context().close();
});

test('a stale hash is refused with a message; the stream resumes after keel dev restarts', async () => {
  const r = await newRun('Write a short report on approvals');
  const page = await openPage('#/runs/' + r.run_id);
  const card = page.locator('form.approval');
  await card.waitFor({ timeout: WAIT });
  await page.locator('#stream-state', { hasText: /^live/ }).waitFor();
  const shown = await page.locator('#events li').count();

  // keel dev goes away and comes back on the same address: the page
  // reconnects and resumes after the last event it has.
  keel.kill('SIGTERM');
  await keel.exited;
  await page.locator('#stream-state', { hasText: 'reconnecting' }).waitFor({ timeout: WAIT });
  keel = startDev();
  await waitReady();
  await page.locator('#stream-state', { hasText: `live (resumed after #${shown})` }).waitFor({ timeout: WAIT });
  const resumed = requests.filter((q) => q.url.endsWith(`/v1/runs/${r.run_id}/events`) && q.headers['last-event-id']);
  assert.ok(resumed.length >= 1, 'a request with Last-Event-ID');
  assert.equal(resumed.at(-1).headers['last-event-id'], String(shown));

  // The action the page shows is not the one stored: the API refuses the
  // decision, the page says why, nothing is decided.
  const [a] = await approvalsOf(r.run_id);
  await card.evaluate((f) => { f.dataset.argsHash = 'sha256:' + '0'.repeat(64); });
  await card.getByRole('button', { name: 'Approve' }).click();
  const alert = card.getByRole('alert');
  await alert.getByText('the action changed').waitFor();
  assert.match(await alert.textContent(), /args_hash does not match/);
  assert.equal((await approvalsOf(r.run_id))[0].status, 'pending');
  await card.screenshot({ path: join(out, 'run-stale-hash.png') });

  // With the hash it was shown, Deny goes through; a second decision is refused.
  await card.evaluate((f, h) => { f.dataset.argsHash = h; }, a.args_hash);
  await card.getByRole('button', { name: 'Deny' }).focus(); // by keyboard
  await page.keyboard.press('Enter');
  await page.locator('#approvals li', { hasText: 'denied' }).waitFor({ timeout: WAIT });
  assert.equal((await approvalsOf(r.run_id))[0].status, 'denied');
  await page.locator('#stream-state', { hasText: 'ended:' }).waitFor({ timeout: WAIT });
  const seqs = await page.locator('#events li').evaluateAll((ls) => ls.map((l) => +l.dataset.seq));
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1), 'no event lost or repeated across the restart');
  assert.equal(publications().length, 1, 'a denied run publishes nothing');
  await page.context().close();
});

test('an unknown run is not found; a wrong token asks again; the token never goes in a URL', async () => {
  const page = await openPage('#/runs/run_does_not_exist');
  await page.getByRole('heading', { name: 'Run not found' }).waitFor();
  await page.goto(base + '/#/');
  await page.locator('tbody tr').nth(1).waitFor();
  await page.screenshot({ path: join(out, 'runs-all.png'), fullPage: true });
  // The status filter asks the API for that status only.
  await page.getByLabel('Status').selectOption('completed');
  await page.locator('tbody tr').first().getByText('completed').waitFor();
  assert.ok(requests.some((q) => q.url.includes('/v1/runs?') && q.url.includes('status=completed')));
  assert.match(page.url(), /#\/\?status=completed$/);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(out, 'runs-narrow.png') });

  const ctx = await browser.newContext();
  const p2 = await ctx.newPage();
  await p2.goto(base + '/');
  await p2.getByLabel('Token').fill('not-the-token');
  await p2.getByRole('button', { name: 'Open' }).click();
  await p2.getByRole('alert').getByText('refused the token').waitFor();
  await p2.screenshot({ path: join(out, 'sign-in.png') });
  await ctx.close();

  for (const q of requests) assert.ok(!q.url.includes(token), 'token in a URL: ' + q.url);
  // Everything the pages loaded came from keel dev itself.
  for (const q of requests) assert.ok(q.url.startsWith(base + '/') || q.url.startsWith('blob:'), 'another origin: ' + q.url);
  await page.context().close();
});

test('send input, cancel and fork from the page', async () => {
  const r = await newRun('Write a short report on forks');
  const page = await openPage('#/runs/' + r.run_id);
  await page.locator('form.approval').waitFor({ timeout: WAIT });

  await page.getByLabel(/Send input/).fill('Also mention leases.');
  await page.getByRole('button', { name: 'Send input' }).click();
  await page.getByText(/^Input .* accepted \(policy queue\)\.$/).waitFor();

  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: 'Cancel run' }).click();
  await page.locator('#run-status', { hasText: 'cancelled' }).waitFor({ timeout: WAIT });
  await page.locator('#stream-state', { hasText: 'ended: cancelled' }).waitFor({ timeout: WAIT });
  assert.equal((await approvalsOf(r.run_id))[0].status, 'cancelled');

  // Fork from the newest checkpoint: the page opens the new run, which
  // names its parent.
  await page.getByRole('button', { name: /^Fork from checkpoint/ }).first().click();
  // On a busy machine the fork can take a while; if the page never opens
  // the new run, say what the page said (a refused fork shows its reason).
  await page.waitForURL((u) => /#\/runs\//.test(u.hash) && !u.hash.endsWith(r.run_id), { timeout: WAIT }).catch(async (e) => {
    const said = await page.locator('section[aria-labelledby="h-checkpoints"]').innerText().catch(() => '(no checkpoints section)');
    throw new Error(`the page did not open the forked run: ${e.message}\npage says: ${said}`);
  });
  const child = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
  await page.getByRole('link', { name: r.run_id }).waitFor({ timeout: WAIT });
  assert.equal((await call('GET', `/v1/runs/${child}`)).parent_run_id, r.run_id);
  // It goes on from there (the scripted model ends its turn) and the page follows it.
  await page.locator('#stream-state', { hasText: 'ended: completed' }).waitFor({ timeout: WAIT });
  await page.context().close();
});

// A destination that promises nothing (no lookup, no idempotency key): the
// first POST of each operation answers 503, so Keel cannot know whether it
// happened and the run waits for a person; a later POST of the same
// operation is accepted. It counts what it received, by operation id.
function flakyDestination() {
  const posts = new Map();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (b) => { body += b; });
    req.on('end', () => {
      const op = JSON.parse(body || '{}').operation_id || '';
      const n = (posts.get(op) || 0) + 1;
      posts.set(op, n);
      if (req.method !== 'POST' || n === 1) { res.writeHead(503).end('try later'); return; }
      res.writeHead(201, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ id: 'pub-' + op.slice(-6) + '-' + n, operation_id: op, sha256: '', bytes: body.length, at: new Date().toISOString() }));
    });
  });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r({ server, posts, url: `http://127.0.0.1:${server.address().port}` })));
}

test('a needs_human run: its operations, its story, settled from the page, and it goes on', async () => {
  const dest = await flakyDestination();
  const dir = join(tmp, 'settle');
  const child = spawn(bin, ['dev', '--data-dir', dir, '--addr', '127.0.0.1:0'], {
    env: { ...process.env, KEEL_DATA_DIR: dir, RESEARCH_PUBLISH: dest.url, RESEARCH_PUBLISH_CONTRACT: 'none', KEEL_URL: '', KEEL_TOKEN: '' },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  const exited = new Promise((r) => child.on('exit', r));
  try {
    const url = await until('the second keel dev', () => existsSync(join(dir, 'url')) && readFileSync(join(dir, 'url'), 'utf8').trim());
    const tok = readFileSync(join(dir, 'token'), 'utf8').trim();
    const call2 = async (method, path, body) => {
      const res = await fetch(url + path, { method, headers: { Authorization: 'Bearer ' + tok, 'Content-Type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
      const json = await res.json();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    // Two runs reach needs_human over their publication.
    const parked = async (input) => {
      const r = await call2('POST', '/v1/runs', { agent: 'research', input });
      const a = await until('the approval', async () => (await call2('GET', `/v1/runs/${r.run_id}/approvals`)).approvals.find((x) => x.status === 'pending'));
      await call2('POST', `/v1/runs/${r.run_id}/approvals/${a.approval_id}`, { decision: 'approve', args_hash: a.args_hash });
      await until('needs_human', async () => (await call2('GET', `/v1/runs/${r.run_id}`)).status === 'needs_human');
      return r.run_id;
    };
    const one = await parked('Write a short report on settling');
    const two = await parked('Write a short report on retries');

    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    page.on('pageerror', (e) => pageErrors.push(e));
    await page.goto(url + '/#/runs/' + one);
    await page.getByLabel('Token').fill(tok);
    await page.getByRole('button', { name: 'Open' }).click();

    // The operations panel, the story, and a settle form.
    const [op] = (await call2('GET', `/v1/runs/${one}/operations`)).operations;
    const row = page.locator(`#operations tr[data-operation-id="${op.operation_id}"]`);
    await row.getByText('needs human').waitFor({ timeout: WAIT });
    // The contract comes from the op_intent event, which may reach the
    // page after the operations list: wait for it, not for a guess.
    await row.locator('td', { hasText: /^none$/ }).waitFor({ timeout: WAIT });
    assert.deepEqual(await row.locator('td').allTextContents(),
      [op.operation_id, 'publish_report', 'needs human', op.destination, 'none', '—', '1']);
    await page.locator('#story-text', { hasText: 'keel settle' }).waitFor({ timeout: WAIT });
    const form = page.locator(`form.settle[data-operation-id="${op.operation_id}"]`);
    await form.waitFor();
    await page.screenshot({ path: join(out, 'run-needs-human.png'), fullPage: true });

    // It happened: the destination has it (its second answer was lost).
    await form.getByLabel('It happened').check();
    await form.getByLabel(/External id/).fill('pub-seen-in-console');
    await form.getByLabel(/Reason/).fill('found it in the destination\'s console');
    await form.getByRole('button', { name: 'Settle' }).click();
    await page.locator('#run-status', { hasText: 'completed' }).waitFor({ timeout: WAIT });
    await row.getByText('pub-seen-in-console').waitFor({ timeout: WAIT });
    assert.equal(await row.locator('td').nth(2).textContent(), 'succeeded');
    assert.equal(dest.posts.get(op.operation_id), 1, 'the destination saw the one effect, no second');
    assert.ok(await page.locator('#story').isHidden(), 'no story on a completed run');

    // It did not happen: the same operation is dispatched once more, with its id.
    await page.goto(url + '/#/runs/' + two);
    const [op2] = (await call2('GET', `/v1/runs/${two}/operations`)).operations;
    const form2 = page.locator(`form.settle[data-operation-id="${op2.operation_id}"]`);
    await form2.waitFor({ timeout: WAIT });
    await form2.getByLabel(/It did not happen/).check();
    assert.ok(await form2.getByLabel(/External id/).isHidden(), 'no external id for what did not happen');
    await form2.getByLabel(/Reason/).fill('the destination has no such post');
    await form2.getByRole('button', { name: 'Settle' }).click();
    await page.locator('#run-status', { hasText: 'completed' }).waitFor({ timeout: WAIT });
    const row2 = page.locator(`#operations tr[data-operation-id="${op2.operation_id}"]`);
    await row2.getByText('succeeded').waitFor({ timeout: WAIT });
    assert.equal(await row2.locator('td').nth(6).textContent(), '2');
    assert.equal(dest.posts.get(op2.operation_id), 2, 'dispatched exactly once more, under the same operation id');
    await page.screenshot({ path: join(out, 'run-settled.png'), fullPage: true });
    await ctx.close();
  } finally {
    child.kill('SIGTERM');
    await exited;
    dest.server.close();
  }
});
