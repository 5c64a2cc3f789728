import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from 'node-zookeeper-client';
import { ArcusZk, eventually, startZooKeeper } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { TopologyWatcher } from '../../src/index.js';

let zk: ZooKeeperServer;

before(async () => {
  zk = await startZooKeeper();
});

after(async () => {
  await zk?.stop();
});

/** A persistent znode and its parents, as an ARCUS server of an earlier day left its join entry. */
const mkdirp = (client: Client, path: string) =>
  new Promise<void>((resolve, reject) =>
    client.mkdirp(path, Buffer.from('join'), (error) => (error ? reject(error) : resolve())),
  );

const nodesOf = (watcher: TopologyWatcher, serviceCode: string) =>
  Object.fromEntries(
    watcher.topology.nodes
      .filter((n) => n.serviceCode === serviceCode)
      .map((n) => [n.node, `${n.live ? 'live' : 'down'} ${n.hostname}`]),
  );

test('a down node never seen registered takes the hostname of its last join in cache_server_log, from the first topology on', async () => {
  const layout = await ArcusZk.connect(zk.address);
  const [a, b, c] = ['127.0.5.1:11211', '127.0.5.2:11211', '127.0.5.3:11211'];
  let watcher: TopologyWatcher | undefined;
  try {
    await layout.createServiceCode('svc-log');
    for (const node of [a, b, c]) await layout.mapServer(node, 'svc-log');
    // a started twice today (the kit writes the day's join entry as a server does); the last start counts.
    await (await layout.registerNode(a, 'svc-log', { hostname: 'a-old' })).unregister();
    await (await layout.registerNode(a, 'svc-log', { hostname: 'a-new' })).unregister();
    // b only on earlier days: the newest day counts, and a hostname may hold dashes.
    await mkdirp(layout.client, `/arcus/cache_server_log/2020-01-01/${b}-b-ancient-0000000009`);
    await mkdirp(layout.client, `/arcus/cache_server_log/2020-01-02/${b}-b-host-0000000007`);
    await mkdirp(layout.client, '/arcus/cache_server_log/2020-01-02/not-a-join-entry');
    // c never started.

    watcher = new TopologyWatcher({ servers: [zk.address], debounceMs: 20 });
    watcher.start();
    await watcher.synced(20_000);
    // No moment with hostname="": the first topology published has them.
    assert.deepEqual(nodesOf(watcher, 'svc-log'), { [a]: 'down a-new', [b]: 'down b-host', [c]: 'down ' });

    // A live registration wins over the log, and is what the node keeps once down again.
    const live = await layout.registerNode(c, 'svc-log', { hostname: 'c-live' });
    await eventually(async () => assert.equal(nodesOf(watcher!, 'svc-log')[c], 'live c-live'));
    await live.unregister();
    await eventually(async () => assert.equal(nodesOf(watcher!, 'svc-log')[c], 'down c-live'));
  } finally {
    watcher?.close();
    await layout.close();
  }
});
