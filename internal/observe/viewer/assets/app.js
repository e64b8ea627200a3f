// Keel run viewer: runs, one run live, approvals bound to their args_hash,
// operations and the settling of those only a person can answer for.
// Plain DOM, no dependencies, no build. Every request goes to this origin's
// /v1 API with the bearer token from sessionStorage, in the header only.

import { operationsPanel } from './operations.js';
import { workspacePanel } from './workspace.js';

const TOKEN_KEY = 'keel.token';
const STATUSES = ['created', 'planned', 'running', 'awaiting_approval', 'completed', 'failed', 'cancelled', 'needs_human'];
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'needs_human']);
const POLL_MS = 2000;
const MAX_LOG = 5000;

const main = document.getElementById('main');
const announcer = document.getElementById('status');
const signout = document.getElementById('signout');

// ---- small helpers -------------------------------------------------------

// el builds an element; children are nodes or strings (always text, never HTML).
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// put replaces node's children as el does: arrays flattened, strings as
// text, null and false left out.
function put(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
}

const enc = encodeURIComponent;
const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
const announce = (msg) => { announcer.textContent = msg; };

function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? s : d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

function ago(s) {
  const d = new Date(s);
  if (isNaN(d)) return '';
  const sec = Math.round((Date.now() - d) / 1000);
  if (sec < 5) return 'just now';
  if (sec < 60) return sec + ' s ago';
  if (sec < 3600) return Math.round(sec / 60) + ' min ago';
  if (sec < 86400) return Math.round(sec / 3600) + ' h ago';
  return Math.round(sec / 86400) + ' d ago';
}

const usd = (micro) => '$' + ((micro || 0) / 1e6).toFixed(micro && micro < 10000 ? 4 : 2);
const num = (n) => (n || 0).toLocaleString('en-US');

function bytes(n) {
  if (n < 1024) return n + ' B';
  if (n < 1 << 20) return (n / 1024).toFixed(1) + ' KiB';
  return (n / (1 << 20)).toFixed(1) + ' MiB';
}

function dur(ms) {
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  if (ms < 3600000) return (ms / 60000).toFixed(1) + ' min';
  return (ms / 3600000).toFixed(1) + ' h';
}

const badge = (status) => el('span', { class: 'badge s-' + status }, status.replace('_', ' '));

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// ---- the API -------------------------------------------------------------

class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// api calls the Keel API at a path relative to the page (so it works under
// a stage prefix too) and returns the decoded JSON, or throws APIError.
async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = { Authorization: 'Bearer ' + token(), Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method, headers, signal, cache: 'no-store', credentials: 'omit',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => null);
  if (res.status === 401) {
    forget('The API refused the token. Enter it again.');
    throw new APIError(401, 'unauthorized', 'missing or invalid credentials');
  }
  if (!res.ok) {
    const e = data?.error || {};
    throw new APIError(res.status, e.code || 'http_' + res.status, e.message || res.statusText);
  }
  return data;
}

// authFetch GETs path with the token and returns the response, or throws
// APIError: for downloads, whose body is not JSON.
async function authFetch(path, signal) {
  const res = await fetch(path, { headers: { Authorization: 'Bearer ' + token() }, cache: 'no-store', credentials: 'omit', signal });
  if (!res.ok) {
    const d = await res.json().catch(() => null);
    throw new APIError(res.status, d?.error?.code || 'http_' + res.status, d?.error?.message || res.statusText);
  }
  return res;
}
const errText = (e) => e instanceof APIError ? `${e.code}: ${e.message}` : String(e.message || e);

// ---- routing and pages ---------------------------------------------------

let page = null; // {abort: AbortController}

function forget(msg) {
  sessionStorage.removeItem(TOKEN_KEY);
  route(msg);
}

signout.addEventListener('click', () => forget('The token is forgotten.'));
// After a navigation, focus goes to the page's content so keyboard and
// screen-reader users start there.
window.addEventListener('hashchange', () => { route(); main.focus({ preventScroll: true }); });
route();

