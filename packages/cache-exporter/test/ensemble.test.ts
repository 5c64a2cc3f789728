import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ArcusDouble, ArcusZk, startZooKeeperEnsemble } from '@cachemon/testkit';
import type { ZooKeeperEnsemble } from '@cachemon/testkit';
import { eventually, select, startExporter, valueOf } from './support/exporter.js';
import type { RunningExporter } from './support/exporter.js';

/** Discovery through a real 3-server ZooKeeper ensemble while its servers fail. */
describe('cache exporter against a 3-server ensemble', () => {
  let ensemble: ZooKeeperEnsemble;
  let arcus: ArcusZk;
  let first: ArcusDouble;
  let exporter: RunningExporter;
  let domainExporter: RunningExporter;
  const joiners: ArcusDouble[] = [];

  before(async () => {
    ensemble = await startZooKeeperEnsemble({ size: 3 });
    arcus = await ArcusZk.connect(ensemble.connectString);
    await arcus.createServiceCode('svc');
    first = await ArcusDouble.start();
    await arcus.mapServer(first.address, 'svc');
    await first.register(arcus);
    exporter = await startExporter({ ensembleByName: { ens3: ensemble.connectString.split(',') } });
    // The domain form: one name with port that resolves to the servers' address.
    const port = ensemble.servers[0]!.port;
    domainExporter = await startExporter({ ensembleByName: { ens3: `localhost:${port}` } });
  });

  after(async () => {
    await exporter?.stop();
    await domainExporter?.stop();
    for (const d of [first, ...joiners]) await d?.stop();
    await arcus?.close().catch(() => undefined);
    await ensemble?.stop();
  });

  async function join(): Promise<ArcusDouble> {
    const node = await ArcusDouble.start();
    joiners.push(node);
    await arcus.mapServer(node.address, 'svc');
    await node.register(arcus);
    return node;
  }

  test('nodes are discovered through the ensemble, also when it is given as a domain', async () => {
    for (const e of [exporter, domainExporter]) {
      const { samples } = await e.scrape();
      assert.equal(valueOf(samples, 'arcus_up', { node: first.address, ensemble: 'ens3' }), 1);
      assert.equal(valueOf(samples, 'cachemon_zookeeper_connected'), 1);
    }
  });

  test('the leader killed: the exporter keeps its topology and sees a node that joins afterwards', async () => {
    const losses = () => exporter.output().match(/ZooKeeper connection lost; keeping the last topology/g)?.length ?? 0;
    const lostBefore = losses();
    const leader = await ensemble.leader();
    await leader.kill();
    let joiner: ArcusDouble;
    try {
      await ensemble.waitForLeader({ exclude: leader, timeoutMs: 20_000 });
      joiner = await join();
      await eventually(
        async () => {
          const { samples } = await exporter.scrape();
          assert.equal(valueOf(samples, 'arcus_up', { node: first.address }), 1);
          assert.equal(valueOf(samples, 'arcus_up', { node: joiner.address }), 1);
          assert.equal(valueOf(samples, 'cachemon_zookeeper_connected'), 1);
        },
        { timeoutMs: 30_000 },
      );
      // Its session did go through the failover: followers drop their clients while they elect.
      assert.ok(losses() > lostBefore, 'the exporter saw its ZooKeeper connection lost');
    } finally {
      await leader.start();
    }
    // The domain form names one server: whichever it was, that exporter is back and sees the joiner.
    await eventually(
      async () => {
        const { samples } = await domainExporter.scrape();
        assert.equal(valueOf(samples, 'cachemon_zookeeper_connected'), 1);
        assert.equal(valueOf(samples, 'arcus_up', { node: joiner.address }), 1);
      },
      { timeoutMs: 40_000 },
    );
  });

  test('losing the whole ensemble keeps the last topology and says so', async () => {
    const known = select((await exporter.scrape()).samples, 'arcus_up').length;
    for (const server of ensemble.servers) await server.kill();
    await eventually(
      async () => {
        const { samples } = await exporter.scrape();
        assert.equal(valueOf(samples, 'cachemon_zookeeper_connected'), 0);
        assert.equal(select(samples, 'arcus_up').length, known);
        assert.equal(valueOf(samples, 'arcus_up', { node: first.address }), 1, 'nodes are still collected');
      },
      { timeoutMs: 30_000 },
    );
    for (const server of ensemble.servers) await server.start();
    await eventually(
      async () => {
        const { samples } = await exporter.scrape();
        assert.equal(valueOf(samples, 'cachemon_zookeeper_connected'), 1);
      },
      { timeoutMs: 40_000 },
    );
  });
});
