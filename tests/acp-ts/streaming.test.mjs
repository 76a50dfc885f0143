// Replies streamed as the model writes them: agent_message_chunk and
// agent_thought_chunk updates whose texts join into the reply and its
// reasoning, with the offline scripted model and with the fake DeepSeek
// server (docs/acp.md: Session updates).

import assert from 'node:assert/strict';

import { acpTest, fakeModelEnv, initializedAgent, joined, layout, ofKind, responseFrame, scenario, startFakeModel } from './support.mjs';

const REASONING = 'The user greets me; a greeting back is the answer.';
const CHUNKS = ['Hel', 'lo ', 'world'];

/**
 * Checks one streamed turn: the chunks' texts join into the reply and the
 * reasoning, the reasoning comes first, the turn ends end_turn. Returns the
 * message chunks.
 */
function assertStreamed({ response, updates }) {
  assert.equal(response.stopReason, 'end_turn');
  const messages = ofKind(updates, 'agent_message_chunk');
  const thoughts = ofKind(updates, 'agent_thought_chunk');
  for (const chunk of [...messages, ...thoughts]) assert.equal(chunk.content.type, 'text');
  assert.equal(joined(updates, 'agent_message_chunk'), 'Hello world', 'the message chunks join into the reply');
  assert.equal(joined(updates, 'agent_thought_chunk'), REASONING, 'the thought chunks join into the reasoning');
  const lastThought = updates.lastIndexOf(thoughts.at(-1));
  const firstMessage = updates.indexOf(messages[0]);
  assert.ok(lastThought < firstMessage, 'the reasoning streams before the text, as the model wrote them');
  return messages;
}

acpTest('scripted model: streamed chunks join into the reply and the reasoning', async (t) => {
  const dirs = layout(t);
  const model = scenario(dirs, [{ reasoning: REASONING, text: CHUNKS }]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  assertStreamed(await agent.prompt(sessionId, 'Say hello to the world.'));
});

acpTest('fake DeepSeek server: streamed chunks join into the reply and the reasoning', async (t) => {
  const dirs = layout(t);
  // delta_gap_ms: the server pauses after every delta, so each arrives on its own.
  const fake = await startFakeModel(t, dirs, [{ reasoning: REASONING, text: CHUNKS, delta_gap_ms: 50 }]);
  const { agent } = await initializedAgent(t, dirs, { env: fakeModelEnv(fake) });
  const { sessionId } = await agent.newSession();
  const messages = assertStreamed(await agent.prompt(sessionId, 'Say hello to the world.'));
  // The deltas arrived 50 ms apart: each is passed on as it comes.
  assert.ok(messages.length >= 2, `the reply arrives in several chunks, not once whole (got ${messages.length})`);
  const requests = fake.requests();
  assert.equal(requests.length, 1, 'one model request for the turn');
  assert.ok(JSON.stringify(requests[0]).includes('Say hello to the world.'), 'the prompt reached the model');
});

/**
 * A reply whose model stalls 3 s after its first delta: streamed, the first
 * chunk reaches the client during the stall, seconds before the turn's
 * answer; sent once the step ends, it would come just before the answer.
 */
async function assertFirstChunkLeads(agent) {
  const { sessionId } = await agent.newSession();
  const { response, updates } = await agent.prompt(sessionId, 'Write two parts.');
  assert.equal(response.stopReason, 'end_turn');
  assert.equal(joined(updates, 'agent_message_chunk'), 'First part, then the rest.');
  const firstChunk = agent.frames.find((f) => f.message?.method === 'session/update' && f.message.params.update.sessionUpdate === 'agent_message_chunk');
  const answer = responseFrame(agent, 'session/prompt');
  assert.ok(!firstChunk.message.params.update.content.text.includes('rest'), 'the first chunk holds only what preceded the stall');
  const lead = answer.at - firstChunk.at;
  assert.ok(lead >= 1500, `the first chunk came ${lead} ms before the answer (the model stalled 3000 ms after writing it)`);
}

const STALLED = { text: ['First part, ', 'then the rest.'], stall_ms: 3000 };

acpTest('scripted model: a chunk is sent while the model still writes the reply', async (t) => {
  const dirs = layout(t);
  const { agent } = await initializedAgent(t, dirs, { model: scenario(dirs, [STALLED]) });
  await assertFirstChunkLeads(agent);
});

acpTest('fake DeepSeek server: a chunk is sent while the model still writes the reply', async (t) => {
  const dirs = layout(t);
  const fake = await startFakeModel(t, dirs, [STALLED]);
  const { agent } = await initializedAgent(t, dirs, { env: fakeModelEnv(fake) });
  await assertFirstChunkLeads(agent);
});
