import { mkdtemp } from 'node:fs/promises';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onProcessExit } from './process-exit.js';

const tempDirs = new Set<string>();
const allDirs = new Set<string>();
let hooked = false;

/**
 * Kills the processes of the pid files in `dir` (a daemon that start.sh ran, detached into a
 * session of its own), with their process groups: a test that ended before its stop.sh leaves
 * none behind.
 */
function killPidFiles(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.pid'));
  } catch {
    return;
  }
  for (const name of names) {
    let pid: number;
    try {
      pid = Number(readFileSync(join(dir, name), 'utf8').trim());
    } catch {
      continue;
    }
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // gone, or not a group leader
      }
    }
  }
}

/**
 * A new directory under the OS temp dir, named `<prefix>XXXXXX`. When the process exits, the
 * processes of pid files in it are killed (killPidFiles) and it is removed, unless
 * CACHEMON_KEEP_TEMP=1 (keep it to read the logs of a failed run).
 */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  allDirs.add(dir);
  if (process.env['CACHEMON_KEEP_TEMP'] !== '1') tempDirs.add(dir);
  if (!hooked) {
    hooked = true;
    onProcessExit(() => {
      for (const path of allDirs) killPidFiles(path);
    });
    // Runs after the children were killed (see process-exit.ts), so no process still writes here.
    onProcessExit(() => {
      for (const path of tempDirs) rmSync(path, { recursive: true, force: true });
      tempDirs.clear();
    }, 'late');
  }
  return dir;
}
