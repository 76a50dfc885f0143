// app.js: the dsh web page. Session list, loading one session and merging
// its stored events with the live stream, prompts, cancel, approvals,
// subagents, goal, plan, background jobs and the log export. Rendering of
// the conversation is in render.js.

import { rpc, getInfo, connect, answerApproval } from './api.js';
import { h, textOf, oneLine, pretty, when, uuid, usageText } from './dom.js';
import { Conversation } from './render.js';

const $ = (id) => document.getElementById(id);
const el = {
  list: $('sessions'), more: $('more'), search: $('search'), conn: $('conn'), version: $('version'),
  newBox: $('new-box'), newForm: $('new-session'), newError: $('new-error'), create: $('create'),
  ws: $('workspace'), provider: $('provider'), model: $('model'), effort: $('effort'),
  title: $('title'), meta: $('meta'), status: $('status'), usage: $('usage'), exportBtn: $('export'),
  tree: $('tree'), parent: $('parent'), plan: $('plan'), goal: $('goal'), jobs: $('jobs'),
  approvals: $('approvals'), queue: $('queue'),
  promptForm: $('prompt-form'), prompt: $('prompt'), send: $('send'), cancel: $('cancel'), error: $('prompt-error'),
};

const S = {
  info: null,
  sessions: new Map(),  // id → session/list entry
  items: new Map(),     // id → {li, btn} of the list
  live: new Map(),      // id → "running" | "idle" from session.status
  derived: new Map(),   // child id → status read from its parent's events
  children: new Map(),  // parent id → Map(child id → label)
  parentOf: new Map(),  // child id → parent id
  finished: new Map(),  // child id → subagent.finished params
  approvals: new Map(), // approval id → {p, el}
  view: null,           // the selected session (see select)
  asked: new Set(),      // unlisted session ids a list refresh was asked for
  cursor: null,
  listToken: 0,
  exporting: false,     // an export of the log is under way
};

const conv = new Conversation($('conversation'), { open: (id) => select(id) });

// ---- event stream -------------------------------------------------------

let markOpen;
const firstOpen = new Promise((resolve) => { markOpen = resolve; });
const ready = () => Promise.race([firstOpen, new Promise((r) => setTimeout(r, 3000))]);
let wasDown = false;

connect({
  notification: onNotification,
  approval: onApproval,
  approvalSettled: (d) => settleApproval(d.id),
  open() {
    markOpen();
    setConn('connected', '');
    if (!wasDown) return;
    // Back after a cut: statuses may be stale, events may be missing.
    wasDown = false;
    S.live.clear();
    dirty('status', 'tree');
    if (S.view && !S.view.draft) catchUp(S.view);
    loadSessions();
  },
  error(closed) {
    wasDown = true;
    setConn(closed ? 'Disconnected from dsh web: reload the page.' : 'Connection lost: reconnecting…', 'down');
  },
});

function setConn(text, cls) {
  el.conn.textContent = text;
  el.conn.className = `conn ${cls}`;
}

function onNotification(m) {
  const p = m.params ?? {};
  const v = S.view;
  const mine = v && p.sessionId === v.id;
  switch (m.method) {
    case 'session.event':
      if (!p.event) return;
      if (mine) onEvent(v, p.event);
      else background(p.sessionId, p.event);
      // A session the list does not show yet, or one whose activity moves it up.
      if (p.event.type === 'turn/end' || (!S.sessions.has(p.sessionId) && !S.asked.has(p.sessionId))) {
        S.asked.add(p.sessionId);
        scheduleList();
      }
      break;
    case 'session.delta':
      if (!mine) return;
      if (v.loading) v.buffer.push({ delta: p });
      else conv.delta(p);
      break;
    case 'session.status':
      S.live.set(p.sessionId, p.status === 'running' ? 'running' : 'idle');
      updateItem(p.sessionId);
      dirty('status', 'tree');
      break;
    case 'subagent.started':
      addChild(p.parentSessionId, p.childSessionId);
      break;
    case 'subagent.finished':
      S.finished.set(p.childSessionId, p);
      addChild(p.parentSessionId, p.childSessionId);
      break;
    case 'session.usage':
      if (!mine) return;
      showUsage(p.sessionTotal, p.context);
      conv.turnUsage(p.turn, p.turnTotal, true);
      break;
    default:
  }
}

