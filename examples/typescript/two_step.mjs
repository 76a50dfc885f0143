// A scripted two-step tool turn, driven by the official TypeScript client.
//
//   cd examples/typescript && npm ci --legacy-peer-deps
//   DSH_BIN=../../target/debug/dsh node two_step.mjs
//
// Prints the final answer; exits non-zero unless the turn completed.

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { DeepSeekHarness } from '@deepseek-ai/dsh-sdk-client';

const here = dirname(fileURLToPath(import.meta.url));
const dsh = resolve(process.env.DSH_BIN ?? join(here, '../../target/debug/dsh'));
const tmp = mkdtempSync(join(tmpdir(), 'dsh-example-'));
const workspace = join(tmp, 'ws');
mkdirSync(workspace);

const harness = new DeepSeekHarness({
  launch: {
    command: dsh,
    args: ['--profile', 'sdk'],
    cwd: workspace,
    env: { ...process.env, DSH_HOME: join(tmp, 'home') },
  },
  cwd: workspace,
  provider: 'scripted',
  model: join(here, '../scenario.yaml'),
});
try {
  const result = await harness.run('What does the sandbox say?', { sessionId: 'example-two-step' });
  console.log(result.finalResponse);
  const end = result.events.at(-1);
  const ok = end?.type === 'turn/end' && end.data.reason.kind === 'completed'
    && result.finalResponse.includes('hello from the sandbox');
  process.exitCode = ok ? 0 : 1;
} finally {
  await harness.close();
  rmSync(tmp, { recursive: true, force: true });
}
