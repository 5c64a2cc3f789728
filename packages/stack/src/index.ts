/**
 * Helpers for tests of the installed tree: a temporary INSTALL_DIR holding components copied from
 * stack/, and their scripts run as an operator runs them.
 */
import { execFile, spawnSync } from 'node:child_process';
import type { SpawnSyncReturns } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@cachemon/testkit';

/** The source checkout's root. */
export const REPO_ROOT = new URL('../../../../', import.meta.url).pathname;
export const STACK_DIR = join(REPO_ROOT, 'stack');

export interface InstallTree {
  readonly dir: string;
  /** Path of a file in the tree. */
  path(...parts: string[]): string;
  /** Runs <component>/<script> with args, env added to the test's own. */
  run(
    component: string,
    script: string,
    args?: readonly string[],
    env?: Record<string, string>,
  ): SpawnSyncReturns<string>;
  /** Replaces `from` by `to` in a file of the tree (every occurrence; fails when absent). */
  edit(file: string, from: string | RegExp, to: string): void;
}

/** Copies stack/lib and the named components of stack/ into dir, as the installer lays them out. */
export function installTree(dir: string, components: readonly string[]): InstallTree {
  cpSync(join(STACK_DIR, 'lib'), join(dir, 'lib'), { recursive: true });
  for (const component of components) cpSync(join(STACK_DIR, component), join(dir, component), { recursive: true });
  const path = (...parts: string[]) => join(dir, ...parts);
  return {
    dir,
    path,
    run: (component, script, args = [], env = {}) =>
      spawnSync('bash', [path(component, script), ...args], {
        encoding: 'utf8',
        env: { ...process.env, CACHEMON_HOME: REPO_ROOT, ...env },
        timeout: 90_000,
      }),
    edit(file, from, to) {
      const text = readFileSync(path(file), 'utf8');
      const next = typeof from === 'string' ? text.split(from).join(to) : text.replace(from, to);
      if (next === text) throw new Error(`${file}: nothing matched ${String(from)}`);
      writeFileSync(path(file), next);
    },
  };
}

export interface ScriptResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a bash script without blocking this process: for tests whose own servers (ARCUS nodes,
 * ZooKeeper sessions, a release server) must keep answering while the script runs.
 */
export function runScript(
  script: string,
  args: readonly string[] = [],
  env: Record<string, string> = {},
): Promise<ScriptResult> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [script, ...args],
      { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/** The installed tree's own `bin/cachemon`, run without blocking this process (it finds the tree itself). */
export function cachemon(dir: string, args: readonly string[]): Promise<ScriptResult> {
  return new Promise((resolve) => {
    execFile(join(dir, 'bin/cachemon'), [...args], { encoding: 'utf8', timeout: 300_000 }, (error, stdout, stderr) =>
      resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/**
 * stack/install.sh into dir, as an operator runs it (Grafana not downloaded), with config.sh's
 * settings in env. Blocks: call it before any ARCUS double or ZooKeeper session of the test
 * starts. Returns what it printed.
 */
export function installStack(dir: string, env: Record<string, string> = {}): string {
  const installed = spawnSync('bash', [join(STACK_DIR, 'install.sh')], {
    encoding: 'utf8',
    env: { ...process.env, INSTALL_DIR: dir, DASHBOARD_SERVER_DOWNLOAD: '0', ...env },
    timeout: 120_000,
  });
  if (installed.status !== 0) throw new Error(`install.sh failed (${installed.status}): ${installed.stderr}`);
  return installed.stdout;
}

/** A free loopback port for every component of the stack (configureTree's ports). */
export async function freeStackPorts(): Promise<Record<keyof StackPorts, number>> {
  const ports: Partial<Record<keyof StackPorts, number>> = {};
  for (const name of [
    'short',
    'long',
    'ruler',
    'router',
    'cache',
    'coordination',
    'host',
    'topology',
    'proxy',
  ] as const)
    ports[name] = await freePort();
  return ports as Record<keyof StackPorts, number>;
}

export type InstantResult = Array<{ metric: Record<string, string>; value: [number, string] }>;

/** An instant query straight to a store, after making what it has ingested searchable. */
export async function queryStore(port: number, query: string): Promise<InstantResult> {
  await fetch(`http://127.0.0.1:${port}/internal/force_flush`);
  const response = await fetch(`http://127.0.0.1:${port}/api/v1/query?nocache=1&query=${encodeURIComponent(query)}`);
  return ((await response.json()) as { data: { result: InstantResult } }).data.result;
}

export { DEMO_ENSEMBLE, startDemo, stopDemo } from './demo-stack.js';
export type { DemoOptions, DemoStarted } from './demo-stack.js';
export { addEnsembleToTopologyProvider, configureTree, SHIPPED_PORTS, withoutEnsemble } from './configure.js';
import type { StackPorts } from './configure.js';
export type { StackPorts, TreeSettings } from './configure.js';
