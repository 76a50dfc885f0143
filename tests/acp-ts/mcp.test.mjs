// MCP servers given in session/new's `mcpServers`, of both transports:
// tests/mcp/stdio_server.py (stdio) and tests/mcp/http_server.py
// (streamable HTTP). The scripted model calls `mcp__<server>__<tool>`; the
// tool's result reaches the client in the tool_call_update. `echo` is
// annotated read-only and runs without asking; `add` is not, so dsh asks
// first (docs/acp.md: MCP servers, Permission requests).

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import {
  acpTest, contentTexts, initializedAgent, layout, processesWith, pollUntil, scenario, select, startHttpMcpServer, statuses,
  stdioMcpServer, toolCalls, toolReply,
} from './support.mjs';

/** Runs one prompt whose model calls `echo` then `add` on `server`; checks both results. */
async function callEchoAndAdd(t, dirs, server) {
  const token = `echoed-${randomUUID().slice(0, 8)}`;
  const model = scenario(dirs, [
    toolReply(`mcp__${server.name}__echo`, { text: token }),
    toolReply(`mcp__${server.name}__add`, { a: 19, b: 23 }),
    { text: 'Both tools answered.' },
  ]);
  const { agent } = await initializedAgent(t, dirs, { model });
  agent.permission = (request) => select(request, 'allow_once');
  const { sessionId } = await agent.newSession({ mcpServers: [server] });
  const { response, updates } = await agent.prompt(sessionId, 'Use the MCP tools.');
  assert.equal(response.stopReason, 'end_turn');

  const [echo, add, ...more] = toolCalls(updates);
  assert.equal(more.length, 0, 'two tool calls');
  // ACP: an absent kind means `other` (the schema's default).
  assert.equal(echo.call.kind ?? 'other', 'other');
  assert.equal(add.call.kind ?? 'other', 'other');
  assert.deepEqual(echo.call.rawInput, { text: token });
  assert.equal(statuses(echo).at(-1), 'completed');
  assert.equal(statuses(add).at(-1), 'completed');
  assert.ok(contentTexts(echo).some((text) => text.includes(token)), `echo's result: ${JSON.stringify(contentTexts(echo))}`);
  // 42 is in neither argument: the server computed it.
  assert.ok(contentTexts(add).some((text) => text.trim() === '42'), `add's result: ${JSON.stringify(contentTexts(add))}`);

  assert.equal(agent.permissionRequests.length, 1, 'only the tool not marked read-only asks');
  assert.equal(agent.permissionRequests[0].toolCall.toolCallId, add.call.toolCallId);
  return agent;
}

acpTest('a stdio MCP server: its tools are called and their results reach the client', async (t) => {
  const dirs = layout(t);
  const marker = `dsh-acp-mcp-${randomUUID().slice(0, 12)}`;
  const agent = await callEchoAndAdd(t, dirs, stdioMcpServer('tools', marker));
  assert.ok(processesWith(marker).length > 0, 'the stdio server runs while the session is open');
  await agent.stop();
  await pollUntil(() => processesWith(marker).length === 0, 'the stdio MCP server to exit with the agent', 10_000);
});

acpTest('an HTTP MCP server: its tools are called and their results reach the client', async (t) => {
  const dirs = layout(t);
  const url = await startHttpMcpServer(t, dirs, `dsh-acp-mcp-${randomUUID().slice(0, 12)}`);
  await callEchoAndAdd(t, dirs, { type: 'http', name: 'web', url, headers: [] });
});

acpTest('an HTTP MCP server gets the configured headers', async (t) => {
  const dirs = layout(t);
  const url = await startHttpMcpServer(t, dirs, `dsh-acp-mcp-${randomUUID().slice(0, 12)}`);
  const token = `tok-${randomUUID().slice(0, 8)}`;
  const model = scenario(dirs, [toolReply('mcp__web__whoami', {}), { text: 'Done.' }]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession({ mcpServers: [{ type: 'http', name: 'web', url, headers: [{ name: 'X-Test-Token', value: token }] }] });
  const { updates } = await agent.prompt(sessionId, 'Who am I?');
  const [whoami] = toolCalls(updates);
  assert.ok(contentTexts(whoami).some((text) => text.trim() === token), `whoami's result: ${JSON.stringify(contentTexts(whoami))}`);
});