// Events of sessions not shown: keep titles and the subagent tree current.
function background(id, ev) {
  const d = ev.data ?? {};
  if (ev.type === 'session/title') {
    const s = S.sessions.get(id);
    if (s) { s.title = String(d.title ?? ''); updateItem(id); }
  } else if (ev.type === 'subagent/catalog') {
    addChild(id, d.childId, d.label);
  }
}

// ---- one session: stored events + live events, merged by seq ------------

// A live event of the shown session. While its history is being paged,
// events wait in v.buffer; afterwards only seqs past v.maxSeq count.
function onEvent(v, ev) {
  if (v.loading) { v.buffer.push({ ev }); return; }
  if (typeof ev.seq !== 'number' || ev.seq <= v.maxSeq) return;
  if (v.maxSeq >= 0 && ev.seq > v.maxSeq + 1) { // a hole: read it from the log
    v.buffer.push({ ev });
    catchUp(v);
    return;
  }
  apply(v, ev);
}

// Pages session/events after v.maxSeq until `more` is false, then replays
// what arrived meanwhile (dropping seqs already paged). Each page is built
// off-document (one DocumentFragment per CHUNK events) and attached at once;
// the page stays responsive between chunks.
const CHUNK = 2000;
async function catchUp(v) {
  if (v.paging) return;
  v.paging = true;
  v.loading = true;
  try {
    for (;;) {
      // Pages of at most CHUNK events keep every answer (and the server's
      // memory for it) small, whatever the length of the session.
      const params = { sessionId: v.id, limit: CHUNK };
      if (v.maxSeq >= 0) params.afterSeq = v.maxSeq;
      const page = await rpc('session/events', params);
      if (S.view !== v) return;
      const events = page?.events ?? [];
      for (let i = 0; i < events.length; i += CHUNK) {
        if (i) {
          await new Promise((r) => setTimeout(r, 0));
          if (S.view !== v) return;
        }
        conv.begin();
        try {
          for (const ev of events.slice(i, i + CHUNK)) if (ev.seq > v.maxSeq) apply(v, ev);
        } finally {
          conv.end();
        }
      }
      if (!page?.more || !events.length) break;
    }
  } catch (e) {
    if (S.view === v) showError(`Could not load the session: ${e.message}`);
  } finally {
    v.paging = false;
    v.loading = false;
  }
  if (S.view !== v) return;
  const buffered = v.buffer;
  v.buffer = [];
  for (const it of buffered) {
    if (v.loading) v.buffer.push(it);
    else if (it.delta) conv.delta(it.delta);
    else if (it.ev.seq > v.maxSeq) apply(v, it.ev);
  }
}

