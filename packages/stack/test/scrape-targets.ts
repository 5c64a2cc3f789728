/**
 * Exporter-like scrape targets for the collector's tests: small HTTP servers answering as cache,
 * coordination and host exporters do (a few series each, named after the target), written into a
 * tree's target files; and what a scraper (vmagent, a store) says it scrapes.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { freePort } from '@cachemon/testkit';

export interface ExporterTargets {
  /** host:port of each cache exporter (jobs arcus and arcus_prefixes). */
  readonly cache: readonly string[];
  /** host:port and ensemble of each coordination exporter (job zookeeper). */
  readonly coordination: ReadonlyArray<{ readonly target: string; readonly ensemble: string }>;
  /** host:port of each host exporter (job system_resource). */
  readonly host: readonly string[];
  /** `<job> <instance>` of every target the short-term store's exporter jobs scrape, sorted. */
  readonly expected: readonly string[];
  /** Paths each target was asked for, by target. */
  readonly requests: ReadonlyMap<string, readonly string[]>;
  /** The three target files of short_term_store/conf/exporter/ in the tree at dir. */
  writeTargetFiles(dir: string): void;
  close(): Promise<void>;
}

/** What each kind of exporter answers: a few series, labelled so every target's are its own. */
function exposition(kind: 'cache' | 'coordination' | 'host', target: string, path: string): string {
  if (kind === 'cache')
    return path === '/metrics/prefixes'
      ? `arcus_prefix_items{node="${target}",prefix="user"} 7\narcus_prefix_items{node="${target}",prefix="session"} 3\n`
      : `arcus_up{node="${target}",service_code="svc"} 1\narcus_items{node="${target}",service_code="svc"} 42\n`;
  if (kind === 'coordination') return `zk_up{zk_host="${target}"} 1\nzk_znode_count{zk_host="${target}"} 12\n`;
  return `node_load1 0.5\nnode_memory_MemFree_bytes 1024\n`;
}

export async function startExporterTargets(counts: {
  readonly cache: number;
  readonly coordination: number;
  readonly host: number;
}): Promise<ExporterTargets> {
  const servers: Server[] = [];
  const requests = new Map<string, string[]>();
  const start = async (kind: 'cache' | 'coordination' | 'host'): Promise<string> => {
    const port = await freePort();
    const target = `127.0.0.1:${port}`;
    requests.set(target, []);
    const server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0]!;
      requests.get(target)!.push(path);
      res.setHeader('Content-Type', 'text/plain; version=0.0.4');
      res.end(exposition(kind, target, path));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return target;
  };
  const cache: string[] = [];
  const coordination: Array<{ target: string; ensemble: string }> = [];
  const host: string[] = [];
  for (let i = 0; i < counts.cache; i++) cache.push(await start('cache'));
  for (let i = 0; i < counts.coordination; i++)
    coordination.push({ target: await start('coordination'), ensemble: `zk${i + 1}` });
  for (let i = 0; i < counts.host; i++) host.push(await start('host'));
  const expected = [
    ...cache.flatMap((t) => [`arcus ${t}`, `arcus_prefixes ${t}`]),
    ...coordination.map((c) => `zookeeper ${c.target}`),
    ...host.map((t) => `system_resource ${t}`),
  ].sort();
  return {
    cache,
    coordination,
    host,
    expected,
    requests,
    writeTargetFiles(dir) {
      const files = join(dir, 'short_term_store/conf/exporter');
      writeFileSync(join(files, 'cache_exporter.yml'), `- targets: ${JSON.stringify(cache)}\n`);
      writeFileSync(
        join(files, 'coordination_exporter.yml'),
        coordination.map((c) => `- targets: ["${c.target}"]\n  labels:\n    ensemble: ${c.ensemble}\n`).join(''),
      );
      writeFileSync(
        join(files, 'host_exporter.yml'),
        `- targets: ${JSON.stringify(host)}\n  labels:\n    group: host\n`,
      );
    },
    async close() {
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

export interface ActiveTarget {
  readonly job: string;
  readonly instance: string;
  /** The target's labels after relabelling (job, instance and those added). */
  readonly labels: Readonly<Record<string, string>>;
  /** The job's scrape_interval as the scraper applies it, in seconds. */
  readonly intervalSeconds: number;
  readonly scrapeUrl: string;
  readonly health: string;
}

/** The targets a VictoriaMetrics scraper (vmagent, a store) scrapes, from its /api/v1/targets. */
export async function activeTargets(address: string): Promise<ActiveTarget[]> {
  const response = await fetch(`http://${address}/api/v1/targets`);
  const body = (await response.json()) as {
    data: {
      activeTargets: Array<{
        labels: Record<string, string>;
        discoveredLabels: Record<string, string>;
        scrapeUrl: string;
        health: string;
      }>;
    };
  };
  return body.data.activeTargets.map((t) => ({
    job: t.labels['job'] ?? '',
    instance: t.labels['instance'] ?? '',
    labels: t.labels,
    intervalSeconds: durationSeconds(t.discoveredLabels['__scrape_interval__'] ?? ''),
    scrapeUrl: t.scrapeUrl,
    health: t.health,
  }));
}

/** Seconds of a duration as the spec writes it (5s, 1m) or Go prints it (1m0s, 1.5s); NaN if neither. */
export function durationSeconds(text: string): number {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return NaN;
  return parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]!]!, 0);
}

/** `<job> <instance>` of targets, sorted. */
export const targetKeys = (targets: readonly ActiveTarget[]): string[] =>
  targets.map((t) => `${t.job} ${t.instance}`).sort();

/** Whether nothing listens on a loopback port (it can be bound now). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createTcpServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The first of n consecutive free loopback ports: the collector's shards listen on a port + i. */
export async function consecutiveFreePorts(n: number): Promise<number> {
  for (;;) {
    const first = await freePort();
    if (first + n - 1 > 65535) continue;
    let free = true;
    for (let i = 1; i < n && free; i++) free = await portFree(first + i);
    if (free) return first;
  }
}
