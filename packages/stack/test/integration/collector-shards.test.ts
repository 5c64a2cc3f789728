import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePort, tempDir } from '@cachemon/testkit';
import { installStack, queryStore, runScript } from '../../src/index.js';
import {
  activeTargets,
  consecutiveFreePorts,
  durationSeconds,
  startExporterTargets,
  targetKeys,
} from '../scrape-targets.js';
import type { ActiveTarget, ExporterTargets } from '../scrape-targets.js';

/** The spec's jobs: interval, path and the labels each adds (besides job and instance). */
const SPEC_JOBS: Record<string, { interval: string; path: string; scrape?: string }> = {
  'meta-short': { interval: '1m', path: '/metrics' },
  'meta-long': { interval: '1m', path: '/metrics' },
  system_resource: { interval: '5s', path: '/metrics', scrape: 'short' },
  arcus: { interval: '5s', path: '/metrics', scrape: 'short' },
  arcus_prefixes: { interval: '1m', path: '/metrics/prefixes', scrape: 'short' },
  zookeeper: { interval: '1m', path: '/metrics', scrape: 'short' },
};

/**
 * The tree installed by stack/install.sh with STORE_SHARDS=2 in config.sh: two vmagent shards
 * started by collector/start.sh scrape the short-term store's shipped jobs (scrape.yml as shipped
 * but for the stores' ports) from exporter-like targets, each shard a part of them, and write to
 * the short-term store, which scrapes nothing itself.
 */
