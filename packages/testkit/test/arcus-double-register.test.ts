import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from 'node-zookeeper-client';
import {
  ArcusDouble,
  ArcusZk,
  eventually,
  isTestkitError,
  startZooKeeper,
  TestkitErrors,
  type ZooKeeperServer,
} from '../src/index.js';
import { RawClient } from './helpers.js';

function children(client: Client, path: string): Promise<string[]> {
  return new Promise((resolve, reject) => client.getChildren(path, (err, c) => (err ? reject(err) : resolve(c))));
}

function exists(client: Client, path: string): Promise<boolean> {
  return new Promise((resolve, reject) =>
    client.exists(path, (err, stat) => (err ? reject(err) : resolve(Boolean(stat)))),
  );
}

async function statValue(address: string, command: string, name: string): Promise<string | undefined> {
  return (await statValues(address, command, name))[0];
}

/** Several values of one reply (read together, none moves between them). */
async function statValues(address: string, command: string, ...names: string[]): Promise<Array<string | undefined>> {
  const client = await RawClient.connect(address);
  try {
    const reply = await client.send(`${command}\r\n`, 'END\r\n');
    return names.map((name) => new RegExp(`^STAT ${name} (.*)\\r$`, 'm').exec(reply)?.[1]);
  } finally {
    client.close();
  }
}

const heartbeats = async (double: ArcusDouble): Promise<number> =>
  Number(await statValue(double.address, 'stats', 'hb_count'));

/** Until a registered double has made `count` more heartbeats: time in which a double on the same period would have made them too. */
async function heartbeatsPass(twin: ArcusDouble, count: number): Promise<void> {
  const from = await heartbeats(twin);
  await eventually(async () => assert.ok((await heartbeats(twin)) >= from + count, 'the twin beats on'), {
    intervalMs: 50,
  });
}

