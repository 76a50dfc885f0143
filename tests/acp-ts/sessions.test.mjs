// Stored sessions over ACP: session/list (newest first, cwd filter),
// session/close, session/load (replays the conversation as updates before
// answering) and session/resume (no replay; a different cwd is refused)
// (docs/acp.md: Methods).

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { acp, acpTest, frameIndex, initializedAgent, joined, layout, ofKind, responseFrame, scenario, subdir } from './support.mjs';

const PROMPT = 'Remember the word pelican.';
const REPLY = 'I will remember pelican.';
const SECOND_PROMPT = 'Which word was it?';
const SECOND_REPLY = 'It was pelican.';

/** An agent whose sessions play the pelican conversation; one session prompted once. */
async function prompted(t, dirs) {
  const model = scenario(dirs, [{ text: REPLY }, { text: SECOND_REPLY }]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  const { response } = await agent.prompt(sessionId, PROMPT);
  assert.equal(response.stopReason, 'end_turn');
  return { agent, sessionId, model };
}

/** The session/update frames of `sessionId` between two raw frame indexes. */
function rawUpdatesBetween(agent, sessionId, from, to) {
  return agent.frames.slice(from, to).filter((f) => f.dir === 'agent→client' && f.message?.method === 'session/update'
    && f.message.params.sessionId === sessionId).map((f) => f.message.params.update);
}

/** Checks that a session/load replayed the pelican turn, before its answer. */
function assertReplayedBeforeAnswer(agent, sessionId) {
  const requestIndex = frameIndex(agent, (m) => m.method === 'session/load' && m.params?.sessionId === sessionId);
  const answer = responseFrame(agent, 'session/load', (p) => p.sessionId === sessionId);
  assert.ok(answer, 'session/load was answered');
  assert.ok(!answer.message.error, `session/load succeeded: ${JSON.stringify(answer.message.error)}`);
  const replayed = rawUpdatesBetween(agent, sessionId, requestIndex, answer.index);
  assert.equal(joined(replayed, 'user_message_chunk'), PROMPT, 'the stored prompt, as user_message_chunk, before the answer');
  assert.equal(joined(replayed, 'agent_message_chunk'), REPLY, 'the stored reply, as agent_message_chunk, before the answer');
  const firstUser = replayed.findIndex((u) => u.sessionUpdate === 'user_message_chunk');
  const firstAgent = replayed.findIndex((u) => u.sessionUpdate === 'agent_message_chunk');
  assert.ok(firstUser < firstAgent, 'the prompt is replayed before the reply');
  return answer.message.result;
}

acpTest('session/list lists the sessions of DSH_HOME newest first, with cwd, title and updatedAt, filtered by cwd', async (t) => {
  const dirs = layout(t);
  const other = subdir(dirs, 'other_ws');
  const model = scenario(dirs, [{ text: 'Noted.' }]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const older = await agent.newSession({ cwd: dirs.ws });
  await agent.prompt(older.sessionId, 'Refactor the parser module.');
  const newer = await agent.newSession({ cwd: other });
  await agent.prompt(newer.sessionId, 'Document the build steps.');

  const all = await agent.request(acp.methods.agent.session.list, {});
  assert.deepEqual(all.sessions.map((s) => s.sessionId), [newer.sessionId, older.sessionId], 'newest first');
  const byId = Object.fromEntries(all.sessions.map((s) => [s.sessionId, s]));
  assert.equal(byId[older.sessionId].cwd, dirs.ws);
  assert.equal(byId[newer.sessionId].cwd, other);
  for (const session of all.sessions) {
    assert.equal(typeof session.title, 'string', `a title: ${JSON.stringify(session)}`);
    assert.ok(session.title.trim(), `a non-empty title: ${JSON.stringify(session)}`);
    assert.ok(!Number.isNaN(Date.parse(session.updatedAt)), `updatedAt is a date-time: ${session.updatedAt}`);
  }
  assert.ok(Date.parse(byId[newer.sessionId].updatedAt) >= Date.parse(byId[older.sessionId].updatedAt));
  assert.ok(Date.parse(byId[newer.sessionId].updatedAt) <= Date.now() + 1000, 'updatedAt is not in the future');

  const inWs = await agent.request(acp.methods.agent.session.list, { cwd: dirs.ws });
  assert.deepEqual(inWs.sessions.map((s) => s.sessionId), [older.sessionId]);
  const inOther = await agent.request(acp.methods.agent.session.list, { cwd: other });
  assert.deepEqual(inOther.sessions.map((s) => s.sessionId), [newer.sessionId]);
  const nowhere = await agent.request(acp.methods.agent.session.list, { cwd: subdir(dirs, 'empty_ws') });
  assert.deepEqual(nowhere.sessions, []);
});

acpTest('session/close then session/load replays the conversation before answering, and the session goes on', async (t) => {
  const dirs = layout(t);
  const { agent, sessionId } = await prompted(t, dirs);
  await agent.request(acp.methods.agent.session.close, { sessionId });
  const loaded = await agent.request(acp.methods.agent.session.load, { sessionId, cwd: dirs.ws, mcpServers: [] });
  await agent.settle(sessionId);
  const result = assertReplayedBeforeAnswer(agent, sessionId);
  assert.deepEqual(loaded, result, 'the SDK saw the answer the wire carried');
  assert.equal(loaded.modes?.currentModeId, 'workspace-write', 'session/load answers the modes');

  const next = await agent.prompt(sessionId, SECOND_PROMPT);
  assert.equal(next.response.stopReason, 'end_turn');
  assert.equal(joined(next.updates, 'agent_message_chunk'), SECOND_REPLY, 'the loaded session continues its script');
});

acpTest('session/load in a new dsh acp process replays a session the previous process stored', async (t) => {
  const dirs = layout(t);
  const { agent: first, sessionId, model } = await prompted(t, dirs);
  assert.deepEqual(await first.stop(), { code: 0, signal: null }, 'the first agent exits at end of input');

  const { agent } = await initializedAgent(t, dirs, { model });
  await agent.request(acp.methods.agent.session.load, { sessionId, cwd: dirs.ws, mcpServers: [] });
  await agent.settle(sessionId);
  assertReplayedBeforeAnswer(agent, sessionId);
  const next = await agent.prompt(sessionId, SECOND_PROMPT);
  assert.equal(joined(next.updates, 'agent_message_chunk'), SECOND_REPLY);
});

acpTest('session/resume answers without replaying, and the session goes on', async (t) => {
  const dirs = layout(t);
  const { agent, sessionId } = await prompted(t, dirs);
  await agent.request(acp.methods.agent.session.close, { sessionId });
  const before = agent.updatesOf(sessionId).length;
  const resumed = await agent.request(acp.methods.agent.session.resume, { sessionId, cwd: dirs.ws });
  assert.equal(resumed.modes?.currentModeId, 'workspace-write', 'session/resume answers the modes');
  const requestIndex = frameIndex(agent, (m) => m.method === 'session/resume');
  const answer = responseFrame(agent, 'session/resume');
  const replayed = rawUpdatesBetween(agent, sessionId, requestIndex, answer.index)
    .filter((u) => ['user_message_chunk', 'agent_message_chunk', 'agent_thought_chunk', 'tool_call'].includes(u.sessionUpdate));
  assert.deepEqual(replayed, [], 'nothing of the conversation is replayed');

  const next = await agent.prompt(sessionId, SECOND_PROMPT);
  assert.equal(next.response.stopReason, 'end_turn');
  assert.equal(joined(next.updates, 'agent_message_chunk'), SECOND_REPLY, 'the resumed session continues its script');
  assert.equal(ofKind(agent.updatesOf(sessionId).slice(before), 'user_message_chunk').length, 0, 'no user_message_chunk after resume');
});

acpTest('session/resume with a different cwd fails and leaves the session loadable', async (t) => {
  const dirs = layout(t);
  const { agent, sessionId } = await prompted(t, dirs);
  await agent.request(acp.methods.agent.session.close, { sessionId });
  const elsewhere = subdir(dirs, 'elsewhere');
  const error = await agent.request(acp.methods.agent.session.resume, { sessionId, cwd: elsewhere }).then(() => null, (e) => e);
  assert.ok(error, 'resuming in another cwd is an error');
  assert.equal(typeof error.code, 'number', `a JSON-RPC error: ${error}`);
  const listed = await agent.request(acp.methods.agent.session.list, { cwd: dirs.ws });
  assert.deepEqual(listed.sessions.map((s) => [s.sessionId, s.cwd]), [[sessionId, dirs.ws]], 'the session still belongs to its cwd');
  await agent.request(acp.methods.agent.session.resume, { sessionId, cwd: dirs.ws });
});

acpTest('session/load and session/resume of an unknown session id fail', async (t) => {
  const dirs = layout(t);
  const { agent } = await initializedAgent(t, dirs, { model: scenario(dirs, [{ text: 'unused' }]) });
  const unknown = randomUUID();
  await assert.rejects(agent.request(acp.methods.agent.session.load, { sessionId: unknown, cwd: dirs.ws, mcpServers: [] }));
  await assert.rejects(agent.request(acp.methods.agent.session.resume, { sessionId: unknown, cwd: dirs.ws }));
});
