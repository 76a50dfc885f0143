// render.js: the conversation of one session. Each stored event adds (or
// completes) a few DOM nodes; nothing already shown is rebuilt. Deltas build
// pending bubbles per (turn, step) that the step's assistant/message replaces.
// A page of stored events is built in a DocumentFragment (begin/end) and
// attached at once; style.css lets the browser skip off-screen items
// (content-visibility), so long sessions stay cheap.

import { h, textOf, parseJson, pretty, oneLine, usageText } from './dom.js';

const LIVE_CAP = 256 * 1024; // characters of live output / streamed arguments shown

export class Conversation {
  // hooks.open(sessionId): show another session (a subagent).
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    root.addEventListener('scroll', () => {
      // Our own scroll to the bottom (or further down) keeps sticking even
      // when items laid out since then made the list taller.
      if (this.stick && root.scrollTop >= this.autoTop - 1) return;
      this.stick = root.scrollTop + root.clientHeight >= root.scrollHeight - 48;
    });
    this.reset();
  }

  reset() {
    this.root.replaceChildren();
    this.cards = new Map();     // callId → tool card
    this.pending = new Map();   // "turn:step" → {attempt, el, blocks}
    this.committed = new Set(); // "turn:step" whose assistant/message arrived
    this.turnEnds = new Map();  // turn → usage span of its turn/end line
    this.turnSum = new Map();   // turn → figures summed from assistant/message.usage
    this.turnFig = new Map();   // turn → {fig, live}: session.usage / session/usage figures
    this.frag = null;
    this.stick = true;
    this.autoTop = 0;
  }

  // Appends between begin() and end() go to one fragment, attached at once.
  begin() { this.frag ??= document.createDocumentFragment(); }

  end() {
    const f = this.frag;
    this.frag = null;
    if (f) { this.root.append(f); this.changed(); }
  }

  add(el) {
    if (this.frag) { this.frag.append(el); return el; }
    this.root.append(el);
    this.changed();
    return el;
  }

  // Keep the view at the bottom when it was there. Items scrolled into view
  // get their real height only then (content-visibility), so settle over a
  // few frames.
  changed() {
    if (this.raf) return;
    let frames = 3;
    let last = -1;
    const step = () => {
      this.raf = 0;
      const height = this.root.scrollHeight;
      if (!this.stick || height === last) return;
      last = height;
      this.root.scrollTop = height;
      this.autoTop = this.root.scrollTop;
      if (--frames > 0) this.raf = requestAnimationFrame(step);
    };
    this.raf = requestAnimationFrame(step);
  }

  // The parsed arguments of a tool call shown here, or null.
  callArgs(callId) {
    const c = this.cards.get(callId);
    return c ? parseJson(c.raw) : null;
  }

  // A turn's usage from session.usage (live: the newest) or session/usage
  // (which does not replace live figures): with cost, preferred to the sum
  // of the turn's assistant/message usage.
  turnUsage(turn, fig, live) {
    const t = Number(turn);
    if (!fig || !Number.isFinite(t) || (!live && this.turnFig.get(t)?.live)) return;
    this.turnFig.set(t, { fig, live });
    this.showTurnUsage(t);
  }

  showTurnUsage(t) {
    const span = this.turnEnds.get(t);
    const fig = this.turnFig.get(t)?.fig ?? this.turnSum.get(t);
    if (span) span.textContent = fig ? ` · ${usageText(fig)}` : '';
  }

  note(text, cls = '') {
    return this.add(h('div', { class: `note ${cls}` }, text));
  }

  // One stored event.
  event(ev) {
    const d = ev.data ?? {};
    switch (ev.type) {
      case 'user/message': return this.user(d);
      case 'assistant/message': return this.assistant(d);
      case 'assistant/attempt': return this.attempt(d);
      case 'tool/call':
        if (this.cards.has(d.callId)) return setArgs(this.cards.get(d.callId), d.arguments);
        return this.add(this.card(d.callId, d.name, d.arguments));
      case 'tool/result': return this.result(d);
      case 'turn/start': return this.add(h('div', { class: 'turn-sep' }, `Turn ${d.turn}`));
      case 'turn/end': return this.turnEnd(d);
      case 'llm/retry':
        return this.note(`Model request failed (${d.failure?.message ?? 'error'}); retry ${d.retry}${d.maxRetries ? `/${d.maxRetries}` : ''} in ${Math.round((d.delayMs ?? 0) / 100) / 10} s`, 'warn');
      case 'approval/asked':
        return this.note(`Approval asked: ${d.toolName ?? 'tool'}${d.reason ? ` — ${d.reason}` : ''}`, 'warn');
      case 'approval/decided':
        return this.note(`Approval ${d.outcome ?? ''}${d.decidedBy ? ` (${d.decidedBy})` : ''}${d.message ? `: ${d.message}` : ''}`);
      case 'job/registered': return this.job(d, 'running');
      case 'job/settled': return this.job(d, d.detail ?? d.status);
      case 'todo/write': return this.note(`Plan updated (${(d.todos ?? []).length} items)`, 'dim');
      case 'goal/change':
        return this.note(`Goal ${d.operation ?? 'changed'}: ${d.goal?.objective ?? ''} [${d.goal?.phase ?? ''}]`);
      case 'working-directory/change': return this.note(`Working directory: ${d.cwd}`, 'dim');
      case 'dsh/hook-run':
        return this.note(`hook ${d.event} · ${oneLine(d.command, 80)} → ${d.decision}${d.reason ? `: ${oneLine(d.reason)}` : ''}`, 'dim small');
      case 'subagent/catalog':
        return this.add(h('div', { class: 'note' }, `Subagent started: ${d.label ?? ''} `,
          h('button', { type: 'button', class: 'link', onclick: () => this.hooks.open(d.childId) }, 'open')));
      case 'compaction/end':
        return this.note(d.error ? `Compaction failed: ${d.error.message ?? d.error}` : 'Context compacted', 'dim');
      default: return null; // bookkeeping events are not shown
    }
  }

  user(d) {
    const kind = d.source?.kind;
    if (kind === 'user') {
      return this.add(h('div', { class: 'msg user', testid: 'message-user' }, blocks(d.content)));
    }
    if (kind === 'subagent-settled') {
      const child = d.source.senderSessionId;
      return this.add(h('details', { class: 'sys' },
        h('summary', null, `Subagent finished: ${oneLine(d.source.summary ?? child)}`),
        child ? h('button', { type: 'button', class: 'link', onclick: () => this.hooks.open(child) }, 'open subagent') : null,
        h('div', { class: 'pre' }, textOf(d.content))));
    }
    // runtime-context, notices, hook context, checkpoints: system context, folded
    return this.add(h('details', { class: 'sys' },
      h('summary', null, `System context (${kind ?? 'unknown'})`),
      h('div', { class: 'pre' }, textOf(d.content))));
  }

  assistant(d) {
    const key = `${d.turn}:${d.step}`;
    this.committed.add(key);
    const u = d.usage;
    if (u && typeof u === 'object') {
      // Provider counts: inputTokens excludes cache reads (see TokenCounts::of).
      const t = Number(d.turn);
      const s = this.turnSum.get(t) ?? { requests: 0, inputTokens: 0, cacheHitTokens: 0, outputTokens: 0 };
      const hit = Number(u.cacheReadTokens) || 0;
      s.requests += 1;
      s.inputTokens += hit + (Number(u.inputTokens) || 0) + (Number(u.cacheWriteTokens) || 0);
      s.cacheHitTokens += hit;
      s.outputTokens += Number(u.outputTokens) || 0;
      this.turnSum.set(t, s);
      this.showTurnUsage(t);
    }
    const g = h('div', { class: 'step' });
    for (const b of d.message?.content ?? d.content ?? []) {
      if (b.type === 'reasoning') { if (b.text) g.append(reasoning(b.text, false)); }
      else if (b.type === 'text') { if (b.text) g.append(h('div', { class: 'msg assistant', testid: 'message-assistant' }, rich(b.text))); }
      else if (b.type === 'tool-call' || b.type === 'tool_use') g.append(this.card(b.id, b.name, b.arguments ?? b.input));
      else g.append(h('div', { class: 'note dim' }, `[${b.type}]`));
    }
    if (d.interrupted) g.append(h('div', { class: 'note warn' }, 'Reply interrupted'));
    const p = this.pending.get(key);
    this.pending.delete(key);
    if (p) { p.el.replaceWith(g); this.changed(); } else this.add(g);
  }

  // A failed model attempt: its streamed text is void.
  attempt(d) {
    this.dropPending(`${d.turn}:${d.step}`);
    const fin = (d.stream ?? []).findLast?.((r) => r.chunk?.type === 'finish');
    const f = fin?.chunk?.reason?.failure;
    this.note(`Model attempt failed${f ? `: ${f.message ?? ''}${f.code ? ` (${f.code})` : ''}` : ''}`, 'warn');
  }

  dropPending(key) {
    const p = this.pending.get(key);
    if (p) { p.el.remove(); this.pending.delete(key); }
  }

  turnEnd(d) {
    for (const key of [...this.pending.keys()]) if (key.startsWith(`${d.turn}:`)) this.dropPending(key);
    const r = d.reason ?? {};
    const text = {
      error: `Turn failed: ${r.error?.message ?? ''}${r.error?.code ? ` (${r.error.code})` : ''}`,
      aborted: `Turn cancelled${r.reason?.kind ? ` (${r.reason.kind}${r.reason.limit ? `: ${r.reason.limit}` : ''})` : ''}`,
      'max-tokens': 'Turn stopped: output limit reached',
      interrupted: 'Turn interrupted (the runtime stopped during it)',
      blocked: 'Turn blocked by a hook',
    }[r.kind];
    // Every turn/end gets a line, with the turn's usage when known.
    const t = Number(d.turn);
    const use = h('span', { class: 'turn-usage', testid: 'turn-usage' });
    this.add(h('div', { class: `note turn-end ${text ? (r.kind === 'error' ? 'error' : 'warn') : 'dim small'}`, testid: 'turn-end', 'data-turn': d.turn, 'data-reason': r.kind ?? '' },
      text ?? `End of turn ${d.turn ?? ''}`, use));
    if (Number.isFinite(t)) { this.turnEnds.set(t, use); this.showTurnUsage(t); }
  }

  job(d, state) {
    const c = this.cards.get(d.toolCall?.callId);
    if (c) { c.badge.textContent = String(state ?? ''); return; }
    this.note(`Job ${oneLine(d.label, 80)}: ${state}`, 'dim small');
  }

  // A tool card: name, summary, arguments; later its live output and result.
  card(id, name, args) {
    const old = this.cards.get(id);
    if (old) { setArgs(old, args); return old.el; }
    const c = { name: String(name ?? 'tool') };
    c.sum = h('span', { class: 'sum' });
    c.badge = h('span', { class: 'badge' });
    c.args = h('div', { class: 'args' });
    c.el = h('div', { class: 'tool', testid: 'tool-call', 'data-call-id': id ?? '', 'data-tool': c.name },
      h('div', { class: 'tool-head' }, h('span', { class: 'tool-name' }, c.name), c.sum, c.badge), c.args);
    this.cards.set(id, c);
    setArgs(c, args);
    return c.el;
  }

  result(d) {
    const m = d.message ?? {};
    const id = m.toolCallId ?? m.source?.callId;
    if (!this.cards.has(id)) this.add(this.card(id, '?', ''));
    const c = this.cards.get(id);
    const text = textOf(m.content);
    const res = h('div', { class: `result${m.isError ? ' error' : ''}`, testid: 'tool-result' });
    const diffs = d.meta?.diffs;
    if (Array.isArray(diffs) && diffs.length && !m.isError) {
      if (text) res.append(h('div', { class: 'result-line' }, oneLine(text, 300)));
      res.append(diffView(diffs));
      c.args.querySelector('details')?.removeAttribute('open');
    } else {
      if (m.isError) res.append(h('div', { class: 'result-label' }, 'Error'));
      res.append(h('pre', { class: 'out' }, text || '(no output)'));
    }
    if (d.error?.code) res.append(h('div', { class: 'note dim small' }, `${d.error.name ?? 'error'} ${d.error.code}`));
    c.live?.remove();
    c.live = null;
    if (c.result) c.result.replaceWith(res); else c.el.append(res);
    c.result = res;
    c.el.classList.toggle('failed', !!m.isError);
    this.changed();
  }

  // One session.delta.
  delta(p) {
    const text = String(p.delta ?? '');
    if (p.kind === 'tool-output') return this.output(p, text);
    const key = `${p.turn}:${p.step}`;
    if (this.committed.has(key)) return;
    const attempt = p.attempt ?? 1;
    let g = this.pending.get(key);
    if (g && g.attempt !== attempt) { this.dropPending(key); g = null; }
    if (!g) {
      g = { attempt, el: h('div', { class: 'step pending' }), blocks: new Map() };
      this.pending.set(key, g);
      this.root.append(g.el);
    }
    const bk = `${p.kind}:${p.index}`;
    let b = g.blocks.get(bk);
    if (!b) {
      b = pendingBlock(p);
      b.index = Number(p.index) || 0;
      const after = [...g.blocks.values()].find((x) => x.index > b.index);
      g.el.insertBefore(b.el, after ? after.el : null);
      g.blocks.set(bk, b);
    }
    if (b.len < LIVE_CAP) b.node.appendData(text);
    else if (!b.cut) { b.cut = true; b.node.appendData('\n… (more follows)'); }
    b.len += text.length;
    this.changed();
  }

  // Live output of a running foreground bash call.
  output(p, text) {
    const c = this.cards.get(p.callId);
    if (!c || c.result) return;
    if (!c.live) { c.live = h('pre', { class: 'out live' }); c.liveLen = 0; c.el.append(c.live); }
    if (c.liveLen > LIVE_CAP) return;
    c.liveLen += text.length;
    c.live.append(Number(p.index) === 2 ? h('span', { class: 'stderr' }, text) : text);
    if (c.liveLen > LIVE_CAP) c.live.append('\n… (live output cut; the result follows)');
    this.changed();
  }
}

