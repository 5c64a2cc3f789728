/**
 * The cache machines over SSH: a command run on one, and what a batch install would destroy in
 * its host exporter install directory (files it did not put there, an env file edited there).
 * Used by `cachemon hosts add` before it asks, and by `cachemon doctor`.
 */
import { createHash } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { bash } from './sh.js';
import type { ScriptResult } from './sh.js';

/** The ssh and scp commands, as batch_install.sh takes them: operators add -p, -i, -l there. */
export const SSH_DEFAULT = 'ssh -o BatchMode=yes -o ConnectTimeout=10';
export const SCP_DEFAULT = 'scp -q -o BatchMode=yes -o ConnectTimeout=10';

/** A word for the remote shell, whatever it holds. */
export const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

const sshCommand = () => process.env['SSH'] || SSH_DEFAULT;

/** A command on a machine over SSH (no standard input: nothing can prompt). */
export function onMachine(machine: string, script: string, timeoutMs = 120_000): Promise<ScriptResult> {
  return bash(['-c', '$SSH "$1" "$2" </dev/null', 'ssh', machine, script], { env: { SSH: sshCommand() }, timeoutMs });
}

/** What an SSH command said last on failure: ssh's own reason, or the remote script's. */
export function why(result: ScriptResult): string {
  const lines = `${result.stderr}\n${result.stdout}`
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.at(-1) ?? `exited ${result.status}`;
}

/** Whether a machine name is this machine: loopback, or its own name. */
export async function isThisMachine(machine: string): Promise<boolean> {
  if (machine === 'localhost' || machine === hostname()) return true;
  try {
    const addresses = await lookup(machine, { all: true });
    return addresses.some((a) => a.address.startsWith('127.') || a.address === '::1');
  } catch {
    // Not resolvable here: ssh may still know it (an alias in its config); it is not this machine's name.
    return false;
  }
}

/** Runs `each` over the items, at most `width` at a time, in order. */
export async function pooled<T, R>(items: readonly T[], width: number, each: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const at = next++;
      out[at] = await each(items[at]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}

/**
 * What a batch install puts in <dir>/host_exporter and what the exporter writes there; the next
 * batch install recreates these, and deletes everything else.
 */
const INSTALLED = new Set([
  'bin',
  'bin/node_exporter',
  'lib',
  'lib/daemon.sh',
  'start.sh',
  'stop.sh',
  'host_exporter.env',
  'run',
  'run/host_exporter.pid',
  'run/host_exporter.pid.lock',
  'log',
  'log/host_exporter.log',
]);

/** Entries listed per machine at most: the work on a machine full of files is bounded. */
const LISTED = 200;

export interface InstallDir {
  readonly machine: string;
  /** `absent`: no such directory (a first install loses nothing); `unreachable`: SSH failed. */
  readonly state: 'absent' | 'seen' | 'unreachable';
  /** Files and directories (with a trailing /) that are not the install's, top-most only. */
  readonly extra: readonly string[];
  /** Entries past the listed ones, not looked at. */
  readonly unlisted: number;
  /** Whether its host_exporter.env differs from the one the install copies there. */
  readonly envEdited: boolean;
  readonly reason?: string;
}

function inspectScript(exporterDir: string): string {
  return `d=${quote(exporterDir)}
[ -d "$d" ] || { echo absent; exit 0; }
cd "$d" || exit 1
find . -mindepth 1 -printf '%y %P\\n' | awk 'NR <= ${LISTED}; END { print "count " NR }'
echo "env $(sha256sum host_exporter.env 2>/dev/null | cut -d' ' -f1)"`;
}

/** The listing of inspectScript, read. */
export function readInstallDir(machine: string, output: string, shippedEnv: string): InstallDir {
  if (/^absent$/m.test(output)) return { machine, state: 'absent', extra: [], unlisted: 0, envEdited: false };
  const entries = [...output.matchAll(/^([a-z]) (.+)$/gm)].map((m) => ({ dir: m[1] === 'd', path: m[2]! }));
  const count = Number(/^count (\d+)$/m.exec(output)?.[1] ?? entries.length);
  const env = /^env ([0-9a-f]*)$/m.exec(output)?.[1] ?? '';
  const foreign = new Set<string>();
  const extra: string[] = [];
  for (const { dir, path } of entries.sort((a, b) => a.path.localeCompare(b.path))) {
    if (INSTALLED.has(path)) continue;
    const parent = path.split('/').slice(0, -1);
    if (parent.some((_, i) => foreign.has(parent.slice(0, i + 1).join('/')))) continue;
    if (dir) foreign.add(path);
    extra.push(dir ? `${path}/` : path);
  }
  return {
    machine,
    state: 'seen',
    extra,
    unlisted: Math.max(0, count - entries.length),
    envEdited: env !== '' && env !== shippedEnv,
  };
}

/** sha256 of the env file a batch install copies to each machine. */
export function shippedEnvHash(envFile: string): string {
  try {
    return createHash('sha256').update(readFileSync(envFile)).digest('hex');
  } catch {
    return '';
  }
}

/** Each machine's install directory, looked at over SSH, `width` machines at a time. */
export function inspectInstallDirs(
  machines: readonly string[],
  exporterDir: string,
  envFile: string,
  options: { width?: number; timeoutMs?: number; deadline?: number } = {},
): Promise<InstallDir[]> {
  const shipped = shippedEnvHash(envFile);
  const deadline = options.deadline ?? Infinity;
  return pooled(machines, options.width ?? 32, async (machine) => {
    const left = deadline - Date.now();
    if (left < 1_000)
      return { machine, state: 'unreachable', extra: [], unlisted: 0, envEdited: false, reason: 'not reached in time' };
    const result = await onMachine(machine, inspectScript(exporterDir), Math.min(left, options.timeoutMs ?? 20_000));
    if (result.status !== 0)
      return { machine, state: 'unreachable', extra: [], unlisted: 0, envEdited: false, reason: why(result) };
    return readInstallDir(machine, result.stdout, shipped);
  });
}

/** What the next batch install would delete there, in words; "" when nothing of the operator's. */
export function lossText(dir: InstallDir, exporterDir: string): string {
  const lost = [...dir.extra];
  if (dir.unlisted > 0) lost.push(`${dir.unlisted} more entries not listed`);
  if (dir.envEdited) lost.push('host_exporter.env as edited there (it differs from the one the install copies)');
  if (lost.length === 0) return '';
  const shown = lost.length > 10 ? [...lost.slice(0, 10), `${lost.length - 10} more`] : lost;
  return `${dir.machine}:${exporterDir} holds ${shown.join(', ')}`;
}