function route(msg) {
  page?.abort.abort();
  page = { abort: new AbortController() };
  const signal = page.abort.signal;
  put(main);
  signout.hidden = !token();
  if (!token()) return signIn(msg);
  const m = location.hash.match(/^#\/runs\/([^/?#]+)$/);
  if (m) return runPage(decodeURIComponent(m[1]), signal);
  return runsPage(signal);
}

function signIn(msg) {
  document.title = 'Sign in · Keel';
  const input = el('input', { id: 'token', type: 'password', name: 'token', required: true, autocomplete: 'off', spellcheck: 'false' });
  const form = el('form', { class: 'card narrow', onsubmit: (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    route();
  } },
  el('h1', {}, 'Keel run viewer'),
  msg ? el('p', { class: 'alert', role: 'alert' }, msg) : null,
  el('p', {}, 'Enter the API bearer token. ', el('code', {}, 'keel dev'), ' writes it to ', el('code', {}, '.keel/token'),
    '. It is kept in this tab only (session storage) and sent in the Authorization header, never in a URL.'),
  el('label', { for: 'token' }, 'Token'), input,
  el('button', { type: 'submit' }, 'Open'));
  main.append(form);
  input.focus();
}

// ---- runs ----------------------------------------------------------------

function runsPage(signal) {
  document.title = 'Runs · Keel';
  const q = new URLSearchParams(location.hash.split('?')[1] || '');
  const status = el('select', { id: 'f-status', name: 'status' },
    el('option', { value: '' }, 'any status'), STATUSES.map((s) => el('option', { value: s, selected: q.get('status') === s }, s.replace('_', ' '))));
  const session = el('input', { id: 'f-session', name: 'session', value: q.get('session') || '', placeholder: 'session id', autocomplete: 'off' });
  const agent = el('input', { id: 'f-agent', name: 'agent', value: q.get('agent') || '', placeholder: 'agent', autocomplete: 'off' });
  const live = el('span', { class: 'muted', id: 'runs-live' });
  const tbody = el('tbody');
  const more = el('button', { type: 'button', class: 'quiet', hidden: true }, 'Show more');
  let limit = 50;

  const apply = () => {
    const p = new URLSearchParams();
    if (status.value) p.set('status', status.value);
    if (session.value.trim()) p.set('session', session.value.trim());
    if (agent.value.trim()) p.set('agent', agent.value.trim());
    const h = '#/' + (p.toString() ? '?' + p : '');
    if (location.hash !== h) history.replaceState(null, '', h || '#/');
    refresh();
  };
  status.addEventListener('change', apply);
  more.addEventListener('click', () => { limit = Math.min(limit + 50, 1000); refresh(); });

  main.append(
    el('h1', {}, 'Runs'),
    el('form', { class: 'filters', role: 'search', onsubmit: (ev) => { ev.preventDefault(); apply(); } },
      el('div', {}, el('label', { for: 'f-status' }, 'Status'), status),
      el('div', {}, el('label', { for: 'f-agent' }, 'Agent'), agent),
      el('div', {}, el('label', { for: 'f-session' }, 'Session'), session),
      el('button', { type: 'submit' }, 'Filter'), live),
    el('div', { class: 'scroll' }, el('table', { class: 'runs' },
      el('caption', { class: 'sr-only' }, 'Runs, newest first'),
      el('thead', {}, el('tr', {}, ['Run', 'Agent', 'Status', 'Session', 'Created', 'Last event', 'Cost'].map((t) => el('th', { scope: 'col' }, t)))),
      tbody)),
    more);

  let busy = false;
  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      const p = new URLSearchParams({ limit: String(limit) });
      if (status.value) p.set('status', status.value);
      if (session.value.trim()) p.set('session_id', session.value.trim());
      const data = await api('v1/runs?' + p, { signal });
      const want = agent.value.trim();
      const runs = data.runs.filter((r) => !want || r.agent === want);
      // data-label names each cell where a narrow screen shows rows as cards.
      put(tbody, ...runs.map((r) => el('tr', { dataset: { runId: r.run_id } },
        el('td', { dataset: { label: 'Run' } }, el('a', { href: '#/runs/' + enc(r.run_id), class: 'mono' }, r.run_id)),
        el('td', { dataset: { label: 'Agent' } }, r.agent),
        el('td', { dataset: { label: 'Status' } }, badge(r.status)),
        el('td', { class: 'mono', dataset: { label: 'Session' } }, r.session_id),
        el('td', { dataset: { label: 'Created' } }, el('time', { datetime: r.created_at, title: r.created_at }, fmtTime(r.created_at))),
        el('td', { dataset: { label: 'Last event' } }, el('time', { datetime: r.updated_at, title: r.updated_at }, ago(r.updated_at)), el('span', { class: 'muted' }, ` · #${r.counters.events}`)),
        el('td', { class: 'num', dataset: { label: 'Cost' } }, usd(r.counters.spend_used_micro_usd)))));
      if (!runs.length) tbody.append(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'No runs yet. Start one with keel run research "…"')));
      more.hidden = !data.next_page_token || limit >= 1000;
      live.textContent = 'Live · updated ' + new Date().toLocaleTimeString();
    } catch (e) {
      if (!signal.aborted) live.textContent = 'Not updated: ' + errText(e);
    } finally {
      busy = false;
    }
  }
  refresh();
  const t = setInterval(refresh, POLL_MS);
  signal.addEventListener('abort', () => clearInterval(t));
}

