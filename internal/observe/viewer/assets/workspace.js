// The workspace panel of a run page (app.js's runPage): the workspace
// version of each checkpoint, the tree of a chosen one, and a download of
// any file, checked against the manifest's sha256 before it is saved.
// Every path and name is the model's or a tool's text: it goes in as text
// nodes through visible(), and into URLs only through encodeURIComponent.

// workspacePanel returns the page's renderWorkspace(versions). h holds
// app.js's helpers; page is the run page's API path, abort signal and the
// section it draws into.
export function workspacePanel(h, page) {
  const { el, put, api, enc, errText, visible, bytes, authFetch } = h;
  const { path, signal, section } = page;
  const msg = el('p', { class: 'msg', role: 'status' });
  const tree = el('div', { class: 'ws-tree', id: 'ws-tree' });
  let shown = { checkpoint: '', dir: '' };
  let key = '';

  function renderWorkspace(versions) {
    // Redraw only when the versions changed: the open directory stays.
    const k = versions.map((v) => v.checkpoint_id + ':' + v.version).join();
    if (k === key) return;
    key = k;
    section.hidden = versions.length === 0;
    put(section, el('h2', { id: 'h-workspace' }, `Workspace (${versions.length} versions)`),
      el('div', { class: 'scroll short' }, el('table', {},
        el('thead', {}, el('tr', {}, ['Checkpoint', 'Files', 'Size', 'Version', ''].map((t) => el('th', { scope: 'col' }, t)))),
        el('tbody', {}, versions.map((v) => el('tr', { dataset: { checkpointId: v.checkpoint_id } },
          el('td', { class: 'mono' }, visible(v.checkpoint_id)),
          el('td', { class: 'num' }, v.error ? '—' : v.files),
          el('td', { class: 'num' }, v.error ? '—' : bytes(v.bytes)),
          el('td', {}, v.error ? el('span', { class: 'bad' }, visible(v.error)) : el('code', { class: 'hash', title: v.version }, v.version.slice(7, 23) + '…')),
          el('td', {}, v.error ? null : el('button', { type: 'button', class: 'quiet', onclick: () => open(v.checkpoint_id, '') }, 'Browse'))))))),
      tree, msg);
    if (shown.checkpoint) open(shown.checkpoint, shown.dir);
  }

  // open lists dir ('' is the root) of the checkpoint's tree.
  async function open(checkpoint, dir) {
    shown = { checkpoint, dir };
    try {
      const d = await api(`${path}/workspace/files?checkpoint=${enc(checkpoint)}&path=${enc(dir)}`, { signal });
      const up = dir.includes('/') ? dir.slice(0, dir.lastIndexOf('/')) : '';
      put(tree, el('h3', {}, 'Checkpoint ', el('span', { class: 'mono' }, visible(checkpoint)), ' · /', el('span', { class: 'mono', id: 'ws-dir' }, visible(dir))),
        el('ul', { class: 'plain', 'aria-label': 'Workspace entries' },
          dir ? el('li', {}, el('button', { type: 'button', class: 'quiet', onclick: () => open(checkpoint, up) }, '↑ ..')) : null,
          d.entries.map((e) => el('li', { class: 'ws-entry', dataset: { type: e.type } }, entry(checkpoint, e)))),
        d.entries.length ? null : el('p', { class: 'muted' }, 'Empty directory.'));
    } catch (e) {
      if (!signal.aborted) msg.textContent = 'Not listed: ' + errText(e);
    }
  }

  function entry(checkpoint, e) {
    const name = el('span', { class: 'mono' }, visible(e.name));
    switch (e.type) {
      case 'dir':
        return el('button', { type: 'button', class: 'quiet', onclick: () => open(checkpoint, e.path) }, '📁 ', name, '/');
      case 'file':
        return [el('button', { type: 'button', class: 'quiet', onclick: () => download(checkpoint, e) }, 'Download ', name),
          el('span', { class: 'muted' }, ` ${bytes(e.size)} · sha256 `), el('code', { class: 'hash', title: e.sha256 }, e.sha256.slice(0, 16) + '…')];
      default: // a symlink is shown with its target, never followed
        return [name, el('span', { class: 'muted' }, ' → '), el('span', { class: 'mono' }, visible(e.target))];
    }
  }

  // download fetches the file with the token, checks its sha256 against the
  // listing and the response header, and only then saves it.
  async function download(checkpoint, e) {
    msg.textContent = `Downloading ${visible(e.path)}…`;
    try {
      const res = await authFetch(`${path}/workspace/files?checkpoint=${enc(checkpoint)}&path=${enc(e.path)}`);
      const blob = await res.blob();
      const sum = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', await blob.arrayBuffer())))
        .map((b) => b.toString(16).padStart(2, '0')).join('');
      const header = res.headers.get('X-Content-SHA256');
      if (sum !== e.sha256 || (header && header !== sum)) {
        msg.textContent = `Not saved: ${visible(e.path)} does not match its sha256 (got ${sum}, listed ${e.sha256}).`;
        return;
      }
      const url = URL.createObjectURL(blob);
      const link = el('a', { href: url, download: e.name });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      msg.textContent = `Saved ${visible(e.path)}: sha256 verified (${sum.slice(0, 16)}…).`;
    } catch (err) {
      if (!signal.aborted) msg.textContent = 'Download failed: ' + errText(err);
    }
  }

  return { renderWorkspace };
}
