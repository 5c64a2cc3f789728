import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CacheNode } from '@cachemon/arcus';
import { setTimeout as sleep } from 'node:timers/promises';
import { ArcusDouble } from '@cachemon/testkit';
import { CacheCollector, CollectionDeadline } from '../src/collector.js';
import { NodeMetricsRenderer } from '../src/index.js';
import type { NodeSnapshot } from '../src/index.js';

const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined };
const doubles: ArcusDouble[] = [];
const collectors: CacheCollector[] = [];
after(async () => {
  for (const collector of collectors) collector.close();
  for (const double of doubles) await double.stop();
});

async function setup(): Promise<{ double: ArcusDouble; node: CacheNode; collector: CacheCollector; collect: (deadline: CollectionDeadline) => Promise<NodeSnapshot> }> {
  const double = await ArcusDouble.start();
  doubles.push(double);
  const node: CacheNode = { serviceCode: 'test', node: double.address, hostname: 'cache-1', live: true, mapped: true };
  // auxRefreshMs 0: `stats settings` and `stats zookeeper` are asked in every collection.
  const collector = new CacheCollector({ logger: silent, auxRefreshMs: 0 });
  collectors.push(collector);
  const renderer = new NodeMetricsRenderer('zk1');
  const collect = async (deadline: CollectionDeadline): Promise<NodeSnapshot> => {
    renderer.beginCollection(false);
    const [snapshot] = await collector.collectStats([node], deadline, (n, reply) => renderer.acceptStats(n, reply));
    return snapshot!;
  };
  return { double, node, collector, collect };
}

const setting = (snapshot: NodeSnapshot, name: string): string | undefined => snapshot.settings?.find(([key]) => key === name)?.[1];

describe('CacheCollector: stats settings read with stats', () => {
  test('a collection ended early by a joining scrape reports a node that answered stats up, with the settings it had', async () => {
    const { double, collect } = await setup();
    const first = await collect(new CollectionDeadline(Date.now() + 2000));
    assert.equal(first.up, true);
    assert.equal(setting(first, 'max_stats_prefixes'), '50', 'the settings were read');

    double.setBehavior('hang-stats-settings');
    const deadline = new CollectionDeadline(Date.now() + 10_000);
    const collecting = collect(deadline);
    await sleep(200); // `stats` is answered by now; `stats settings` never will be
    const started = performance.now();
    deadline.bringForward(Date.now());
    const second = await collecting;
    assert.ok(performance.now() - started < 1000, 'ended when brought forward, not at the first deadline');
    assert.equal(second.up, true, `reported ${second.reason ?? 'up'}`);
    assert.ok(second.stats !== undefined, 'with its stats');
    assert.deepEqual(second.settings, first.settings, 'with the settings it had');
  });

  test('settings that time out keep the ones the node had, and are read again once it answers', async () => {
    const { double, collect } = await setup();
    const first = await collect(new CollectionDeadline(Date.now() + 2000));
    assert.equal(setting(first, 'max_stats_prefixes'), '50');

    double.setBehavior('hang-stats-settings');
    const second = await collect(new CollectionDeadline(Date.now() + 300));
    assert.equal(second.up, true, `reported ${second.reason ?? 'up'}`);
    assert.deepEqual(second.settings, first.settings, 'the settings it had, not none');

    double.setBehavior('normal');
    // The timed-out connection is closed and retried after its backoff (at least 500 ms).
    let third: NodeSnapshot | undefined;
    for (let attempt = 0; attempt < 20 && third?.up !== true; attempt++) {
      await sleep(200);
      third = await collect(new CollectionDeadline(Date.now() + 1000));
    }
    assert.equal(third?.up, true);
    assert.equal(setting(third!, 'max_stats_prefixes'), '50');
  });
});
