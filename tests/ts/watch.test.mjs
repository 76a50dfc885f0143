// dsh's watch-and-account extensions from the official TypeScript
// protocol package (issue 28), as the README shows them: deltas and usage
// notifications through JsonRpcLineTransport.onNotification, and
// session/usage, session/events, session/list and session/fork through
// its request().

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { layout, scenario, transportTo } from './support.mjs';

const SID = 'session-ts-watch';

function idle(seen) {
  return new Promise((resolve) => {
    const check = () => {
      if (seen.some((n) => n.method === 'session.status' && n.params.status === 'idle')) resolve();
      else setTimeout(check, 10);
    };
    check();
  });
}

test('deltas, usage, events, list and fork through JsonRpcLineTransport', async (t) => {
  const dirs = layout(t);
  const transport = transportTo(t, dirs);
  const seen = [];
  let text = '';
  transport.onNotification((method, params) => {
    seen.push({ method, params });
    if (method === 'session.delta' && params.kind === 'text') text += params.delta;
  });
  transport.start();
  const model = scenario(dirs, [{
    text: ['Streamed ', 'in ', 'pieces.'],
    usage: { input_tokens: 1000, output_tokens: 10, cache_hit_tokens: 9000 },
  }]);
  const init = await transport.request('initialize', {
    cwd: dirs.workspace, provider: 'scripted', model,
    clientCapabilities: { deltas: true, usage: true },
    // The scripted model has no default price: the client's table.
    prices: { '*': { inputCacheHit: 0.028, inputCacheMiss: 0.28, output: 0.42 } },
  });
  assert.equal(init.capabilities.deltas, true);
  await transport.request('session/prompt', { sessionId: SID, contentBlocks: [{ type: 'text', text: 'go' }] });
  await idle(seen);
  assert.equal(text, 'Streamed in pieces.');
  const final = seen.filter((n) => n.method === 'session.usage' && n.params.turnEnded);
  assert.equal(final.length, 1);
  const total = final[0].params.turnTotal;
  assert.deepEqual([total.inputTokens, total.cacheHitTokens, total.cacheMissTokens, total.outputTokens], [10000, 9000, 1000, 10]);
  assert.ok(Math.abs(total.costUsd - (9000 * 0.028 + 1000 * 0.28 + 10 * 0.42) / 1e6) < 1e-12);

  const usage = await transport.request('session/usage', { sessionId: SID });
  assert.deepEqual(usage.total, total);
  const page = await transport.request('session/events', { sessionId: SID, afterSeq: 0, limit: 3 });
  assert.deepEqual(page.events.map((e) => e.seq), [1, 2, 3]);
  const listed = await transport.request('session/list', {});
  assert.deepEqual(listed.sessions.map((s) => [s.sessionId, s.turns]), [[SID, 1]]);
  const fork = await transport.request('session/fork', { sessionId: SID, newSessionId: 'ts-fork' });
  assert.equal(fork.sessionId, 'ts-fork');
  assert.equal(fork.turns, 1);
  const turnEnd = seen.find((n) => n.method === 'session.event' && n.params.event.type === 'turn/end');
  assert.equal(fork.forkedFromSeq, turnEnd.params.event.seq);
  const both = await transport.request('session/list', {});
  assert.deepEqual(both.sessions.map((s) => s.sessionId).sort(), [SID, 'ts-fork'].sort());
  assert.equal(await transport.stop(), 0);
});
