import { mkdtemp } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onProcessExit } from './process-exit.js';

const tempDirs = new Set<string>();
let hooked = false;

/**
 * A new directory under the OS temp dir, named `<prefix>XXXXXX`. It is removed when the process
 * exits, unless CACHEMON_KEEP_TEMP=1 (keep it to read the logs of a failed run).
 */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  if (process.env['CACHEMON_KEEP_TEMP'] !== '1') {
    tempDirs.add(dir);
    if (!hooked) {
      hooked = true;
      // Runs after the children were killed (see process-exit.ts), so no process still writes here.
      onProcessExit(() => {
        for (const path of tempDirs) rmSync(path, { recursive: true, force: true });
        tempDirs.clear();
      }, 'late');
    }
  }
  return dir;
}