// Derive the page's state from one event, then render it.
function apply(v, ev) {
  v.maxSeq = ev.seq;
  const d = ev.data ?? {};
  switch (ev.type) {
    case 'turn/start': v.turnOpen = true; dirty('status'); break;
    case 'turn/end': v.turnOpen = false; dirty('status'); break;
    case 'session/title': {
      v.title = String(d.title ?? '');
      const s = S.sessions.get(v.id);
      if (s) { s.title = v.title; updateItem(v.id); }
      dirty('head');
      break;
    }
    case 'working-directory/change': v.cwd = String(d.cwd ?? ''); dirty('head'); break;
    case 'todo/write': v.todos = Array.isArray(d.todos) ? d.todos : []; dirty('plan'); break;
    case 'goal/change': v.goal = d.goal ? d : null; dirty('goal'); break;
    case 'job/registered':
    case 'job/settled': {
      if (!d.jobId) break;
      const job = { ...v.jobs.get(d.jobId), ...d };
      job.status = ev.type === 'job/registered' ? 'running' : String(d.status ?? 'settled');
      v.jobs.delete(d.jobId); // most recent change last
      v.jobs.set(d.jobId, job);
      dirty('jobs');
      break;
    }
    case 'subagent/catalog':
      if (!S.derived.has(d.childId)) S.derived.set(d.childId, 'running');
      addChild(v.id, d.childId, d.label);
      break;
    case 'user/message':
      if (d.source?.kind === 'subagent-settled' && d.source.senderSessionId) {
        S.derived.set(d.source.senderSessionId, 'idle');
        dirty('tree');
      }
      break;
    case 'agent/inbox/spliced': spliceInbox(v, d); break;
    default:
  }
  conv.event(ev);
}

// Mirror of the next-turn inbox, to show prompts queued behind a turn.
function spliceInbox(v, d) {
  if (d.target !== 'next-turn') return;
  const start = Number(d.start) || 0;
  if (d.removedCount != null) v.inbox.splice(start, Number(d.removedCount) || 0);
  if (d.outcome !== 'canceled' && Array.isArray(d.inserted) && d.inserted.length) {
    v.inbox.splice(start, 0, ...d.inserted.map((m) => ({ user: m?.source?.kind === 'user', text: textOf(m?.content) })));
  }
  dirty('queue');
}

// Shows a session: resume it if stored only, then page its events.
async function select(id, opt = {}) {
  if (!id || (S.view?.id === id && !opt.draft)) return;
  const prev = S.view;
  const entry = S.sessions.get(id);
  const v = {
    id, draft: !!opt.draft, title: entry?.title ?? '', cwd: opt.cwd ?? entry?.cwd ?? '',
    maxSeq: -1, loading: !opt.draft, paging: false, buffer: [], turnOpen: false,
    todos: null, goal: null, inbox: [], jobs: new Map(),
  };
  S.view = v;
  conv.reset();
  if (v.draft) conv.root.append(h('p', { class: 'empty' }, `New session in ${v.cwd}. Write the first prompt below.`));
  el.usage.textContent = 'no usage yet';
  clearError();
  if (prev) updateItem(prev.id);
  updateItem(id);
  if (!v.draft) history.replaceState(null, '', `#session=${encodeURIComponent(id)}`);
  dirty('head', 'status', 'plan', 'goal', 'jobs', 'tree', 'queue');
  if (v.draft) return;

  await ready(); // the event stream first, so nothing falls between page and stream
  if (S.view !== v) return;
  let open = true;
  try {
    await rpc('session/resume', { sessionId: id });
  } catch (e) {
    if (!/already open|opening/i.test(e.message)) {
      open = false;
      showError(`Not resumed (${e.message}); shown read-only.`);
    }
  }
  if (S.view !== v) return;
  await catchUp(v);
  if (S.view !== v) return;
  rpc('session/usage', { sessionId: id })
    .then((u) => {
      if (S.view !== v) return;
      showUsage(u?.total, u?.context);
      for (const t of Array.isArray(u?.turns) ? u.turns : []) conv.turnUsage(t.turn, t, false);
    })
    .catch(() => {});
  if (open && !v.cwd) {
    rpc('session/working-directory/get', { sessionId: id })
      .then((r) => { if (S.view === v && r?.cwd) { v.cwd = String(r.cwd); dirty('head'); } })
      .catch(() => {});
  }
}

function statusOf(v) {
  return S.live.get(v.id) ?? (v.turnOpen ? 'running' : 'idle');
}

function childStatus(id) {
  return S.live.get(id) ?? S.derived.get(id) ?? 'idle';
}

// ---- batched panel updates ----------------------------------------------

