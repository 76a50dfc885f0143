// Shared helpers of the ACP interop tests: the protocol's own TypeScript SDK
// (`@agentclientprotocol/sdk`, its client app over `ndJsonStream`) drives
// `dsh acp` (docs/acp.md).
//
// Every test gets a fresh temp layout (`ws/` the workspace, `dsh_home/`,
// `home/`, `scenarios/`), spawns its own children (the agent, the fake
// DeepSeek server, MCP servers, the SDK profile) and kills them in `after`
// hooks. Every wait is bounded: a hang fails the test with a message saying
// what was awaited, never stalls the run. A failing test's error carries the
// ACP frames each agent exchanged and the tail of its stderr
// (ACP_TS_FRAMES=1 prints them for passing tests too).
//
// Run (from this directory, after `npm ci`):
//   DSH_BIN=/work/main/target/debug/dsh \
//   DSH_FAKE_MODEL=/work/main/target/debug/dsh-fake-model node --test
//
// Version note: @agentclientprotocol/sdk 2.x removed the deprecated
// `ClientSideConnection` class; its documented replacement (the SDK's
// MIGRATION_STABLE_UNSTABLE.md) is `client().onRequest(...).onNotification(
// ...).connect(stream)`, which is what `openAgent` uses: the same client
// connection, validation and dispatch, under the 2.x name.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import * as acp from '@agentclientprotocol/sdk';

export { acp };

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const MCP_DIR = join(REPO_ROOT, 'tests', 'mcp');
/** The venv interpreter: it has the `mcp` package the MCP test servers need
 * ($DSH_TEST_PYTHON, which scripts/test.sh sets, else the default venv). */
export const VENV_PYTHON = process.env.DSH_TEST_PYTHON || join(REPO_ROOT, 'target', 'venv', 'bin', 'python');

/** Bound of one request that does no model work (initialize, session/new, list, …). */
export const REQUEST_MS = 15_000;
/** Bound of one prompt turn with the offline model. */
export const TURN_MS = 30_000;
/** Bound of a wait for one expected update. */
export const UPDATE_MS = 15_000;
/** Bound of one whole test (node:test `timeout`). */
export const TEST_MS = 120_000;
/** How long a process gets to exit after end of input before SIGKILL. */
const EXIT_MS = 5_000;
/** ACP protocol version under test. */
export const PROTOCOL_VERSION = 1;
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// ---------------------------------------------------------------------------
// Binaries and layout
// ---------------------------------------------------------------------------

function requiredExecutable(name, binary, what) {
  const value = (process.env[name] ?? '').trim();
  if (!value) {
    throw new Error(`${name} is not set: set it to ${what} (e.g. ${name}=/work/main/target/debug/${binary})`);
  }
  const path = resolve(value);
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`${name}=${value}: ${path} is not an executable file`);
  }
  return path;
}

/** $DSH_BIN: the dsh binary under test (required). */
export function dshBin() {
  return requiredExecutable('DSH_BIN', 'dsh', 'the dsh binary under test');
}

/** $DSH_FAKE_MODEL: the fake DeepSeek server binary (required). */
export function fakeModelBin() {
  return requiredExecutable('DSH_FAKE_MODEL', 'dsh-fake-model', 'the fake DeepSeek server binary');
}

/**
 * A fresh temp layout for one test, removed after it: `ws/` (the
 * workspace), `dsh_home/`, `home/` and `scenarios/`, absolute and
 * symlink-free (paths in ACP payloads are compared as strings).
 */
export function layout(t) {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-ts-')));
  defer(t, () => rmSync(base, { recursive: true, force: true, maxRetries: 3 }));
  const dirs = { base };
  for (const [key, name] of [['ws', 'ws'], ['dshHome', 'dsh_home'], ['home', 'home'], ['scenarios', 'scenarios']]) {
    dirs[key] = join(base, name);
    mkdirSync(dirs[key]);
  }
  return dirs;
}

/** A further directory under the layout (another workspace, …). */
export function subdir(dirs, name) {
  const path = join(dirs.base, name);
  mkdirSync(path, { recursive: true });
  return path;
}

/**
 * The parent environment without DSH_, DEEPSEEK_ and OPENAI_ variables,
 * with HOME and DSH_HOME of the layout, plus `extra`.
 */
