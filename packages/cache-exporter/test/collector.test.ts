import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CacheNode } from '@cachemon/arcus';
import { createServer, type AddressInfo } from 'node:net';
import { ExpositionWriter } from '@cachemon/core';
import { ArcusDouble, eventually } from '@cachemon/testkit';
import { CacheCollector, CollectionDeadline } from '../src/collector.js';
import type { CollectorLogger } from '../src/collector.js';
import { NodeMetricsRenderer } from '../src/index.js';
import { PrefixAggregator } from '../src/metrics/prefixes.js';
import type { NodeSnapshot } from '../src/index.js';

const silent: CollectorLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined };
const doubles: ArcusDouble[] = [];
const collectors: CacheCollector[] = [];
after(async () => {
  for (const collector of collectors) collector.close();
  for (const double of doubles) await double.stop();
});

interface Setup {
  readonly double: ArcusDouble;
  /** One collection of the node; `onStats` is called when its `stats` reply has been rendered. */
  readonly collect: (deadline: CollectionDeadline, onStats?: () => void) => Promise<NodeSnapshot>;
}

async function setup(auxRefreshMs: number, logger: CollectorLogger = silent): Promise<Setup> {
  const double = await ArcusDouble.start();
  doubles.push(double);
  const node: CacheNode = { serviceCode: 'test', node: double.address, hostname: 'cache-1', live: true, mapped: true };
  const collector = new CacheCollector({ logger, auxRefreshMs });
  collectors.push(collector);
  const renderer = new NodeMetricsRenderer('zk1');
  const collect = async (deadline: CollectionDeadline, onStats?: () => void): Promise<NodeSnapshot> => {
    const [snapshot] = await collector.collectStats([node], deadline, (n, reply) => {
      const stats = renderer.acceptStats(n, reply);
      onStats?.();
      return stats;
    });
    return snapshot!;
  };
  return { double, collect };
}

/** A collection started, and when the node's `stats` reply is in (what comes after it may hang). */
async function collectPastStats(
  collect: Setup['collect'],
  deadline: CollectionDeadline,
): Promise<{ result: Promise<NodeSnapshot> }> {
  let statsIn!: () => void;
  const statsArrived = new Promise<void>((resolve) => (statsIn = resolve));
  const result = collect(deadline, () => statsIn());
  await statsArrived;
  return { result };
}

const setting = (snapshot: NodeSnapshot | undefined, name: string): string | undefined =>
  snapshot?.settings?.find(([key]) => key === name)?.[1];

/** Collections until the node is up again (a connection that timed out backs off for at least 500 ms). */
function collectUntilUp(collect: Setup['collect']): Promise<NodeSnapshot> {
  return eventually(async () => {
    const snapshot = await collect(new CollectionDeadline(Date.now() + 1000));
    assert.equal(snapshot.up, true, `reported ${snapshot.reason ?? 'up'}`);
    return snapshot;
  });
}

