/**
 * scripts/run-tests.mjs fails a run that leaves a process behind, names it, and kills it, even one
 * whose parent is gone (init adopted it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../src/index.js';
import { waitGone } from './helpers.js';

const RUNNER = fileURLToPath(new URL('../../../../scripts/run-tests.mjs', import.meta.url));

async function runRunner(file: string): Promise<{ code: number | null; stderr: string; stdout: string }> {
  // Without the outer test runner's context, the runner runs its files as at the command line.
  const { NODE_TEST_CONTEXT: _context, ...env } = process.env;
  const child = spawn(process.execPath, [RUNNER, file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr, stdout };
}

test('a passing test file that leaves an orphaned process fails the run, which names and kills it', async () => {
  const dir = await tempDir('cachemon-leftovers-test-');
  const pidFile = join(dir, 'leaked.pid');
  const file = join(dir, 'leaks.test.mjs');
  // A shell that starts a sleep in the background and exits: the sleep's parent is gone.
  writeFileSync(
    file,
    `import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
test('passes, leaving a process', () => {
  execFileSync('sh', ['-c', 'sleep 300 >/dev/null 2>&1 & echo $! > ${pidFile}']);
});
`,
  );
  const run = await runRunner(file);
  const leaked = Number(readFileSync(pidFile, 'utf8'));
  assert.match(run.stdout, /# pass 1/);
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, new RegExp(`pid ${leaked}: sleep 300`));
  assert.ok(await waitGone(leaked), `pid ${leaked} still running`);
});

test('a run that leaves nothing behind passes', async () => {
  const dir = await tempDir('cachemon-leftovers-test-');
  const file = join(dir, 'clean.test.mjs');
  writeFileSync(
    file,
    `import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
test('runs a process to its end', () => void execFileSync('sh', ['-c', 'true']));
`,
  );
  const run = await runRunner(file);
  assert.equal(run.code, 0, run.stderr);
  assert.doesNotMatch(run.stderr, /outlived/);
});
