/** `cachemon start|stop|restart`: the components' own start.sh and stop.sh, in dependency order. */
import { daemonPid, runScript } from './sh.js';
import type { Instance, Tree } from './tree.js';

async function startOne(tree: Tree, i: Instance, say: (line: string) => void): Promise<boolean> {
  const pid = await daemonPid(tree.dir, i.pidfile);
  if (pid !== undefined) {
    say(`${i.id}: already running (pid ${pid})`);
    return true;
  }
  const result = await runScript(tree.dir, i.component, 'start.sh', i.startArgs);
  const text = `${result.stdout}${result.stderr}`.trim();
  say(result.status === 0 ? `${i.id}: ${text.split('\n').at(-1) ?? 'started'}` : `${i.id}: NOT started: ${text}`);
  return result.status === 0;
}

async function stopOne(tree: Tree, i: Instance, say: (line: string) => void): Promise<boolean> {
  const result = await runScript(tree.dir, i.component, 'stop.sh', i.startArgs);
  const text = `${result.stdout}${result.stderr}`.trim();
  say(result.status === 0 ? `${i.id}: ${text.split('\n').at(-1) ?? 'stopped'}` : `${i.id}: NOT stopped: ${text}`);
  return result.status === 0;
}

/**
 * Starts in dependency order (stores first, so that what scrapes, queries or reloads finds them),
 * stops in the reverse. A component that fails is said and the others go on; the result is
 * whether all succeeded.
 */
export async function runComponents(
  tree: Tree,
  action: 'start' | 'stop' | 'restart',
  ids: readonly string[],
  say: (line: string) => void,
): Promise<boolean> {
  const selected = await tree.select(ids);
  let ok = true;
  if (action !== 'start') for (const i of [...selected].reverse()) ok = (await stopOne(tree, i, say)) && ok;
  if (action !== 'stop') for (const i of selected) ok = (await startOne(tree, i, say)) && ok;
  return ok;
}
