import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ArcusDouble, ArcusZk, startMemcached, startZooKeeper } from '@cachemon/testkit';
import type { Memcached, NodeRegistration, Sample, ZooKeeperServer } from '@cachemon/testkit';
import { eventually, select, startExporter, valueOf } from './support/exporter.js';
import type { RunningExporter, ScrapeResult } from './support/exporter.js';

/**
 * The exporter as operators run it (bin/cache-exporter and a config file) against a real
 * ZooKeeper holding the ARCUS layout, with ARCUS test doubles and a real memcached registered
 * as nodes.
 */
describe('cache exporter discovery and collection', () => {
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let doubleA: ArcusDouble;
  let doubleB: ArcusDouble;
  let memcached: Memcached;
  let memcachedRegistration: NodeRegistration;
  let exporter: RunningExporter;

  before(async () => {
    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    await arcus.createServiceCode('test');
    await arcus.createServiceCode('demo');
    doubleA = await ArcusDouble.start();
    doubleB = await ArcusDouble.start();
    memcached = await startMemcached();
    await arcus.mapServer(doubleA.address, 'test');
    await arcus.mapServer(doubleB.address, 'demo');
    await arcus.mapServer(memcached.address, 'test');
    await doubleA.register(arcus);
    await doubleB.register(arcus);
    memcachedRegistration = await arcus.registerNode(memcached.address, 'test');
    doubleA.populate([{ key: 'app:k1' }, { key: 'app:list', type: 'list' }, { key: 'user:k2' }, { key: 'nokey' }]);
    // A real server's first heartbeat (set arcus:zk-ping) comes one period after it registers.
    doubleA.heartbeat();
    exporter = await startExporter({ ensembleByName: { zk1: [zk.address] } });
  });

  after(async () => {
    await exporter?.stop();
    await memcachedRegistration?.unregister();
    await doubleA?.stop();
    await doubleB?.stop();
    await memcached?.stop();
    await arcus?.close();
    await zk?.stop();
  });

  test('every registered node of every service code is collected with its labels', async () => {
    const { samples } = await exporter.scrape();
    const up = select(samples, 'arcus_up');
    assert.deepEqual(
      up
        .map((s) => [s.labels['service_code'], s.labels['node'], s.labels['hostname'], s.labels['ensemble'], s.value])
        .sort(),
      [
        ['demo', doubleB.address, 'localhost', 'zk1', 1],
        ['test', doubleA.address, 'localhost', 'zk1', 1],
        ['test', memcached.address, 'localhost', 'zk1', 1],
      ].sort(),
    );
    for (const s of samples) {
      assert.equal(s.labels['job'], undefined);
      assert.equal(s.labels['instance'], undefined);
    }
    // The double counts real commands: the exporter's own stats requests included.
    assert.ok((valueOf(samples, 'arcus_commands_total', { node: doubleA.address, command: 'get' }) ?? -1) >= 0);
    assert.equal(valueOf(samples, 'arcus_items', { node: doubleA.address }), 4 + 1 /* heartbeat key */);
    assert.equal(valueOf(samples, 'arcus_version_info', { node: doubleA.address, version: '1.15.0' }), 1);
    assert.ok((valueOf(samples, 'arcus_commands_total', { node: memcached.address, command: 'get' }) ?? -1) >= 0);
    assert.equal(valueOf(samples, 'arcus_zookeeper_connected', { node: doubleA.address }), 1);
    assert.equal(valueOf(samples, 'cachemon_zookeeper_connected', { ensemble: 'zk1' }), 1);
    assert.equal(valueOf(samples, 'cachemon_topology_nodes', { state: 'live', ensemble: 'zk1' }), 3);
  });

  test('kv QoS probes are measured for every live node', async () => {
    const samples = await eventually(async () => {
      const { samples } = await exporter.scrape();
      for (const node of [doubleA.address, memcached.address]) {
        assert.equal(valueOf(samples, 'arcus_qos_success', { node, probe: 'kv_set' }), 1, node);
        assert.equal(valueOf(samples, 'arcus_qos_success', { node, probe: 'kv_get' }), 1, node);
      }
      return samples;
    });
    const latency = valueOf(samples, 'arcus_qos_latency_seconds', { node: doubleA.address, probe: 'kv_get' })!;
    assert.ok(latency > 0 && latency < 1, `latency ${latency}`);
    assert.equal(
      select(samples, 'arcus_qos_success', { probe: 'lop_insert' }).length,
      0,
      'simpleQos defaults to kv only',
    );
  });

  test('a node that joins is collected and one that leaves is dropped, without restart', async () => {
    const joiner = await ArcusDouble.start();
    try {
      await arcus.mapServer(joiner.address, 'demo');
      const registration = await joiner.register(arcus);
      await eventually(async () => {
        const { samples } = await exporter.scrape();
        assert.equal(valueOf(samples, 'arcus_up', { node: joiner.address, service_code: 'demo' }), 1);
      });
      await registration.unregister();
      await arcus.unmapServer(joiner.address);
      await eventually(async () => {
        const { samples } = await exporter.scrape();
        assert.equal(select(samples, 'arcus_up', { node: joiner.address }).length, 0);
      });
    } finally {
      await joiner.stop();
    }
  });

  test('a mapped node with no live registration is reported down', async () => {
    await memcachedRegistration.unregister();
    await eventually(async () => {
      const { samples } = await exporter.scrape();
      assert.equal(valueOf(samples, 'arcus_up', { node: memcached.address }), 0);
      assert.equal(valueOf(samples, 'arcus_node_registered', { node: memcached.address }), 0);
      assert.equal(
        valueOf(samples, 'arcus_node_last_error_info', { node: memcached.address, reason: 'not_registered' }),
        1,
      );
      // The hostname it registered with is kept, so the series keeps its identity.
      assert.equal(select(samples, 'arcus_up', { node: memcached.address })[0]?.labels['hostname'], 'localhost');
    });
    memcachedRegistration = await arcus.registerNode(memcached.address, 'test');
    await eventually(async () => {
      const { samples } = await exporter.scrape();
      assert.equal(valueOf(samples, 'arcus_up', { node: memcached.address }), 1);
    });
  });

  /** Until doubleB is up again: a node that failed moments ago is reported down without being asked. */
  const doubleBUp = () =>
    eventually(async () => {
      const { samples } = await exporter.scrape();
      assert.equal(valueOf(samples, 'arcus_up', { node: doubleB.address }), 1);
    });

  test('a hung node costs only its own arcus_up and the scrape keeps its deadline', async () => {
    doubleB.setBehavior('hang');
    try {
      const { samples, ms } = await exporter.scrape('/metrics', { 'X-Prometheus-Scrape-Timeout-Seconds': '1' });
      assert.ok(ms < 1500, `scrape took ${ms} ms with a 1 s scrape timeout`);
      assert.equal(valueOf(samples, 'arcus_up', { node: doubleB.address }), 0);
      assert.equal(valueOf(samples, 'arcus_node_last_error_info', { node: doubleB.address, reason: 'timeout' }), 1);
      assert.equal(valueOf(samples, 'arcus_up', { node: doubleA.address }), 1);
      assert.equal(valueOf(samples, 'arcus_up', { node: memcached.address }), 1);
    } finally {
      doubleB.setBehavior('normal');
    }
    await doubleBUp();
  });

  test('concurrent scrapes share one collection, gzipped or not, whichever form the first one asked for', async () => {
    const sharedOf = (samples: Sample[]): number =>
      select(samples, 'cachemon_scrapes_shared_total', { path: '/metrics' })[0]?.value ?? 0;
    let shared = sharedOf((await exporter.scrape('/metrics')).samples);
    doubleB.setBehavior('hang');
    try {
      for (const first of ['gzip', 'identity']) {
        const encodings = first === 'gzip' ? ['gzip', 'identity', 'gzip'] : ['identity', 'gzip', 'identity'];
        const results = await Promise.all(
          encodings.map((encoding) =>
            exporter.scrape('/metrics', { 'X-Prometheus-Scrape-Timeout-Seconds': '1', 'Accept-Encoding': encoding }),
          ),
        );
        assert.deepEqual(
          results.map((r) => r.encoding ?? 'identity'),
          encodings,
        );
        for (const r of results) {
          assert.equal(valueOf(r.samples, 'arcus_up', { node: doubleA.address }), 1);
          assert.equal(r.text, results[0]!.text, 'one collection, one body');
        }
        // The body is rendered once the three have joined: it counts the two that joined.
        const now = sharedOf(results[0]!.samples);
        assert.equal(now - shared, 2, "two scrapes joined the first one's collection");
        shared = now;
      }
    } finally {
      doubleB.setBehavior('normal');
    }
  });

  /**
   * A scrape of `path` with a 10 s timeout, then one with 1 s that joins its collection: the
   * joined one is answered by its own deadline, and both get the one body. Returns the joined one.
   */
  const joinedScrape = async (path: string): Promise<ScrapeResult> => {
    const asked = doubleB.statsRequests;
    const long = exporter.scrape(path, { 'X-Prometheus-Scrape-Timeout-Seconds': '10' });
    // The long scrape's collection has reached the hung node: the short one joins it.
    await eventually(() => assert.ok(doubleB.statsRequests > asked), { intervalMs: 10 });
    const short = await exporter.scrape(path, { 'X-Prometheus-Scrape-Timeout-Seconds': '1' });
    assert.ok(short.ms < 1500, `the joined scrape took ${short.ms} ms with a 1 s scrape timeout`);
    assert.equal((await long).text, short.text, 'one collection, one body');
    return short;
  };

  test('a scrape that joins a collection with a later deadline is answered by its own deadline', async () => {
    await doubleBUp();
    const sharedOf = (samples: Sample[]): number =>
      select(samples, 'cachemon_scrapes_shared_total', { path: '/metrics' })[0]?.value ?? 0;
    const shared = sharedOf((await exporter.scrape('/metrics')).samples);
    doubleB.setBehavior('hang');
    try {
      const short = await joinedScrape('/metrics');
      assert.equal(valueOf(short.samples, 'arcus_up', { node: doubleB.address }), 0);
      assert.equal(
        valueOf(short.samples, 'arcus_node_last_error_info', { node: doubleB.address, reason: 'timeout' }),
        1,
      );
      assert.equal(valueOf(short.samples, 'arcus_up', { node: doubleA.address }), 1);
      assert.equal(sharedOf(short.samples) - shared, 1, "the short scrape joined the long one's collection");
    } finally {
      doubleB.setBehavior('normal');
    }
    await doubleBUp();
  });

  test('the same for /metrics/prefixes: the hung node is failed in the body the joined scrape gets by its deadline', async () => {
    await doubleBUp();
    doubleB.setBehavior('hang');
    try {
      const short = await joinedScrape('/metrics/prefixes');
      // doubleB is the node of service code demo; test's nodes answer
      assert.equal(valueOf(short.samples, 'arcus_prefix_nodes', { service_code: 'demo', state: 'failed' }), 1);
      assert.equal(valueOf(short.samples, 'arcus_prefix_nodes', { service_code: 'test', state: 'ok' }), 2);
    } finally {
      doubleB.setBehavior('normal');
    }
  });

  test('a node whose prefix statistics hang is failed on /metrics/prefixes and still up on /metrics', async () => {
    await doubleBUp();
    doubleB.setBehavior('hang-stats-prefixes');
    try {
      const metrics = exporter.scrape('/metrics', { 'X-Prometheus-Scrape-Timeout-Seconds': '5' });
      const prefixes = await exporter.scrape('/metrics/prefixes', { 'X-Prometheus-Scrape-Timeout-Seconds': '1' });
      assert.equal(valueOf(prefixes.samples, 'arcus_prefix_nodes', { service_code: 'demo', state: 'failed' }), 1);
      assert.equal(valueOf((await metrics).samples, 'arcus_up', { node: doubleB.address }), 1);
      // Right after the prefix request timed out: no backoff, no queue behind it on /metrics.
      const after = await exporter.scrape('/metrics', { 'X-Prometheus-Scrape-Timeout-Seconds': '1' });
      assert.equal(valueOf(after.samples, 'arcus_up', { node: doubleB.address }), 1);
    } finally {
      doubleB.setBehavior('normal');
    }
  });

  test('a node answering garbage is down, the others are not', async () => {
    doubleB.setBehavior('garbage');
    try {
      const { samples } = await exporter.scrape('/metrics', { 'X-Prometheus-Scrape-Timeout-Seconds': '1' });
      assert.equal(valueOf(samples, 'arcus_up', { node: doubleB.address }), 0);
      const reason = select(samples, 'arcus_node_last_error_info', { node: doubleB.address })[0]?.labels['reason'];
      // Garbage without a line end is judged by its first byte: a protocol error, not the deadline.
      assert.equal(reason, 'protocol');
      assert.equal(valueOf(samples, 'arcus_up', { node: doubleA.address }), 1);
    } finally {
      doubleB.setBehavior('normal');
    }
    await doubleBUp();
  });

  test('a killed node is down while still registered', async () => {
    await memcached.kill();
    try {
      await eventually(async () => {
        const { samples } = await exporter.scrape('/metrics', { 'X-Prometheus-Scrape-Timeout-Seconds': '1' });
        assert.equal(valueOf(samples, 'arcus_up', { node: memcached.address }), 0);
        assert.equal(valueOf(samples, 'arcus_node_registered', { node: memcached.address }), 1);
        const reason = select(samples, 'arcus_node_last_error_info', { node: memcached.address })[0]?.labels['reason'];
        assert.ok(['unreachable', 'closed', 'backoff'].includes(reason ?? ''), `reason ${reason}`);
      });
    } finally {
      await memcached.start();
    }
    await eventually(
      async () => {
        const { samples } = await exporter.scrape();
        assert.equal(valueOf(samples, 'arcus_up', { node: memcached.address }), 1);
      },
      { timeoutMs: 40_000 },
    );
  });
});