const dirtySet = new Set();
let dirtyRaf = 0;
function dirty(...what) {
  what.forEach((w) => dirtySet.add(w));
  dirtyRaf ||= requestAnimationFrame(() => {
    dirtyRaf = 0;
    const todo = new Set(dirtySet);
    dirtySet.clear();
    if (todo.has('head')) renderHead();
    if (todo.has('status')) renderStatus();
    if (todo.has('plan')) renderPlan();
    if (todo.has('goal')) renderGoal();
    if (todo.has('jobs')) renderJobs();
    if (todo.has('tree')) renderTree();
    if (todo.has('queue')) renderQueue();
  });
}

function renderHead() {
  const v = S.view;
  const title = v ? v.title || S.sessions.get(v.id)?.title || (v.draft ? 'New session' : v.id) : 'No session selected';
  el.title.textContent = title;
  el.meta.textContent = v ? [v.draft ? `${v.id} (not created yet)` : v.id, v.cwd].filter(Boolean).join(' · ') : '';
  el.exportBtn.disabled = !v || v.draft || S.exporting;
  setDocTitle();
}

function setDocTitle() {
  const n = S.approvals.size;
  document.title = `${n ? `(${n}) ` : ''}${S.view ? `${oneLine(el.title.textContent, 60)} — ` : ''}dsh web`;
}

function renderStatus() {
  const v = S.view;
  const st = v && !v.draft ? statusOf(v) : 'idle';
  el.status.textContent = st;
  el.status.className = `status ${st}`;
  el.cancel.disabled = st !== 'running';
}

function renderPlan() {
  const v = S.view;
  const out = [];
  if (v?.todos?.length) {
    const marks = { completed: '✓', in_progress: '▸', pending: '○' };
    out.push(h('ol', { class: 'todos' }, v.todos.map((t) => {
      const st = marks[t?.status] ? t.status : 'pending';
      return h('li', { class: `todo ${st}` }, h('span', { class: 'mark', 'aria-hidden': 'true' }, marks[st]),
        h('span', null, String(t?.content ?? '')), h('span', { class: 'sr' }, ` (${st.replace('_', ' ')})`));
    })));
  }
  el.plan.replaceChildren(...(out.length ? out : [h('p', { class: 'empty' }, 'No plan.')]));
}

// goal/change {operation, goal:{objective, phase, maxGoalRounds, blockedReason?}, roundsStarted, updatedAt}
function renderGoal() {
  const c = S.view?.goal;
  const g = c?.goal;
  if (!g) {
    el.goal.removeAttribute('data-status');
    el.goal.replaceChildren(h('p', { class: 'empty' }, 'No goal.'));
    return;
  }
  const phase = String(g.phase ?? 'unknown');
  const rounds = c.roundsStarted != null
    ? `round ${Number(c.roundsStarted) || 0}${g.maxGoalRounds ? ` of ${g.maxGoalRounds}` : ''}` : '';
  el.goal.dataset.status = phase;
  el.goal.replaceChildren(
    h('p', { class: 'goal-objective' }, String(g.objective ?? '')),
    h('div', { class: 'goal-meta small' },
      h('span', { class: `badge phase ${phase}` }, phase),
      h('span', { class: 'dim' }, [rounds, c.updatedAt ? `updated ${when(c.updatedAt)}` : ''].filter(Boolean).join(' · '))),
    g.blockedReason?.message ? h('p', { class: 'goal-blocked small' }, `Blocked: ${g.blockedReason.message}`) : null);
}

