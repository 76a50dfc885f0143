// `initialize`, `session/new`, modes and config options, and the prompt
// content dsh accepts (docs/acp.md: Methods, Modes, Prompt content).

import assert from 'node:assert/strict';

import { acp, acpTest, initializedAgent, layout, ofKind, PROTOCOL_VERSION, scenario, UUID_RE, within } from './support.mjs';

const PRESETS = ['read-only', 'workspace-write', 'danger-full-access'];

acpTest('initialize answers protocol 1, the agent name, loadSession and image prompts', async (t) => {
  const dirs = layout(t);
  const { init } = await initializedAgent(t, dirs, { model: scenario(dirs, [{ text: 'unused' }]) });
  assert.equal(init.protocolVersion, PROTOCOL_VERSION);
  assert.equal(init.agentInfo?.name, 'deepseek-harness-acp');
  assert.equal(typeof init.agentInfo?.version, 'string');
  const caps = init.agentCapabilities;
  assert.equal(caps.loadSession, true, 'dsh offers session/load');
  assert.equal(caps.promptCapabilities?.image, true, 'image prompts');
  assert.equal(caps.promptCapabilities?.embeddedContext, true, 'embedded-context prompts');
  assert.notEqual(caps.promptCapabilities?.audio, true, 'audio prompts are refused');
  assert.equal(caps.mcpCapabilities?.http, true, 'HTTP MCP servers');
  assert.notEqual(caps.mcpCapabilities?.sse, true, 'SSE MCP servers are refused');
  for (const capability of ['list', 'resume', 'close']) {
    assert.ok(caps.sessionCapabilities?.[capability], `sessionCapabilities.${capability} is advertised`);
  }
  assert.deepEqual(init.authMethods ?? [], [], 'no auth methods');
});

acpTest('session/new answers a UUID, the model and reasoning_effort options and the three modes', async (t) => {
  const dirs = layout(t);
  const { agent } = await initializedAgent(t, dirs, { model: scenario(dirs, [{ text: 'unused' }]) });
  const first = await agent.newSession();
  const second = await agent.newSession();
  assert.match(first.sessionId, UUID_RE);
  assert.match(second.sessionId, UUID_RE);
  assert.notEqual(first.sessionId, second.sessionId, 'each session/new makes a new session');

  const options = Object.fromEntries((first.configOptions ?? []).map((o) => [o.id, o]));
  assert.deepEqual(Object.keys(options).sort(), ['model', 'reasoning_effort']);
  for (const o of Object.values(options)) {
    assert.equal(o.type, 'select');
    const values = o.options.flatMap((entry) => ('options' in entry ? entry.options : [entry])).map((v) => v.value);
    assert.ok(values.includes(o.currentValue), `${o.id}: currentValue ${o.currentValue} is one of its options ${values}`);
  }
  const efforts = options.reasoning_effort.options.flatMap((entry) => ('options' in entry ? entry.options : [entry])).map((v) => v.value);
  assert.deepEqual([...efforts].sort(), ['high', 'low', 'max', 'off']);

  assert.ok(first.modes, 'session/new answers modes');
  assert.deepEqual(first.modes.availableModes.map((m) => m.id).sort(), [...PRESETS].sort());
  for (const mode of first.modes.availableModes) assert.ok(mode.name, `mode ${mode.id} has a name`);
  assert.equal(first.modes.currentModeId, 'workspace-write');
});

acpTest('session/set_mode switches the preset and sends current_mode_update', async (t) => {
  const dirs = layout(t);
  const { agent } = await initializedAgent(t, dirs, { model: scenario(dirs, [{ text: 'unused' }]) });
  const { sessionId } = await agent.newSession();
  await agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'read-only' });
  const update = await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === 'current_mode_update', 'current_mode_update');
  assert.equal(update.currentModeId, 'read-only');
  await assert.rejects(agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'no-such-mode' }),
    'an unknown mode is an error');
});

acpTest('session/set_config_option reasoning_effort answers the options with the new value', async (t) => {
  const dirs = layout(t);
  const { agent } = await initializedAgent(t, dirs, { model: scenario(dirs, [{ text: 'unused' }]) });
  const { sessionId, configOptions } = await agent.newSession();
  const before = configOptions.find((o) => o.id === 'reasoning_effort').currentValue;
  const target = before === 'low' ? 'max' : 'low';
  const answer = await agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'reasoning_effort', value: target });
  const after = answer.configOptions.find((o) => o.id === 'reasoning_effort');
  assert.equal(after.currentValue, target);
  await assert.rejects(agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: 'reasoning_effort', value: 'ludicrous' }),
    'a value not among the options is an error');
});

acpTest('an image prompt is accepted and an audio prompt is refused with invalid params', async (t) => {
  const dirs = layout(t);
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC';
  const { agent } = await initializedAgent(t, dirs, { model: scenario(dirs, [{ text: 'I see a tiny image.' }]) });
  const { sessionId } = await agent.newSession();
  const { response, updates } = await agent.prompt(sessionId, [
    { type: 'text', text: 'What is in this picture?' },
    { type: 'image', data: png, mimeType: 'image/png' },
  ]);
  assert.equal(response.stopReason, 'end_turn');
  assert.equal(ofKind(updates, 'agent_message_chunk').map((u) => u.content.text).join(''), 'I see a tiny image.');

  const refused = await within(agent.ctx.request(acp.methods.agent.session.prompt, {
    sessionId, prompt: [{ type: 'audio', data: 'AAAA', mimeType: 'audio/wav' }],
  }).then(() => null, (error) => error), 15_000, 'the answer to an audio prompt');
  assert.ok(refused, 'an audio prompt is an error');
  assert.equal(refused.code, -32602, `invalid params: ${refused.message}`);
});