export function cleanEnv(dirs, extra = {}) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('DSH_') && !key.startsWith('DEEPSEEK_') && !key.startsWith('OPENAI_')) env[key] = value;
  }
  env.HOME = dirs.home;
  env.DSH_HOME = dirs.dshHome;
  return { ...env, ...extra };
}

/** Writes a scenario (JSON, which is YAML too) and returns its absolute path. */
export function scenario(dirs, replies, name = `scenario-${randomUUID().slice(0, 8)}.json`) {
  const path = join(dirs.scenarios, name);
  writeFileSync(path, JSON.stringify({ replies }, null, 2));
  return path;
}

/** A scripted reply whose blocks are an optional text and one tool call. */
export function toolReply(name, args, { id = `call_${randomUUID().slice(0, 8)}`, text } = {}) {
  const blocks = [];
  if (text !== undefined) blocks.push({ text });
  blocks.push({ tool_call: { id, name, arguments: args } });
  return { blocks };
}

// ---------------------------------------------------------------------------
// Bounded waiting
// ---------------------------------------------------------------------------

/** `promise`, or a rejection naming `what` once `ms` have passed. */
export function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Resolves once `check()` is truthy, checked every 50 ms: for conditions no
 * event announces (a process leaving /proc); bounded by `ms`.
 */
export function pollUntil(check, what, ms = UPDATE_MS) {
  let timer;
  let stopped = false;
  return within(new Promise((resolve) => {
    const tick = () => {
      if (stopped) return;
      const value = check();
      if (value) resolve(value);
      else timer = setTimeout(tick, 50);
    };
    tick();
  }), ms, what).finally(() => {
    stopped = true;
    clearTimeout(timer);
  });
}

/** A condition signalled by `notify()`; `until(check)` resolves once `check()` is truthy. */
class Signal {
  #waiters = new Set();

  notify() {
    for (const waiter of [...this.#waiters]) waiter();
  }

  until(check, ms, what) {
    const found = check();
    if (found) return Promise.resolve(found);
    let waiter;
    const promise = new Promise((resolve) => {
      waiter = () => {
        const value = check();
        if (value) resolve(value);
      };
      this.#waiters.add(waiter);
    });
    return within(promise, ms, what).finally(() => this.#waiters.delete(waiter));
  }
}

// ---------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------

/** Whether the process runs (a zombie counts as gone). */
export function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Pids of live processes whose command line holds `marker`. */
export function processesWith(marker) {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmdline;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1');
    } catch {
      continue;
    }
    if (cmdline.includes(marker) && alive(Number(entry))) found.push(Number(entry));
  }
  return found;
}

/**
 * Spawns `command` in its own process group (so the after hook can take
 * down whatever it started), stdin/stdout piped, stderr kept (its tail) for
 * failure reports; the after hook ends its input, waits, then SIGKILLs the
 * group.
 */
function spawnChild(t, command, args, { cwd, env, label }) {
  const child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const info = { child, label, stderr: '', exit: null };
  child.stderr.on('data', (chunk) => {
    info.stderr = (info.stderr + chunk.toString('utf8')).slice(-20_000);
  });
  child.stdin.on('error', () => {}); // EPIPE once it has gone: the exit is what tests look at
  info.exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      info.exit = { code, signal };
      resolve(info.exit);
    });
    child.on('error', (error) => {
      info.exit = { code: null, signal: null, error: String(error) };
      resolve(info.exit);
    });
  });
  info.stop = async () => {
    if (info.exit) return info.exit;
    child.stdin.end();
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, EXIT_MS);
    const exit = await info.exited;
    clearTimeout(timer);
    return exit;
  };
  defer(t, async () => {
    await info.stop();
    try {
      process.kill(-child.pid, 'SIGKILL'); // leftovers of its group, if any
    } catch {
      // the group is gone
    }
  });
  return info;
}

/** Reads the first stdout line of a child (bounded), leaving the rest. */
function firstLine(info, ms, what) {
  return within(new Promise((resolve, reject) => {
    let buffer = '';
    const onData = (chunk) => {
      buffer += chunk.toString('utf8');
      const newline = buffer.indexOf('\n');
      if (newline >= 0) {
        info.child.stdout.off('data', onData);
        resolve(buffer.slice(0, newline));
      }
    };
    info.child.stdout.on('data', onData);
    info.exited.then((exit) => reject(new Error(`${what} exited (${JSON.stringify(exit)}) before its first line: ${info.stderr.slice(-2000)}`)));
  }), ms, what);
}

