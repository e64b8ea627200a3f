// The viewer's sub-agent links in a real browser: a keel dev of
// examples/subagents (built here) runs the coordinator, whose two
// sub-agent calls start two child runs; the parent's page lists them with
// links, a child's page links back to the run that started it, and once
// the publisher's approval is given the parent's page shows both
// children completed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startProgram, launchBrowser, WAIT } from './program.js';

let p, browser;
const pageErrors = [];

before(async () => {
  p = await startProgram('examples/subagents');
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await p?.stop();
});

test('a parent lists its child runs, a child links back, and both show completed', async () => {
  const parent = (await p.call('POST', '/v1/runs', { agent: 'coordinator', input: 'Report on Q3' })).run_id;
  const kids = await p.until('two child runs', async () => {
    const { runs } = await p.call('GET', `/v1/runs?parent=${parent}`);
    return runs.length === 2 && runs;
  });
  const publisher = kids.find((k) => k.agent === 'publisher');
  assert.ok(publisher, 'a publisher child');

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
  await page.goto(p.base + '/#/runs/' + parent);
  await page.getByLabel('Token').fill(p.token);
  await page.getByRole('button', { name: 'Open' }).click();

  const items = page.locator('#children li');
  await p.until('the child list', async () => (await items.count()) === 2);
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
  const ap = await p.until('the publisher\'s approval', async () => (await p.call('GET', `/v1/runs/${publisher.run_id}/approvals`)).approvals.find((a) => a.status === 'pending'));
  await p.call('POST', `/v1/runs/${publisher.run_id}/approvals/${ap.approval_id}`, { decision: 'approve', args_hash: ap.args_hash });
  await p.until('the parent to complete', async () => (await p.call('GET', `/v1/runs/${parent}`)).status === 'completed');

  await back.click();
  await page.waitForURL((u) => u.hash.endsWith(parent), { timeout: WAIT });
  await p.until('both children shown completed', async () => (await page.locator('#children .badge.s-completed').count()) === 2);
  assert.deepEqual(pageErrors, [], 'errors in the page');
  await ctx.close();
});
