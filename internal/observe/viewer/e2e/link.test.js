// A one-time approval link in a real browser: a keel dev of the budget
// program (internal/proof/people/testdata/budgetagent) pauses a run at its
// spend cap; the pause's notification reaches a webhook receiver on
// loopback (this process) with a link; headless chromium opens the link,
// sees the exact action (keel.raise_limit, its args and hash) and clicks
// Approve; the run completes with the raise in its log. Opened again, the
// link offers no button and approves nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { startProgram, launchBrowser } from './program.js';

let p, browser, hook;
const messages = new Map(); // by delivery id: the receiver dedups

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
  p = await startProgram('internal/proof/people/testdata/budgetagent', {
    KEEL_NOTIFY_INTERVAL: '200ms',
    KEEL_NOTIFY_WEBHOOK_URL: `http://127.0.0.1:${hook.address().port}/hook`, KEEL_NOTIFY_WEBHOOK_SECRET: 'hook-secret-e2e',
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await p?.stop();
  hook?.close();
});

test('the link page shows the raise a paused run asks for; Approve raises it once and the run completes', async () => {
  const r = await p.call('POST', '/v1/runs', { agent: 'budget', input: 'look them up' });
  const paused = await p.until('the run to pause at its cap', async () => {
    const x = await p.call('GET', `/v1/runs/${r.run_id}`);
    return x.status === 'awaiting_approval' && x;
  });
  assert.ok(paused.counters.spend_used_micro_usd <= paused.limits.max_spend_micro_usd, 'spend within the cap');
  const { approvals } = await p.call('GET', `/v1/runs/${r.run_id}/approvals`);
  assert.equal(approvals.length, 1);
  const ap = approvals[0];
  const msg = await p.until('the notification', () => [...messages.values()].find((m) => m.approval_id === ap.approval_id));
  assert.ok(msg.link.startsWith(p.base), 'the link points at keel dev');

  const page = await (await browser.newContext()).newPage();
  await page.goto(msg.link);
  const text = await page.textContent('body');
  assert.ok(text.includes('keel.raise_limit'), 'the page names the action');
  assert.ok(text.includes(ap.args_hash), 'the page shows the args hash');
  assert.ok(text.includes('raise_by'), 'the page shows the args');
  await Promise.all([page.waitForNavigation(), page.click('#approve')]);
  assert.match(await page.textContent('body'), /approved/i);

  const done = await p.until('the run to complete', async () => {
    const x = await p.call('GET', `/v1/runs/${r.run_id}`);
    return x.status === 'completed' && x;
  });
  assert.equal(done.limits.max_spend_micro_usd, 30000);
  const { events } = await p.call('GET', `/v1/runs/${r.run_id}/events?limit=1000`);
  const raised = events.filter((e) => e.type === 'budget_raised');
  assert.equal(raised.length, 1);
  assert.equal(raised[0].data.approved_by, 'link:' + msg.delivery_id);

  await page.goto(msg.link);
  assert.equal(await page.locator('#approve').count(), 0, 'a used link offers no button');
});