describe('CacheCollector: stats settings read with stats', () => {
  test('a collection ended early by a joining scrape reports a node that answered stats up, with the settings it had', async () => {
    // auxRefreshMs 0: `stats settings` and `stats zookeeper` are asked in every collection.
    const { double, collect } = await setup(0);
    const first = await collect(new CollectionDeadline(Date.now() + 2000));
    assert.equal(first.up, true);
    assert.equal(setting(first, 'max_stats_prefixes'), '50', 'the settings were read');

    double.setBehavior('hang-stats-settings');
    const deadline = new CollectionDeadline(Date.now() + 10_000);
    const collecting = await collectPastStats(collect, deadline); // `stats settings` never comes
    const started = performance.now();
    deadline.bringForward(Date.now());
    const second = await collecting.result;
    assert.ok(performance.now() - started < 1000, 'ended when brought forward, not at the first deadline');
    assert.equal(second.up, true, `reported ${second.reason ?? 'up'}`);
    assert.ok(second.stats !== undefined, 'with its stats');
    assert.deepEqual(second.settings, first.settings, 'with the settings it had');
  });

  test('settings that time out keep the ones the node had', async () => {
    const { double, collect } = await setup(0);
    const first = await collect(new CollectionDeadline(Date.now() + 2000));
    assert.equal(setting(first, 'max_stats_prefixes'), '50');

    double.setBehavior('hang-stats-settings');
    const second = await collect(new CollectionDeadline(Date.now() + 300));
    assert.equal(second.up, true, `reported ${second.reason ?? 'up'}`);
    assert.deepEqual(second.settings, first.settings, 'the settings it had, not none');

    double.setBehavior('normal');
    const third = await collectUntilUp(collect);
    assert.equal(third?.up, true);
    assert.equal(setting(third, 'max_stats_prefixes'), '50');
  });

  test('settings that time out after their collection ended do not log a node down since then as answering again', async () => {
    const logged: string[] = [];
    const logger: CollectorLogger = {
      debug: () => undefined,
      info: (_, msg) => logged.push(msg),
      warn: (_, msg) => logged.push(msg),
    };
    const { double, collect } = await setup(0, logger);
    assert.equal((await collect(new CollectionDeadline(Date.now() + 2000))).up, true);

    double.setBehavior('hang-stats-settings');
    const early = new CollectionDeadline(Date.now() + 500);
    const ended = await collectPastStats(collect, early);
    early.bringForward(Date.now());
    assert.equal((await ended.result).up, true);
    // The next collection's `stats` waits behind the hung `stats settings`; when that times out
    // (the first collection's deadline), the connection fails and takes the next request with it.
    const next = await collect(new CollectionDeadline(Date.now() + 3000));
    assert.equal(next.up, false);
    assert.equal(next.reason, 'timeout');
    // The first collection's settings failed with that connection, in the same turn: once that
    // turn's promise callbacks have run, whatever they log has been logged.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(logged, ['cache node is down']);
  });

  test('a settings read that timed out is asked again at the next scrape, not a refresh interval later', async () => {
    // A refresh interval far beyond the test: only a retry reads the settings again.
    const { double, collect } = await setup(1e9);
    double.setBehavior('hang-stats-settings');
    const first = await collect(new CollectionDeadline(Date.now() + 300));
    assert.equal(first.up, true, `reported ${first.reason ?? 'up'}`);
    assert.equal(setting(first, 'max_stats_prefixes'), undefined, 'no settings yet');

    double.setBehavior('normal');
    const again = await collectUntilUp(collect);
    assert.equal(again?.up, true);
    assert.equal(setting(again, 'max_stats_prefixes'), '50', 'read again');
  });
});

describe('prefix statistics of a node that left the topology', () => {
  test('it is not connected to; the nodes still in it are read', async () => {
    const double = await ArcusDouble.start();
    doubles.push(double);
    double.populate([{ key: 'kept:k1' }]);
    let accepted = 0;
    const left = createServer((socket) => {
      accepted++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => left.listen(0, '127.0.0.1', resolve));
    try {
      const stays: CacheNode = {
        serviceCode: 'test',
        node: double.address,
        hostname: 'cache-1',
        live: true,
        mapped: true,
      };
      const gone: CacheNode = {
        ...stays,
        node: `127.0.0.1:${(left.address() as AddressInfo).port}`,
        hostname: 'cache-2',
      };
      const collector = new CacheCollector({ logger: silent });
      collectors.push(collector);
      // The topology changed after the scrape took its node list: `gone` is no longer in it.
      collector.retain([stays]);
      const aggregator = new PrefixAggregator();
      const sums = aggregator.newSums();
      await collector.collectPrefixes(
        [stays, gone],
        () => ({ kind: 'all' }),
        new CollectionDeadline(Date.now() + 2000),
        sums,
      );
      assert.equal(accepted, 0, 'no connection to the node that left');
      const writer = new ExpositionWriter();
      aggregator.render('zk1', sums, writer);
      const text = writer.toString();
      assert.match(text, /^arcus_prefix_nodes\{[^}]*state="ok"[^}]*\} 1$/m);
      assert.match(text, /^arcus_prefix_items\{[^}]*prefix="kept"[^}]*\} 1$/m);
    } finally {
      left.close();
    }
  });
});