// Background jobs (job/registered, job/settled): the running ones first,
// then the most recent; each opens its tool call in the conversation.
const JOBS_SHOWN = 50;
function renderJobs() {
  const jobs = [...(S.view?.jobs?.values() ?? [])].reverse();
  jobs.sort((a, b) => (b.status === 'running') - (a.status === 'running'));
  const focused = document.activeElement?.closest?.('#jobs [data-job-id]')?.dataset.jobId;
  const items = jobs.slice(0, JOBS_SHOWN).map((j) => {
    const callId = j.toolCall?.callId;
    const args = callId ? conv.callArgs(callId) : null;
    const desc = String(args?.description ?? '');
    const cmd = String(j.label ?? args?.command ?? j.jobId);
    const ms = j.finishedAt && j.startedAt ? j.finishedAt - j.startedAt : null;
    const ran = ms == null ? '' : ms < 1000 ? ` · ${ms} ms` : ` · ${(ms / 1000).toFixed(1)} s`;
    const body = [
      h('span', { class: `dot ${j.status}`, 'aria-hidden': 'true' }),
      h('span', { class: 'j-text' },
        h('span', { class: 'j-title' }, oneLine(desc || cmd, 80)),
        desc ? h('span', { class: 'j-cmd' }, `$ ${oneLine(cmd, 120)}`) : null,
        h('span', { class: 'dim small' }, `${j.status}${j.detail ? ` · ${oneLine(j.detail, 80)}` : ''}${ran}`)),
    ];
    return h('li', { testid: 'job-item', 'data-job-id': j.jobId, 'data-status': j.status },
      callId
        ? h('button', { type: 'button', class: 'job', title: 'Show its tool call', onclick: () => showCall(callId) }, body)
        : h('div', { class: 'job' }, body));
  });
  if (jobs.length > JOBS_SHOWN) items.push(h('li', { class: 'dim small' }, `${jobs.length - JOBS_SHOWN} older jobs not shown`));
  el.jobs.replaceChildren(...(items.length ? items : [h('li', { class: 'empty' }, 'None.')]));
  if (focused) el.jobs.querySelector(`[data-job-id="${CSS.escape(focused)}"] button`)?.focus();
}

function showCall(callId) {
  const card = $('conversation').querySelector(`[data-testid=tool-call][data-call-id="${CSS.escape(callId)}"]`);
  if (!card) return;
  card.tabIndex = -1;
  card.scrollIntoView({ block: 'center' });
  card.focus({ preventScroll: true });
}

function renderQueue() {
  const queued = (S.view?.inbox ?? []).filter((x) => x.user);
  el.queue.replaceChildren(...queued.map((x) => h('div', { class: 'queued' },
    h('span', { class: 'badge' }, 'queued'), ' ', oneLine(x.text, 200))));
}

// ---- subagents ----------------------------------------------------------

function addChild(parent, child, label) {
  if (!parent || !child || parent === child) return;
  let m = S.children.get(parent);
  if (!m) S.children.set(parent, (m = new Map()));
  m.set(child, label ? String(label) : m.get(child) ?? '');
  S.parentOf.set(child, parent);
  dirty('tree');
}

function renderTree() {
  const v = S.view;
  const focused = document.activeElement?.closest?.('#tree [data-session-id]')?.dataset.sessionId;
  el.parent.replaceChildren();
  const parent = v && S.parentOf.get(v.id);
  if (parent) {
    el.parent.append(h('button', { type: 'button', class: 'link', onclick: () => select(parent) },
      `↑ Parent: ${oneLine(S.sessions.get(parent)?.title || parent, 50)}`));
  }
  const seen = new Set(v ? [v.id] : []);
  const items = (id, depth) => [...(S.children.get(id) ?? [])]
    .filter(([c]) => !seen.has(c) && seen.add(c))
    .map(([c, label]) => {
      const st = childStatus(c);
      const fin = S.finished.get(c);
      const kids = depth < 6 ? items(c, depth + 1) : [];
      return h('li', null,
        h('button', { type: 'button', class: 'subagent-item', testid: 'subagent-item', 'data-session-id': c, 'data-status': st, onclick: () => select(c) },
          h('span', { class: `dot ${st}`, 'aria-hidden': 'true' }),
          h('span', { class: 's-title' }, oneLine(label || S.sessions.get(c)?.title || c, 80)),
          h('span', { class: 'dim small' }, fin && st !== 'running' ? `${st} · ${fin.stopReason ?? fin.status}` : st)),
        kids.length ? h('ul', null, kids) : null);
    });
  const list = v ? items(v.id, 0) : [];
  el.tree.replaceChildren(...(list.length ? list : [h('li', { class: 'empty' }, 'None.')]));
  if (focused) el.tree.querySelector(`[data-session-id="${CSS.escape(focused)}"]`)?.focus();
}

