#!/usr/bin/env node
// The cache exporter benchmark, alternated between a baseline build and this checkout's: how a
// change shows that it is faster (or not) on a machine whose speed drifts between runs by more
// than most changes gain. The baseline commit is checked out into a git worktree of its own (in
// the temp directory, kept for the next call with the same commit), given this checkout's
// node_modules and built; then run.mjs runs `--pairs` times with each side's exporter, in the
// order A B B A A B ..., with the same options (this checkout's driver, doubles and floor for
// both), and a table puts the runs side by side. Each run's report goes to
// results/alternate/<side>-<i>.json, its log beside it.
//
//   node bench/cache-exporter/alternate.mjs --baseline=<commit or ref> [--pairs=2] [--keep-going]
//        [any run.mjs option, e.g. --nodes=100 --prefixes=0 --endpoints=metrics --scrapes=300 --traffic]
// --keep-going: a failed run is reported and the rest still run (default: stop at the first).
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from '../lib/args.mjs';
import { alternationOrder, sideBySide } from '../lib/alternate.mjs';

const HERE = dirname(new URL(import.meta.url).pathname);
const ROOT = join(HERE, '..', '..');
const OWN_OPTIONS = new Set(['baseline', 'pairs', 'keep-going']);

const args = parseArgs(process.argv.slice(2), import.meta.url);
if (!args.baseline || args.baseline === 'true') throw new Error('--baseline=<commit or ref> is required');
const pairs = Number(args.pairs ?? 2);
if (!Number.isInteger(pairs) || pairs < 1) throw new Error(`--pairs=${args.pairs}: a whole number, 1 or more`);
if (args.out !== undefined || args['exporter-tree'] !== undefined) throw new Error('--out and --exporter-tree are set by alternate.mjs');
const passed = Object.entries(args)
  .filter(([name]) => !OWN_OPTIONS.has(name))
  .map(([name, value]) => (value === 'true' ? `--${name}` : `--${name}=${value}`));
const outDir = join(HERE, 'results', 'alternate');

const log = (message) => process.stderr.write(`[alternate ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

function git(cwd, ...a) {
  const result = spawnSync('git', a, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`git ${a.join(' ')}: ${result.stderr.trim() || `exit ${result.status}`}`);
  return result.stdout.trim();
}

/** The baseline commit checked out and built in a worktree of its own; its directory. */
function baselineTree(ref) {
  const commit = git(ROOT, 'rev-parse', '--verify', `${ref}^{commit}`);
  const dir = join(tmpdir(), `cachemon-baseline-${commit.slice(0, 12)}`);
  if (!existsSync(join(dir, '.git'))) {
    log(`checking out ${commit.slice(0, 12)} into ${dir}`);
    git(ROOT, 'worktree', 'add', '--detach', '--force', dir, commit);
  } else if (git(dir, 'rev-parse', 'HEAD') !== commit) {
    throw new Error(`${dir} holds another commit than ${commit}: remove it (git worktree remove --force ${dir})`);
  }
  linkNodeModules(dir);
  log(`building ${commit.slice(0, 12)}`);
  const build = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-b'], { cwd: dir, stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`the build of ${commit.slice(0, 12)} in ${dir} failed`);
  return dir;
}

/**
 * This checkout's npm packages for the worktree, linked, but the workspace's own (@cachemon/*)
 * linked to the worktree's packages, as npm links them here.
 */
function linkNodeModules(dir) {
  const source = join(ROOT, 'node_modules');
  const target = join(dir, 'node_modules');
  mkdirSync(join(target, '@cachemon'), { recursive: true });
  for (const name of readdirSync(source)) {
    if (name === '@cachemon' || taken(join(target, name))) continue;
    symlinkSync(join(source, name), join(target, name));
  }
  for (const name of readdirSync(join(source, '@cachemon'))) {
    const link = join(target, '@cachemon', name);
    if (taken(link)) continue;
    // npm's link is relative (../../packages/<dir>): the same in the worktree points into it.
    symlinkSync(readlinkSync(join(source, '@cachemon', name)), link);
  }
}

/** Something is at `path` (a link counts, even one whose target is gone). */
function taken(path) {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** One run of run.mjs, its output to a log file; resolves with its exit code. */
function runOnce(side, index, tree) {
  const out = join(outDir, `${side}-${index}.json`);
  const logFile = join(outDir, `${side}-${index}.log`);
  const options = [...passed, `--out=${out}`, ...(tree ? [`--exporter-tree=${tree}`] : [])];
  log(`${side} ${index}: node bench/cache-exporter/run.mjs ${options.join(' ')}`);
  const child = spawn(process.execPath, [join(HERE, 'run.mjs'), ...options], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const file = createWriteStream(logFile);
  child.stdout.pipe(file);
  child.stderr.pipe(file);
  // Ctrl-C reaches the child too (same process group): it stops what it started. 'close': the
  // log has all the child wrote by then.
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ out, logFile, code: code ?? signal })));
}

async function main() {
  const tree = baselineTree(String(args.baseline));
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
  process.stdout.write(`\ncache exporter benchmark, alternated (${pairs} pair(s); baseline: the exporter of ${tree})\n\n${sideBySide(runs)}\n\n`);
  process.stdout.write(`reports and logs: ${relative(process.cwd(), outDir)}\n`);
}

main().catch((err) => {
  log(`failed: ${err?.message ?? err}`);
  process.exit(1);
});