describe('ArcusDouble.register', () => {
  let server: ZooKeeperServer;
  let zk: ArcusZk;
  const doubles: ArcusDouble[] = [];
  const startDouble = async (options: Parameters<typeof ArcusDouble.start>[0] = {}): Promise<ArcusDouble> => {
    const double = await ArcusDouble.start(options);
    doubles.push(double);
    return double;
  };

  before(async () => {
    server = await startZooKeeper();
    zk = await ArcusZk.connect(server.address);
    await zk.createServiceCode('svc');
  });
  after(async () => {
    for (const double of doubles) await double.stop();
    await zk?.close();
    await server?.kill();
  });

  test('creates /arcus/cache_list/<svc>/<ip:port>-<hostname> and reports itself connected', async () => {
    const double = await startDouble();
    await zk.mapServer(double.address, 'svc');
    assert.equal(await statValue(double.address, 'stats zookeeper', 'zk_connected'), 'false');
    const node = await double.register(zk);
    assert.equal(node.path, `/arcus/cache_list/svc/${double.address}-localhost`);
    assert.equal(double.nodePath, node.path);
    assert.ok((await children(zk.client, '/arcus/cache_list/svc')).includes(`${double.address}-localhost`));
    assert.equal(await statValue(double.address, 'stats zookeeper', 'zk_connected'), 'true');
    assert.equal(await statValue(double.address, 'stats zookeeper', 'zk_ready'), 'true');
    await assert.rejects(double.register(zk), (err) => isTestkitError(err, TestkitErrors.ARCUS_ALREADY_REGISTERED));
    await node.unregister();
    assert.equal(await exists(zk.client, node.path), false);
    assert.equal(double.registered, false);
    assert.equal(await statValue(double.address, 'stats zookeeper', 'zk_connected'), 'false');
  });

  test('writes the heartbeat key while registered, and only then', async () => {
    const double = await startDouble({ heartbeatIntervalMs: 100 });
    // A twin registered all along: its heartbeats show the periods in which this one would beat.
    const twin = await startDouble({ heartbeatIntervalMs: 100 });
    await zk.mapServer(double.address, 'svc');
    await zk.mapServer(twin.address, 'svc');
    await twin.register(zk);
    await heartbeatsPass(twin, 2);
    assert.equal(await statValue(double.address, 'stats', 'hb_count'), '0');
    const node = await double.register(server.address, { hostname: 'cachebox', sessionTimeoutMs: 5000 });
    assert.equal(node.path, `/arcus/cache_list/svc/${double.address}-cachebox`);
    assert.equal(await statValue(double.address, 'stats zookeeper', 'zk_timeout'), '5000');
    const [beats, sets] = await eventually(async () => {
      const [count, set] = await statValues(double.address, 'stats', 'hb_count', 'cmd_set');
      assert.ok(Number(count) >= 2, `heartbeats: ${count}`);
      return [count, set];
    });
    assert.equal(sets, beats, 'each heartbeat a set');
    const client = await RawClient.connect(double.address);
    try {
      assert.match(await client.send('stats prefixes\r\n', 'END\r\n'), /^PREFIX arcus itm 1 kitm 1 /m);
    } finally {
      client.close();
    }
    await node.unregister();
    const beatsAtUnregister = await statValue(double.address, 'stats', 'hb_count');
    await heartbeatsPass(twin, 3);
    assert.equal(
      await statValue(double.address, 'stats', 'hb_count'),
      beatsAtUnregister,
      'no heartbeats after unregister',
    );
    await twin.stop();
  });

  test('refuses without a cache_server_mapping', async () => {
    const double = await startDouble();
    await assert.rejects(double.register(zk), (err) => {
      assert.ok(isTestkitError(err, TestkitErrors.ARCUS_MAPPING_MISSING));
      assert.match(err.message, new RegExp(`/arcus/cache_server_mapping/${double.address.replace(/\./g, '\\.')}`));
      return true;
    });
    assert.equal(double.registered, false);
    assert.equal(
      (await children(zk.client, '/arcus/cache_list/svc')).some((c) => c.startsWith(double.address)),
      false,
    );
  });

  test('refuses when the service code has no cache_list node', async () => {
    const double = await startDouble();
    await zk.mapServer(double.address, 'nosuchsvc');
    await assert.rejects(double.register(zk), (err) => {
      assert.ok(isTestkitError(err, TestkitErrors.ARCUS_SERVICE_CODE_MISSING));
      assert.match(err.message, /\/arcus\/cache_list\/nosuchsvc/);
      return true;
    });
    assert.equal(await exists(zk.client, '/arcus/cache_list/nosuchsvc'), false);
  });

  test('replication: the first node of a group is the master, the next a slave', async () => {
    await zk.createServiceCode('rsvc', { repl: true });
    const first = await startDouble();
    const second = await startDouble();
    await zk.mapServer(first.address, 'rsvc', { repl: { group: 'g1', peer: second.address } });
    await zk.mapServer(second.address, 'rsvc', { repl: { group: 'g1', peer: first.address } });
    const master = await first.register(zk);
    const slave = await second.register(zk);
    assert.equal(master.path, `/arcus_repl/cache_list/rsvc/g1^M^${first.address}-localhost`);
    assert.equal(slave.path, `/arcus_repl/cache_list/rsvc/g1^S^${second.address}-localhost`);
    assert.deepEqual((await children(zk.client, '/arcus_repl/cache_list/rsvc')).sort(), [
      `g1^M^${first.address}-localhost`,
      `g1^S^${second.address}-localhost`,
    ]);
    await master.unregister();
    await slave.unregister();
  });

  test('stop() removes the node at once; kill() only after the session timeout', async () => {
    const stopped = await startDouble();
    const killed = await startDouble();
    await zk.mapServer(stopped.address, 'svc');
    await zk.mapServer(killed.address, 'svc');
    const a = await stopped.register(zk);
    const b = await killed.register(zk, { sessionTimeoutMs: 2000 });
    await stopped.stop();
    await killed.kill();
    assert.equal(await exists(zk.client, a.path), false);
    assert.equal(await exists(zk.client, b.path), true);
    await assert.rejects(RawClient.connect(killed.address), 'the listener is closed');
    await eventually(async () => assert.equal(await exists(zk.client, b.path), false));
  });
});