describe('collector: two shards share the short-term store jobs', () => {
  let dir: string;
  let targets: ExporterTargets;
  const port: Record<'short' | 'long' | 'shard0', number> = { short: 0, long: 0, shard0: 0 };
  const shard = (i: number) => `127.0.0.1:${port.shard0 + i}`;
  const sh = (component: string, script: string, ...args: string[]) => runScript(join(dir, component, script), args);
  let installed: string;

  before(async () => {
    dir = await tempDir('cachemon-shards-');
    installed = installStack(dir, { STORE_SHARDS: '2' });
    port.short = await freePort();
    port.long = await freePort();
    port.shard0 = await consecutiveFreePorts(2);
    const edit = (file: string, from: string, to: string) => {
      const text = readFileSync(join(dir, file), 'utf8');
      assert.ok(text.includes(from), `${file} has ${from}`);
      writeFileSync(join(dir, file), text.split(from).join(to));
    };
    edit('short_term_store/short.env', '0.0.0.0:8428', `127.0.0.1:${port.short}`);
    edit('short_term_store/long.env', '0.0.0.0:8429', `127.0.0.1:${port.long}`);
    edit('short_term_store/conf/scrape.yml', '127.0.0.1:8428', `127.0.0.1:${port.short}`);
    edit('short_term_store/conf/scrape.yml', '127.0.0.1:8429', `127.0.0.1:${port.long}`);
    edit('collector/collector.env', '0.0.0.0:8440', `127.0.0.1:${port.shard0}`);
    // Queries see samples a second old, not 30 s.
    writeFileSync(
      join(dir, 'short_term_store/short.env'),
      `${readFileSync(join(dir, 'short_term_store/short.env'), 'utf8')}TS_EXTRA_FLAGS=-search.latencyOffset=1s\n`,
    );
    // Enough targets that each shard's part is some and not all: 8 + 8 + 4 + 6 + 2 scrape targets.
    targets = await startExporterTargets({ cache: 8, coordination: 4, host: 6 });
    targets.writeTargetFiles(dir);
  });

  after(async () => {
    if (dir) {
      await sh('collector', 'stop.sh');
      await sh('short_term_store', 'stop.sh');
    }
    await targets?.close();
  });

  test('install.sh writes STORE_SHARDS into collector.env; the stores start, the short-term one scraping nothing', async () => {
    assert.match(installed, /install: collector\/collector\.env: STORE_SHARDS set from config\.sh/);
    assert.match(readFileSync(join(dir, 'collector/collector.env'), 'utf8'), /^STORE_SHARDS=2$/m);
    const stores = await sh('short_term_store', 'start.sh');
    assert.equal(stores.status, 0, stores.stderr);
    assert.match(
      stores.stdout,
      /store short: the collector's shards scrape conf\/scrape\.yml \(collector\/collector\.env\); this store scrapes nothing/,
    );
    assert.doesNotMatch(stores.stdout, /store long: the collector/);
    const args = readFileSync(
      `/proc/${readFileSync(join(dir, 'short_term_store/run/short.pid'), 'utf8').trim()}/cmdline`,
      'utf8',
    ).split('\0');
    assert.ok(!args.some((a) => a.startsWith('-promscrape.config')), args.join(' '));
    assert.deepEqual(await activeTargets(`127.0.0.1:${port.short}`), []);
  });

  test('start.sh starts one vmagent per shard, each scraping a part of the targets, together all of them once', async () => {
    const started = await sh('collector', 'start.sh');
    assert.equal(started.status, 0, started.stderr);
    for (const i of [0, 1])
      assert.match(
        started.stdout,
        new RegExp(`collector shard ${i}: started \\(pid \\d+\\), listening on ${shard(i)}`),
      );
    const cmdline = (i: number) =>
      readFileSync(`/proc/${readFileSync(join(dir, `collector/run/shard-${i}.pid`), 'utf8').trim()}/cmdline`, 'utf8')
        .split('\0')
        .filter(Boolean);
    for (const i of [0, 1]) {
      const args = cmdline(i);
      for (const flag of [
        '-promscrape.cluster.membersCount=2',
        `-promscrape.cluster.memberNum=${i}`,
        '-promscrape.cluster.replicationFactor=1',
        `-remoteWrite.url=http://127.0.0.1:${port.short}/api/v1/write`,
        `-promscrape.config=${join(dir, 'short_term_store/conf/scrape.yml')}`,
      ])
        assert.ok(args.includes(flag), `shard ${i}: ${flag} in ${args.join(' ')}`);
    }

    const everyTarget = [
      ...targets.expected,
      `meta-long 127.0.0.1:${port.long}`,
      `meta-short 127.0.0.1:${port.short}`,
    ].sort();
    const parts = await eventually(
      async () => {
        const [zero, one] = [await activeTargets(shard(0)), await activeTargets(shard(1))];
        assert.deepEqual([...targetKeys(zero), ...targetKeys(one)].sort(), everyTarget);
        return [zero, one];
      },
      { timeoutMs: 30_000 },
    );
    for (const [i, part] of parts.entries())
      assert.ok(
        part.length > 0 && part.length < everyTarget.length,
        `shard ${i} scrapes ${part.length} of ${everyTarget.length}`,
      );

    // The spec's jobs as shipped: interval, path and labels.
    for (const t of parts.flat()) {
      const job = SPEC_JOBS[t.job];
      assert.ok(job, `job ${t.job} is one of the spec's`);
      assert.equal(t.intervalSeconds, durationSeconds(job.interval), `${t.job} ${t.instance}`);
      assert.equal(new URL(t.scrapeUrl).pathname, job.path, `${t.job} ${t.instance}`);
      const { job: _job, instance: _instance, ...added } = t.labels;
      const ensemble = targets.coordination.find((c) => c.target === t.instance)?.ensemble;
      assert.deepEqual(
        added,
        {
          ...(job.scrape ? { scrape: job.scrape } : {}),
          ...(t.job === 'zookeeper' ? { ensemble } : {}),
          ...(t.job === 'system_resource' ? { group: 'host' } : {}),
        },
        `${t.job} ${t.instance}`,
      );
    }
  });

  test("every target's series arrive in the short-term store once, with the jobs' labels", async () => {
    const byShard = await Promise.all([0, 1].map(async (i) => targetKeys(await activeTargets(shard(i)))));
    // The 1m jobs are scraped first within a minute of the start.
    await eventually(
      async () => {
        const up = await queryStore(port.short, 'up');
        assert.deepEqual(
          up.map((s) => `${s.metric['job']} ${s.metric['instance']}`).sort(),
          [...byShard.flat()].sort(),
        );
        assert.ok(
          up.every((s) => s.value[1] === '1'),
          JSON.stringify(up.filter((s) => s.value[1] !== '1')),
        );
      },
      { timeoutMs: 100_000, intervalMs: 1000 },
    );
    const LABELS = ['job', 'instance', 'scrape', 'ensemble', 'group', 'node', 'prefix', 'zk_host'] as const;
    const key = (labels: Partial<Record<(typeof LABELS)[number], string>>) =>
      LABELS.map((l) => labels[l] ?? '').join('/');
    const series = async (query: string) => (await queryStore(port.short, query)).map((s) => key(s.metric)).sort();
    assert.deepEqual(
      await series('arcus_up'),
      targets.cache.map((t) => key({ job: 'arcus', instance: t, scrape: 'short', node: t })).sort(),
    );
    assert.deepEqual(
      await series('arcus_prefix_items'),
      targets.cache
        .flatMap((t) =>
          ['session', 'user'].map((prefix) =>
            key({ job: 'arcus_prefixes', instance: t, scrape: 'short', node: t, prefix }),
          ),
        )
        .sort(),
    );
    assert.deepEqual(
      await series('zk_up'),
      targets.coordination
        .map((c) =>
          key({ job: 'zookeeper', instance: c.target, scrape: 'short', ensemble: c.ensemble, zk_host: c.target }),
        )
        .sort(),
    );
    assert.deepEqual(
      await series('node_load1'),
      targets.host.map((t) => key({ job: 'system_resource', instance: t, scrape: 'short', group: 'host' })).sort(),
    );
    assert.equal((await queryStore(port.short, 'scrape_samples_scraped{job="meta-short"}')).length, 1);

    // Once: no target is scraped by two shards, so a 5 s job has at most one sample per 5 s.
    await eventually(
      async () => {
        const counts = await queryStore(port.short, 'count_over_time(up{job=~"arcus|system_resource"}[30s])');
        assert.equal(counts.length, targets.cache.length + targets.host.length);
        for (const c of counts)
          assert.ok(Number(c.value[1]) <= 7, `${c.metric['instance']}: ${c.value[1]} samples in 30 s`);
        assert.ok(
          counts.some((c) => Number(c.value[1]) >= 5),
          'half a minute of scrapes',
        );
      },
      { timeoutMs: 60_000, intervalMs: 2000 },
    );
    for (const t of targets.host) assert.ok(targets.requests.get(t)!.every((path) => path === '/metrics'));
  });

  test('reload.sh applies an edited scrape.yml in every shard; an invalid one is refused and the shards keep theirs', async () => {
    const scrape = join(dir, 'short_term_store/conf/scrape.yml');
    const shipped = readFileSync(scrape, 'utf8');
    const extra = targets.host[0]!;
    try {
      writeFileSync(
        scrape,
        `${shipped}  - job_name: extra\n    scrape_interval: 5s\n    static_configs:\n      - targets: ["${extra}"]\n`,
      );
      const reloaded = await sh('collector', 'reload.sh');
      assert.equal(reloaded.status, 0, reloaded.stderr);
      assert.match(reloaded.stdout, /collector shard 0: reloaded \(SIGHUP to pid \d+\)\ncollector shard 1: reloaded/);
      await eventually(async () => {
        const all = [...(await activeTargets(shard(0))), ...(await activeTargets(shard(1)))];
        assert.deepEqual(
          all.filter((t: ActiveTarget) => t.job === 'extra').map((t) => t.instance),
          [extra],
        );
      });

      writeFileSync(scrape, `${shipped}  - job_name: broken\n    scrape_intervall: 5s\n`);
      const refused = await sh('collector', 'reload.sh', '1');
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /collector: .*scrape\.yml is not a valid scrape config:\n.*scrape_intervall/s);
      const all = [...(await activeTargets(shard(0))), ...(await activeTargets(shard(1)))];
      assert.equal(all.filter((t) => t.job === 'extra').length, 1, 'the running config stays');
    } finally {
      writeFileSync(scrape, shipped);
      await sh('collector', 'reload.sh');
    }
  });

  test('bad settings, a shard out of range and a second start are clear errors that start nothing', async () => {
    const again = await sh('collector', 'start.sh', '1');
    assert.equal(again.status, 1);
    assert.match(again.stderr, /collector shard 1: already running/);
    assert.equal((await sh('collector', 'start.sh', '2')).status, 2);
    const env = join(dir, 'collector/collector.env');
    const shipped = readFileSync(env, 'utf8');
    try {
      writeFileSync(env, shipped.replace(/^STORE_REPLICAS=1$/m, 'STORE_REPLICAS=3'));
      const replicas = await sh('collector', 'start.sh');
      assert.equal(replicas.status, 1);
      assert.match(
        replicas.stderr,
        /STORE_REPLICAS=3: how many shards scrape each target, from 1 to STORE_SHARDS \(2\)/,
      );
      writeFileSync(
        env,
        shipped.replace(
          /^STORE_WRITE_URL=$/m,
          'STORE_WRITE_URL="http://a:1/api/v1/write http://b:1/api/v1/write http://c:1/api/v1/write"',
        ),
      );
      const urls = await sh('collector', 'start.sh');
      assert.equal(urls.status, 1);
      assert.match(urls.stderr, /STORE_WRITE_URL has 3 URLs for 2 shards/);
    } finally {
      writeFileSync(env, shipped);
    }
  });

  test('a short-term store still scraping the jobs itself keeps the shards from starting', async () => {
    const stopped = await sh('collector', 'stop.sh');
    assert.equal(stopped.status, 0, stopped.stderr);
    assert.match(stopped.stdout, /collector shard 0: stopped \(pid \d+\)\ncollector shard 1: stopped/);
    const env = join(dir, 'collector/collector.env');
    const sharded = readFileSync(env, 'utf8');
    // Started while STORE_SHARDS was 1: the store scrapes.
    writeFileSync(env, sharded.replace(/^STORE_SHARDS=2$/m, 'STORE_SHARDS=1'));
    assert.equal((await sh('short_term_store', 'stop.sh', 'short')).status, 0);
    const scraping = await sh('short_term_store', 'start.sh', 'short');
    assert.equal(scraping.status, 0, scraping.stderr);
    assert.doesNotMatch(scraping.stdout, /collector's shards/);
    const alone = await sh('collector', 'start.sh');
    assert.equal(alone.status, 0);
    assert.match(
      alone.stdout,
      /STORE_SHARDS=1 and no STORE_WRITE_URL .*: the short-term store scrapes conf\/scrape\.yml itself; no shard started/,
    );

    writeFileSync(env, sharded);
    const refused = await sh('collector', 'start.sh');
    assert.equal(refused.status, 1);
    assert.match(
      refused.stderr,
      /collector: the short-term store \(pid \d+\) scrapes the jobs itself; with the shards every target would be scraped twice/,
    );
    assert.match(refused.stderr, /short_term_store\/stop\.sh short && .*short_term_store\/start\.sh short/);
    assert.deepEqual((await sh('collector', 'stop.sh')).stdout, 'collector: no shard running\n');
  });
});
