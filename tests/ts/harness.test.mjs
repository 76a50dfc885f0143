// The official TypeScript client's high-level API, DeepSeekHarness, drives
// our binary through a scripted two-step tool turn.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { DeepSeekHarness } from '@deepseek-ai/dsh-sdk-client';

import { bashTurn, launch, layout, scenario, types } from './support.mjs';

test('DeepSeekHarness.run: a bash tool step, then the final text', async (t) => {
  const dirs = layout(t);
  const model = scenario(dirs, bashTurn('echo hi from $(basename "$PWD")', 'Done after the tool.'));
  const harness = new DeepSeekHarness({ launch: launch(dirs), cwd: dirs.workspace, provider: 'scripted', model });
  t.after(() => harness.close());

  const seen = [];
  const result = await harness.run('Run a command', {
    sessionId: 'session-ts-run',
    onNotification: (notification) => seen.push(notification),
  });

  assert.equal(result.sessionId, 'session-ts-run');
  assert.equal(result.finalResponse, 'Done after the tool.');
  assert.deepEqual(types(result.events).slice(-10), [
    'assistant/message',
    'tool/call',
    'job/registered',
    'job/settled',
    'tool/result',
    'step/end',
    'step/start',
    'assistant/message',
    'step/end',
    'turn/end',
  ]);
  const turnEnd = result.events.at(-1);
  assert.deepEqual(turnEnd.data, { turn: 1, reason: { kind: 'completed' } }); // the finish reason

  const call = result.events.find((event) => event.type === 'tool/call');
  assert.equal(call.data.name, 'bash');
  const toolResult = result.events.find((event) => event.type === 'tool/result');
  assert.equal(toolResult.data.message.toolCallId, 'call_1');
  assert.equal(toolResult.data.message.isError, false);
  assert.deepEqual(toolResult.data.message.content, [{ type: 'text', text: 'hi from workspace\n' }]);
  assert.deepEqual(toolResult.sourceEventSeqs, [call.seq]);

  // every event belongs to the session and comes in seq order
  const seqs = result.events.map((event) => event.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
  // the observer saw the run's notifications, ending with the idle status
  assert.deepEqual(seen, result.notifications);
  assert.deepEqual(seen.at(-1), { method: 'session.status', params: { sessionId: 'session-ts-run', status: 'idle' } });

  await harness.close();
  // the session log lives under the DSH_HOME we gave the child
  assert.ok(existsSync(join(dirs.dshHome, 'sessions')), 'no sessions directory under DSH_HOME');
});
