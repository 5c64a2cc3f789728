import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { ArcusZk, startZooKeeper } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { TopologyWatcher } from '../../src/index.js';

/** Rescans of one session (a serviceCodes reload; a reconnect within the session runs the same). */
let zk: ZooKeeperServer;
let layout: ArcusZk;

before(async () => {
  zk = await startZooKeeper();
  layout = await ArcusZk.connect(zk.address);
});

after(async () => {
  await layout?.close();
  await zk?.stop();
});

const create = (client: Client, path: string, mode = zookeeper.CreateMode.PERSISTENT) =>
  new Promise<void>((resolve) => client.create(path, Buffer.from('x'), mode, () => resolve()));
const remove = (client: Client, path: string) =>
  new Promise<void>((resolve) => client.remove(path, -1, () => resolve()));

/** The next topology the watcher publishes: after a setServiceCodes(), the one its rescan read. */
const published = (watcher: TopologyWatcher): Promise<unknown> => once(watcher, 'topology');

test('rescans while a service code churns never publish a topology missing the stable nodes', async () => {
  const STABLE = 20;
  for (const svc of ['ra', 'rb', 'rc']) await layout.createServiceCode(svc);
  const registrations = [];
  for (const svc of ['ra', 'rb']) {
    for (let i = 0; i < STABLE / 2; i++)
      registrations.push(await layout.registerNode(`10.9.${svc === 'ra' ? 1 : 2}.${i + 1}:11211`, svc));
  }
  // Registrations come and go under rc: its watch fires all the time, so reads of the scan before
  // and publishes it scheduled are in flight whenever the next scan starts.
  let churning = true;
  const churn = (async () => {
    for (let n = 0; churning; n++) {
      const path = `/arcus/cache_list/rc/10.9.3.${(n % 200) + 1}:11211-h`;
      await create(layout.client, path, zookeeper.CreateMode.EPHEMERAL);
      await remove(layout.client, path);
    }
  })();
  const watcher = new TopologyWatcher({ servers: [zk.address], serviceCodes: ['ra', 'rb', 'rc'] });
  const stableCounts: number[] = [];
  watcher.on('topology', (topology: TopologyWatcher['topology']) => {
    stableCounts.push(topology.nodes.filter((n) => n.live && n.serviceCode !== 'rc').length);
  });
  try {
    watcher.start();
    await watcher.synced(60_000);
    for (let i = 0; i < 400; i++) {
      watcher.setServiceCodes(i % 2 ? ['ra', 'rb', 'rc'] : ['ra', 'rb', 'rc', 'zz']);
      // Every tenth rescan is let finish (on a busy machine most are overtaken by the next);
      // the others are paced to start while the one before is still reading.
      if (i % 10 === 9 || i === 399) await published(watcher);
      else await new Promise((resolve) => setTimeout(resolve, 15 + (i % 7)));
    }
    assert.ok(stableCounts.length > 20, `${stableCounts.length} topologies published`);
    assert.deepEqual(
      stableCounts.filter((count) => count !== STABLE),
      [],
      'every published topology has every stable node',
    );
  } finally {
    churning = false;
    await churn;
    watcher.close();
    for (const registration of registrations) await registration.unregister();
  }
});

test('rescans do not pile up watch functions in the ZooKeeper client', async () => {
  await layout.createServiceCode('pile');
  for (let i = 0; i < 30; i++) await layout.mapServer(`10.9.4.${i + 1}:11211`, 'pile');
  const watcher = new TopologyWatcher({ servers: [zk.address], serviceCodes: ['pile'] });
  /** Listeners the client's watcher manager holds (node-zookeeper-client's internals: what leaked). */
  const listeners = (): number => {
    const client = (
      watcher as unknown as {
        client: {
          connectionManager: {
            watcherManager: Record<string, Record<string, { listenerCount(name: string): number }>>;
          };
        };
      }
    ).client;
    const manager = client.connectionManager.watcherManager;
    let count = 0;
    for (const kind of ['childWatchers', 'dataWatchers', 'existenceWatchers']) {
      for (const emitter of Object.values(manager[kind] ?? {})) count += emitter.listenerCount('notification');
    }
    return count;
  };
  try {
    watcher.start();
    await watcher.synced(60_000);
    const first = listeners();
    assert.ok(first >= 30, `${first} watches after the first read`);
    let lastRescan: Promise<unknown> = Promise.resolve();
    for (let i = 0; i < 50; i++) {
      watcher.setServiceCodes(i % 2 ? ['pile'] : undefined);
      if (i === 49) lastRescan = published(watcher);
      // Paced, not awaited: a rescan may start while the one before still reads.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The last rescan read everything and armed its watches.
    await lastRescan;
    // Other tests' service codes are read when the filter is off: at most those paths more.
    assert.ok(listeners() <= first + 20, `${listeners()} watches after 50 rescans (${first} after the first)`);
  } finally {
    watcher.close();
  }
});
