// Processes that carry a test run's token in their environment (set by scripts/run-tests.mjs and
// inherited by everything started under it): found through /proc, so also those whose parent
// died and that init adopted.
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export const RUN_TOKEN = 'CACHEMON_TEST_RUN';

/** The live processes whose environment holds `RUN_TOKEN=token`: pid and command line. */
export function processesOf(token) {
  const needle = `${RUN_TOKEN}=${token}`;
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(needle)) continue;
      const command = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      // A zombie has no command line: it is gone, only not yet waited for.
      if (command !== '') found.push({ pid: Number(name), command });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** Finds the token's processes, SIGTERMs them, SIGKILLs what is left after `graceMs`; returns those found. */
export async function reap(token, graceMs = 5000) {
  const found = processesOf(token);
  if (found.length === 0) return found;
  const signal = (sig) => {
    for (const { pid } of processesOf(token)) {
      try {
        process.kill(pid, sig);
      } catch {
        // already gone
      }
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (processesOf(token).length > 0 && Date.now() < deadline) await sleep(100);
  signal('SIGKILL');
  return found;
}
