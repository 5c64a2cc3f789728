import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Client, Stat } from 'node-zookeeper-client';
import {
  ArcusZk,
  eventually,
  isTestkitError,
  startZooKeeper,
  TestkitErrors,
  type ZooKeeperServer,
} from '../src/index.js';
import { SAMPLES_DIR } from './helpers.js';

function children(client: Client, path: string): Promise<string[]> {
  return new Promise((resolve, reject) => client.getChildren(path, (err, c) => (err ? reject(err) : resolve(c))));
}

function data(client: Client, path: string): Promise<{ data: string; stat: Stat }> {
  return new Promise((resolve, reject) =>
    client.getData(path, (err, d, stat) => (err ? reject(err) : resolve({ data: d ? d.toString() : '', stat }))),
  );
}

function exists(client: Client, path: string): Promise<boolean> {
  return new Promise((resolve, reject) =>
    client.exists(path, (err, stat) => (err ? reject(err) : resolve(Boolean(stat)))),
  );
}

/** Every path under `root`, depth first in sorted order (like the zkCli listing of the sample). */
async function tree(client: Client, root: string): Promise<string[]> {
  const paths: string[] = [];
  const walk = async (path: string): Promise<void> => {
    for (const child of (await children(client, path)).sort()) {
      paths.push(`${path}/${child}`);
      await walk(`${path}/${child}`);
    }
  };
  paths.push(root);
  await walk(root);
  return paths;
}

