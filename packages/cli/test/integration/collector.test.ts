import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ArcusDouble, ArcusZk, eventually, freePort, startZooKeeper, tempDir } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { cachemon, configureTree, freeStackPorts, installStack, STACK_DIR, withoutEnsemble } from '@cachemon/stack';
import type { StackPorts } from '@cachemon/stack';
import { readJsonc, Tree } from '../../src/tree.js';

const portFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/** The first of n free consecutive loopback ports: shard i listens on the collector's port + i. */
async function consecutiveFreePorts(n: number): Promise<number> {
  for (;;) {
    const first = await freePort();
    if (first + n - 1 > 65535) continue;
    let free = true;
    for (let i = 1; i < n && free; i++) free = await portFree(first + i);
    if (free) return first;
  }
}

interface Row {
  id: string;
  component: string;
  instance: string;
  pid: number | null;
  address: string;
  healthy: boolean;
  problem: string;
  version: string;
  config: string;
  targets?: Array<{ job: string; up: number; down: number }>;
}

/** The targets each address scrapes, as `job instance`. */
async function targetsOf(address: string): Promise<string[]> {
  const body = (await (await fetch(`http://${address}/api/v1/targets`)).json()) as {
    data: { activeTargets: Array<{ labels: Record<string, string> }> };
  };
  return body.data.activeTargets.map((t) => `${t.labels['job']} ${t.labels['instance']}`).sort();
}

const pidOf = (dir: string, shard: number) =>
  readFileSync(join(dir, `collector/run/shard-${shard}.pid`), 'utf8').trim();

/**
 * A tree installed with STORE_SHARDS=2: cachemon starts, checks and stops the collector's two real
 * vmagent shards with the short-term store, and an ensemble added is reloaded in and verified by
 * the shards, which scrape in the store's place.
 */
