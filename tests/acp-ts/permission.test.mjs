// Permission requests: a session in mode `read-only` whose model asks to
// write with `sandbox_permissions: "workspace-write"` makes dsh send
// `session/request_permission`; only an allow runs the call
// (docs/acp.md: Permission requests).

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { acp, acpTest, initializedAgent, layout, scenario, select, statuses, toolCalls, toolReply } from './support.mjs';

const KINDS = ['allow_always', 'allow_once', 'reject_always', 'reject_once'];

/** A `write` of `file` asking for workspace-write with a justification. */
function escalatingWrite(file, content) {
  return toolReply('write', {
    file_path: file,
    content,
    sandbox_permissions: 'workspace-write',
    justification: 'The user asked for this file to be created.',
  });
}

/** A read-only session of a fresh agent playing `replies`, answering permission requests with `answer(request)`. */
async function readOnlySession(t, dirs, replies, answer) {
  const { agent } = await initializedAgent(t, dirs, { model: scenario(dirs, replies) });
  agent.permission = answer;
  const { sessionId } = await agent.newSession();
  await agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'read-only' });
  return { agent, sessionId };
}

/** Checks what a permission request carries. */
function assertWellFormed(request, sessionId, file) {
  assert.equal(request.sessionId, sessionId);
  assert.deepEqual(request.options.map((o) => o.kind).sort(), KINDS);
  assert.equal(new Set(request.options.map((o) => o.optionId)).size, 4, 'four distinct option ids');
  for (const o of request.options) assert.ok(o.name, `option ${o.kind} has a name`);
  assert.ok(request.toolCall?.toolCallId, 'the request names the tool call');
  assert.ok(JSON.stringify(request.toolCall).includes(file), `the request shows the file: ${JSON.stringify(request.toolCall)}`);
}

acpTest('permission allow_once: the write runs', async (t) => {
  const dirs = layout(t);
  const file = join(dirs.ws, 'allowed.txt');
  const existedWhenAsked = [];
  const { agent, sessionId } = await readOnlySession(t, dirs, [escalatingWrite(file, 'written with permission\n'), { text: 'Finished.' }],
    (request) => {
      existedWhenAsked.push(existsSync(file));
      return select(request, 'allow_once');
    });
  const { response, updates } = await agent.prompt(sessionId, 'Create allowed.txt.');
  assert.equal(response.stopReason, 'end_turn');
  assert.equal(agent.permissionRequests.length, 1, 'one permission request');
  assertWellFormed(agent.permissionRequests[0], sessionId, 'allowed.txt');
  assert.deepEqual(existedWhenAsked, [false], 'nothing was written before the answer');
  assert.equal(readFileSync(file, 'utf8'), 'written with permission\n');
  const [entry] = toolCalls(updates);
  assert.equal(entry.call.toolCallId, agent.permissionRequests[0].toolCall.toolCallId, 'the request is about the announced call');
  assert.equal(statuses(entry).at(-1), 'completed');
});

acpTest('permission reject_once: the write does not run and the call fails', async (t) => {
  const dirs = layout(t);
  const file = join(dirs.ws, 'rejected.txt');
  const { agent, sessionId } = await readOnlySession(t, dirs, [escalatingWrite(file, 'must not be written\n'), { text: 'Understood.' }],
    (request) => select(request, 'reject_once'));
  const { response, updates } = await agent.prompt(sessionId, 'Create rejected.txt.');
  assert.equal(response.stopReason, 'end_turn', 'the model is told and the turn goes on');
  assert.equal(agent.permissionRequests.length, 1);
  assertWellFormed(agent.permissionRequests[0], sessionId, 'rejected.txt');
  assert.equal(existsSync(file), false, 'the file was not written');
  const [entry] = toolCalls(updates);
  assert.equal(statuses(entry).at(-1), 'failed');
});

