import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { parse } from 'yaml';
import { eventually, freePort, tempDir } from '@cachemon/testkit';
import { installTree, queryStore, STACK_DIR } from '../../src/index.js';
import type { InstallTree } from '../../src/index.js';

function readEnv(file: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

interface Job {
  job_name: string;
  scrape_interval: string;
  metrics_path: string;
  static_configs?: Array<{ targets: string[] }>;
  file_sd_configs?: Array<{ files: string[] }>;
  relabel_configs?: Array<{ target_label: string; replacement: string }>;
}

describe('the stores as shipped', () => {
  test("short.env and long.env hold the spec's variables and shipped values", () => {
    assert.deepEqual(readEnv(`${STACK_DIR}/short_term_store/short.env`), {
      TS_LISTEN_ADDRESS: '0.0.0.0:8428',
      TS_RETENTION_PERIOD: '14d',
      TS_STORAGE_DATA_PATH: 'data/short',
      TS_PROMSCRAPE_CONFIG: 'conf/scrape.yml',
      TS_STREAMAGGR_CONFIG: 'conf/streamaggr.yml',
      TS_SEARCH_MAX_QUERY_LEN: '65536',
      TS_LOG_LEVEL: 'INFO',
    });
    assert.deepEqual(readEnv(`${STACK_DIR}/short_term_store/long.env`), {
      TS_LISTEN_ADDRESS: '0.0.0.0:8429',
      TS_RETENTION_PERIOD: '2y',
      TS_STORAGE_DATA_PATH: 'data/long',
      TS_PROMSCRAPE_CONFIG: '',
      TS_STREAMAGGR_CONFIG: '',
      TS_SEARCH_MAX_QUERY_LEN: '65536',
      TS_LOG_LEVEL: 'INFO',
    });
  });

  test('scrape.yml has exactly the six shipped jobs, every exporter job adding scrape=short', () => {
    const jobs = (
      parse(readFileSync(`${STACK_DIR}/short_term_store/conf/scrape.yml`, 'utf8')) as { scrape_configs: Job[] }
    ).scrape_configs;
    const shape = jobs.map((j) => [
      j.job_name,
      j.scrape_interval,
      j.metrics_path,
      j.static_configs?.flatMap((c) => c.targets).join(',') ?? j.file_sd_configs?.flatMap((c) => c.files).join(','),
      (j.relabel_configs ?? []).map((r) => `${r.target_label}=${r.replacement}`).join(','),
    ]);
    assert.deepEqual(shape, [
      ['meta-short', '1m', '/metrics', '127.0.0.1:8428', ''],
      ['meta-long', '1m', '/metrics', '127.0.0.1:8429', ''],
      ['system_resource', '5s', '/metrics', 'exporter/host_exporter.yml', 'scrape=short'],
      ['arcus', '5s', '/metrics', 'exporter/cache_exporter.yml', 'scrape=short'],
      ['arcus_prefixes', '1m', '/metrics/prefixes', 'exporter/cache_exporter.yml', 'scrape=short'],
      ['zookeeper', '1m', '/metrics', 'exporter/coordination_exporter.yml', 'scrape=short'],
    ]);
    for (const file of ['cache_exporter', 'coordination_exporter', 'host_exporter']) {
      assert.deepEqual(
        parse(readFileSync(`${STACK_DIR}/short_term_store/conf/exporter/${file}.yml`, 'utf8')),
        [],
        `${file}.yml ships as an empty list`,
      );
    }
  });
});

/** short_term_store/start.sh and stop.sh on the real store binary, with an exporter the store scrapes. */
describe('short_term_store start.sh / stop.sh', () => {
  let tree: InstallTree;
  let shortPort: number;
  let longPort: number;
  let exporter: Server;
  let exporterPort: number;
  const requests: string[] = [];

  before(async () => {
    tree = installTree(await tempDir('cachemon-install-'), ['short_term_store']);
    [shortPort, longPort, exporterPort] = [await freePort(), await freePort(), await freePort()];
    tree.edit('short_term_store/short.env', '0.0.0.0:8428', `127.0.0.1:${shortPort}`);
    tree.edit('short_term_store/long.env', '0.0.0.0:8429', `127.0.0.1:${longPort}`);
    tree.edit('short_term_store/conf/scrape.yml', '127.0.0.1:8428', `127.0.0.1:${shortPort}`);
    tree.edit('short_term_store/conf/scrape.yml', '127.0.0.1:8429', `127.0.0.1:${longPort}`);
    // The 1m jobs scrape every 5 s here so the test sees them within seconds (their shipped form is checked above).
    tree.edit(
      'short_term_store/conf/scrape.yml',
      /scrape_interval: 1m\n {4}scrape_timeout: 50s/g,
      'scrape_interval: 5s\n    scrape_timeout: 4s',
    );
    // Extra flags in one env file are that store's only.
    appendFileSync(tree.path('short_term_store/short.env'), 'TS_EXTRA_FLAGS=-search.latencyOffset=1s\n');
    // One process answering as a cache, coordination and host exporter at once.
    exporter = createServer((req, res) => {
      requests.push(req.url ?? '');
      res.setHeader('Content-Type', 'text/plain; version=0.0.4');
      if (req.url === '/metrics/prefixes') res.end('arcus_prefix_items{prefix="user"} 7\n');
      else res.end('arcus_up{node="10.0.0.1:11211"} 1\nzk_up{zk_host="10.0.0.5:2181"} 1\nnode_load1 0.5\n');
    });
    await new Promise<void>((resolve) => exporter.listen(exporterPort, '127.0.0.1', resolve));
  });

  after(async () => {
    tree?.run('short_term_store', 'stop.sh');
    exporter?.close();
  });

  test('start.sh starts both stores from their env files; the short one scrapes the targets the files name, after a reload', async () => {
    const started = tree.run('short_term_store', 'start.sh');
    assert.equal(started.status, 0, started.stderr);
    assert.match(started.stdout, /store short: started \(pid \d+\)/);
    assert.match(started.stdout, /store long: started \(pid \d+\)/);
    assert.match(started.stdout, /store short: notice: this store has no stream aggregation/);
    for (const port of [shortPort, longPort])
      await eventually(async () => assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200));
    const args = (role: string) =>
      readFileSync(
        `/proc/${readFileSync(tree.path(`short_term_store/run/${role}.pid`), 'utf8').trim()}/cmdline`,
        'utf8',
      ).split('\0');
    assert.ok(args('short').includes('-search.latencyOffset=1s'), args('short').join(' '));
    for (const role of ['short', 'long'])
      assert.ok(args(role).includes('-search.maxQueryLen=65536'), args(role).join(' '));
    assert.ok(!args('long').some((arg) => arg.startsWith('-search.latencyOffset')), args('long').join(' '));

    const target = `127.0.0.1:${exporterPort}`;
    writeFileSync(tree.path('short_term_store/conf/exporter/cache_exporter.yml'), `- targets: ["${target}"]\n`);
    writeFileSync(
      tree.path('short_term_store/conf/exporter/coordination_exporter.yml'),
      `- targets: ["${target}"]\n  labels:\n    ensemble: zk1\n`,
    );
    writeFileSync(
      tree.path('short_term_store/conf/exporter/host_exporter.yml'),
      `- targets: ["${target}"]\n  labels:\n    group: host\n`,
    );
    assert.equal((await fetch(`http://127.0.0.1:${shortPort}/-/reload`, { method: 'POST' })).ok, true);
    await eventually(
      async () => {
        const jobs = (await queryStore(shortPort, 'arcus_up'))
          .map(
            (s) => `${s.metric['job']}/${s.metric['scrape']}/${s.metric['ensemble'] ?? ''}/${s.metric['group'] ?? ''}`,
          )
          .sort();
        assert.deepEqual(jobs, ['arcus/short//', 'system_resource/short//host', 'zookeeper/short/zk1/']);
        assert.deepEqual(
          (await queryStore(shortPort, 'arcus_prefix_items')).map((s) => `${s.metric['job']}/${s.metric['scrape']}`),
          ['arcus_prefixes/short'],
        );
      },
      { timeoutMs: 40_000, intervalMs: 500 },
    );
    assert.ok(requests.includes('/metrics/prefixes'));
    assert.deepEqual(await queryStore(longPort, 'arcus_up'), [], 'the long-term store scrapes nothing');
  });

  test('a store restart loses no stored data', async () => {
    const before = await queryStore(shortPort, 'count_over_time(arcus_up{job="arcus"}[1h])');
    assert.equal(before.length, 1);
    const stopped = tree.run('short_term_store', 'stop.sh', ['short']);
    assert.equal(stopped.status, 0, stopped.stderr);
    assert.match(stopped.stdout, /store short: stopped/);
    const restarted = tree.run('short_term_store', 'start.sh', ['short']);
    assert.equal(restarted.status, 0, restarted.stderr);
    await eventually(async () => assert.equal((await fetch(`http://127.0.0.1:${shortPort}/health`)).status, 200));
    const after = await queryStore(shortPort, 'count_over_time(arcus_up{job="arcus"}[1h])');
    assert.ok(
      Number(after[0]?.value[1]) >= Number(before[0]!.value[1]),
      `samples before ${before[0]!.value[1]}, after ${after[0]?.value[1]}`,
    );
  });

  test('a taken port, a bad retention or a second start is a clear error and starts nothing more', async () => {
    const again = tree.run('short_term_store', 'start.sh', ['short']);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /store short: already running/);

    const taken = tree.run('short_term_store', 'stop.sh', ['long']);
    assert.equal(taken.status, 0);
    tree.edit('short_term_store/long.env', `127.0.0.1:${longPort}`, `127.0.0.1:${exporterPort}`);
    const refused = tree.run('short_term_store', 'start.sh', ['long']);
    assert.equal(refused.status, 1);
    assert.match(
      refused.stderr,
      new RegExp(
        `store long: 127\\.0\\.0\\.1:${exporterPort} is already in use by another process; change TS_LISTEN_ADDRESS in .*long\\.env`,
      ),
    );
    tree.edit('short_term_store/long.env', `127.0.0.1:${exporterPort}`, `127.0.0.1:${longPort}`);

    tree.edit('short_term_store/long.env', 'TS_RETENTION_PERIOD=2y', 'TS_RETENTION_PERIOD=30m');
    const bad = tree.run('short_term_store', 'start.sh', ['long']);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /TS_RETENTION_PERIOD=30m: a number with unit y, w, d or h/);
    tree.edit('short_term_store/long.env', 'TS_RETENTION_PERIOD=30m', 'TS_RETENTION_PERIOD=2y');
    tree.edit('short_term_store/long.env', 'TS_SEARCH_MAX_QUERY_LEN=65536', 'TS_SEARCH_MAX_QUERY_LEN=64k');
    const badLength = tree.run('short_term_store', 'start.sh', ['long']);
    assert.equal(badLength.status, 1);
    assert.match(badLength.stderr, /long\.env: TS_SEARCH_MAX_QUERY_LEN=64k: a whole number of characters/);
    tree.edit('short_term_store/long.env', 'TS_SEARCH_MAX_QUERY_LEN=64k', 'TS_SEARCH_MAX_QUERY_LEN=65536');
    assert.equal(tree.run('short_term_store', 'start.sh', ['long']).status, 0);
    assert.equal(tree.run('short_term_store', 'start.sh', ['medium']).status, 2);
  });
});
