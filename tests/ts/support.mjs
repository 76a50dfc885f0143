// Shared helpers for the TypeScript-client interop tests: the binary under
// test, a fresh temp layout per test, the child environment, scenario files
// for the offline `scripted` provider, and a /proc scan for leftover
// processes, and the runtime on a raw transport of the official protocol
// package.

import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { JsonRpcLineTransport } from '@deepseek-ai/dsh-sdk-protocol';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Upper bound on one request (a whole run for `session/wait`); nothing sleeps. */
export const REQUEST_TIMEOUT_MS = 30_000;

/** The binary under test: $DSH_BIN, else <repo>/target/debug/dsh. */
export function dshBin() {
  const fromEnv = (process.env.DSH_BIN ?? '').trim();
  return fromEnv ? resolve(fromEnv) : join(REPO_ROOT, 'target', 'debug', 'dsh');
}

/**
 * A fresh temp layout for one test (removed after it): HOME, DSH_HOME, the
 * workspace and a scenarios directory, all absolute and symlink-free.
 */
export function layout(t) {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-ts-')));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const dirs = { base };
  for (const name of ['home', 'dshHome', 'workspace', 'scenarios']) {
    dirs[name] = join(base, name);
    mkdirSync(dirs[name]);
  }
  return dirs;
}

/** The parent environment without DSH_ and DEEPSEEK_ knobs, with our HOME and DSH_HOME. */
export function childEnv(dirs) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('DSH_') && !key.startsWith('DEEPSEEK_')) env[key] = value;
  }
  env.HOME = dirs.home;
  env.DSH_HOME = dirs.dshHome;
  return env;
}

/** Launch options for the SDK: our binary, the `sdk` profile, spawned in the workspace. */
export function launch(dirs) {
  const command = dshBin();
  try {
    accessSync(command, constants.X_OK);
  } catch {
    throw new Error(`dsh binary not found or not executable at ${command} (cargo build -p dsh, or set DSH_BIN)`);
  }
  return {
    command,
    args: ['--profile', 'sdk'],
    cwd: dirs.workspace,
    env: childEnv(dirs),
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
  };
}

/** Writes a scenario file (JSON, which is YAML too) and returns its absolute path: the model id. */
export function scenario(dirs, replies, name = 'scenario.json') {
  const path = join(dirs.scenarios, name);
  writeFileSync(path, JSON.stringify({ replies }, null, 2));
  return path;
}

/** A two-step tool turn: text plus a `bash` call, then a final text after the result. */
export function bashTurn(command, finalText) {
  return [
    {
      blocks: [
        { text: 'I will run a command.' },
        { tool_call: { id: 'call_1', name: 'bash', arguments: { description: 'test', command } } },
      ],
    },
    { text: finalText },
  ];
}

/** Pids of live processes whose environment carries DSH_HOME=<dshHome> (the runtime and its children). */
export function processesWithDshHome(dshHome) {
  const needle = `DSH_HOME=${dshHome}`;
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let environ;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    if (environ.split('\0').includes(needle)) pids.push(Number(entry));
  }
  return pids;
}

/** Event types of `session.event` payloads' envelopes, in order. */
export function types(events) {
  return events.map((event) => event.type);
}

/**
 * The runtime on a raw transport of the official protocol package; the
 * test awaits `transport.stop()` (end of input, then the exit) before its
 * directories go.
 */
export function transportTo(t, dirs) {
  const child = spawn(dshBin(), ['--profile', 'sdk'], { cwd: dirs.workspace, env: childEnv(dirs), stdio: ['pipe', 'pipe', 'inherit'] });
  const transport = new JsonRpcLineTransport(child.stdout, child.stdin);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  transport.stop = async () => {
    transport.close();
    child.stdin.end();
    return exited;
  };
  t.after(() => transport.stop());
  return transport;
}