function today(): string {
  const d = new Date();
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/** The sample's znode paths (sorted), with the capture date replaced by today's. */
function sampleTree(): string[] {
  return readFileSync(`${SAMPLES_DIR}/znode-tree.txt`, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('/'))
    .map((l) => l.replace('2026-11-21', today()))
    .sort();
}

/** The data lines of the sample, in its order: two service codes, two mappings, an ephemeral node, a log entry. */
function sampleData(): string[] {
  return readFileSync(`${SAMPLES_DIR}/znode-tree.txt`, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{') || l === '64MB' || l === 'join');
}

describe('ArcusZk', () => {
  let server: ZooKeeperServer;
  let zk: ArcusZk;

  before(async () => {
    server = await startZooKeeper();
    zk = await ArcusZk.connect(server.address);
  });
  after(async () => {
    await zk?.close();
    await server?.kill();
  });

  test('builds the znode tree of a real deployment for two service codes', async () => {
    await zk.createServiceCode('test');
    await zk.createServiceCode('demo');
    await zk.mapServer('127.0.0.1:21211', 'test');
    await zk.mapServer('127.0.0.1:21212', 'test');
    await zk.mapServer('127.0.0.1:21213', 'demo');
    const nodes = [
      await zk.registerNode('127.0.0.1:21211', 'test'),
      await zk.registerNode('127.0.0.1:21212', 'test'),
      await zk.registerNode('127.0.0.1:21213', 'demo'),
    ];
    try {
      assert.deepEqual((await tree(zk.client, '/arcus')).sort(), sampleTree());
      assert.equal(nodes[0]?.path, '/arcus/cache_list/test/127.0.0.1:21211-localhost');

      const [testJson, demoJson, mapping21211, mapping21213, nodeData, logData] = sampleData();
      assert.equal((await data(zk.client, '/arcus/cache_list/test')).data, testJson);
      assert.equal((await data(zk.client, '/arcus/cache_list/demo')).data, demoJson);
      assert.equal((await data(zk.client, '/arcus/cache_server_mapping/127.0.0.1:21211')).data, mapping21211);
      assert.equal((await data(zk.client, '/arcus/cache_server_mapping/127.0.0.1:21213')).data, mapping21213);
      const ephemeral = await data(zk.client, '/arcus/cache_list/test/127.0.0.1:21211-localhost');
      assert.equal(ephemeral.data, nodeData);
      assert.notEqual(ephemeral.stat.ephemeralOwner.toString('hex'), '0000000000000000', 'the node is ephemeral');
      const log = await data(zk.client, `/arcus/cache_server_log/${today()}/127.0.0.1:21211-localhost-0000000000`);
      assert.equal(log.data, logData);
      assert.equal(log.stat.ephemeralOwner.toString('hex'), '0000000000000000', 'the log entry is persistent');
      // Each registration has a session of its own, none is the kit's.
      const owners = new Set(
        await Promise.all(nodes.map(async (n) => (await data(zk.client, n.path)).stat.ephemeralOwner.toString('hex'))),
      );
      assert.equal(owners.size, 3);
      assert.ok(!owners.has(zk.client.getSessionId().toString('hex')));
    } finally {
      for (const node of nodes) await node.unregister();
    }
  });

  test('unregister() removes the ephemeral node at once', async () => {
    const node = await zk.registerNode('127.0.0.1:21214', 'test', { hostname: 'cache-host' });
    assert.equal(node.path, '/arcus/cache_list/test/127.0.0.1:21214-cache-host');
    assert.equal(await exists(zk.client, node.path), true);
    await node.unregister();
    assert.equal(await exists(zk.client, node.path), false);
  });

  test('expire() keeps the node until the session timeout, like a killed server', async () => {
    const node = await zk.registerNode('127.0.0.1:21215', 'test', { sessionTimeoutMs: 4000 });
    const dropped = Date.now();
    await node.expire();
    // Not removed as a closed session's would be (at once); the wait below says for how long.
    assert.equal(await exists(zk.client, node.path), true, 'still there after the crash');
    // A restarted server finds its old node: the real one exits (code 76), the kit rejects.
    await assert.rejects(zk.registerNode('127.0.0.1:21215', 'test'), (err) =>
      isTestkitError(err, TestkitErrors.ARCUS_NODE_EXISTS),
    );
    await eventually(async () =>
      assert.equal(await exists(zk.client, node.path), false, 'removed when the session expired'),
    );
    const elapsed = Date.now() - dropped;
    // Not before the session timeout; after it, within what a loaded machine's ZooKeeper takes to
    // expire a session (its ticks) and this wait to notice: far from never.
    assert.ok(elapsed >= 3500 && elapsed < 20_000, `gone after ${elapsed} ms (session timeout 4000 ms)`);
  });

  test('replication layout under /arcus_repl', async () => {
    await zk.createServiceCode('rtest', { repl: true });
    await zk.mapServer('127.0.0.1:31211', 'rtest', { repl: { group: 'g0', peer: '127.0.0.1:31212' } });
    const master = await zk.registerNode('127.0.0.1:31211', 'rtest', { repl: { group: 'g0', role: 'M' } });
    const slave = await zk.registerNode('127.0.0.1:31212', 'rtest', { repl: { group: 'g0', role: 'S' } });
    try {
      assert.equal(master.path, '/arcus_repl/cache_list/rtest/g0^M^127.0.0.1:31211-localhost');
      assert.equal(slave.path, '/arcus_repl/cache_list/rtest/g0^S^127.0.0.1:31212-localhost');
      assert.deepEqual((await children(zk.client, '/arcus_repl')).sort(), [
        'cache_list',
        'cache_server_log',
        'cache_server_mapping',
        'client_list',
        'group_list',
      ]);
      assert.deepEqual(await children(zk.client, '/arcus_repl/cache_server_mapping/127.0.0.1:31211'), [
        'rtest^g0^127.0.0.1:31212',
      ]);
      assert.deepEqual(await children(zk.client, '/arcus_repl/group_list/rtest'), ['g0']);
      assert.deepEqual(await children(zk.client, '/arcus_repl/client_list'), ['rtest']);
      assert.equal(
        (await data(zk.client, '/arcus_repl/cache_list/rtest')).data,
        '{"serviceCode":"rtest","config":{"threads":"2","memlimit":"64","connections":"1000"}}',
      );
    } finally {
      await master.unregister();
      await slave.unregister();
    }
  });

  test('mapServer replaces the mapping; unmapServer removes it', async () => {
    await zk.mapServer('127.0.0.1:21216', 'test');
    await zk.mapServer('127.0.0.1:21216', 'demo');
    assert.deepEqual(await children(zk.client, '/arcus/cache_server_mapping/127.0.0.1:21216'), ['demo']);
    await zk.unmapServer('127.0.0.1:21216');
    assert.equal(await exists(zk.client, '/arcus/cache_server_mapping/127.0.0.1:21216'), false);
  });
});
