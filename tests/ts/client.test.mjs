// The official TypeScript client's protocol layer, HarnessClient, against
// our binary: prompt receipts, notification subscriptions, session/wait,
// the working directory, error responses and close().

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { HarnessClient, JsonRpcResponseError, TransportClosedError } from '@deepseek-ai/dsh-sdk-client';
import { JsonRpcResponseError as ProtocolResponseError } from '@deepseek-ai/dsh-sdk-protocol';

import { bashTurn, dshBin, launch, layout, processesWithDshHome, scenario, types } from './support.mjs';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A started, initialized client on a fresh layout (closed after the test). */
async function initialized(t, model = 'echo') {
  const dirs = layout(t);
  const client = new HarnessClient(launch(dirs));
  t.after(() => client.close());
  client.start();
  const init = await client.initialize({ cwd: dirs.workspace, provider: 'scripted', model: typeof model === 'function' ? model(dirs) : model });
  return { dirs, client, init };
}

/** Everything already delivered to a subscription, without waiting. */
function drain(subscription) {
  const got = [];
  for (let item = subscription.tryNext(); item !== undefined; item = subscription.tryNext()) got.push(item);
  return got;
}

test('HarnessClient: prompt receipt, session.event/session.status subscriptions, session/wait', async (t) => {
  const sid = 'session-ts-client';
  const { client, init } = await initialized(t, (dirs) => scenario(dirs, bashTurn('echo from the client', 'Client done.')));
  assert.equal(init.serverInfo.name, 'deepseek-harness-sdk-runtime');

  const events = client.subscribe((n) => n.method === 'session.event' && n.params.sessionId === sid);
  const statuses = client.subscribe((n) => n.method === 'session.status');

  const messageId = await client.prompt(sid, [{ type: 'text', text: 'Run it' }]);
  assert.match(messageId, UUID);

  assert.deepEqual(await client.request('session/wait', { sessionId: sid }), {});

  // session/wait answers after the idle status, so both transitions are here already
  assert.deepEqual(
    drain(statuses).map((n) => n.params),
    [
      { sessionId: sid, status: 'running' },
      { sessionId: sid, status: 'idle' },
    ],
  );
  assert.equal(statuses.tryNext(), undefined);

  const log = drain(events).map((n) => n.params.event);
  assert.deepEqual(types(log).slice(0, 6), [
    'permission/preset',
    'sandbox/mode',
    'approval/policy',
    'agent/inbox/spliced',
    'turn/start',
    'agent/inbox/spliced',
  ]);
  assert.deepEqual(log.map((event) => event.seq), [...log.keys()]);
  // the receipt splice carries the prompt under the id the response returned
  const [receipt] = log[3].data.inserted;
  assert.equal(receipt.id, messageId);
  assert.deepEqual(receipt.content, [{ type: 'text', text: 'Run it' }]);
  assert.deepEqual(log[5].data, { target: 'next-turn', start: 0, removedCount: 1, inserted: [] });
  const prompt = log.find((event) => event.type === 'user/message' && event.data.source.kind === 'user');
  assert.equal(prompt.data.id, messageId);

  const toolResult = log.find((event) => event.type === 'tool/result');
  assert.deepEqual(toolResult.data.message.content, [{ type: 'text', text: 'from the client\n' }]);
  const replies = log.filter((event) => event.type === 'assistant/message');
  assert.equal(replies.length, 2);
  assert.deepEqual(replies[1].data.message.content, [{ type: 'text', text: 'Client done.' }]);
  assert.deepEqual(log.at(-1).data, { turn: 1, reason: { kind: 'completed' } });
  assert.equal(log.at(-1).type, 'turn/end');

  // an idle session's wait answers at once
  assert.deepEqual(await client.request('session/wait', { sessionId: sid }), {});
  events.close();
  statuses.close();
});

test('HarnessClient: working directory get/set; a bad directory is a JsonRpcResponseError', async (t) => {
  const sid = 'session-ts-cwd';
  const { dirs, client } = await initialized(t);
  const ws = dirs.workspace;
  const sub = join(ws, 'sub');
  mkdirSync(sub);

  assert.deepEqual(await client.request('session/working-directory/get', { sessionId: sid }), { cwd: ws });
  assert.deepEqual(await client.request('session/working-directory/set', { sessionId: sid, path: 'sub' }), { cwd: sub });
  assert.deepEqual(await client.request('session/working-directory/get', { sessionId: sid }), { cwd: sub });

  const missing = client.request('session/working-directory/set', { sessionId: sid, path: 'does-not-exist' });
  await assert.rejects(missing, (error) => {
    assert.ok(error instanceof JsonRpcResponseError, `not a JsonRpcResponseError: ${error}`);
    assert.ok(error instanceof ProtocolResponseError);
    assert.equal(error.code, -32603);
    assert.equal(error.message, 'working-directory: directory does not exist: "does-not-exist"');
    assert.equal(error.data, undefined);
    return true;
  });
  // the failed set changed nothing
  assert.deepEqual(await client.request('session/working-directory/get', { sessionId: sid }), { cwd: sub });

  await assert.rejects(client.request('session/wait', { sessionId: 'never-created' }), (error) => {
    assert.ok(error instanceof JsonRpcResponseError);
    assert.equal(error.code, -32603);
    assert.equal(error.message, 'unknown SDK session: never-created');
    return true;
  });
});

test('HarnessClient.close: the runtime and its background job exit, the client refuses reuse', async (t) => {
  const sid = 'session-ts-close';
  const replies = [
    {
      blocks: [
        {
          tool_call: {
            id: 'call_bg',
            name: 'bash',
            arguments: { description: 'test', command: 'sleep 300', run_in_background: true },
          },
        },
      ],
    },
    { text: 'Started in the background.' },
  ];
  const { dirs, client } = await initialized(t, (d) => scenario(d, replies));
  const statuses = client.subscribe((n) => n.method === 'session.status' && n.params.status === 'idle');
  await client.prompt(sid, [{ type: 'text', text: 'Start a job' }]);
  await client.request('session/wait', { sessionId: sid });
  assert.equal(drain(statuses).length, 1);

  const running = processesWithDshHome(dirs.dshHome);
  const commands = running.map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '));
  assert.ok(commands.some((command) => command.startsWith(dshBin())), `the runtime is not among ${commands}`);
  assert.ok(commands.some((command) => command.includes('sleep 300')), `the job is not among ${commands}`);

  await client.close();
  assert.deepEqual(processesWithDshHome(dirs.dshHome), []);
  await client.close(); // idempotent
  await assert.rejects(client.request('session/wait', { sessionId: sid }), TransportClosedError);
  await assert.rejects(statuses.next(), TransportClosedError);
  assert.throws(() => client.start(), TransportClosedError);
});
