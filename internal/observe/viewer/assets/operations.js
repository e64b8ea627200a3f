// The operations panel of a run page (app.js's runPage): every external
// effect of the run, a settle form for each one only a person can answer
// for (needs_human), and the story `keel explain` tells on a failed or
// needs_human run. Text from a model, a tool or a destination goes in as
// text nodes, through visible().

// operationsPanel returns the page's renderOperations(list) and
// renderStory(). h holds app.js's helpers; page is the run page's state
// (S: run and events), its API path, abort signal, refresh, and the two
// sections it draws into.
export function operationsPanel(h, page) {
  const { el, put, badge, api, enc, errText, announce, visible } = h;
  const { S, path, signal, refresh, operations, story } = page;

  // contractOf is what the destination promised when the operation's
  // intent was recorded (its op_intent event), or '—'.
  function contractOf(opId) {
    for (let i = S.events.length - 1; i >= 0; i--) {
      const e = S.events[i];
      if (e.type === 'op_intent' && e.operation_id === opId) return e.data?.contract || '—';
    }
    return '—';
  }

  function renderOperations(list) {
    const settleable = S.run?.status === 'needs_human';
    const waiting = list.filter((o) => o.status === 'needs_human');
    // Redraw only when something shown changed: a half-filled form stays.
    const key = [S.run?.status, ...list.map((o) => [o.operation_id, o.status, o.attempts, o.external_id, contractOf(o.operation_id)].join(':'))].join();
    if (operations.dataset.key === key) return;
    operations.dataset.key = key;
    operations.classList.toggle('attention', settleable && waiting.length > 0);
    const th = (t) => el('th', { scope: 'col' }, t);
    put(operations, el('h2', { id: 'h-operations' }, settleable && waiting.length ? `Operations: ${waiting.length} need a person` : `Operations (${list.length})`),
      list.length ? el('div', { class: 'scroll short' }, el('table', {},
        el('thead', {}, el('tr', {}, ['Operation', 'Tool', 'Status', 'Destination', 'Contract', 'External id', 'Attempts'].map(th))),
        el('tbody', {}, list.map((o) => el('tr', { dataset: { operationId: o.operation_id } },
          el('td', { class: 'mono' }, visible(o.operation_id)),
          el('td', {}, el('code', {}, visible(o.tool))),
          el('td', {}, badge(o.status)),
          el('td', { class: 'mono' }, visible(o.destination)),
          el('td', {}, contractOf(o.operation_id)),
          el('td', { class: 'mono' }, o.external_id ? visible(o.external_id) : '—'),
          el('td', { class: 'num' }, o.attempts)))))) : el('p', { class: 'muted' }, 'None: the run has changed nothing outside Keel.'),
      settleable ? waiting.map(settleForm) : null);
    if (settleable && waiting.length) announce(`${waiting.length} operation(s) need a person`);
  }

  function settleForm(o) {
    const id = o.operation_id;
    const fid = (n) => `settle-${n}-${id}`;
    const radio = (value, text) => el('div', { class: 'choice' },
      el('input', { type: 'radio', name: fid('outcome'), id: fid(value), value, required: true }),
      el('label', { for: fid(value) }, text));
    const ext = el('input', { id: fid('ext'), autocomplete: 'off', maxlength: 1024 });
    const result = el('textarea', { id: fid('result'), rows: 2 });
    const reason = el('textarea', { id: fid('reason'), rows: 2, required: true, maxlength: 4000 });
    const happenedOnly = el('div', { class: 'happened-only' },
      el('label', { for: fid('ext') }, 'External id (the destination\'s id for it)'), ext,
      el('label', { for: fid('result') }, 'Result (optional, JSON)'), result);
    happenedOnly.hidden = true;
    const msg = el('p', { class: 'msg', role: 'alert' });
    const form = el('form', { class: 'settle', dataset: { operationId: id } },
      el('h3', {}, 'Settle ', el('code', {}, visible(id)), ' · ', el('code', {}, visible(o.tool))),
      el('p', {}, 'Keel cannot know whether this happened. Ask ', el('span', { class: 'mono' }, visible(o.destination)),
        ' about idempotency key ', el('code', {}, visible(o.idempotency_key)), ', then record what you found.'),
      o.error ? el('pre', { class: 'alert' }, visible(o.error)) : null,
      el('fieldset', {}, el('legend', {}, 'What did you establish?'),
        radio('happened', 'It happened'),
        radio('not_happened', 'It did not happen (dispatch it once more, same operation id)'),
        radio('give_up', 'Nobody can tell: give up (the run fails)')),
      happenedOnly,
      el('label', { for: fid('reason') }, 'Reason (required, recorded with your name)'), reason,
      el('div', { class: 'row' }, el('button', { type: 'submit' }, 'Settle')),
      msg);
    form.addEventListener('change', () => { happenedOnly.hidden = form.elements[fid('outcome')].value !== 'happened'; });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const outcome = form.elements[fid('outcome')].value;
      const body = { outcome, reason: reason.value };
      msg.className = 'msg alert';
      if (outcome === 'happened') {
        if (ext.value) body.external_id = ext.value;
        if (result.value.trim()) {
          try { body.result = JSON.parse(result.value); } catch { msg.textContent = 'The result is not JSON.'; return; }
        }
      }
      const button = form.querySelector('button');
      button.disabled = true;
      msg.className = 'msg';
      msg.textContent = 'Sending…';
      try {
        const r = await api(`${path}/operations/${enc(id)}/settle`, { method: 'POST', body, signal });
        msg.textContent = `Settled as ${outcome.replace('_', ' ')}; the run is ${r.status}.`;
        announce(msg.textContent);
        refresh();
      } catch (e) {
        msg.className = 'msg alert';
        msg.textContent = (e.code === 'not_settleable' ? 'Refused: it is settled already, or the run moved on. ' : 'Refused: ') + errText(e);
        button.disabled = false;
      }
    });
    return form;
  }

  // The story `keel explain` tells, on a run that failed or waits for a
  // person: read again when the log grew.
  let storyKey = '';
  async function renderStory() {
    const r = S.run;
    const show = r && (r.status === 'failed' || r.status === 'needs_human');
    story.hidden = !show;
    if (!show) return;
    const key = r.status + ':' + r.counters.events;
    if (key === storyKey) return;
    storyKey = key;
    try {
      const st = await api(path + '/explain', { signal });
      put(story, el('h2', { id: 'h-story' }, r.status === 'failed' ? 'Why it failed' : 'Why it waits for a person'),
        el('pre', { id: 'story-text', tabindex: 0, 'aria-label': 'The run\'s story (keel explain)' }, visible(st.text)));
    } catch (e) {
      if (!signal.aborted) put(story, el('h2', { id: 'h-story' }, 'Story'), el('p', { class: 'msg alert' }, 'Not available: ' + errText(e)));
    }
  }

  return { renderOperations, renderStory };
}
