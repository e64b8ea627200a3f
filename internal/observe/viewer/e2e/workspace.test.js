// The viewer's workspace panel in a real browser: a keel dev of the
// wsagent program (./wsagent, built here) runs an agent that writes files
// into its workspace; the page lists the versions per checkpoint, browses
// the tree and downloads a file whose bytes are checked. A file named and
// filled with markup shows as text and runs nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startProgram, launchBrowser } from './program.js';

let p, browser;
const pageErrors = [];
const dialogs = [];

before(async () => {
  p = await startProgram('internal/observe/viewer/e2e/wsagent');
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await p?.stop();
});

test('browse a run\'s workspace per checkpoint and download a file, checked byte for byte', async () => {
  const r = await p.call('POST', '/v1/runs', { agent: 'coder', input: 'write the files' });
  await p.until('the run to complete', async () => (await p.call('GET', `/v1/runs/${r.run_id}`)).status === 'completed');
  const { versions } = await p.call('GET', `/v1/runs/${r.run_id}/workspace`);
  const last = versions[versions.length - 1];
  assert.equal(last.files, 3, 'three files at the last checkpoint');

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(e));
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await page.goto(p.base + '/#/runs/' + r.run_id);
  await page.getByLabel('Token').fill(p.token);
  await page.getByRole('button', { name: 'Open' }).click();

  // One row per checkpoint with a workspace, its file count shown.
  const rows = page.locator('#workspace tr[data-checkpoint-id]');
  await p.until('the workspace rows', async () => (await rows.count()) === versions.length);
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