acpTest('permission cancelled by session/cancel while pending: stopReason cancelled, nothing written', async (t) => {
  const dirs = layout(t);
  const file = join(dirs.ws, 'cancelled.txt');
  let agentRef;
  let sessionRef;
  const { agent, sessionId } = await readOnlySession(t, dirs, [escalatingWrite(file, 'must not be written\n'), { text: 'Should not be reached.' }],
    async () => {
      // As an editor does when the user stops the turn: cancel the session,
      // then answer the pending request `cancelled` (ACP: Cancellation).
      await agentRef.cancel(sessionRef);
      return { outcome: { outcome: 'cancelled' } };
    });
  agentRef = agent;
  sessionRef = sessionId;
  const started = Date.now();
  const { response, updates } = await agent.prompt(sessionId, 'Create cancelled.txt.');
  assert.equal(response.stopReason, 'cancelled');
  assert.ok(Date.now() - started < 10_000, 'the turn stops promptly');
  assert.equal(agent.permissionRequests.length, 1);
  assert.equal(existsSync(file), false, 'the file was not written');
  const [entry] = toolCalls(updates);
  assert.notEqual(statuses(entry).at(-1), 'completed', 'the call did not complete');
  assert.ok(!updates.some((u) => u.sessionUpdate === 'agent_message_chunk' && u.content.text.includes('Should not be reached')),
    'the model was not asked again after the cancel');
});

acpTest('permission answered cancelled on its own (no session/cancel): the write does not run', async (t) => {
  const dirs = layout(t);
  const file = join(dirs.ws, 'declined.txt');
  const { agent, sessionId } = await readOnlySession(t, dirs, [escalatingWrite(file, 'must not be written\n'), { text: 'Okay.' }],
    () => ({ outcome: { outcome: 'cancelled' } }));
  await agent.prompt(sessionId, 'Create declined.txt.');
  assert.equal(agent.permissionRequests.length, 1);
  assert.equal(existsSync(file), false, 'a cancelled answer refuses the call');
});

acpTest('permission allow_always: a later call asking the same access runs without asking', async (t) => {
  const dirs = layout(t);
  const first = join(dirs.ws, 'first.txt');
  const second = join(dirs.ws, 'second.txt');
  const { agent, sessionId } = await readOnlySession(t, dirs, [
    escalatingWrite(first, 'one\n'), escalatingWrite(second, 'two\n'), { text: 'Both written.' },
  ], (request) => select(request, 'allow_always'));
  const { response } = await agent.prompt(sessionId, 'Create both files.');
  assert.equal(response.stopReason, 'end_turn');
  assert.equal(agent.permissionRequests.length, 1, 'asked once');
  assert.equal(readFileSync(first, 'utf8'), 'one\n');
  assert.equal(readFileSync(second, 'utf8'), 'two\n');
});

acpTest('permission reject_always: a later call asking the same access is refused without asking', async (t) => {
  const dirs = layout(t);
  const first = join(dirs.ws, 'first.txt');
  const second = join(dirs.ws, 'second.txt');
  const { agent, sessionId } = await readOnlySession(t, dirs, [
    escalatingWrite(first, 'one\n'), escalatingWrite(second, 'two\n'), { text: 'Neither written.' },
  ], (request) => select(request, 'reject_always'));
  const { response, updates } = await agent.prompt(sessionId, 'Create both files.');
  assert.equal(response.stopReason, 'end_turn');
  assert.equal(agent.permissionRequests.length, 1, 'asked once');
  assert.equal(existsSync(first), false);
  assert.equal(existsSync(second), false);
  assert.deepEqual(toolCalls(updates).map((entry) => statuses(entry).at(-1)), ['failed', 'failed']);
});

acpTest('permission: while the client decides, the call is not reported in_progress', async (t) => {
  const dirs = layout(t);
  const file = join(dirs.ws, 'pending.txt');
  const { agent, sessionId } = await readOnlySession(t, dirs, [escalatingWrite(file, 'ok\n'), { text: 'Finished.' }],
    (request) => select(request, 'allow_once'));
  await agent.prompt(sessionId, 'Create pending.txt.');
  assert.equal(agent.permissionRequests.length, 1);
  const { toolCallId } = agent.permissionRequests[0].toolCall;
  // ACP: `pending` covers "awaiting approval"; `in_progress` means it runs.
  const answered = agent.frames.findIndex((f) => f.dir === 'client→agent' && f.message && !('method' in f.message)
    && 'result' in f.message && f.message.result?.outcome);
  assert.ok(answered > 0, 'the permission answer was sent');
  const before = agent.frames.slice(0, answered)
    .filter((f) => f.message?.method === 'session/update' && f.message.params.update.toolCallId === toolCallId)
    .map((f) => f.message.params.update.status ?? 'pending');
  assert.ok(before.length > 0, 'the call was announced before the answer');
  assert.ok(!before.includes('in_progress'), `statuses sent before the answer: ${before}`);
  assert.equal(readFileSync(file, 'utf8'), 'ok\n');
});
