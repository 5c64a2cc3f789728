/**
 * `cachemon hosts add|remove`: host exporters on the cache machines, the host exporter parts of
 * the spec's procedures "add a collection target" (step 3-4) and "remove a collection target"
 * (step 2 and 4): installed or stopped over SSH, and the store's host_exporter.yml edited and
 * reloaded, in that order, verified, and rolled back whole when a step fails.
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { editAndReload, planEdit } from './change.js';
import type { FileEdit } from './change.js';
import { addTargetEntry, readTargets, removeTargets } from './edits.js';
import type { Plan } from './ensemble.js';
import { inspectInstallDirs, isThisMachine, lossText, onMachine, quote, why } from './machines.js';
import { bash } from './sh.js';
import { activeTargets, reachable, reloadActions, reloadStore, scrapers, waitUntil } from './stack-state.js';
import { portOf } from './tree.js';
import type { Tree } from './tree.js';

export interface HostsOptions {
  /** The exporters' port (default: the one host_exporter.env gives, which the machines get). */
  readonly port?: number;
  /** The install directory on the machines (default: the tree's own). */
  readonly remoteDir?: string;
  readonly yes?: boolean;
  readonly wait: number;
}

/** A command line the operator got wrong: said with the usage, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const MACHINE = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const MAX_MACHINES = 10_000;

/** The number in a --pattern: `%s`, `%d` or `%0Nd` (zero-padded to N digits); `%%` is a percent sign. */
export function expandPattern(pattern: string, first: number, last: number): string[] {
  const conversions = [...pattern.matchAll(/%(%|0[1-9][0-9]*d|[sd]|[^%]*)/g)];
  const numbers = conversions.filter((c) => c[1] !== '%');
  const bad = numbers.find((c) => !/^(0[1-9][0-9]*d|[sd])$/.test(c[1]!));
  if (bad) throw new UsageError(`--pattern ${pattern}: %${bad[1]} is not %s, %d or %0Nd (such as %02d)`);
  if (numbers.length !== 1)
    throw new UsageError(`--pattern ${pattern}: give exactly one %s (or %02d) where the machine number goes`);
  const out: string[] = [];
  for (let n = first; n <= last; n++)
    out.push(
      pattern.replace(/%(%|0([1-9][0-9]*)d|[sd])/g, (_m, what: string, width?: string) =>
        what === '%' ? '%' : width ? String(n).padStart(Number(width), '0') : String(n),
      ),
    );
  return out;
}

/** The machines of a command line: the names given, or the pattern over the range; checked, in order, once each. */
export function machineList(names: readonly string[], pattern?: string, seq?: readonly string[]): string[] {
  let machines: string[];
  if (pattern !== undefined || seq !== undefined) {
    if (names.length > 0) throw new UsageError('give the machines as names or as --pattern with --seq, not both');
    if (pattern === undefined || seq === undefined)
      throw new UsageError('--pattern and --seq go together: --pattern cache-%02d --seq 1 40');
    if (seq.length !== 2 || !seq.every((s) => /^[0-9]+$/.test(s)))
      throw new UsageError(
        `--seq takes two whole numbers, the first and the last machine number (got ${seq.join(' ')})`,
      );
    const [first, last] = seq.map(Number) as [number, number];
    if (first > last) throw new UsageError(`--seq ${first} ${last}: the first number is greater than the last`);
    if (last - first >= MAX_MACHINES)
      throw new UsageError(`--seq ${first} ${last}: more than ${MAX_MACHINES} machines`);
    machines = expandPattern(pattern, first, last);
  } else machines = [...names];
  if (machines.length === 0) throw new UsageError('no machines: give their names, or --pattern with --seq');
  for (const m of machines)
    if (!MACHINE.test(m))
      throw new UsageError(
        `${JSON.stringify(m)} is not a machine name (letters, digits, '.', '_', '-'; an SSH user goes in SSH: SSH='ssh -l arcus')`,
      );
  return [...new Set(machines)];
}

/** Runs `each` on every machine at once; the failures as "machine: reason". */
async function onEvery(machines: readonly string[], each: (m: string) => Promise<void>): Promise<string[]> {
  const failures: string[] = [];
  await Promise.all(
    machines.map((m) =>
      each(m).catch((error: Error) => {
        failures.push(`${m}: ${error.message}`);
      }),
    ),
  );
  return failures;
}

async function stopStarted(machine: string, exporterDir: string): Promise<void> {
  const result = await onMachine(machine, quote(`${exporterDir}/stop.sh`));
  if (result.status !== 0) throw new Error(`stop.sh: ${why(result)}`);
}

