// Tool calls as ACP reports them: `tool_call` with a kind by tool, a
// readable title, rawInput and locations; `tool_call_update` with status,
// output and a `diff` for file changes; `plan` from `todo_write`
// (docs/acp.md: Session updates, tool kinds).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  acpTest, contentTexts, diffs, initializedAgent, joined, layout, ofKind, scenario, statuses, toolCalls, toolReply,
} from './support.mjs';

acpTest('bash: kind execute, a readable title, rawInput, in_progress then completed, the output', async (t) => {
  const dirs = layout(t);
  const args = { description: 'Print a greeting', command: 'echo hello-from-bash-$((40 + 2))' };
  const model = scenario(dirs, [toolReply('bash', args, { text: 'I will run a command.' }), { text: 'The command ran.' }]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  const { response, updates } = await agent.prompt(sessionId, 'Run the greeting.');
  assert.equal(response.stopReason, 'end_turn');

  const calls = toolCalls(updates);
  assert.equal(calls.length, 1, 'one tool call');
  const [entry] = calls;
  assert.ok(entry.call, 'a tool_call update announces the call');
  assert.equal(entry.call.kind, 'execute');
  assert.equal(typeof entry.call.title, 'string');
  assert.notEqual(entry.call.title, 'bash', 'the title says more than the tool name');
  assert.ok(entry.call.title.includes(args.description) || entry.call.title.includes(args.command),
    `the title names the description or the command: ${entry.call.title}`);
  assert.deepEqual(entry.call.rawInput, args);

  const seen = statuses(entry);
  assert.equal(seen[0], 'in_progress', `the call starts in_progress: ${seen}`);
  assert.equal(seen.at(-1), 'completed', `the call ends completed: ${seen}`);
  // The shell expanded $((40 + 2)): the text is the command's output, not its arguments echoed.
  assert.ok(contentTexts(entry).some((text) => text.includes('hello-from-bash-42')), `the output is in the content: ${JSON.stringify(contentTexts(entry))}`);

  // The step's text before the call, the final text after it.
  const callIndex = updates.indexOf(entry.call);
  assert.equal(joined(updates.slice(0, callIndex), 'agent_message_chunk'), 'I will run a command.');
  assert.equal(joined(updates.slice(callIndex), 'agent_message_chunk'), 'The command ran.');
});

acpTest('bash: output is sent as the command writes it, before the command ends', async (t) => {
  const dirs = layout(t);
  const args = { description: 'Print two lines a moment apart', command: 'echo first-line; sleep 2; echo second-line' };
  const model = scenario(dirs, [toolReply('bash', args), { text: 'Done.' }]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  const turn = agent.startPrompt(sessionId, 'Run it.');
  const early = await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === 'tool_call_update'
    && (u.content ?? []).some((item) => item.type === 'content' && item.content?.text?.includes('first-line')),
  'a tool_call_update carrying the first line');
  assert.notEqual(early.status, 'completed', 'the first line is sent while the command still runs');
  assert.ok(!JSON.stringify(early.content).includes('second-line'), 'the first line is sent before the second is written');
  const { response, updates } = await turn;
  assert.equal(response.stopReason, 'end_turn');
  const [entry] = toolCalls(updates);
  assert.equal(statuses(entry).at(-1), 'completed');
  const final = entry.updates.filter((u) => u.content).at(-1);
  assert.ok(JSON.stringify(final.content).includes('second-line'), 'the last content holds the whole output');
});

acpTest('write then edit: kind edit, a title and location naming the file, the edit\'s diff, the file on disk', async (t) => {
  const dirs = layout(t);
  const path = join(dirs.ws, 'notes.txt');
  const original = 'alpha\nbeta\ngamma\n';
  const edited = 'alpha\nBETA\ngamma\n';
  const model = scenario(dirs, [
    toolReply('write', { file_path: 'notes.txt', content: original }, { text: 'Creating the notes.' }),
    toolReply('edit', { file_path: 'notes.txt', old_string: 'beta', new_string: 'BETA' }),
    { text: 'Edited.' },
  ]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  const { response, updates } = await agent.prompt(sessionId, 'Write the notes, then capitalise beta.');
  assert.equal(response.stopReason, 'end_turn');
  assert.equal(readFileSync(path, 'utf8'), edited, 'the file on disk has the edited content');

  const [write, edit, ...more] = toolCalls(updates);
  assert.equal(more.length, 0, 'two tool calls');
  for (const [name, entry] of [['write', write], ['edit', edit]]) {
    assert.ok(entry.call, `${name}: a tool_call`);
    assert.equal(entry.call.kind, 'edit', `${name} is kind edit`);
    assert.ok(entry.call.title && entry.call.title !== name, `${name}: a readable title (${entry.call.title})`);
    assert.ok(entry.call.title.includes('notes.txt'), `${name}: the title names the file (${entry.call.title})`);
    const locations = [entry.call, ...entry.updates].flatMap((u) => u?.locations ?? []);
    assert.ok(locations.some((l) => l.path === path), `${name}: a location with the file's absolute path: ${JSON.stringify(locations)}`);
    assert.equal(statuses(entry).at(-1), 'completed', `${name} completed`);
  }

  // edit: the diff (a hunk or the whole file) turns the old text into the new.
  const editDiffs = diffs(edit);
  assert.equal(editDiffs.length, 1, `edit: one hunk: ${JSON.stringify(editDiffs)}`);
  const [diff] = editDiffs;
  assert.equal(diff.path, path);
  assert.ok(diff.oldText.includes('beta') && !diff.oldText.includes('BETA'), `old text: ${JSON.stringify(diff.oldText)}`);
  assert.ok(diff.newText.includes('BETA') && !diff.newText.includes('beta'), `new text: ${JSON.stringify(diff.newText)}`);
  assert.ok(original.includes(diff.oldText), 'the old text is a part of the file before the edit');
  assert.equal(original.replace(diff.oldText, diff.newText), edited, 'applying the diff gives the edited file');
});

acpTest('write: a diff for a new file (no old text) and for an overwrite (old text to new)', async (t) => {
  const dirs = layout(t);
  const path = join(dirs.ws, 'config.ini');
  const first = '[core]\nname = first\n';
  const second = '[core]\nname = second\n';
  const model = scenario(dirs, [
    toolReply('write', { file_path: 'config.ini', content: first }),
    toolReply('write', { file_path: 'config.ini', content: second }),
    { text: 'Written twice.' },
  ]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  const { response, updates } = await agent.prompt(sessionId, 'Write the config, then rename it.');
  assert.equal(response.stopReason, 'end_turn');
  assert.equal(readFileSync(path, 'utf8'), second);
  const [created, overwritten] = toolCalls(updates);

  const createdDiffs = diffs(created);
  assert.equal(createdDiffs.length, 1, `the new file's write: one diff: ${JSON.stringify(createdDiffs)}`);
  assert.equal(createdDiffs[0].path, path);
  assert.ok(!createdDiffs[0].oldText, `a new file: no old text (${JSON.stringify(createdDiffs[0].oldText)})`);
  assert.equal(createdDiffs[0].newText.replace(/\n$/, ''), first.replace(/\n$/, ''), 'the whole new content');

  const overwriteDiffs = diffs(overwritten);
  assert.equal(overwriteDiffs.length, 1, `the overwrite: one diff: ${JSON.stringify(overwriteDiffs)}`);
  const [diff] = overwriteDiffs;
  assert.equal(diff.path, path);
  assert.ok(diff.oldText.includes('name = first'), `old text: ${JSON.stringify(diff.oldText)}`);
  assert.ok(diff.newText.includes('name = second'), `new text: ${JSON.stringify(diff.newText)}`);
  assert.equal(first.replace(diff.oldText, diff.newText), second, 'applying the diff gives the new file');
});

acpTest('todo_write: kind think and a plan update whose entries are the todos', async (t) => {
  const dirs = layout(t);
  const todos = [
    { content: 'Read the failing test', status: 'completed' },
    { content: 'Fix the parser', status: 'in_progress' },
    { content: 'Run the whole suite', status: 'pending' },
  ];
  const model = scenario(dirs, [toolReply('todo_write', { todos }), { text: 'Planned.' }]);
  const { agent } = await initializedAgent(t, dirs, { model });
  const { sessionId } = await agent.newSession();
  const { response, updates } = await agent.prompt(sessionId, 'Plan the fix.');
  assert.equal(response.stopReason, 'end_turn');
  const plans = ofKind(updates, 'plan');
  assert.equal(plans.length, 1, 'one plan update');
  assert.deepEqual(plans[0].entries.map(({ content, status }) => ({ content, status })), todos);
  for (const entry of plans[0].entries) assert.ok(['high', 'medium', 'low'].includes(entry.priority), `priority ${entry.priority}`);
  const [entry] = toolCalls(updates);
  assert.equal(entry.call.kind, 'think');
  assert.equal(statuses(entry).at(-1), 'completed');
});
