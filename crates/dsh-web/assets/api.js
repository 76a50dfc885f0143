// api.js: the dsh web HTTP API. JSON-RPC over POST /api/rpc, approvals over
// POST /api/approval, notifications over a WebSocket (/api/live).

export class ApiError extends Error {}

let info = null; // GET /api/info, kept for the automatic initialize below
let initializing = null;

async function post(url, body) {
  let res;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch (e) {
    throw new ApiError(`network error: ${e.message}`);
  }
  const text = await res.text();
  if (res.status === 401) throw new ApiError('Not authenticated: reopen the URL printed by dsh web.');
  if (!res.ok) throw new ApiError(`HTTP ${res.status}: ${text.slice(0, 300)}`);
  let answer;
  try { answer = JSON.parse(text); } catch { throw new ApiError('unreadable answer from the server'); }
  if (answer && answer.error) throw new ApiError(String(answer.error.message ?? 'unknown error'));
  return answer ?? {};
}

// One protocol call. If the runtime was never initialized, initialize it
// with the server's defaults once and try again.
export async function rpc(method, params = {}) {
  try {
    return (await post('/api/rpc', { method, params })).result;
  } catch (e) {
    if (method === 'initialize' || !info || !/not initialized/i.test(e.message)) throw e;
    initializing ??= rpc('initialize', { cwd: info.workspace, provider: info.provider, model: info.model })
      .finally(() => { initializing = null; });
    await initializing;
    return (await post('/api/rpc', { method, params })).result;
  }
}

export async function getInfo() {
  const res = await fetch('/api/info', { credentials: 'same-origin' });
  if (!res.ok) throw new ApiError(res.status === 401
    ? 'Not authenticated: reopen the URL printed by dsh web.' : `HTTP ${res.status}`);
  info = await res.json();
  return info;
}

export function answerApproval(id, decision, message) {
  const body = { id, decision };
  if (message) body.message = message;
  return post('/api/approval', body);
}

// Opens the live channel: a WebSocket on /api/live carrying
// {"event", "data"} messages (a WebSocket does not hold one of the six
// HTTP connections a browser allows a site, as an EventSource would; with
// many tabs open the page would stall). Reconnects after a second when it
// closes. handlers: notification(msg), approval(data),
// approvalSettled(data), open(), error(closedForGood).
export function connect(handlers) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = `${scheme}//${location.host}/api/live`;
  const route = {
    notification: handlers.notification,
    approval: handlers.approval,
    'approval-settled': handlers.approvalSettled,
  };
  let socket = null;
  const open = () => {
    socket = new WebSocket(url);
    socket.onopen = () => handlers.open();
    socket.onmessage = (e) => {
      let message;
      try { message = JSON.parse(e.data); } catch { return; }
      const fn = route[message?.event];
      if (fn && message.data && typeof message.data === 'object') fn(message.data);
    };
    socket.onclose = () => {
      handlers.error(false);
      setTimeout(open, 1000);
    };
  };
  open();
  return { get readyState() { return socket?.readyState; } };
}