// ---- session list -------------------------------------------------------

async function loadSessions(more = false) {
  const token = ++S.listToken;
  const query = el.search.value.trim();
  const params = { limit: 50 };
  if (query) params.query = query;
  if (more && S.cursor) params.cursor = S.cursor;
  let r;
  try {
    r = await rpc('session/list', params);
  } catch (e) {
    if (token === S.listToken) el.list.replaceChildren(h('li', { class: 'error' }, `Sessions: ${e.message}`));
    return;
  }
  if (token !== S.listToken) return;
  S.cursor = r?.nextCursor ?? null;
  el.more.hidden = !S.cursor;
  const shown = [];
  for (const s of r?.sessions ?? []) {
    if (!s?.sessionId) continue;
    S.sessions.set(s.sessionId, s);
    if (s.parentSessionId) addChild(s.parentSessionId, s.sessionId, s.title);
    if (!s.parentSessionId || query) shown.push(item(s));
  }
  const focused = document.activeElement;
  if (more) el.list.append(...shown);
  else if (shown.length) el.list.replaceChildren(...shown);
  else el.list.replaceChildren(h('li', { class: 'empty' }, query ? 'No matching session.' : 'No sessions yet.'));
  if (focused?.isConnected && document.activeElement !== focused) focused.focus();
  if (!more && !query && !shown.length) el.newBox.open = true;
  dirty('head');
}

// Refresh the list soon; at most once per interval, however busy the stream.
let listTimer = 0;
function scheduleList(ms = 1200) {
  if (listTimer) return;
  listTimer = setTimeout(() => { listTimer = 0; loadSessions(); }, ms);
}

function item(s) {
  let it = S.items.get(s.sessionId);
  if (!it) {
    const btn = h('button', { type: 'button', class: 'session-item', testid: 'session-item', 'data-session-id': s.sessionId, onclick: () => select(s.sessionId) });
    it = { li: h('li', null, btn), btn };
    S.items.set(s.sessionId, it);
  }
  fillItem(it, s);
  return it.li;
}

function updateItem(id) {
  const it = S.items.get(id);
  const s = S.sessions.get(id);
  if (it && s) fillItem(it, s);
}

// Status: the live one when known; the list's "running" only says that a
// runtime has the session open, shown as "open".
function fillItem(it, s) {
  const st = S.live.get(s.sessionId) ?? (s.status === 'running' ? 'open' : 'idle');
  const asks = [...S.approvals.values()].some((a) => a.p.sessionId === s.sessionId || a.p.rootSessionId === s.sessionId);
  it.btn.replaceChildren(
    h('span', { class: 's-title' }, oneLine(s.title || s.sessionId, 120)),
    h('span', { class: 's-meta', title: String(s.cwd ?? '') }, String(s.cwd ?? '')),
    h('span', { class: 's-foot' },
      h('span', { class: `s-status ${st}` }, st),
      asks ? h('span', { class: 'badge warn' }, 'approval') : null,
      s.parentSessionId ? h('span', { class: 'badge' }, 'subagent') : null,
      h('span', { class: 'dim' }, when(s.updatedAt))));
  it.btn.setAttribute('aria-current', S.view?.id === s.sessionId ? 'true' : 'false');
}

// ---- approvals ----------------------------------------------------------