// ---------------------------------------------------------------------------
// Failure evidence
// ---------------------------------------------------------------------------

const evidence = new WeakMap();
const cleanups = new WeakMap();

/**
 * Registers `fn` to run when the test ends, last registered first (so a
 * process stops before its directories go). `acpTest` runs them; a test
 * outside it runs them from an after hook.
 */
export function defer(t, fn) {
  if (!cleanups.has(t)) {
    cleanups.set(t, []);
    t.after(() => runCleanups(t));
  }
  cleanups.get(t).push(fn);
}

async function runCleanups(t) {
  const stack = cleanups.get(t) ?? [];
  const errors = [];
  while (stack.length) {
    const fn = stack.pop();
    try {
      await fn();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length) throw errors[0];
}

/** Registers a dump function shown when the test fails. */
function addEvidence(t, dump) {
  if (!evidence.has(t)) evidence.set(t, []);
  evidence.get(t).push(dump);
}

function clip(text, max) {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

/**
 * `test(name, fn)` with a whole-test timeout, whose failure message carries
 * the frames every agent of the test exchanged and their stderr tails.
 */
export function acpTest(name, fn, options = {}) {
  test(name, { timeout: TEST_MS, ...options }, async (t) => {
    try {
      await fn(t);
      if (process.env.ACP_TS_FRAMES) {
        for (const dump of evidence.get(t) ?? []) t.diagnostic(dump());
      }
      await runCleanups(t);
    } catch (error) {
      await runCleanups(t).catch(() => {});
      const dumps = (evidence.get(t) ?? []).map((dump) => dump()).join('\n');
      if (dumps && error && typeof error === 'object') {
        try {
          // Reporters print the stack (which holds the message as it was made).
          error.message = `${error.message}\n${dumps}`;
          if (typeof error.stack === 'string') error.stack = `${error.stack}\n${dumps}`;
        } catch {
          // a frozen error: keep it as it is
        }
      }
      throw error;
    }
  });
}

// ---------------------------------------------------------------------------
// The agent under test, through the ACP SDK
// ---------------------------------------------------------------------------

/**
 * Spawns `$DSH_BIN acp <args>` and connects the SDK's client app to it.
 *
 * Options: `model` (a scenario path: `--model <path>`), `args` (more
 * arguments), `env` (added to the clean environment), `cwd` (default the
 * workspace), `permission` (the `session/request_permission` handler,
 * `(params) => response`; default: answers `cancelled`).
 *
 * The returned agent records every `session/update` the SDK delivers
 * (`updates`, each `{sessionId, update}`), every permission request
 * (`permissionRequests`), and the raw frames both ways (`frames`), in
 * order, for ordering checks and failure reports.
 */
export function openAgent(t, dirs, { model, args = [], env = {}, cwd = dirs.ws, permission } = {}) {
  const argv = ['acp', ...(model ? ['--model', model] : []), ...args];
  const info = spawnChild(t, dshBin(), argv, { cwd, env: cleanEnv(dirs, env), label: `dsh ${argv.join(' ')}` });
  const { child } = info;
  const frames = [];
  const changed = new Signal();
  const started = Date.now();
  const stamp = () => Date.now() - started;

  // Raw taps: the bytes pass through unchanged; complete lines are logged
  // (parsed when they are JSON; a line that is not is kept as text).
  const record = (dir, line) => {
    if (!line.trim()) return;
    let message = null;
    try {
      message = JSON.parse(line);
    } catch {
      // kept as text: the SDK reports it
    }
    frames.push({ dir, at: stamp(), line, message });
  };
  let pending = '';
  const input = new ReadableStream({
    start(controller) {
      child.stdout.on('data', (chunk) => {
        pending += chunk.toString('utf8');
        let newline;
        while ((newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          record('agent→client', line);
        }
        controller.enqueue(new Uint8Array(chunk));
        changed.notify();
      });
      child.stdout.on('end', () => {
        try {
          controller.close();
        } catch {
          // already closed
        }
        changed.notify();
      });
      child.stdout.on('error', (error) => controller.error(error));
    },
  });
  const decoder = new TextDecoder();
  const output = new WritableStream({
    write(chunk) {
      for (const line of decoder.decode(chunk, { stream: true }).split('\n')) {
        record('client→agent', line);
      }
      return new Promise((resolveWrite, rejectWrite) => {
        child.stdin.write(chunk, (error) => (error ? rejectWrite(error) : resolveWrite()));
      });
    },
    close() {
      child.stdin.end();
    },
  });

  const agent = {
    info,
    child,
    frames,
    updates: [],
    permissionRequests: [],
    permission: permission ?? (() => ({ outcome: { outcome: 'cancelled' } })),
  };

  const app = acp.client({ name: 'dsh-acp-ts-tests' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      agent.updates.push({ sessionId: params.sessionId, update: params.update });
      changed.notify();
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      agent.permissionRequests.push(params);
      changed.notify();
      return agent.permission(params);
    });
  const connection = app.connect(acp.ndJsonStream(output, input));
  agent.connection = connection;
  agent.ctx = connection.agent;
  info.exited.then(() => changed.notify());

  addEvidence(t, () => {
    const lines = frames.slice(-80).map((f) => `  [${f.at} ms] ${f.dir} ${clip(f.line, 600)}`);
    return [
      `--- ${info.label}: ${frames.length} frames (last ${lines.length}), exit ${JSON.stringify(info.exit)}`,
      ...lines,
      `--- its stderr (tail):`,
      clip(info.stderr.slice(-3000), 3000),
    ].join('\n');
  });

  /** Sends a request through the SDK, bounded. */
  agent.request = (method, params, ms = REQUEST_MS) => within(agent.ctx.request(method, params), ms, `the answer to ${method}`);

  /** Sends a notification through the SDK. */
  agent.notify = (method, params) => agent.ctx.notify(method, params);

  /** `initialize` as an editor sends it (no fs / terminal capabilities). */
  agent.initialize = (extra = {}) => agent.request(acp.methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: 'dsh-acp-ts-tests', version: '1.0.0' },
    ...extra,
  });

  /** `session/new` in `cwd` (default the workspace). */
  agent.newSession = (params = {}) => agent.request(acp.methods.agent.session.new, { cwd: dirs.ws, mcpServers: [], ...params });

  /** The updates delivered so far for `sessionId`. */
  agent.updatesOf = (sessionId) => agent.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);

  /** Raw `session/update` frames of `sessionId` read from stdout so far. */
  const rawUpdateCount = (sessionId) => frames.filter((f) => f.dir === 'agent→client' && f.message?.method === 'session/update'
    && f.message.params?.sessionId === sessionId).length;

  /**
   * Waits until the SDK has delivered every `session/update` of `sessionId`
   * read from the wire so far (its handlers run a few microtasks after the
   * frame is read, so a response can resolve first). An update the SDK
   * refuses (it does not match the ACP schema) never arrives: this then
   * fails naming the undelivered frames.
   */
  agent.settle = async (sessionId) => {
    const expected = rawUpdateCount(sessionId);
    try {
      await changed.until(() => agent.updatesOf(sessionId).length >= expected, 3_000, 'the SDK to deliver every session/update read');
    } catch {
      const delivered = agent.updatesOf(sessionId).length;
      throw new Error(`the SDK delivered ${delivered} of the ${expected} session/update frames of ${sessionId} `
        + '(frames it refused do not match the ACP schema; the SDK logs why on stderr)');
    }
  };

  /**
   * `session/prompt` with `prompt` (a string or content blocks), bounded;
   * resolves `{response, updates}` with the updates of this turn, every
   * update read before the answer delivered.
   */
  agent.prompt = async (sessionId, prompt, ms = TURN_MS) => {
    const from = agent.updatesOf(sessionId).length;
    const blocks = typeof prompt === 'string' ? [{ type: 'text', text: prompt }] : prompt;
    const response = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: blocks }, ms);
    await agent.settle(sessionId);
    return { response, updates: agent.updatesOf(sessionId).slice(from) };
  };

  /** Starts a prompt without awaiting it; the promise resolves like `prompt`'s. */
  agent.startPrompt = (sessionId, prompt, ms = TURN_MS) => {
    const done = agent.prompt(sessionId, prompt, ms);
    done.catch(() => {}); // awaited by the test; never an unhandled rejection meanwhile
    return done;
  };

  /** `session/cancel` (a notification). */
  agent.cancel = (sessionId) => agent.notify(acp.methods.agent.session.cancel, { sessionId });

  /** Resolves with the first update of `sessionId` (from index `from`) that `match` accepts. */
  agent.waitForUpdate = (sessionId, match, what, { from = 0, ms = UPDATE_MS } = {}) => changed.until(
    () => agent.updatesOf(sessionId).slice(from).find(match),
    ms,
    what,
  );

  /** Resolves once `check()` is truthy, re-checked on every frame, update and request. */
  agent.until = (check, what, ms = UPDATE_MS) => changed.until(check, ms, what);

  /** Ends the agent's input and waits for it to exit (bounded; SIGKILL after). */
  agent.stop = async () => {
    connection.close();
    return info.stop();
  };

  defer(t, () => connection.close());
  return agent;
}

