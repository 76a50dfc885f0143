// `session/cancel` stops a turn wherever it is: while the model streams
// (scripted and fake DeepSeek server), before the model has answered, and
// while a command runs (its process goes too); the session then takes the
// next prompt (docs/acp.md: session/cancel).

import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';

import {
  acpTest, fakeModelEnv, initializedAgent, joined, layout, pollUntil, processesWith, scenario, startFakeModel, statuses, toolCalls, toolReply,
} from './support.mjs';

/** How soon after `session/cancel` the prompt must be answered. */
const PROMPT_STOP_MS = 5_000;

/** Cancels once the first chunk of `sessionId` arrived; checks the turn ended cancelled with only that part. */
async function cancelMidStream(agent, sessionId) {
  const turn = agent.startPrompt(sessionId, 'Tell me a long story.');
  const first = await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === 'agent_message_chunk', 'the first agent_message_chunk');
  assert.equal(first.content.text, 'Once ');
  const cancelledAt = Date.now();
  await agent.cancel(sessionId);
  const { response, updates } = await turn;
  assert.equal(response.stopReason, 'cancelled');
  assert.ok(Date.now() - cancelledAt < PROMPT_STOP_MS, `answered ${Date.now() - cancelledAt} ms after the cancel`);
  assert.equal(joined(updates, 'agent_message_chunk'), 'Once ', 'nothing after the cancel');
}

// The model streams its first delta, then stalls for 60 s.
const STALLING = { text: ['Once ', 'upon ', 'a time.'], stall_ms: 60_000 };

acpTest('session/cancel mid-stream (scripted model): stopReason cancelled', async (t) => {
  const dirs = layout(t);
  const { agent } = await initializedAgent(t, dirs, { model: scenario(dirs, [STALLING]) });
  const { sessionId } = await agent.newSession();
  await cancelMidStream(agent, sessionId);
});

acpTest('session/cancel mid-stream (fake DeepSeek server): stopReason cancelled', async (t) => {
  const dirs = layout(t);
  const fake = await startFakeModel(t, dirs, [STALLING]);
  const { agent } = await initializedAgent(t, dirs, { env: fakeModelEnv(fake) });
  const { sessionId } = await agent.newSession();
  await cancelMidStream(agent, sessionId);
});

acpTest('session/cancel while the model is slow to answer: stopReason cancelled, the late reply never shown', async (t) => {
  const dirs = layout(t);
  // A quick first step (so the turn is surely running), then a reply the model takes 60 s to start.
  const model = scenario(dirs, [
    toolReply('bash', { description: 'Quick step', command: 'echo step-one' }),
    { text: 'This reply comes too late.', delay_ms: 60_000 },
  ]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  const turn = agent.startPrompt(sessionId, 'Do two steps.');
  await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === 'tool_call_update' && u.status === 'completed',
    'the first step\'s tool call to complete');
  const cancelledAt = Date.now();
  await agent.cancel(sessionId);
  const { response, updates } = await turn;
  assert.equal(response.stopReason, 'cancelled');
  assert.ok(Date.now() - cancelledAt < PROMPT_STOP_MS, `answered ${Date.now() - cancelledAt} ms after the cancel`);
  assert.ok(!joined(updates, 'agent_message_chunk').includes('too late'));
});

acpTest('session/cancel mid-tool: stopReason cancelled within seconds, the command killed, the next prompt works', async (t) => {
  const dirs = layout(t);
  // A distinctive duration marks the command's processes in /proc.
  const seconds = `30.${randomInt(100000, 999999)}`;
  const model = scenario(dirs, [
    toolReply('bash', { description: 'Wait a long time', command: `sleep ${seconds}` }),
    { text: 'Back after the cancel.' },
  ]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  const turn = agent.startPrompt(sessionId, 'Sleep for a while.');
  await agent.waitForUpdate(sessionId, (u) => (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update')
    && u.status === 'in_progress', 'the bash call to be in progress');
  await pollUntil(() => processesWith(seconds).length > 0, 'the sleep process to start');
  const cancelledAt = Date.now();
  await agent.cancel(sessionId);
  const { response, updates } = await turn;
  assert.equal(response.stopReason, 'cancelled');
  assert.ok(Date.now() - cancelledAt < PROMPT_STOP_MS, `answered ${Date.now() - cancelledAt} ms after the cancel`);
  const [entry] = toolCalls(updates);
  assert.notEqual(statuses(entry).at(-1), 'completed', `the interrupted call is not reported completed: ${statuses(entry)}`);
  await pollUntil(() => processesWith(seconds).length === 0, 'the cancelled command\'s process to go', PROMPT_STOP_MS);

  const next = await agent.prompt(sessionId, 'Are you still there?');
  assert.equal(next.response.stopReason, 'end_turn');
  assert.equal(joined(next.updates, 'agent_message_chunk'), 'Back after the cancel.');
});