// ---- one run -------------------------------------------------------------

function runPage(id, signal) {
  document.title = id + ' · Keel';
  const path = 'v1/runs/' + enc(id);
  const S = {
    run: null, events: [], lastSeq: 0, items: new Map(), ended: null,
  };
  const head = el('div', { class: 'runhead' });
  const summary = el('section', { class: 'card', 'aria-labelledby': 'h-summary' });
  const budget = el('section', { class: 'card', 'aria-labelledby': 'h-budget' });
  const lineage = el('section', { class: 'card', id: 'lineage', 'aria-labelledby': 'h-lineage', hidden: true });
  const approvals = el('section', { class: 'card', id: 'approvals', 'aria-labelledby': 'h-approvals' });
  const story = el('section', { class: 'card wide', id: 'story', 'aria-labelledby': 'h-story' });
  const operations = el('section', { class: 'card wide', id: 'operations', 'aria-labelledby': 'h-operations' });
  const controls = el('section', { class: 'card', 'aria-labelledby': 'h-controls' });
  const plan = el('section', { class: 'card', 'aria-labelledby': 'h-plan' });
  const timeline = el('section', { class: 'card', 'aria-labelledby': 'h-timeline' });
  const checkpoints = el('section', { class: 'card', 'aria-labelledby': 'h-checkpoints' });
  const artifacts = el('section', { class: 'card', 'aria-labelledby': 'h-artifacts' });
  const workspace = el('section', { class: 'card wide', id: 'workspace', 'aria-labelledby': 'h-workspace', hidden: true });
  const streamState = el('span', { class: 'muted', id: 'stream-state' }, 'connecting…');
  const log = el('ol', { class: 'events', id: 'events', role: 'log', 'aria-label': 'Event stream' });
  const eventsCard = el('section', { class: 'card wide', 'aria-labelledby': 'h-events' },
    el('h2', { id: 'h-events' }, 'Events ', streamState), el('div', { class: 'scroll tall' }, log));

  // The log follows new events unless the person scrolled up to read.
  const box = eventsCard.querySelector('.scroll');
  let stick = true;
  box.addEventListener('scroll', () => { stick = box.scrollHeight - box.scrollTop - box.clientHeight < 40; });

  main.append(el('p', {}, el('a', { href: '#/' }, '← Runs')), head,
    el('div', { class: 'grid' }, approvals, story, operations, summary, lineage, budget, controls, plan, timeline, checkpoints, artifacts, workspace, eventsCard));
  approvals.hidden = true;
  story.hidden = true;

  const notFound = () => {
    put(main, el('p', {}, el('a', { href: '#/' }, '← Runs')),
      el('h1', {}, 'Run not found'),
      el('p', { role: 'alert' }, `No run ${id} is visible to this token.`));
  };

  // ---- rendering the run's records
  function renderRun(r) {
    S.run = r;
    put(head, el('h1', {}, el('span', { class: 'mono' }, r.run_id), ' ', badge(r.status)),
      el('p', { class: 'muted' }, `${r.agent} · session `, el('span', { class: 'mono' }, r.session_id), ` · created ${fmtTime(r.created_at)}`));
    put(summary, el('h2', { id: 'h-summary' }, 'Run'),
      el('dl', { class: 'kv' },
        el('dt', {}, 'Status'), el('dd', { id: 'run-status' }, r.status, r.cancel_requested ? ' (cancel requested)' : ''),
        // Who moves the run next, and with which command (the law of
        // moves: every run that has not ended has one).
        r.next ? [el('dt', {}, 'Next'), el('dd', { id: 'run-next' }, `${r.next.actor}: ${r.next.why} `,
          el('code', {}, r.next.command))] : null,
        el('dt', {}, 'Agent'), el('dd', {}, r.agent),
        r.agent_version ? [el('dt', {}, 'Agent version'), el('dd', { class: 'mono', id: 'run-agent-version', title: r.agent_version }, r.agent_version.slice(0, 12))] : null,
        el('dt', {}, 'Input policy'), el('dd', {}, r.input_policy),
        el('dt', {}, 'Updated'), el('dd', {}, el('time', { datetime: r.updated_at }, fmtTime(r.updated_at))),
        r.parent_run_id ? [el('dt', {}, 'Forked from'), el('dd', {}, el('a', { href: '#/runs/' + enc(r.parent_run_id), class: 'mono' }, r.parent_run_id))] : null,
        el('dt', {}, 'Input'), el('dd', {}, el('pre', {}, r.input)),
        r.output ? [el('dt', {}, 'Output'), el('dd', {}, el('pre', { id: 'run-output' }, r.output))] : null,
        r.error ? [el('dt', {}, 'Error'), el('dd', {}, el('pre', { class: 'alert' }, r.error))] : null));
    const c = r.counters, l = r.limits;
    const meter = (label, used, max, fmt, reserved) => el('div', { class: 'meter' },
      el('div', { class: 'meter-label' }, el('span', {}, label), el('span', { class: 'num' }, `${fmt(used)} / ${max ? fmt(max) : '∞'}`, reserved ? ` (+${fmt(reserved)} reserved)` : '')),
      el('progress', { max: max || 1, value: Math.min(used, max || 0), 'aria-label': `${label}: ${fmt(used)} of ${max ? fmt(max) : 'no limit'}` }));
    put(budget, el('h2', { id: 'h-budget' }, 'Counters and limits'),
      meter('Steps', c.steps, l.max_steps, num),
      meter('Tool calls', c.tool_calls_used, l.max_tool_calls, num, c.tool_calls_reserved),
      meter('Tokens', c.tokens_used, l.max_tokens, num, c.tokens_reserved),
      meter('Spend', c.spend_used_micro_usd, l.max_spend_micro_usd, usd, c.spend_reserved_micro_usd),
      el('p', { class: 'muted' }, `${num(c.events)} events`, l.deadline ? ` · deadline ${fmtTime(l.deadline)}` : ' · no deadline'));
    renderControls();
  }

  // renderLineage links a child run to the run whose sub-agent call
  // started it, and a run to the child runs its calls started.
  function renderLineage(r, kids) {
    const c = r.caller;
    lineage.hidden = !c?.run_id && !kids.length;
    if (lineage.hidden) return;
    put(lineage, el('h2', { id: 'h-lineage' }, 'Sub-agents'),
      c?.run_id ? el('p', { id: 'started-by' }, 'Started by the sub-agent call of ',
        el('a', { href: '#/runs/' + enc(c.run_id), class: 'mono' }, c.run_id), ` (depth ${c.depth || 1}, operation `,
        el('span', { class: 'mono' }, c.operation_id || '—'), ')') : null,
      kids.length ? [el('p', {}, `${kids.length} child run${kids.length === 1 ? '' : 's'}:`),
        el('ul', { id: 'children' }, kids.map((k) => el('li', {},
          el('a', { href: '#/runs/' + enc(k.run_id), class: 'mono' }, k.run_id), ' ', k.agent, ' ', badge(k.status))))] : null);
  }

  // Messages live outside the parts a refresh redraws, so an answer stays
  // on screen until the next one.
  const controlMsg = el('p', { class: 'msg', role: 'status' });
  const checkpointMsg = el('p', { class: 'msg', role: 'status' });
  const artifactMsg = el('p', { class: 'msg', role: 'status' });

  function renderControls() {
    const r = S.run;
    const msg = controlMsg;
    // Redraw only when what the controls offer changed (keeps typed input).
    const key = [r.status, r.cancel_requested, r.input_policy].join();
    if (controls.dataset.key === key) return;
    controls.dataset.key = key;
    if (TERMINAL.has(r.status)) {
      put(controls, el('h2', { id: 'h-controls' }, 'Control'),
        el('p', { class: 'muted' }, r.status === 'needs_human'
          ? 'The run waits for a person: settle its operation above, and it goes on; or fork it from a checkpoint below.'
          : `The run is ${r.status}. Fork it from a checkpoint below to go on.`), msg);
      return;
    }
    const text = el('textarea', { id: 'input-text', rows: 2, required: true });
    put(controls, el('h2', { id: 'h-controls' }, 'Control'),
      el('form', { onsubmit: async (ev) => {
        ev.preventDefault();
        try {
          const res = await api(path + '/input', { method: 'POST', body: { text: text.value }, signal });
          msg.textContent = `Input ${res.input_id} accepted (policy ${res.policy}).`;
          text.value = '';
        } catch (e) { msg.textContent = 'Refused: ' + errText(e); }
      } },
      el('label', { for: 'input-text' }, `Send input (policy: ${r.input_policy})`), text,
      el('div', { class: 'row' }, el('button', { type: 'submit' }, 'Send input'),
        el('button', { type: 'button', class: 'danger', disabled: r.cancel_requested, onclick: async () => {
          if (!confirm('Cancel this run? An effect already in flight cannot be undone.')) return;
          try {
            const res = await api(path + '/cancel', { method: 'POST', body: {}, signal });
            msg.textContent = `Cancel requested; ${res.cancelled_approvals.length} approval(s) withdrawn.`;
            refresh();
          } catch (e) { msg.textContent = 'Refused: ' + errText(e); }
        } }, 'Cancel run'))),
      msg);
  }

  function renderApprovals(list) {
    const pending = list.filter((a) => a.status === 'pending');
    const decided = list.filter((a) => a.status !== 'pending');
    approvals.hidden = !list.length;
    // Keep a card whose message the person has not seen replaced: redraw
    // only when the set of approvals changed.
    const key = list.map((a) => a.approval_id + a.status).join();
    if (approvals.dataset.key === key) return;
    approvals.dataset.key = key;
    approvals.classList.toggle('attention', pending.length > 0);
    put(approvals, el('h2', { id: 'h-approvals' }, pending.length ? `Waiting for approval (${pending.length})` : 'Approvals'),
      pending.map(approvalCard),
      decided.length ? el('ul', { class: 'plain' }, decided.map((a) => el('li', {},
        badge(a.status), ' ', el('code', {}, a.tool), ` by ${a.decided_by || '—'}`, a.reason ? ` — “${a.reason}”` : '',
        el('span', { class: 'muted' }, ` · ${fmtTime(a.decided_at)}`)))) : null);
    if (pending.length) announce(`${pending.length} approval(s) waiting`);
  }

  // visible shows bidi controls and invisible format characters (U+202E
  // and the like, which reorder or hide text while the args_hash binds the
  // bytes) and C0/C1 controls as \uXXXX escapes: a person approves what
  // they read. Newline and tab keep the layout.
  const visible = (s) => s == null ? s : String(s).replace(
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));

  function approvalCard(a) {
    let args = a.args;
    try { args = JSON.stringify(a.args, null, 2); } catch { /* shown as is */ }
    args = visible(args);
    const rid = 'reason-' + a.approval_id;
    const reason = el('input', { id: rid, name: 'reason', autocomplete: 'off', maxlength: 1000 });
    const msg = el('p', { class: 'msg', role: 'alert' });
    const form = el('form', { class: 'approval', dataset: { approvalId: a.approval_id, argsHash: a.args_hash } },
      el('h3', {}, el('code', {}, visible(a.tool)), ` · ${a.mode.replace('_', ' ')}`),
      el('dl', { class: 'kv' },
        el('dt', {}, 'Approval'), el('dd', { class: 'mono' }, a.approval_id),
        el('dt', {}, 'Requested'), el('dd', {}, fmtTime(a.created_at)),
        el('dt', {}, 'args_hash'), el('dd', {}, el('code', { class: 'hash' }, a.args_hash))),
      el('p', { class: 'label' }, 'Arguments'), el('pre', { class: 'args', tabindex: 0, 'aria-label': 'Arguments' }, args),
      el('label', { for: rid }, 'Reason (optional)'), reason,
      el('div', { class: 'row' },
        el('button', { type: 'submit', value: 'approve', class: 'approve' }, 'Approve'),
        el('button', { type: 'submit', value: 'deny', class: 'danger' }, 'Deny')),
      msg);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const decision = ev.submitter?.value === 'deny' ? 'deny' : 'approve';
      const buttons = form.querySelectorAll('button');
      buttons.forEach((b) => { b.disabled = true; });
      msg.className = 'msg';
      msg.textContent = 'Sending…';
      try {
        // The decision carries the hash of the action this card shows.
        const res = await api(`${path}/approvals/${enc(form.dataset.approvalId)}`, {
          method: 'POST', signal,
          body: { decision, args_hash: form.dataset.argsHash, reason: reason.value || undefined },
        });
        msg.textContent = `${res.status === 'approved' ? 'Approved' : 'Denied'}; the run goes on.`;
        announce(msg.textContent);
        refresh();
      } catch (e) {
        msg.className = 'msg alert';
        if (e.code === 'args_hash_mismatch') {
          msg.textContent = 'Refused: the action changed since this page showed it (args_hash does not match). Nothing was decided. Reload the approvals and check the new action. (' + e.message + ')';
        } else if (e.code === 'approval_not_pending') {
          msg.textContent = 'Refused: this approval is no longer pending (' + e.message + ').';
        } else {
          msg.textContent = 'Refused: ' + errText(e);
        }
        buttons.forEach((b) => { b.disabled = false; });
      }
    });
    return form;
  }

  const { renderOperations, renderStory } = operationsPanel(
    { el, put, badge, api, enc, errText, announce, visible },
    { S, path, signal, refresh: () => refresh(), operations, story });
  const { renderWorkspace } = workspacePanel(
    { el, put, api, enc, errText, visible, bytes, authFetch: (p) => authFetch(p, signal) },
    { path, signal, section: workspace });

  function renderCheckpoints(list) {
    const msg = checkpointMsg;
    put(checkpoints, el('h2', { id: 'h-checkpoints' }, `Checkpoints (${list.length})`),
      list.length ? el('div', { class: 'scroll short' }, el('table', {},
        el('thead', {}, el('tr', {}, ['Seq', 'Step', 'Size', 'Created', ''].map((t) => el('th', { scope: 'col' }, t)))),
        el('tbody', {}, list.slice().reverse().map((c) => el('tr', {},
          el('td', { class: 'num', title: c.checkpoint_id }, c.seq), el('td', { class: 'num' }, c.step), el('td', { class: 'num' }, bytes(c.size)),
          el('td', {}, fmtTime(c.created_at)),
          el('td', {}, el('button', { type: 'button', class: 'quiet', 'aria-label': `Fork from checkpoint ${c.seq}`, onclick: async () => {
            try {
              const nr = await api(path + '/fork', { method: 'POST', body: { checkpoint_id: c.checkpoint_id }, signal });
              location.hash = '#/runs/' + enc(nr.run_id);
            } catch (e) { msg.textContent = 'Fork refused: ' + errText(e); }
          } }, 'Fork'))))))) : el('p', { class: 'muted' }, 'None yet.'),
      msg);
  }

  function renderArtifacts(list) {
    const msg = artifactMsg;
    put(artifacts, el('h2', { id: 'h-artifacts' }, `Artifacts (${list.length})`),
      list.length ? el('ul', { class: 'plain' }, list.map((a) => el('li', { class: 'artifact' },
        el('button', { type: 'button', class: 'quiet', onclick: () => download(a, msg) }, 'Download ', el('span', { class: 'mono' }, a.name)),
        el('span', { class: 'muted' }, ` ${bytes(a.size)} · sha256 `), el('code', { class: 'hash', title: a.sha256 }, a.sha256.slice(0, 16) + '…')))) : el('p', { class: 'muted' }, 'None yet.'),
      msg);
  }

  // download fetches an artifact with the token, checks its sha256 against
  // the listing and the response header, and only then saves it.
  async function download(a, msg) {
    msg.textContent = `Downloading ${a.name}…`;
    try {
      const res = await fetch(`${path}/artifacts/${enc(a.checkpoint_id)}/${enc(a.name)}`, {
        headers: { Authorization: 'Bearer ' + token() }, cache: 'no-store', credentials: 'omit', signal,
      });
      if (!res.ok) {
        const d = await res.json().catch(() => null);
        throw new APIError(res.status, d?.error?.code || 'http_' + res.status, d?.error?.message || res.statusText);
      }
      const blob = await res.blob();
      const sum = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', await blob.arrayBuffer())))
        .map((b) => b.toString(16).padStart(2, '0')).join('');
      const header = res.headers.get('X-Content-SHA256');
      if (sum !== a.sha256 || (header && header !== sum)) {
        msg.textContent = `Not saved: ${a.name} does not match its sha256 (got ${sum}, listed ${a.sha256}).`;
        return;
      }
      const url = URL.createObjectURL(blob);
      const link = el('a', { href: url, download: a.name });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      msg.textContent = `Saved ${a.name}: sha256 verified (${sum.slice(0, 16)}…).`;
    } catch (e) {
      if (!signal.aborted) msg.textContent = 'Download failed: ' + errText(e);
    }
  }

  // ---- plan items and the timeline, from the event log
  const ITEM_STATE = {
    approval_requested: 'awaiting approval', approval_granted: 'approved', approval_denied: 'denied',
    tool_started: 'running', tool_progress: 'running', tool_completed: 'completed', tool_failed: 'failed',
    op_intent: 'dispatching', op_succeeded: 'completed', op_reconciled: 'completed', op_needs_human: 'needs human',
    op_settled: 'settled by a person',
    run_spilled: 'spilled',
  };

  function track(ev) {
    if (!ev.plan_item_id) return;
    const d = ev.data || {};
    let it = S.items.get(ev.plan_item_id);
    if (!it) {
      it = { id: ev.plan_item_id, tool: d.tool || '', state: 'planned', done: 0, total: 0, note: '' };
      S.items.set(ev.plan_item_id, it);
    }
    if (d.tool) it.tool = d.tool;
    if (ITEM_STATE[ev.type] && !(ev.type.startsWith('op_') && it.state === 'completed')) it.state = ITEM_STATE[ev.type];
    if (ev.type === 'tool_progress') { it.done = d.done; it.total = d.total; it.note = d.note || ''; }
    if (ev.type === 'tool_completed' && it.total) it.done = it.total;
  }

  function renderPlan() {
    const items = [...S.items.values()];
    put(plan, el('h2', { id: 'h-plan' }, `Plan items (${items.length})`),
      items.length ? el('div', { class: 'scroll short' }, el('table', {},
        el('thead', {}, el('tr', {}, ['Tool', 'State', 'Progress'].map((t) => el('th', { scope: 'col' }, t)))),
        el('tbody', {}, items.map((it) => el('tr', { dataset: { planItem: it.id } },
          el('td', {}, el('code', { title: it.id }, it.tool)),
          el('td', {}, it.state),
          el('td', {}, it.total ? [el('progress', { max: it.total, value: it.done, 'aria-label': `${it.tool} progress` }),
            el('span', { class: 'muted note', title: it.note }, `${it.done}/${it.total} ${it.note}`)] : '')))))) : el('p', { class: 'muted' }, 'None yet.'));
  }

  // spans pairs start and end events into [kind, label, start, end].
  function spans() {
    const out = [];
    const open = new Map();
    let model = null;
    for (const ev of S.events) {
      const t = Date.parse(ev.time);
      const k = ev.plan_item_id;
      switch (ev.type) {
        case 'model_call_started': model = t; break;
        // A call whose started event landed in the same commit as its end
        // has none: the end carries duration_us instead.
        case 'model_call_completed': case 'model_call_failed':
          if (model === null && ev.data?.duration_us !== undefined) model = t - ev.data.duration_us / 1000;
          if (model !== null) out.push(['model', 'model call', model, t]); model = null; break;
        case 'tool_started': open.set('t' + k, [t, ev.data?.tool || 'tool']); break;
        case 'tool_completed': case 'tool_failed': {
          const o = open.get('t' + k) || (ev.data?.duration_us !== undefined ? [t - ev.data.duration_us / 1000, ev.data?.tool || 'tool'] : null);
          if (o) { out.push(['tool', o[1], o[0], t]); open.delete('t' + k); }
          break;
        }
        case 'approval_requested': open.set('a' + k, [t, 'approval']); break;
        case 'approval_granted': case 'approval_denied': {
          const o = open.get('a' + k);
          if (o) { out.push(['wait', 'approval wait', o[0], t]); open.delete('a' + k); }
          break;
        }
      }
    }
    const now = S.ended ? null : Date.now();
    for (const [key, o] of open) if (now && key[0] === 'a') out.push(['wait', 'approval wait (open)', o[0], now]);
    return out;
  }

  function renderTimeline() {
    const sp = spans();
    if (!S.events.length) { put(timeline, el('h2', { id: 'h-timeline' }, 'Where time went'), el('p', { class: 'muted' }, 'No events yet.')); return; }
    const t0 = Date.parse(S.events[0].time);
    const t1 = Math.max(Date.parse(S.events[S.events.length - 1].time), ...sp.map((s) => s[3]));
    const total = Math.max(t1 - t0, 1);
    const sums = { model: 0, tool: 0, wait: 0 };
    for (const s of sp) sums[s[0]] += s[3] - s[2];
    const bar = (s) => {
      const b = el('span', { class: 'bar k-' + s[0] });
      b.style.marginLeft = ((s[2] - t0) / total * 100).toFixed(2) + '%';
      b.style.width = Math.max((s[3] - s[2]) / total * 100, 0.5).toFixed(2) + '%';
      return b;
    };
    put(timeline, el('h2', { id: 'h-timeline' }, 'Where time went'),
      el('p', {}, `${dur(total)} in all: model calls ${dur(sums.model)}, tools ${dur(sums.tool)}, approval waits ${dur(sums.wait)}.`),
      el('ol', { class: 'timeline', 'aria-label': 'Timeline' }, sp.slice(-40).map((s) => el('li', {},
        el('span', { class: 'tl-label' }, `${s[1]} · ${dur(s[3] - s[2])}`), el('span', { class: 'track' }, bar(s))))));
  }

  function addEvent(ev) {
    if (ev.seq <= S.lastSeq) return; // already shown (a resumed stream starts after it anyway)
    S.lastSeq = ev.seq;
    S.events.push(ev);
    track(ev);
    const data = ev.data ? JSON.stringify(ev.data) : '';
    log.append(el('li', { dataset: { seq: ev.seq, type: ev.type } },
      el('span', { class: 'seq' }, ev.seq), ' ',
      el('time', { datetime: ev.time }, new Date(ev.time).toLocaleTimeString()), ' ',
      el('span', { class: 'etype t-' + ev.type.split('_')[0] }, ev.type), ' ',
      data ? el('span', { class: 'edata' }, data.length > 300 ? data.slice(0, 300) + '…' : data) : ''));
    // The page keeps the newest MAX_LOG events; `keel events` has them all.
    if (log.childElementCount > MAX_LOG) log.firstElementChild.remove();
    if (stick) box.scrollTop = box.scrollHeight;
  }

  // ---- loading
  let pending = null;
  function refreshSoon() {
    if (pending) return;
    pending = setTimeout(() => { pending = null; refresh(); }, 250);
  }
  signal.addEventListener('abort', () => clearTimeout(pending));

  async function refresh() {
    try {
      const [r, ap, cp, ar, ops, ws, kids] = await Promise.all([
        api(path, { signal }), api(path + '/approvals', { signal }),
        api(path + '/checkpoints?limit=1000', { signal }), api(path + '/artifacts', { signal }),
        api(path + '/operations', { signal }), api(path + '/workspace', { signal }),
        api('v1/runs?limit=100&parent=' + enc(id), { signal })]);
      renderRun(r);
      renderLineage(r, kids.runs);
      renderApprovals(ap.approvals);
      renderOperations(ops.operations);
      renderStory();
      renderCheckpoints(cp.checkpoints);
      renderArtifacts(ar.artifacts);
      renderWorkspace(ws.versions);
      renderPlan();
      renderTimeline();
    } catch (e) {
      if (signal.aborted) return;
      if (e.status === 404) { notFound(); page.abort.abort(); return; }
      streamState.textContent = 'not updated: ' + errText(e);
    }
  }

  refresh();
  stream(path + '/events', signal, {
    event: (ev) => { addEvent(ev); refreshSoon(); },
    state: (s) => { streamState.textContent = s; streamState.dataset.state = s.split(' ')[0]; },
    end: (d) => { S.ended = d; refresh(); },
    lastSeq: () => S.lastSeq,
  });
}