function pendingBlock(p) {
  const node = document.createTextNode('');
  let el;
  if (p.kind === 'reasoning') {
    el = h('details', { class: 'reasoning', testid: 'message-reasoning', 'data-pending': 'true', open: true },
      h('summary', null, 'Thinking…'), h('div', { class: 'reason-text' }, node));
  } else if (p.kind === 'tool-arguments') {
    el = h('div', { class: 'tool pending' }, h('div', { class: 'tool-head' }, h('span', { class: 'tool-name' }, 'tool call…')),
      h('pre', { class: 'out' }, node));
  } else {
    el = h('div', { class: 'msg assistant', testid: 'message-assistant', 'data-pending': 'true' }, node);
  }
  return { el, node, len: 0 };
}

function reasoning(text, open) {
  return h('details', { class: 'reasoning', testid: 'message-reasoning', open },
    h('summary', null, 'Thinking'), h('div', { class: 'reason-text' }, text));
}

function blocks(content) {
  if (typeof content === 'string') return [rich(content)];
  return (content ?? []).map((b) => (b?.type === 'text' ? rich(String(b.text ?? ''))
    : h('span', { class: 'att' }, `[${b?.type ?? '?'}${b?.attachment?.name ? `: ${b.attachment.name}` : ''}]`)));
}

