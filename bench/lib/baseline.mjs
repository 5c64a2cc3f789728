// A baseline commit checked out and built beside this checkout, for benchmarks that measure it in
// the same run as this checkout's build (the machine's speed drifts between runs by more than most
// changes gain). The worktree is kept in the temp directory for the next call with the same commit;
// `git worktree remove --force <dir>` removes it.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function git(cwd, ...args) {
  const result = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr.trim() || `exit ${result.status}`}`);
  return result.stdout.trim();
}

/**
 * `ref` (a commit, branch or tag of this repository) checked out into `cachemon-baseline-<commit>`
 * in the temp directory, given this checkout's node_modules and built with `tsc -b`.
 * @param {string} ref
 * @param {{ log?: (message: string) => void }} [opts]
 * @returns {{ dir: string, commit: string }}
 */
export function builtBaseline(ref, { log = () => {} } = {}) {
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
  const build = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-b'], {
    cwd: dir,
    stdio: 'inherit',
  });
  if (build.status !== 0) throw new Error(`the build of ${commit.slice(0, 12)} in ${dir} failed`);
  return { dir, commit };
}

/**
 * This checkout's npm packages linked into the worktree, but the workspace's own (@cachemon/*)
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