describe('cachemon with the collector: two shards', () => {
  let dir: string;
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let node: ArcusDouble;
  const port: Record<string, number> = {};
  const shard = (i: number) => `127.0.0.1:${port['shard0']! + i}`;

  before(async () => {
    dir = await tempDir('cachemon-collector-');
    installStack(dir, { STORE_SHARDS: '2' });
    Object.assign(port, await freeStackPorts());
    port['shard0'] = await consecutiveFreePorts(2);
    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    await arcus.createServiceCode('svc-x');
    node = await ArcusDouble.start();
    await arcus.mapServer(node.address, 'svc-x');
    await node.register(arcus, { hostname: 'localhost' });
    configureTree(dir, {
      ports: port as unknown as StackPorts,
      host: '127.0.0.1',
      ensemble: 'zk1',
      zkServers: [zk.address],
      cacheHostname: 'localhost',
      webhookUrl: 'http://127.0.0.1:9/',
      fast: true,
    });
    withoutEnsemble(dir, 'zk1', STACK_DIR);
    const env = join(dir, 'collector/collector.env');
    const text = readFileSync(env, 'utf8');
    assert.match(text, /^STORE_SHARDS=2$/m);
    writeFileSync(env, text.replace('0.0.0.0:8440', `127.0.0.1:${port['shard0']}`));
  });

  after(async () => {
    if (dir) await cachemon(dir, ['stop']);
    await node?.stop();
    await arcus?.close();
    await zk?.stop();
  });

  test('the tree has one collector instance per shard, after the store; the store scrapes nothing itself', async () => {
    const instances = await new Tree(dir).instances();
    const ids = instances.map((i) => i.id);
    assert.deepEqual(
      ids.filter((id) => /^(short_term_store|collector)/.test(id)),
      ['short_term_store:short', 'short_term_store:long', 'collector:0', 'collector:1'],
    );
    const shards = instances.filter((i) => i.component === 'collector');
    assert.deepEqual(
      shards.map((i) => [i.listen, i.pidfile, i.startArgs]),
      [0, 1].map((i) => [shard(i), join(dir, `collector/run/shard-${i}.pid`), [String(i)]]),
    );
    assert.deepEqual(instances.find((i) => i.id === 'short_term_store:short')!.reloadable, []);
  });

  test('start starts the shards after the store; status shows each healthy with its version and targets', async () => {
    const started = await cachemon(dir, ['start', 'collector', 'short_term_store', 'topology_provider']);
    assert.equal(started.status, 0, started.stdout + started.stderr);
    const order = started.stdout.split('\n').map((l) => l.split(':').slice(0, 2).join(':'));
    assert.ok(
      order.indexOf('short_term_store:short') < order.indexOf('collector:0') &&
        order.indexOf('collector:0') < order.indexOf('collector:1'),
      started.stdout,
    );
    assert.match(
      started.stdout,
      new RegExp(`collector:1: collector shard 1: started \\(pid \\d+\\), listening on ${shard(1)}`),
    );

    const status = await eventually(async () => {
      const result = await cachemon(dir, ['status', '--json', 'collector', 'short_term_store:short']);
      const rows = (JSON.parse(result.stdout) as { instances: Row[] }).instances;
      for (const r of rows) assert.ok(r.healthy, `${r.id}: ${r.problem}`);
      return rows;
    });
    const [store, ...shards] = status;
    assert.equal(store!.id, 'short_term_store:short');
    assert.equal(store!.targets, undefined, "the store's own scrape targets are none to show");
    assert.deepEqual(
      shards.map((r) => [r.id, r.instance, r.address, r.pid, r.config]),
      [0, 1].map((i) => [`collector:${i}`, String(i), shard(i), Number(pidOf(dir, i)), 'loaded']),
    );
    for (const r of shards) {
      assert.match(r.version, /^\d+\.\d+\.\d+/, `${r.id} version`);
      // The store's own jobs, split between the shards: together both meta jobs.
      assert.ok(r.targets, `${r.id} has targets`);
    }
    assert.deepEqual(shards.flatMap((r) => r.targets!.map((t) => t.job)).sort(), ['meta-long', 'meta-short'].sort());

    const text = await cachemon(dir, ['status', 'collector']);
    for (const i of [0, 1])
      assert.match(text.stdout, new RegExp(`^collector +${i} +${pidOf(dir, i)} +${shard(i)} +healthy +\\d`, 'm'));
  });

  test('ensemble add reloads every shard and verifies the union of their targets', async () => {
    const args = ['ensemble', 'add', 'zk1', '--servers', zk.address, '--listen-host', '127.0.0.1', '--wait', '60'];
    const planned = await cachemon(dir, [...args, '--dry-run', '--json']);
    assert.equal(planned.status, 0, planned.stderr);
    const actions = (JSON.parse(planned.stdout) as { actions: string[] }).actions;
    for (const i of [0, 1]) assert.ok(actions.includes(`POST http://${shard(i)}/-/reload`), actions.join('\n'));
    assert.ok(!actions.includes(`POST http://127.0.0.1:${port['short']}/-/reload`), actions.join('\n'));

    const added = await cachemon(dir, args);
    assert.equal(added.status, 0, added.stdout + added.stderr);
    const union = [...(await targetsOf(shard(0))), ...(await targetsOf(shard(1)))];
    const cacheListen = readJsonc(join(dir, 'cache_exporter/conf/zk1.json'))['listen'];
    assert.ok(union.includes(`arcus ${String(cacheListen)}`), union.join('\n'));
    assert.ok(
      union.some((t) => t.startsWith('zookeeper 127.0.0.1:')),
      union.join('\n'),
    );
    assert.deepEqual(await targetsOf(`127.0.0.1:${port['short']}`), []);

    const listed = await cachemon(dir, ['ensemble', 'list', '--json']);
    const rows = JSON.parse(listed.stdout) as Array<{ name: string; cacheExporter: { scraped: string } }>;
    assert.doesNotMatch(rows.find((r) => r.name === 'zk1')!.cacheExporter.scraped, /not/);
  });

  test('restart and stop take the shards down before the store', async () => {
    const before = [pidOf(dir, 0), pidOf(dir, 1)];
    const restarted = await cachemon(dir, ['restart', 'collector']);
    assert.equal(restarted.status, 0, restarted.stdout + restarted.stderr);
    assert.notDeepEqual([pidOf(dir, 0), pidOf(dir, 1)], before);

    const stopped = await cachemon(dir, ['stop', 'short_term_store', 'collector']);
    assert.equal(stopped.status, 0, stopped.stdout + stopped.stderr);
    const order = stopped.stdout.split('\n').map((l) => l.split(':').slice(0, 2).join(':'));
    assert.ok(order.indexOf('collector:0') < order.indexOf('short_term_store:short'), stopped.stdout);
    for (const i of [0, 1]) assert.equal(existsSync(join(dir, `collector/run/shard-${i}.pid`)), false);
    const status = await cachemon(dir, ['status', '--json', 'collector']);
    assert.deepEqual(
      (JSON.parse(status.stdout) as { instances: Row[] }).instances.map((r) => [r.id, r.problem]),
      [
        ['collector:0', 'not running'],
        ['collector:1', 'not running'],
      ],
    );
  });
});

describe('cachemon without shards (STORE_SHARDS=1)', () => {
  test('the collector has no instances and the store keeps its scrape config', async () => {
    const dir = await tempDir('cachemon-no-collector-');
    installStack(dir);
    assert.ok(existsSync(join(dir, 'collector/start.sh')));
    const instances = await new Tree(dir).instances();
    assert.deepEqual(
      instances.filter((i) => i.component === 'collector'),
      [],
    );
    assert.deepEqual(instances.find((i) => i.id === 'short_term_store:short')!.reloadable, [
      join(dir, 'short_term_store/conf/scrape.yml'),
    ]);
  });
});