function onApproval(d) {
  if (d.id == null || S.approvals.has(d.id)) return;
  const p = d.params ?? {};
  const options = Array.isArray(p.options) ? p.options : ['allow-once', 'allow-session', 'reject'];
  const msg = h('input', { class: 'approval-msg', placeholder: 'Message to the model (optional)', 'aria-label': 'Message to the model' });
  const err = h('div', { class: 'error', role: 'alert' });
  const buttons = [];
  const answer = async (decision) => {
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await answerApproval(d.id, decision, msg.value.trim());
      settleApproval(d.id);
    } catch (e) {
      err.textContent = e.message;
      buttons.forEach((b) => { b.disabled = false; });
    }
  };
  const button = (testid, label, decision, cls) => {
    if (!options.includes(decision)) return null;
    const b = h('button', { type: 'button', testid, class: cls, onclick: () => answer(decision) }, label);
    buttons.push(b);
    return b;
  };
  const where = p.sessionId ?? p.rootSessionId;
  const card = h('div', { class: 'approval', testid: 'approval-card', 'data-approval-id': d.id, role: 'group', 'aria-label': `Approval: ${p.toolName ?? 'tool'}` },
    h('div', { class: 'approval-head' },
      h('strong', null, `${p.toolName ?? 'A tool'} asks for approval`),
      where ? h('button', { type: 'button', class: 'link small', onclick: () => select(where) },
        `in ${oneLine(S.sessions.get(where)?.title || where, 50)}`) : null),
    p.reason ? h('div', { class: 'pre' }, String(p.reason)) : null,
    h('pre', { class: 'out' }, pretty(p.arguments)),
    msg,
    h('div', { class: 'approval-actions' },
      button('approve-once', 'Allow once', 'allow-once', 'primary'),
      button('approve-session', 'Allow for session', 'allow-session', ''),
      button('reject', 'Reject', 'reject', 'danger')),
    err);
  S.approvals.set(d.id, { p, el: card });
  el.approvals.append(card);
  updateItem(p.sessionId);
  updateItem(p.rootSessionId);
  setDocTitle();
}

function settleApproval(id) {
  const a = S.approvals.get(id);
  if (!a) return;
  S.approvals.delete(id);
  a.el.remove();
  updateItem(a.p.sessionId);
  updateItem(a.p.rootSessionId);
  setDocTitle();
}

// ---- new session, prompt, cancel ----------------------------------------

async function createSession() {
  const cwd = el.ws.value.trim();
  el.newError.textContent = '';
  if (!cwd) { el.newError.textContent = 'Give a workspace path.'; el.newBox.open = true; el.ws.focus(); return null; }
  const params = { cwd, provider: el.provider.value.trim() || S.info?.provider, model: el.model.value.trim() || S.info?.model };
  const effort = el.effort.value.trim();
  if (effort) params.reasoningEffort = effort;
  el.create.disabled = true;
  try {
    await rpc('initialize', params);
  } catch (e) {
    el.newError.textContent = e.message;
    el.newBox.open = true;
    return null;
  } finally {
    el.create.disabled = false;
  }
  await select(`web-${uuid()}`, { draft: true, cwd });
  el.prompt.focus();
  return S.view;
}

let sending = false;
async function send() {
  const text = el.prompt.value;
  if (!text.trim() || sending) return;
  clearError();
  sending = true;
  el.send.disabled = true;
  try {
    const v = S.view ?? await createSession();
    if (!v) { showError(el.newError.textContent || 'Could not create a session.'); return; }
    if (v.draft) conv.root.querySelector(':scope > .empty')?.remove();
    await rpc('session/prompt', { sessionId: v.id, contentBlocks: [{ type: 'text', text }] });
    if (el.prompt.value === text) el.prompt.value = '';
    if (v.draft) {
      v.draft = false;
      if (S.view === v) history.replaceState(null, '', `#session=${encodeURIComponent(v.id)}`);
      dirty('head', 'status');
      scheduleList(300);
    }
  } catch (e) {
    showError(e.message);
  } finally {
    sending = false;
    el.send.disabled = false;
  }
}

