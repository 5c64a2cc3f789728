/** What the running stack says about an ensemble: the store's scrape targets, the provider's ensembles. */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { post, request } from './probe.js';
import { runScript } from './sh.js';
import { connectAddress, readJsonc } from './tree.js';
import type { Instance, Tree } from './tree.js';

export interface ActiveTarget {
  readonly job: string;
  readonly instance: string;
  readonly health: string;
  readonly lastError: string;
}

/** The instance of the tree with this id, or an error saying it is not installed. */
export async function instanceOf(tree: Tree, id: string): Promise<Instance> {
  const found = (await tree.instances()).find((i) => i.id === id);
  if (!found) throw new Error(`${id} is not installed in ${tree.dir}`);
  return found;
}

export async function storeAddress(tree: Tree): Promise<string> {
  return connectAddress((await instanceOf(tree, 'short_term_store:short')).listen);
}

/**
 * What scrapes the short-term store's jobs: the collector's shards when they are configured to run
 * (the store then scrapes nothing), else the store itself.
 */
export async function scrapers(tree: Tree): Promise<string[]> {
  const collector = await tree.collector();
  if (!collector) return [await storeAddress(tree)];
  return Array.from({ length: collector.shards }, (_, i) => connectAddress(collector.listen(i)));
}

/** The reload of each scraper, as the procedures' actions say it. */
export function reloadActions(addresses: readonly string[]): string[] {
  return addresses.map((a) => `POST http://${a}/-/reload`);
}

export async function providerAddress(tree: Tree): Promise<string> {
  return connectAddress((await instanceOf(tree, 'topology_provider')).listen);
}

/** The active targets of every scraper together: each collector shard scrapes a part of them. */
export async function activeTargets(addresses: string | readonly string[]): Promise<ActiveTarget[]> {
  const all = await Promise.all((typeof addresses === 'string' ? [addresses] : addresses).map(targetsOf));
  return all.flat();
}

async function targetsOf(address: string): Promise<ActiveTarget[]> {
  const answer = await request(address, '/api/v1/targets', { timeoutMs: 10_000 });
  if (answer.status !== 200) throw new Error(`http://${address}/api/v1/targets answers ${answer.status}`);
  const body = JSON.parse(answer.text) as {
    data?: { activeTargets?: Array<{ labels?: Record<string, string>; health?: string; lastError?: string }> };
  };
  return (body.data?.activeTargets ?? []).map((t) => ({
    job: t.labels?.['job'] ?? '',
    instance: t.labels?.['instance'] ?? '',
    health: t.health ?? 'unknown',
    lastError: t.lastError ?? '',
  }));
}

/** The ensembles the topology provider answers, with their text (`zk1`, `zk1 (stale)`, ...). */
export async function providerEnsembles(provider: string): Promise<Map<string, string>> {
  const response = await fetch(`http://${provider}/variable`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ payload: { target: 'ensembles' } }),
    signal: AbortSignal.timeout(10_000),
  });
  const values = (await response.json()) as Array<{ __text: string; __value: string }>;
  if (!Array.isArray(values)) throw new Error(`the topology provider's ensembles: ${JSON.stringify(values)}`);
  return new Map(values.map((v) => [v.__value, v.__text]));
}

/** Reloads what scrapes the store's jobs: the store, or every collector shard (each scrapes a part). */
export async function reloadStore(tree: Tree): Promise<void> {
  for (const address of await scrapers(tree)) await post(address, '/-/reload');
}

export async function reloadProvider(tree: Tree): Promise<void> {
  await post(await providerAddress(tree), '/reload/config');
}

/** start.sh of an instance; its failure is an error with the script's own words. */
export async function startInstance(tree: Tree, component: string, args: readonly string[]): Promise<void> {
  const result = await runScript(tree.dir, component, 'start.sh', args);
  if (result.status !== 0)
    throw new Error((result.stderr || result.stdout).trim() || `start.sh exited ${result.status}`);
}

export async function stopInstance(tree: Tree, component: string, args: readonly string[]): Promise<void> {
  const result = await runScript(tree.dir, component, 'stop.sh', args);
  if (result.status !== 0)
    throw new Error((result.stderr || result.stdout).trim() || `stop.sh exited ${result.status}`);
}

/**
 * Waits until `check` returns "" (done) or `seconds` pass; then the last reason it gave is the
 * error. Each check is its own bounded requests.
 */
export async function waitUntil(seconds: number, check: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  let reason = '';
  for (;;) {
    try {
      reason = await check();
    } catch (error) {
      reason = (error as Error).message;
    }
    if (reason === '') return;
    if (Date.now() >= deadline) throw new Error(`not so after ${seconds}s: ${reason}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Whether a TCP connection to host:port opens within the bound. */
export function reachable(address: string, timeoutMs = 3_000): Promise<boolean> {
  const at = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const socket = connect({ host: address.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(address.slice(at + 1)) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The ensembleByName of the topology provider's config. */
export function providerEnsembleConfig(tree: Tree): Record<string, string[]> {
  const path = tree.path('topology_provider/conf/config.json');
  return (readJsonc(path, readFileSync(path, 'utf8'))['ensembleByName'] ?? {}) as Record<string, string[]>;
}