/** A started agent after `initialize`: `{agent, init}`. */
export async function initializedAgent(t, dirs, options = {}) {
  const agent = openAgent(t, dirs, options);
  const init = await agent.initialize();
  return { agent, init };
}

// ---------------------------------------------------------------------------
// Update helpers
// ---------------------------------------------------------------------------

/** The updates of one kind. */
export function ofKind(updates, kind) {
  return updates.filter((u) => u.sessionUpdate === kind);
}

/** Texts of the content-chunk updates of `kind`, joined. */
export function joined(updates, kind) {
  return ofKind(updates, kind).map((u) => (u.content?.type === 'text' ? u.content.text : '')).join('');
}

/** The `tool_call` update and its later `tool_call_update`s, per tool call id, in order. */
export function toolCalls(updates) {
  const calls = new Map();
  for (const update of updates) {
    if (update.sessionUpdate === 'tool_call') {
      calls.set(update.toolCallId, { call: update, updates: [] });
    } else if (update.sessionUpdate === 'tool_call_update') {
      if (!calls.has(update.toolCallId)) calls.set(update.toolCallId, { call: null, updates: [] });
      calls.get(update.toolCallId).updates.push(update);
    }
  }
  return [...calls.values()];
}

/** Statuses a tool call went through (its `tool_call` then updates that name one). */
export function statuses(entry) {
  return [entry.call, ...entry.updates].filter((u) => u && u.status).map((u) => u.status);
}

