// One session store for both front ends: a session created over ACP is
// resumed by the SDK profile (`dsh --profile sdk`, raw JSON-RPC) with the
// ACP turn in its history, and a session created by the SDK profile is
// loaded over ACP, which replays it (docs/acp.md, introduction).

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { acp, acpTest, initializedAgent, joined, layout, messageText, openSdkProfile, scenario } from './support.mjs';

/** The stored events of a session, through the SDK profile's session/events. */
async function storedEvents(sdk, sessionId) {
  const { events } = await sdk.request('session/events', { sessionId, afterSeq: 0 });
  return events;
}

/** Prompts over the SDK profile and waits for the session to go idle; the turn's session.event payloads. */
async function sdkTurn(sdk, sessionId, text) {
  const from = sdk.notifications.length;
  await sdk.request('session/prompt', { sessionId, contentBlocks: [{ type: 'text', text }] });
  await sdk.until(() => sdk.notifications.slice(from).some((n) => n.method === 'session.status' && n.params.sessionId === sessionId
    && n.params.status === 'idle'), `session ${sessionId} to go idle after "${text}"`);
  return sdk.notifications.slice(from).filter((n) => n.method === 'session.event' && n.params.sessionId === sessionId).map((n) => n.params.event);
}

acpTest('a session created over ACP is resumed by the SDK profile with the ACP turn in its history', async (t) => {
  const dirs = layout(t);
  const model = scenario(dirs, [{ text: 'Answered over ACP.' }, { text: 'Answered over the SDK profile.' }]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  const acpTurn = await agent.prompt(sessionId, 'Hello from the ACP client.');
  assert.equal(joined(acpTurn.updates, 'agent_message_chunk'), 'Answered over ACP.');
  await agent.request(acp.methods.agent.session.close, { sessionId });
  assert.deepEqual(await agent.stop(), { code: 0, signal: null });

  const sdk = openSdkProfile(t, dirs);
  await sdk.request('initialize', { cwd: dirs.ws, provider: 'scripted', model });
  assert.deepEqual(await sdk.request('session/resume', { sessionId }), {});
  const history = await storedEvents(sdk, sessionId);
  const users = history.filter((e) => e.type === 'user/message' && e.data.source?.kind === 'user').map((e) => messageText(e.data));
  const assistants = history.filter((e) => e.type === 'assistant/message').map((e) => messageText(e.data.message));
  assert.deepEqual(users, ['Hello from the ACP client.'], 'the ACP prompt is in the stored history');
  assert.deepEqual(assistants, ['Answered over ACP.'], 'the ACP reply is in the stored history');

  // The scripted model continues after the replies the history holds: the
  // second reply answers only if the resumed history counts the ACP turn.
  const events = await sdkTurn(sdk, sessionId, 'Hello from the SDK profile.');
  const replies = events.filter((e) => e.type === 'assistant/message').map((e) => messageText(e.data.message));
  assert.deepEqual(replies, ['Answered over the SDK profile.']);
  const ends = events.filter((e) => e.type === 'turn/end').map((e) => e.data);
  assert.deepEqual(ends.map((e) => [e.turn, e.reason.kind]), [[2, 'completed']], 'the SDK turn is the session\'s second');
});

acpTest('a session created by the SDK profile is loaded over ACP, which replays it', async (t) => {
  const dirs = layout(t);
  const model = scenario(dirs, [{ text: 'Answered over the SDK profile.' }, { text: 'Answered over ACP.' }]);
  const sessionId = randomUUID();
  const sdk = openSdkProfile(t, dirs);
  await sdk.request('initialize', { cwd: dirs.ws, provider: 'scripted', model });
  const events = await sdkTurn(sdk, sessionId, 'Hello from the SDK profile.');
  assert.ok(events.some((e) => e.type === 'turn/end' && e.data.reason.kind === 'completed'), 'the SDK turn completed');
  await sdk.request('shutdown', {}).catch(() => {}); // then end of input
  assert.equal((await sdk.stop()).code, 0);

  const { agent } = await initializedAgent(t, dirs, { model });
  const listed = await agent.request(acp.methods.agent.session.list, { cwd: dirs.ws });
  assert.deepEqual(listed.sessions.map((s) => s.sessionId), [sessionId], 'session/list shows the SDK profile\'s session');
  await agent.request(acp.methods.agent.session.load, { sessionId, cwd: dirs.ws, mcpServers: [] });
  await agent.settle(sessionId);
  const replayed = agent.updatesOf(sessionId);
  assert.equal(joined(replayed, 'user_message_chunk'), 'Hello from the SDK profile.');
  assert.equal(joined(replayed, 'agent_message_chunk'), 'Answered over the SDK profile.');

  const next = await agent.prompt(sessionId, 'Hello from the ACP client.');
  assert.equal(next.response.stopReason, 'end_turn');
  assert.equal(joined(next.updates, 'agent_message_chunk'), 'Answered over ACP.', 'the ACP turn continues the SDK session');
});