// Text with ``` fences as code blocks; everything else as plain text.
function rich(text) {
  const parts = String(text).split(/^```[^\n]*\n?/m);
  const box = h('div', { class: 'rich' });
  parts.forEach((part, i) => {
    if (i % 2) box.append(h('pre', { class: 'code' }, part.replace(/\n$/, '')));
    else if (part) box.append(h('div', { class: 'pre' }, part.replace(/^\n|\n$/g, '')));
  });
  return box;
}

// Arguments of a tool call, shown by tool: bash its command, write/edit the
// change they ask for, others a one-line summary and the JSON, folded.
function setArgs(c, raw) {
  if (raw === c.raw) return;
  c.raw = raw;
  const a = parseJson(raw) ?? {};
  let body;
  if (c.name === 'bash' && a.command != null) {
    c.sum.textContent = oneLine(a.description ?? '');
    const flags = [a.workdir && `in ${a.workdir}`, a.run_in_background && 'background', a.sandbox_permissions && `asks ${a.sandbox_permissions}`].filter(Boolean);
    body = [h('pre', { class: 'cmd' }, `$ ${a.command}`), flags.length ? h('div', { class: 'note dim small' }, flags.join(' · ')) : null];
  } else if ((c.name === 'edit' || c.name === 'write') && a.file_path != null) {
    c.sum.textContent = oneLine(a.file_path);
    const hunk = c.name === 'edit'
      ? { path: a.file_path, oldText: a.old_string ?? '', newText: a.new_string ?? '' }
      : { path: a.file_path, oldText: null, newText: a.content ?? '' };
    body = h('details', { open: true }, h('summary', null, c.name === 'edit' ? 'Requested edit' : 'Content to write'), diffView([hunk]));
  } else {
    const q = Array.isArray(a.queries) ? a.queries.join(' | ') : null;
    const todos = Array.isArray(a.todos) ? `${a.todos.length} items` : null;
    c.sum.textContent = oneLine(a.file_path ?? a.pattern ?? a.url ?? a.description ?? a.cd ?? q ?? todos ?? a.agent_id ?? a.job_id ?? a.name ?? '');
    body = h('details', null, h('summary', null, 'Arguments'), h('pre', { class: 'out' }, pretty(raw)));
  }
  c.args.replaceChildren(...[body].flat().filter(Boolean));
}

// meta.diffs hunks [{path, oldText|null, newText}] as +/- lines.
function diffView(hunks) {
  const box = h('div', { class: 'diff' });
  let last;
  for (const hk of hunks) {
    if (hk.path !== last) box.append(h('div', { class: 'diff-path' }, String(hk.path ?? '')));
    else box.append(h('div', { class: 'diff-gap' }, '⋯'));
    last = hk.path;
    const pre = h('pre', { class: 'diff-body' });
    for (const [op, line] of lineDiff(hk.oldText, hk.newText)) {
      pre.append(h('span', { class: op === '+' ? 'add' : op === '-' ? 'del' : 'ctx' }, `${op} ${line}\n`));
    }
    box.append(pre);
  }
  return box;
}

// Line diff (longest common subsequence after trimming the common ends).
function lineDiff(oldText, newText) {
  const a = oldText == null ? [] : String(oldText).split('\n');
  const b = String(newText ?? '').split('\n');
  let s = 0;
  while (s < a.length && s < b.length && a[s] === b[s]) s++;
  let e = 0;
  while (e < a.length - s && e < b.length - s && a[a.length - 1 - e] === b[b.length - 1 - e]) e++;
  const out = a.slice(0, s).map((l) => [' ', l]);
  const A = a.slice(s, a.length - e);
  const B = b.slice(s, b.length - e);
  const n = A.length;
  const m = B.length;
  let i = 0;
  let j = 0;
  if (n * m <= 4e6) {
    const w = m + 1;
    const L = new Uint32Array((n + 1) * w);
    for (let x = n - 1; x >= 0; x--) {
      for (let y = m - 1; y >= 0; y--) {
        L[x * w + y] = A[x] === B[y] ? L[(x + 1) * w + y + 1] + 1 : Math.max(L[(x + 1) * w + y], L[x * w + y + 1]);
      }
    }
    while (i < n && j < m) {
      if (A[i] === B[j]) { out.push([' ', A[i]]); i++; j++; }
      else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) out.push(['-', A[i++]]);
      else out.push(['+', B[j++]]);
    }
  }
  while (i < n) out.push(['-', A[i++]]);
  while (j < m) out.push(['+', B[j++]]);
  for (const l of a.slice(a.length - e)) out.push([' ', l]);
  return out;
}
