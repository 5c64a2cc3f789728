#!/usr/bin/env node
// The cache exporter benchmark, alternated between a baseline build and this checkout's: how a
// change shows that it is faster (or not) on a machine whose speed drifts between runs by more
// than most changes gain. The baseline commit is checked out and built in a git worktree of its
// own (bench/lib/baseline.mjs); then run.mjs runs `--pairs` times with each side's exporter, in the
// order A B B A A B ..., with the same options (this checkout's driver, doubles and floor for
// both), and a table puts the runs side by side. Each run's report goes to
// results/alternate/<side>-<i>.json, its log beside it.
//
//   node bench/cache-exporter/alternate.mjs --baseline=<commit or ref> [--pairs=2] [--keep-going]
//        [any run.mjs option, e.g. --nodes=100 --prefixes=0 --endpoints=metrics --scrapes=300 --traffic]
// --keep-going: a failed run is reported and the rest still run (default: stop at the first).
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from '../lib/args.mjs';
import { alternationOrder, sideBySide } from '../lib/alternate.mjs';
import { builtBaseline } from '../lib/baseline.mjs';

const HERE = dirname(new URL(import.meta.url).pathname);
const ROOT = join(HERE, '..', '..');
const OWN_OPTIONS = new Set(['baseline', 'pairs', 'keep-going']);

const args = parseArgs(process.argv.slice(2), import.meta.url);
if (!args.baseline || args.baseline === 'true') throw new Error('--baseline=<commit or ref> is required');
const pairs = Number(args.pairs ?? 2);
if (!Number.isInteger(pairs) || pairs < 1) throw new Error(`--pairs=${args.pairs}: a whole number, 1 or more`);
if (args.out !== undefined || args['exporter-tree'] !== undefined)
  throw new Error('--out and --exporter-tree are set by alternate.mjs');
const passed = Object.entries(args)
  .filter(([name]) => !OWN_OPTIONS.has(name))
  .map(([name, value]) => (value === 'true' ? `--${name}` : `--${name}=${value}`));
const outDir = join(HERE, 'results', 'alternate');

const log = (message) => process.stderr.write(`[alternate ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

/** One run of run.mjs, its output to a log file; resolves with its exit code. */
function runOnce(side, index, tree) {
  const out = join(outDir, `${side}-${index}.json`);
  const logFile = join(outDir, `${side}-${index}.log`);
  const options = [...passed, `--out=${out}`, ...(tree ? [`--exporter-tree=${tree}`] : [])];
  log(`${side} ${index}: node bench/cache-exporter/run.mjs ${options.join(' ')}`);
  const child = spawn(process.execPath, [join(HERE, 'run.mjs'), ...options], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const file = createWriteStream(logFile);
  child.stdout.pipe(file);
  child.stderr.pipe(file);
  // Ctrl-C reaches the child too (same process group): it stops what it started. 'close': the
  // log has all the child wrote by then.
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ out, logFile, code: code ?? signal })));
}

async function main() {
  const { dir: tree } = builtBaseline(String(args.baseline), { log });
  mkdirSync(outDir, { recursive: true });
  const runs = [];
  const counts = { baseline: 0, current: 0 };
  for (const side of alternationOrder(pairs)) {
    const index = ++counts[side];
    const { out, logFile, code } = await runOnce(side, index, side === 'baseline' ? tree : undefined);
    if (code !== 0) {
      const message = `${side} ${index} failed (${code}); its log: ${relative(process.cwd(), logFile)}`;
      if (args['keep-going'] !== 'true') throw new Error(message);
      log(message);
      continue;
    }
    runs.push({ side, index, report: JSON.parse(readFileSync(out, 'utf8')) });
  }
  process.stdout.write(
    `\ncache exporter benchmark, alternated (${pairs} pair(s); baseline: the exporter of ${tree})\n\n${sideBySide(runs)}\n\n`,
  );
  process.stdout.write(`reports and logs: ${relative(process.cwd(), outDir)}\n`);
}

main().catch((err) => {
  log(`failed: ${err?.message ?? err}`);
  process.exit(1);
});
