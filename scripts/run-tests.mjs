#!/usr/bin/env node
// Runs every compiled test file (packages/*/dist/test/**/*.test.js), and the benchmarks' own
// (bench/**/test/**/*.test.mjs, plain JavaScript), with node's test runner.
//   --unit        only files under a test/unit folder (no external processes)
//   --filter=TXT  only files whose path contains TXT
//   FILE...       these test files instead
// It fails when a process started under it is still alive after the last file (scripts/leftovers.mjs).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, statSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { availableParallelism } from 'node:os';
import { reap, RUN_TOKEN } from './leftovers.mjs';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
const filter = args.find((a) => a.startsWith('--filter='))?.slice('--filter='.length);

function walk(dir, out, suffix = '.test.js') {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'node_modules' && name !== 'results') walk(path, out, suffix);
    } else if (name.endsWith(suffix)) out.push(path);
  }
  return out;
}

const files = [];
for (const pkg of readdirSync(join(root, 'packages'))) walk(join(root, 'packages', pkg, 'dist', 'test'), files);
// tsc -b never deletes an output whose source is gone: a test renamed or removed since the last
// build would still run, against code that may no longer have what it tests.
const compiled = files.map((f) => relative(root, f));
const stale = compiled.filter(
  (f) => !existsSync(join(root, f.replace('/dist/test/', '/test/').replace(/\.js$/, '.ts'))),
);
for (const f of stale)
  console.error(
    `run-tests: skipping ${f}: its source is gone (a renamed or removed test; \`npm run clean && npm run build\` clears it)`,
  );
const benchTests = walk(join(root, 'bench'), [], '.test.mjs').map((f) => relative(root, f));
const named = args.filter((a) => !a.startsWith('--'));
const selected =
  named.length > 0
    ? named
    : [...compiled.filter((f) => !stale.includes(f)), ...benchTests]
        .filter((f) => !unitOnly || f.includes('/test/unit/'))
        .filter((f) => !filter || f.includes(filter))
        .sort();
if (selected.length === 0) {
  console.error('run-tests: no test files found; run `npm run build` first');
  process.exit(1);
}
const concurrency = Math.max(2, availableParallelism());

// Every process started under this run inherits this token in its environment, also once its
// parent is gone: after the last file, any still alive is a leak, reported, killed and a failure.
const token = `${process.pid}-${randomBytes(6).toString('hex')}`;
const child = spawn(
  process.execPath,
  ['--test', `--test-concurrency=${concurrency}`, '--test-timeout=180000', ...selected],
  { cwd: root, stdio: 'inherit', env: { ...process.env, [RUN_TOKEN]: token } },
);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
const [code, signal] = await once(child, 'exit');
const leaked = await reap(token);
if (leaked.length > 0) {
  console.error(`run-tests: ${leaked.length} process(es) started by the tests outlived them (killed now):`);
  for (const { pid, command } of leaked) console.error(`  pid ${pid}: ${command}`);
}
process.exit(leaked.length > 0 ? 1 : (code ?? (signal ? 1 : 0)));
