// What the viewer's e2e tests share: a Keel program built from this
// checkout and run as `dev` on a data directory of its own, the waits on
// it, its API, and the browser.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
export const WAIT = 90_000; // a busy two-core machine

// startProgram builds the Go package pkg (a path from the repository's
// root) and runs its `dev` on a fresh data directory with env added;
// it resolves once dev has written its URL and token.
export async function startProgram(pkg, env = {}) {
  const tmp = mkdtempSync(join(tmpdir(), 'keel-viewer-'));
  const data = join(tmp, 'data');
  const bin = join(tmp, 'program');
  execFileSync('go', ['build', '-o', bin, '.'], { cwd: join(repo, pkg), stdio: 'inherit' });
  const keel = spawn(bin, ['dev', '--data-dir', data, '--addr', '127.0.0.1:0'], {
    env: { ...process.env, KEEL_DATA_DIR: data, KEEL_URL: '', KEEL_TOKEN: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  keel.stdout.on('data', (b) => { log += b; });
  keel.stderr.on('data', (b) => { log += b; });
  const exited = new Promise((r) => keel.on('exit', r));
  const p = {
    tmp, data, log: () => log,
    async stop() {
      keel.kill('SIGTERM');
      await exited;
      rmSync(tmp, { recursive: true, force: true });
    },
  };
  p.until = (what, fn) => until(what, fn, p.log);
  p.base = await p.until('keel dev to write its url', () => existsSync(join(data, 'url')) && readFileSync(join(data, 'url'), 'utf8').trim());
  p.token = readFileSync(join(data, 'token'), 'utf8').trim();
  // call is the API as the token's principal; a body gets an idempotency key.
  p.call = async (method, path, body) => {
    const headers = { Authorization: 'Bearer ' + p.token, 'Content-Type': 'application/json' };
    if (body) headers['Idempotency-Key'] = 'e2e-' + Math.random();
    const res = await fetch(p.base + path, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  return p;
}

// until polls fn until it returns a truthy value (errors count as not
// yet), for at most WAIT; the error names what, with the log's tail.
export async function until(what, fn, log = () => '') {
  const end = Date.now() + WAIT;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error('timed out waiting for ' + what + '\nlog:\n' + log().slice(-3000));
    await new Promise((r) => setTimeout(r, 100));
  }
}

// launchBrowser starts Debian's chromium headless (CHROMIUM overrides).
export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}