// stream reads the run's SSE endpoint with fetch (so the token goes in a
// header), and after a dropped connection resumes with Last-Event-ID from
// the last event seen; it ends at the server's "end" event.
async function stream(url, signal, on) {
  let retry = 1000;
  while (!signal.aborted) {
    const headers = { Authorization: 'Bearer ' + token(), Accept: 'text/event-stream' };
    const last = on.lastSeq();
    if (last > 0) headers['Last-Event-ID'] = String(last);
    try {
      const res = await fetch(url, { headers, signal, cache: 'no-store', credentials: 'omit' });
      if (res.status === 401) { forget('The API refused the token. Enter it again.'); return; }
      if (res.status === 404) { on.state('not found'); return; }
      if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
      on.state(last > 0 ? `live (resumed after #${last})` : 'live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      let ev = { type: 'message', data: [] };
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          let line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line.endsWith('\r')) line = line.slice(0, -1);
          if (line === '') {
            if (ev.data.length) {
              const data = JSON.parse(ev.data.join('\n'));
              if (ev.type === 'end') { on.state(`ended: ${data.status}`); on.end(data); return; }
              if (ev.type === 'error') throw new Error(data.error?.message || 'stream error');
              on.event(data);
            }
            ev = { type: 'message', data: [] };
            continue;
          }
          if (line.startsWith(':')) continue;
          const c = line.indexOf(':');
          const field = c < 0 ? line : line.slice(0, c);
          const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
          if (field === 'event') ev.type = v;
          else if (field === 'data') ev.data.push(v);
          else if (field === 'retry' && /^\d+$/.test(v)) retry = Math.max(250, +v);
        }
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    on.state('reconnecting…');
    await sleep(retry, signal);
  }
}