async function cancel() {
  const v = S.view;
  if (!v || v.draft) return;
  el.cancel.disabled = true;
  try {
    await rpc('session/cancel', { sessionId: v.id });
  } catch (e) {
    showError(e.message);
  } finally {
    dirty('status');
  }
}

// ---- export: the session's log as JSONL, one event a line as the API gives it

async function exportLog() {
  const v = S.view;
  if (!v || v.draft || S.exporting) return;
  S.exporting = true;
  el.exportBtn.disabled = true;
  el.exportBtn.setAttribute('aria-busy', 'true');
  el.exportBtn.textContent = 'Exporting…';
  clearError();
  const lines = [];
  try {
    let after = null;
    for (;;) {
      // Pages of at most CHUNK events keep every answer (and the server's
      // memory for it) small, whatever the length of the session.
      const params = { sessionId: v.id, limit: CHUNK };
      if (after != null) params.afterSeq = after;
      const page = await rpc('session/events', params);
      const events = page?.events ?? [];
      for (const ev of events) lines.push(`${JSON.stringify(ev)}\n`);
      if (!page?.more || !events.length) break;
      after = events[events.length - 1].seq;
    }
    const url = URL.createObjectURL(new Blob(lines, { type: 'application/x-ndjson' }));
    const a = h('a', { href: url, download: `${v.id}.jsonl`, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  } catch (e) {
    if (S.view === v) showError(`Export failed: ${e.message}`);
  } finally {
    S.exporting = false;
    el.exportBtn.removeAttribute('aria-busy');
    el.exportBtn.textContent = 'Export log';
    dirty('head');
  }
}

function showError(text) { el.error.textContent = text; }
function clearError() { el.error.textContent = ''; }

function showUsage(total, ctx) {
  const parts = [];
  if (total) parts.push(usageText(total));
  if (ctx && ctx.percent != null) parts.push(`context ${Number(ctx.percent)}%`);
  el.usage.textContent = parts.join(' · ') || 'no usage yet';
}

// ---- wiring -------------------------------------------------------------

el.newForm.addEventListener('submit', (e) => { e.preventDefault(); createSession(); });
el.promptForm.addEventListener('submit', (e) => { e.preventDefault(); send(); });
el.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
});
el.cancel.addEventListener('click', cancel);
el.exportBtn.addEventListener('click', exportLog);
document.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape' || e.defaultPrevented || !S.view || el.cancel.disabled) return;
  if (e.target.closest?.('#new-session, #search, .approval')) return;
  e.preventDefault();
  cancel();
});
let searchTimer = 0;
el.search.addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => loadSessions(), 250);
});
el.more.addEventListener('click', () => loadSessions(true));
// Up/Down move between sessions in the list.
el.list.addEventListener('keydown', (e) => {
  if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
  const all = [...el.list.querySelectorAll('.session-item')];
  const i = all.indexOf(document.activeElement);
  const next = all[i + (e.key === 'ArrowDown' ? 1 : -1)];
  if (next) { e.preventDefault(); next.focus(); }
});
window.addEventListener('hashchange', () => {
  const id = sessionFromHash();
  if (id && id !== S.view?.id) select(id);
});

function sessionFromHash() {
  const m = /^#session=(.+)$/.exec(location.hash);
  try { return m ? decodeURIComponent(m[1]) : null; } catch { return null; }
}

async function start() {
  try {
    S.info = await getInfo();
    el.version.textContent = [S.info.version && `v${S.info.version}`, S.info.model].filter(Boolean).join(' · ');
    el.ws.value = S.info.workspace ?? '';
    el.provider.value = S.info.provider ?? '';
    el.model.value = S.info.model ?? '';
  } catch (e) {
    setConn(e.message, 'down');
  }
  dirty('head', 'status', 'plan', 'goal', 'jobs', 'tree');
  const id = sessionFromHash();
  if (id) select(id);
  await loadSessions();
  if (id) updateItem(id);
}

start();
