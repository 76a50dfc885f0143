// dsh's steering extensions from the official TypeScript packages: the
// protocol layer's JsonRpcLineTransport answers `approval/request` with
// its onRequest handler (and, with no handler, answers -32601, which dsh
// decides `unavailable`: the command does not run); `session/cancel`
// through the HarnessClient's request().

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { HarnessClient } from '@deepseek-ai/dsh-sdk-client';

import { launch, layout, scenario, transportTo } from './support.mjs';

const SID = 'session-ts-steer';

/** A bash call asking for full access, then a final text. */
function escalatingTurn(command) {
  return [
    {
      blocks: [{
        tool_call: {
          id: 'call_1',
          name: 'bash',
          arguments: { description: 'test', command, sandbox_permissions: 'danger-full-access', justification: 'The task needs it.' },
        },
      }],
    },
    { text: 'Done.' },
  ];
}

/** Resolves with the first notification `match` accepts. */
function waitFor(transport, seen, match) {
  return new Promise((resolve) => {
    const check = () => {
      const found = seen.find(match);
      if (found) resolve(found);
      else setTimeout(check, 10);
    };
    check();
  });
}

async function promptAndWait(transport, seen) {
  await transport.request('session/prompt', { sessionId: SID, contentBlocks: [{ type: 'text', text: 'go' }] });
  await waitFor(transport, seen, (n) => n.method === 'session.status' && n.params.status === 'idle');
  return seen.filter((n) => n.method === 'session.event').map((n) => n.params.event);
}

for (const [decision, runs] of [['allow-once', true], ['reject', false]]) {
  test(`JsonRpcLineTransport.onRequest answers approval/request: ${decision}`, async (t) => {
    const dirs = layout(t);
    const transport = transportTo(t, dirs);
    const seen = [];
    const asked = [];
    transport.onNotification((method, params) => seen.push({ method, params }));
    transport.onRequest(async (method, params) => {
      asked.push({ method, params });
      return { decision, message: decision === 'reject' ? 'Not today.' : undefined };
    });
    transport.start();
    const init = await transport.request('initialize', {
      cwd: dirs.workspace, provider: 'scripted', model: scenario(dirs, escalatingTurn('touch ran.txt')),
      clientCapabilities: { approvals: true },
    });
    assert.equal(init.capabilities.approvals, true);
    const events = await promptAndWait(transport, seen);
    assert.deepEqual(asked.map((a) => [a.method, a.params.toolName, a.params.arguments.command]), [['approval/request', 'bash', 'touch ran.txt']]);
    assert.equal(existsSync(join(dirs.workspace, 'ran.txt')), runs);
    const decided = events.filter((e) => e.type === 'approval/decided').map((e) => e.data.outcome);
    assert.deepEqual(decided, [runs ? 'approved' : 'rejected']);
    assert.equal(await transport.stop(), 0);
  });
}

test('a transport without a request handler answers -32601: decided unavailable, nothing runs', async (t) => {
  const dirs = layout(t);
  const transport = transportTo(t, dirs);
  const seen = [];
  transport.onNotification((method, params) => seen.push({ method, params }));
  transport.start();
  await transport.request('initialize', {
    cwd: dirs.workspace, provider: 'scripted', model: scenario(dirs, escalatingTurn('touch ran.txt')),
    clientCapabilities: { approvals: true },
  });
  const events = await promptAndWait(transport, seen);
  assert.equal(existsSync(join(dirs.workspace, 'ran.txt')), false);
  const decided = events.filter((e) => e.type === 'approval/decided').map((e) => e.data);
  assert.equal(decided.length, 1);
  assert.equal(decided[0].outcome, 'unavailable');
  assert.match(decided[0].message, /does not answer approval\/request/);
  assert.equal(await transport.stop(), 0);
});

test('HarnessClient.request(session/cancel) stops a slow turn', async (t) => {
  const dirs = layout(t);
  const client = new HarnessClient(launch(dirs));
  t.after(() => client.close());
  client.start();
  await client.initialize({ cwd: dirs.workspace, provider: 'scripted', model: scenario(dirs, [{ text: 'late', delay_ms: 20000 }]) });
  const events = client.subscribe((n) => n.method === 'session.event' && n.params.sessionId === SID);
  await client.prompt(SID, [{ type: 'text', text: 'go' }]);
  assert.deepEqual(await client.request('session/cancel', { sessionId: SID }), { turn: 1, droppedPrompts: 0 });
  assert.deepEqual(await client.request('session/wait', { sessionId: SID }), {});
  const ends = [];
  for (let item = events.tryNext(); item !== undefined; item = events.tryNext()) {
    if (item.params.event.type === 'turn/end') ends.push(item.params.event.data);
  }
  assert.deepEqual(ends, [{ turn: 1, reason: { kind: 'aborted', reason: { kind: 'client' } } }]);
  await client.close();
});
