// dom.js: small DOM and formatting helpers. Text always goes in as text
// nodes (never as HTML): everything from the model, tools or files is hostile.

// h('div', {class, testid, text, onclick, 'data-x': …}, ...children)
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'testid') el.dataset.testid = v;
    else if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) if (c != null && c !== false) el.append(c);
  return el;
}

// The text of content blocks, other blocks as [type].
export function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b) => (b && b.type === 'text' ? String(b.text ?? '') : `[${b?.type ?? '?'}]`)).join('\n');
}

// Parsed JSON arguments, or null.
export function parseJson(raw) {
  if (raw && typeof raw === 'object') return raw;
  try { const v = JSON.parse(raw); return v && typeof v === 'object' ? v : null; } catch { return null; }
}

export function pretty(raw) {
  const v = parseJson(raw);
  return v ? JSON.stringify(v, null, 2) : String(raw ?? '');
}

export function oneLine(s, max = 160) {
  const t = String(s ?? '').trim().split('\n')[0];
  return t.length > max ? `${t.slice(0, max)}…` : t;
}

export function num(n) {
  n = Number(n) || 0;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}

// UsageFigures (session.usage, session/usage) as one line: tokens, and the
// cost when known (costUsd is null for a model without a price).
export function usageText(f) {
  if (!f) return '';
  const parts = [`${num(f.inputTokens)} tokens in${f.cacheHitTokens ? ` (${num(f.cacheHitTokens)} cached)` : ''}`,
    `${num(f.outputTokens)} out`];
  if (typeof f.costUsd === 'number') parts.push(`$${f.costUsd.toFixed(4)}`);
  return parts.join(' · ');
}

export function when(ms) {
  const d = new Date(Number(ms));
  if (Number.isNaN(d.getTime())) return '';
  const ago = (Date.now() - d) / 1000;
  if (ago < 60) return 'just now';
  if (ago < 3600) return `${Math.floor(ago / 60)} min ago`;
  if (ago < 86400) return `${Math.floor(ago / 3600)} h ago`;
  return d.toLocaleDateString();
}

export function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID(); // secure contexts only
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 15) | 64;
  b[8] = (b[8] & 63) | 128;
  const x = [...b].map((v) => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}
