import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';
import { eventually, freePort, startVictoriaMetrics, tempDir } from '@cachemon/testkit';
import type { VictoriaMetrics } from '@cachemon/testkit';
import { installTree, queryStore, runScript } from '../../src/index.js';
import type { InstallTree } from '../../src/index.js';
import { applyScaleOut } from '../../src/scale-out.js';
import { activeTargets, consecutiveFreePorts, startExporterTargets, targetKeys } from '../scrape-targets.js';
import type { ExporterTargets } from '../scrape-targets.js';

type Series = Array<{ metric: Record<string, string>; value: [number, string] }>;

const cmdline = (pidfile: string) =>
  readFileSync(`/proc/${readFileSync(pidfile, 'utf8').trim()}/cmdline`, 'utf8')
    .split('\0')
    .filter(Boolean);

/**
 * Two shards with STORE_REPLICAS=2: each scrapes every target. Written to one store, which
 * deduplicates (the installer's TS_DEDUP_MIN_SCRAPE_INTERVAL), every sample arrives twice and is
 * kept once; written to a store per shard, each store holds every series, and the query proxy's
 * group over them answers each series once. The settings are applied as install.sh applies them.
 */
describe('collector: two shards scraping every target (STORE_REPLICAS=2)', () => {
  let tree: InstallTree;
  let targets: ExporterTargets;
  let perShard: VictoriaMetrics[] = [];
  const port = { short: 0, shard0: 0, proxy: 0 };
  const shard = (i: number) => `127.0.0.1:${port.shard0 + i}`;
  const sh = (component: string, script: string, ...args: string[]) =>
    runScript(tree.path(component, script), args, {
      CACHEMON_HOME: new URL('../../../../../', import.meta.url).pathname,
    });
  let every: string[];

  before(async () => {
    tree = installTree(await tempDir('cachemon-replicas-'), ['short_term_store', 'collector', 'query_proxy']);
    port.short = await freePort();
    port.proxy = await freePort();
    port.shard0 = await consecutiveFreePorts(2);
    perShard = [await startVictoriaMetrics(), await startVictoriaMetrics()];
    tree.edit('short_term_store/short.env', '0.0.0.0:8428', `127.0.0.1:${port.short}`);
    tree.edit('short_term_store/conf/scrape.yml', '127.0.0.1:8428', `127.0.0.1:${port.short}`);
    tree.edit('short_term_store/conf/scrape.yml', '127.0.0.1:8429', `127.0.0.1:${perShard[0]!.port}`);
    // The 1m jobs scrape every 5 s here, so that each job's samples are counted within seconds
    // (their shipped intervals are checked by the stores' and the shards' tests).
    tree.edit(
      'short_term_store/conf/scrape.yml',
      /scrape_interval: 1m\n( {4}scrape_timeout: 50s\n)?/g,
      'scrape_interval: 5s\n    scrape_timeout: 4s\n',
    );
    tree.edit('collector/collector.env', '0.0.0.0:8440', `127.0.0.1:${port.shard0}`);
    tree.edit(
      'query_proxy/conf/query_proxy.env',
      'PROXY_LISTEN_ADDRESS=:8082',
      `PROXY_LISTEN_ADDRESS=127.0.0.1:${port.proxy}`,
    );
    writeFileSync(
      tree.path('short_term_store/short.env'),
      `${readFileSync(tree.path('short_term_store/short.env'), 'utf8')}TS_EXTRA_FLAGS=-search.latencyOffset=1s\n`,
    );
    targets = await startExporterTargets({ cache: 4, coordination: 2, host: 3 });
    targets.writeTargetFiles(tree.dir);
    every = [
      ...targets.expected,
      `meta-long 127.0.0.1:${perShard[0]!.port}`,
      `meta-short 127.0.0.1:${port.short}`,
    ].sort();
  });

  after(async () => {
    if (tree) {
      await sh('query_proxy', 'stop.sh');
      await sh('collector', 'stop.sh');
      await sh('short_term_store', 'stop.sh');
    }
    for (const store of perShard) await store.stop();
    await targets?.close();
  });

  test('into one store: each target scraped by both shards, every sample received twice and kept once', async () => {
    const applied = applyScaleOut(tree.dir, { STORE_SHARDS: '2', STORE_REPLICAS: '2' });
    assert.deepEqual(applied, [
      'collector/collector.env: STORE_SHARDS, STORE_REPLICAS set from config.sh',
      'short_term_store/short.env: TS_DEDUP_MIN_SCRAPE_INTERVAL set from config.sh',
    ]);
    const store = await sh('short_term_store', 'start.sh', 'short');
    assert.equal(store.status, 0, store.stderr);
    assert.ok(cmdline(tree.path('short_term_store/run/short.pid')).includes('-dedup.minScrapeInterval=5s'));
    const started = await sh('collector', 'start.sh');
    assert.equal(started.status, 0, started.stderr);
    for (const i of [0, 1])
      assert.ok(cmdline(tree.path(`collector/run/shard-${i}.pid`)).includes('-promscrape.cluster.replicationFactor=2'));

    await eventually(async () => {
      for (const i of [0, 1]) assert.deepEqual(targetKeys(await activeTargets(shard(i))), every, `shard ${i}`);
    });
    // Half a minute of scrapes: every series there, at most one sample per 5 s.
    await eventually(
      async () => {
        const counts = await queryStore(port.short, 'count_over_time(up[30s])');
        assert.deepEqual(counts.map((c) => `${c.metric['job']} ${c.metric['instance']}`).sort(), every);
        for (const c of counts)
          assert.ok(Number(c.value[1]) <= 7, `${c.metric['instance']}: ${c.value[1]} samples in 30 s`);
        assert.ok(
          counts.every((c) => Number(c.value[1]) >= 5),
          'half a minute of scrapes',
        );
      },
      { timeoutMs: 90_000, intervalMs: 2000 },
    );
    // Every sample came twice: the store took twice the rows it answers.
    const kept = Number((await queryStore(port.short, 'sum(count_over_time({__name__=~".+"}[1h]))'))[0]!.value[1]);
    const metrics = await (await fetch(`http://127.0.0.1:${port.short}/metrics`)).text();
    const received = Number(/^vm_rows_inserted_total\{type="promremotewrite"\} (\d+)$/m.exec(metrics)?.[1]);
    assert.ok(received >= 1.6 * kept, `received ${received} rows, kept ${kept} samples`);
  });

  test('a store per shard: each holds every series; the query proxy merges them into one answer', async () => {
    assert.equal((await sh('collector', 'stop.sh')).status, 0);
    const urls = perShard.map((s) => `${s.url}/api/v1/write`);
    const applied = applyScaleOut(tree.dir, { STORE_WRITE_URL: urls.join(' ') });
    assert.deepEqual(applied, [
      'collector/collector.env: STORE_WRITE_URL set from config.sh',
      'query_proxy/conf/promxy.yml: the stores of its groups set from config.sh',
    ]);
    const started = await sh('collector', 'start.sh');
    assert.equal(started.status, 0, started.stderr);
    for (const i of [0, 1])
      assert.ok(cmdline(tree.path(`collector/run/shard-${i}.pid`)).includes(`-remoteWrite.url=${urls[i]}`));

    for (const [i, store] of perShard.entries())
      await eventually(
        async () => {
          const counts = await queryStore(store.port, 'count_over_time(up[20s])');
          assert.deepEqual(counts.map((c) => `${c.metric['job']} ${c.metric['instance']}`).sort(), every, `store ${i}`);
          // One shard writes here: no sample twice, and no deduplication needed.
          for (const c of counts)
            assert.ok(Number(c.value[1]) <= 5, `store ${i} ${c.metric['instance']}: ${c.value[1]}`);
        },
        { timeoutMs: 60_000, intervalMs: 1000 },
      );

    const groups = (
      parse(readFileSync(tree.path('query_proxy/conf/promxy.yml'), 'utf8')) as {
        promxy: { server_groups: Array<{ static_configs: Array<{ targets: string[] }>; replicas?: string }> };
      }
    ).promxy.server_groups;
    assert.deepEqual(groups[0]!.static_configs, [{ targets: perShard.map((s) => `127.0.0.1:${s.port}`) }]);
    assert.equal(groups[0]!.replicas, undefined);
    const proxy = await sh('query_proxy', 'start.sh');
    assert.equal(proxy.status, 0, proxy.stderr);
    const viaProxy = async (query: string): Promise<Series> => {
      const response = await fetch(`http://127.0.0.1:${port.proxy}/api/v1/query`, {
        method: 'POST',
        body: new URLSearchParams({ query }),
      });
      const body = (await response.json()) as { status: string; data: { result: Series } };
      assert.equal(body.status, 'success', JSON.stringify(body));
      return body.data.result;
    };
    const exporters = every.filter((t) => !t.startsWith('meta-'));
    assert.deepEqual(
      (await viaProxy('up{scrape="short"}')).map((s) => `${s.metric['job']} ${s.metric['instance']}`).sort(),
      exporters,
    );
    // Full copies: an aggregate over one store is the aggregate over all.
    assert.deepEqual(
      (await viaProxy('count(up{scrape="short"})')).map((s) => s.value[1]),
      [String(exporters.length)],
    );
  });
});