/** Texts of the `content` items of a tool call's updates. */
export function contentTexts(entry) {
  const texts = [];
  for (const update of [entry.call, ...entry.updates]) {
    for (const item of update?.content ?? []) {
      if (item.type === 'content' && item.content?.type === 'text') texts.push(item.content.text);
    }
  }
  return texts;
}

/** The `diff` content items of a tool call's updates. */
export function diffs(entry) {
  return [entry.call, ...entry.updates].flatMap((update) => (update?.content ?? []).filter((item) => item.type === 'diff'));
}

/** The permission option of `kind` in a request. */
export function option(request, kind) {
  const found = request.options.find((o) => o.kind === kind);
  if (!found) throw new Error(`no ${kind} option in ${JSON.stringify(request.options)}`);
  return found;
}

/** The answer selecting the option of `kind`. */
export function select(request, kind) {
  return { outcome: { outcome: 'selected', optionId: option(request, kind).optionId } };
}

/** Index of the first raw frame matching `match`, or -1. */
export function frameIndex(agent, match) {
  return agent.frames.findIndex((f) => f.message && match(f.message));
}

/** The raw response frame to the client request `method` whose params match, as `{index, message}`. */
export function responseFrame(agent, method, matchParams = () => true) {
  const request = agent.frames.find((f) => f.dir === 'client→agent' && f.message?.method === method && 'id' in f.message
    && matchParams(f.message.params));
  if (!request) return null;
  const index = agent.frames.findIndex((f) => f.dir === 'agent→client' && f.message && !('method' in f.message)
    && f.message.id === request.message.id);
  return index < 0 ? null : { index, at: agent.frames[index].at, message: agent.frames[index].message };
}

// ---------------------------------------------------------------------------
// The fake DeepSeek server
// ---------------------------------------------------------------------------

/**
 * Starts `$DSH_FAKE_MODEL --scenario <replies> --record <file>`; resolves
 * `{baseUrl, requests()}` once it printed its `{"baseUrl"}` line.
 */