/** The machines as a command names them: all when few, else the first and the last. */
function machineNames(machines: readonly string[]): string {
  return machines.length > 20 ? `${machines.slice(0, 3).join(', ')} .. ${machines.at(-1)}` : machines.join(', ');
}

function hostOf(target: string): string {
  return target.slice(0, target.lastIndexOf(':'));
}

const changed = (e: FileEdit) => e.after !== null && (e.before === null || !e.before.equals(Buffer.from(e.after)));

/** The port host_exporter.env gives (the file batch_install.sh copies to each machine). */
async function envPort(tree: Tree): Promise<number | undefined> {
  const exporter = (await tree.instances()).find((i) => i.id === 'host_exporter');
  return exporter ? portOf(exporter.listen) : undefined;
}

function checkRemoteDir(tree: Tree, given: string | undefined): string {
  const dir = (given ?? tree.dir).replace(/(.)\/+$/, '$1');
  if (!dir.startsWith('/')) throw new Error(`--remote-dir ${dir} is not an absolute path`);
  if (/['\n]/.test(dir)) throw new Error(`--remote-dir ${JSON.stringify(dir)}: no quotes or line breaks`);
  return dir;
}

export async function planHosts(
  tree: Tree,
  op: 'add' | 'remove',
  machines: readonly string[],
  options: HostsOptions,
  say: (line: string) => void,
): Promise<Plan> {
  const file = tree.path('short_term_store/conf/exporter/host_exporter.yml');
  const entries = readTargets(file, readFileSync(file, 'utf8'));
  const store = await scrapers(tree);
  const remoteDir = checkRemoteDir(tree, options.remoteDir);
  return op === 'add'
    ? planHostsAdd(tree, machines, options, say, { file, entries, store, remoteDir })
    : planHostsRemove(tree, machines, options, say, { file, entries, store, remoteDir });
}

interface Context {
  readonly file: string;
  readonly entries: ReturnType<typeof readTargets>;
  /** What scrapes the store's jobs (stack-state.ts scrapers). */
  readonly store: readonly string[];
  readonly remoteDir: string;
}

/** The answer on the terminal, or a refusal without one. */
async function confirmed(warning: string): Promise<void> {
  if (!process.stdin.isTTY)
    throw new Error(
      `refused: ${warning}. There is no terminal to confirm it on: pass --yes to go ahead. Nothing was changed.`,
    );
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await terminal.question('Continue? [y/N] ');
    if (!/^y(es)?$/i.test(answer.trim())) throw new Error('not confirmed; nothing was changed');
  } finally {
    terminal.close();
  }
}

/** Machines the batch install names as failed, with its reason for each. */
function batchFailures(output: string): Map<string, string> {
  const failed = new Map<string, string>();
  for (const m of output.matchAll(/^batch_install: (\S+) failed: (.*?)(?:; going on with the others)?$/gm))
    failed.set(m[1]!, m[2]!);
  return failed;
}

async function planHostsAdd(
  tree: Tree,
  machines: readonly string[],
  options: HostsOptions,
  say: (line: string) => void,
  { file, entries, store, remoteDir }: Context,
): Promise<Plan> {
  const batch = tree.path('host_exporter/batch_install.sh');
  const shipped = await envPort(tree);
  if (shipped === undefined)
    throw new Error(
      `the host exporter is not installed in ${tree.dir} (no host_exporter/host_exporter.env with a port): install it with stack/install.sh`,
    );
  if (options.port !== undefined && options.port !== shipped)
    throw new Error(
      `--port ${options.port}, but ${tree.path('host_exporter/host_exporter.env')}, which each machine gets, has the exporter listen on port ${shipped}: set HOST_EXPORTER_LISTEN_ADDRESS there, or leave --port out`,
    );
  const port = shipped;
  if (remoteDir === tree.dir) {
    const here = (await Promise.all(machines.map(async (m) => ((await isThisMachine(m)) ? m : '')))).filter(Boolean);
    if (here.length > 0)
      throw new Error(
        `${here.join(', ')} is this machine: installing into ${remoteDir}/host_exporter would delete this tree's own host exporter; give --remote-dir <another directory>`,
      );
  }
  const exporterDir = `${remoteDir}/host_exporter`;
  const present = new Set(entries.flatMap((e) => e.targets));
  const targets = machines.map((m) => `${m}:${port}`);
  const added = targets.filter((t) => !present.has(t));
  const edit = planEdit(file, (text) =>
    added.length > 0 ? addTargetEntry(file, text, { targets: added, labels: { group: 'host' } }) : text,
  );
  const warning = `on each machine a running host exporter is stopped and ${exporterDir} is deleted and recreated; files there are lost`;
  const list = machineNames(machines);
  const count = `${machines.length} machine${machines.length === 1 ? '' : 's'}`;
  // What would be lost, machine by machine, said before anything is asked or run (a machine SSH
  // cannot reach now is the install's to report).
  const dirs = await inspectInstallDirs(machines, exporterDir, tree.path('host_exporter/host_exporter.env'));
  const losses = dirs.map((d) => lossText(d, exporterDir)).filter(Boolean);

  return {
    edits: changed(edit) ? [edit] : [],
    actions: [
      `WARNING: ${warning}`,
      ...losses.map((l) => `WARNING: ${l}, which the install deletes`),
      `host_exporter/batch_install.sh over SSH on ${count} (${list}): install into ${exporterDir} and start the exporter`,
      ...reloadActions(store),
      `wait until the store's system_resource targets ${targets.join(', ')} are up`,
    ],
    run: async (change) => {
      say(`hosts add: ${count}: ${list}`);
      say(`WARNING: ${warning}.`);
      for (const l of losses) say(`WARNING: ${l}, which the install deletes.`);
      if (!options.yes)
        await confirmed(losses.length > 0 ? `${warning}; on ${losses.length} of them, files of their own` : warning);
      await change.step(`install and start the host exporter over SSH on ${list}`, async () => {
        const result = await bash([batch, '--yes'], {
          // The machine list is ours: a pattern in the caller's environment must not take over.
          env: { INSTALL_DIR: remoteDir, HOSTS: machines.join(' '), HOST_PATTERN: '', SEQ_START: '', SEQ_END: '' },
          timeoutMs: Math.max(300_000, machines.length * 120_000),
        });
        if (result.status !== 0) {
          const failed = batchFailures(result.stderr);
          const reasons = failed.size > 0 ? [...failed].map(([m, r]) => `${m}: ${r}`) : [`${list}: ${why(result)}`];
          const others = machines.filter((m) => failed.size > 0 && !failed.has(m));
          const notStopped = await onEvery(others, (m) => stopStarted(m, exporterDir));
          throw new Error(
            `the host exporter was not installed on ${failed.size || machines.length} of ${machines.length} machines: ${reasons.join('; ')}` +
              ` (each must take SSH from here without a prompt: check the name, the port and the key; set SSH and SCP for their options)` +
              (others.length > 0
                ? notStopped.length > 0
                  ? `; NOT stopped again on ${notStopped.join('; ')}`
                  : `; stopped again on ${others.join(', ')}`
                : ''),
          );
        }
        return async () => {
          const failures = await onEvery(machines, (m) => stopStarted(m, exporterDir));
          if (failures.length > 0) throw new Error(`the exporter still runs on ${failures.join('; ')}`);
        };
      });
      await change.step('add the targets to host_exporter.yml and reload the short-term store', () =>
        editAndReload(changed(edit) ? [edit] : [], () => reloadStore(tree)),
      );
      await change.step(`verify: the store scrapes the host exporters on ${list}`, () =>
        waitUntil(options.wait, async () => {
          const scraped = (await activeTargets(store)).filter((t) => t.job === 'system_resource');
          for (const target of targets) {
            const mine = scraped.find((t) => t.instance === target);
            if (!mine) return `the store has no system_resource target ${target} yet`;
            if (mine.health !== 'up')
              return `the store's system_resource target ${target} is ${mine.health}${mine.lastError ? `: ${mine.lastError}` : ''}`;
          }
          return '';
        }),
      );
    },
  };
}

/**
 * Stops the host exporter of one machine: stop.sh of the install, and a systemd socket and
 * service when installed (disabled, unit files removed, systemd reloaded; skipped without
 * systemd). Prints what it found, for the undo: `stopped` and `unit <name> <base64>`.
 */
function stopScript(exporterDir: string): string {
  const dir = quote(exporterDir);
  return `set -u
s=; [ "$(id -u)" = 0 ] || s='sudo -n'
if [ -x ${dir}/stop.sh ]; then
  out=$(${dir}/stop.sh) || { echo "$out"; exit 1; }
  case "$out" in *"stopped (pid"*) echo stopped ;; esac
fi
if [ -d /run/systemd/system ]; then
  units=
  for u in host_exporter.socket host_exporter.service; do
    if systemctl cat "$u" >/dev/null 2>&1 || [ -e "/etc/systemd/system/$u" ]; then
      units="$units $u"
      if [ -f "/etc/systemd/system/$u" ]; then echo "unit $u $(base64 -w0 "/etc/systemd/system/$u")"; fi
    fi
  done
  if [ -n "$units" ]; then
    $s systemctl disable --now $units || exit 1
    for u in $units; do $s rm -f "/etc/systemd/system/$u" || exit 1; done
    $s systemctl daemon-reload || exit 1
  fi
fi`;
}

/** Puts back what stopScript stopped. */
function restoreScript(exporterDir: string, wasRunning: boolean, units: ReadonlyMap<string, string>): string {
  const lines = ['set -u', `s=; [ "$(id -u)" = 0 ] || s='sudo -n'`];
  for (const [name, base64] of units)
    lines.push(
      `echo ${quote(base64)} | base64 -d | $s tee ${quote(`/etc/systemd/system/${name}`)} >/dev/null || exit 1`,
    );
  if (units.size > 0) {
    lines.push('$s systemctl daemon-reload || exit 1');
    lines.push(
      `$s systemctl enable --now ${units.has('host_exporter.socket') ? 'host_exporter.socket' : [...units.keys()].join(' ')} || exit 1`,
    );
  }
  if (wasRunning) lines.push(`${quote(`${exporterDir}/start.sh`)} || exit 1`);
  return lines.join('\n');
}

async function planHostsRemove(
  tree: Tree,
  machines: readonly string[],
  options: HostsOptions,
  say: (line: string) => void,
  { file, entries, store, remoteDir }: Context,
): Promise<Plan> {
  const names = new Set(machines);
  const picked = (target: string) =>
    names.has(hostOf(target)) && (options.port === undefined || portOf(target) === options.port);
  const removed = [...new Set(entries.flatMap((e) => e.targets).filter(picked))];
  const edit = planEdit(file, (text) => removeTargets(file, text, picked));
  const exporterDir = `${remoteDir}/host_exporter`;
  const port = options.port ?? (await envPort(tree)) ?? 9100;
  const silent = [...new Set([...removed, ...machines.map((m) => `${m}:${port}`)])];
  const list = machineNames(machines);
  if (removed.length === 0)
    say(`hosts remove: ${file} has no target of ${list}${options.port ? ` on port ${options.port}` : ''}`);

  return {
    edits: changed(edit) ? [edit] : [],
    actions: [
      ...reloadActions(store),
      `over SSH on ${list}: ${exporterDir}/stop.sh; where systemd has host_exporter.socket/.service: disable --now, remove the unit files from /etc/systemd/system, daemon-reload`,
      `wait until the store no longer scrapes ${removed.join(', ') || 'them'} and nothing answers on ${silent.join(', ')}`,
    ],
    run: async (change) => {
      await change.step('remove the targets from host_exporter.yml and reload the short-term store', () =>
        editAndReload(changed(edit) ? [edit] : [], () => reloadStore(tree)),
      );
      for (const machine of machines)
        await change.step(
          `stop the host exporter on ${machine}`,
          async () => {
            const result = await onMachine(machine, stopScript(exporterDir));
            if (result.status !== 0) throw new Error(`${machine}: ${why(result)}`);
            const wasRunning = /^stopped$/m.test(result.stdout);
            const units = new Map(
              [...result.stdout.matchAll(/^unit (\S+) (\S*)$/gm)].map((m) => [m[1]!, m[2]!] as const),
            );
            if (!wasRunning && units.size === 0)
              say(`hosts remove: ${machine}: no running exporter from ${exporterDir}/stop.sh and no systemd unit`);
            return async () => {
              if (!wasRunning && units.size === 0) return;
              const restored = await onMachine(machine, restoreScript(exporterDir, wasRunning, units));
              if (restored.status !== 0) throw new Error(`${machine}: ${why(restored)}`);
            };
          },
          `Each machine must take SSH from here without a prompt (set SSH for its options). A machine that is gone for good: take its targets out of ${file} by hand and ${reloadActions(store).join(', ')}.`,
        );
      await change.step(`verify: the store no longer scrapes ${list} and their exporters are stopped`, () =>
        waitUntil(options.wait, async () => {
          const gone = new Set(removed);
          const left = (await activeTargets(store)).find((t) => gone.has(t.instance));
          if (left) return `the store still scrapes ${left.instance} (${left.job})`;
          for (const address of silent)
            if (await reachable(address))
              return `${address} still answers: is the exporter installed elsewhere than ${exporterDir} (--remote-dir)?`;
          return '';
        }),
      );
    },
  };
}
