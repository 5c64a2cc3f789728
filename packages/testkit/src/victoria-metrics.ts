import { join } from 'node:path';
import { ManagedProcess, ProcessServer, startedOrKilled } from './managed-process.js';
import type { ManagedServer } from './managed-process.js';
import { freePort } from './net-utils.js';
import { tempDir } from './temp.js';

const VICTORIA_METRICS = process.env['CACHEMON_VICTORIA_METRICS'] ?? 'victoria-metrics';
const READY_TIMEOUT_MS = 20_000;

/** Ready when /health answers. */
export interface VictoriaMetrics extends ManagedServer {
  /** http://127.0.0.1:port */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /**
   * Writes samples in the Prometheus text format (`name{labels} value [timestamp ms]` lines)
   * through /api/v1/import/prometheus, and resolves once every imported series is searchable.
   */
  importPrometheus(text: string): Promise<void>;
}

class VictoriaMetricsProcess extends ProcessServer implements VictoriaMetrics {
  readonly url: string;

  constructor(
    readonly port: number,
    readonly dataDir: string,
    process: ManagedProcess,
  ) {
    super(process);
    this.url = `http://127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    this.process.start();
    await this.process.waitUntil(
      'ready (/health answers OK)',
      async () => (await fetch(`${this.url}/health`)).ok,
      READY_TIMEOUT_MS,
    );
  }

  async importPrometheus(text: string): Promise<void> {
    const response = await fetch(`${this.url}/api/v1/import/prometheus`, { method: 'POST', body: text });
    if (response.status !== 204)
      throw new Error(`import into ${this.url}: ${response.status} ${await response.text()}`);
    // New series become searchable by queries a moment after a flush (export sees them sooner):
    // wait until a query over the imported time span counts every imported series.
    const series = new Set<string>();
    const names = new Set<string>();
    let first = Infinity;
    let last = -Infinity;
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+\S+(?:\s+(\d+))?$/.exec(line);
      if (!match || line.startsWith('#')) continue;
      names.add(match[1]!);
      series.add(match[1]! + (match[2] ?? ''));
      const at = match[3] === undefined ? Date.now() : Number(match[3]);
      first = Math.min(first, at);
      last = Math.max(last, at);
    }
    if (series.size === 0) return;
    const spanS = Math.ceil((last - first) / 1000) + 60;
    const query = encodeURIComponent(`count(last_over_time({__name__=~"${[...names].join('|')}"}[${spanS}s]))`);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      await fetch(`${this.url}/internal/force_flush`);
      const answer = (await (
        await fetch(`${this.url}/api/v1/query?query=${query}&time=${(last + 1) / 1000}`)
      ).json()) as {
        data?: { result?: Array<{ value: [number, string] }> };
      };
      if (Number(answer.data?.result?.[0]?.value[1] ?? 0) >= series.size) return;
      if (Date.now() > deadline)
        throw new Error(`${this.url}: imported series not searchable within ${READY_TIMEOUT_MS} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Single-node VictoriaMetrics (Debian's victoria-metrics) on a free loopback port with its own
 * data directory. Queries see fresh samples (`-search.latencyOffset=0s`, no caches); extra flags are added
 * after the defaults (a later flag wins).
 */
export async function startVictoriaMetrics(options: { extraArgs?: readonly string[] } = {}): Promise<VictoriaMetrics> {
  const dir = await tempDir('cachemon-vm-');
  const port = await freePort();
  const dataDir = join(dir, 'data');
  const args = [
    `-httpListenAddr=127.0.0.1:${port}`,
    `-storageDataPath=${dataDir}`,
    '-retentionPeriod=100y',
    '-search.latencyOffset=0s',
    // A query must see what a test just imported: the result and tag-filter caches would serve an
    // empty answer cached from before the import for a while.
    '-search.disableCache',
    '-loggerLevel=WARN',
    ...(options.extraArgs ?? []),
  ];
  const server = new VictoriaMetricsProcess(
    port,
    dataDir,
    new ManagedProcess(
      `victoria-metrics 127.0.0.1:${port}`,
      VICTORIA_METRICS,
      args,
      join(dir, 'victoria-metrics.log'),
      dir,
    ),
  );
  return startedOrKilled(server);
}