export async function startFakeModel(t, dirs, replies) {
  const scenarioPath = scenario(dirs, replies);
  const record = join(dirs.base, `requests-${randomUUID().slice(0, 8)}.jsonl`);
  const info = spawnChild(t, fakeModelBin(), ['--scenario', scenarioPath, '--record', record], {
    cwd: dirs.base, env: cleanEnv(dirs), label: 'dsh-fake-model',
  });
  const line = await firstLine(info, REQUEST_MS, 'the fake model server to print {"baseUrl"}');
  const { baseUrl } = JSON.parse(line);
  addEvidence(t, () => `--- dsh-fake-model at ${baseUrl}, stderr tail: ${clip(info.stderr.slice(-1500), 1500)}`);
  return {
    baseUrl,
    requests: () => (existsSync(record) ? readFileSync(record, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []),
  };
}

/** The environment pointing `dsh acp`'s DeepSeek provider at the fake server. */
export function fakeModelEnv(fake) {
  return { DEEPSEEK_BASE_URL: fake.baseUrl, DEEPSEEK_API_KEY: 'sk-test' };
}

// ---------------------------------------------------------------------------
// MCP test servers (tests/mcp)
// ---------------------------------------------------------------------------

function requireVenvPython() {
  if (!existsSync(VENV_PYTHON)) throw new Error(`${VENV_PYTHON} is missing: the MCP test servers need the venv with the mcp package`);
  return VENV_PYTHON;
}

/** An ACP stdio `mcpServers` entry running tests/mcp/stdio_server.py. */
export function stdioMcpServer(name, marker) {
  return { name, command: requireVenvPython(), args: [join(MCP_DIR, 'stdio_server.py'), marker], env: [] };
}

/** Starts tests/mcp/http_server.py on a free port; resolves its URL. */
export async function startHttpMcpServer(t, dirs, marker) {
  const info = spawnChild(t, requireVenvPython(), [join(MCP_DIR, 'http_server.py'), '0', marker], {
    cwd: dirs.base, env: cleanEnv(dirs), label: 'http_server.py',
  });
  const line = await firstLine(info, REQUEST_MS, 'http_server.py to print its URL');
  return JSON.parse(line).url;
}

// ---------------------------------------------------------------------------
// The SDK profile (`dsh --profile sdk`), raw JSON-RPC
// ---------------------------------------------------------------------------

/**
 * `$DSH_BIN --profile sdk` over raw newline-delimited JSON-RPC: `request`,
 * `notifications`, `until`, `stop`.
 */
export function openSdkProfile(t, dirs) {
  const info = spawnChild(t, dshBin(), ['--profile', 'sdk'], { cwd: dirs.ws, env: cleanEnv(dirs), label: 'dsh --profile sdk' });
  const { child } = info;
  const changed = new Signal();
  const frames = [];
  const notifications = [];
  const waiting = new Map();
  let nextId = 1;
  let pending = '';
  child.stdout.on('data', (chunk) => {
    pending += chunk.toString('utf8');
    let newline;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (!line.trim()) continue;
      frames.push(`← ${line}`);
      const message = JSON.parse(line);
      if ('id' in message && !('method' in message)) {
        const entry = waiting.get(message.id);
        waiting.delete(message.id);
        if (entry) {
          if ('error' in message) entry.reject(new Error(`${entry.method}: ${JSON.stringify(message.error)}`));
          else entry.resolve(message.result);
        }
      } else if ('id' in message) {
        // A runtime request (approval/request…): none expected here; refuse it.
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'not handled' } })}\n`);
      } else {
        notifications.push(message);
      }
    }
    changed.notify();
  });
  info.exited.then(() => {
    for (const entry of waiting.values()) entry.reject(new Error(`${entry.method}: the SDK profile exited ${JSON.stringify(info.exit)}`));
    waiting.clear();
    changed.notify();
  });
  addEvidence(t, () => [`--- dsh --profile sdk: ${frames.length} frames (last 40), exit ${JSON.stringify(info.exit)}`,
    ...frames.slice(-40).map((f) => `  ${clip(f, 600)}`), '--- its stderr (tail):', clip(info.stderr.slice(-2000), 2000)].join('\n'));
  return {
    notifications,
    request(method, params, ms = REQUEST_MS) {
      const id = nextId++;
      const line = JSON.stringify({ jsonrpc: '2.0', id, method, params });
      frames.push(`→ ${line}`);
      const promise = new Promise((resolveRequest, rejectRequest) => waiting.set(id, { method, resolve: resolveRequest, reject: rejectRequest }));
      child.stdin.write(`${line}\n`);
      return within(promise, ms, `the SDK profile's answer to ${method}`);
    },
    until(check, what, ms = TURN_MS) {
      return changed.until(check, ms, what);
    },
    stop: () => info.stop(),
  };
}

/** Text blocks of an SDK-profile message (`{content: [...]}`), joined. */
export function messageText(message) {
  return (message?.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('');
}
