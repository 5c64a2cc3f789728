import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { fourLetterWord, startZooKeeper, type ZooKeeperServer } from '../src/index.js';

function connected(connectString: string): Promise<Client> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 5000, spinDelay: 100, retries: 0 });
  return new Promise((resolve) => {
    client.once('connected', () => resolve(client));
    client.connect();
  });
}

function call<T>(fn: (cb: (err: unknown, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value))));
}

function closed(client: Client): Promise<void> {
  return new Promise((resolve) => {
    client.once('disconnected', () => resolve());
    client.close();
  });
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ESRCH');
    return false;
  }
}

describe('startZooKeeper (standalone, default four-letter words)', () => {
  let server: ZooKeeperServer;

  before(async () => {
    server = await startZooKeeper();
  });
  after(async () => {
    await server?.kill();
  });

  test('listens on loopback, reports standalone mode and a PID', async () => {
    assert.match(server.address, /^127\.0\.0\.1:\d+$/);
    assert.equal(server.address, `127.0.0.1:${server.port}`);
    assert.equal(typeof server.pid, 'number');
    assert.ok(processExists(server.pid as number));
    assert.equal(await server.mode(), 'standalone');
    assert.ok(existsSync(`${server.dataDir}/version-2`), 'ZooKeeper writes its data into dataDir');
  });

  test('serves znodes to node-zookeeper-client', async () => {
    const client = await connected(server.address);
    try {
      await call<string>((cb) => client.create('/testkit', Buffer.from('hello'), cb));
      await call<string>((cb) => client.create('/testkit/child', Buffer.from('x'), zookeeper.CreateMode.EPHEMERAL, cb));
      const children = await call<string[]>((cb) => client.getChildren('/testkit', cb));
      assert.deepEqual(children, ['child']);
      const data = await call<Buffer>((cb) => client.getData('/testkit', cb));
      assert.equal(data.toString(), 'hello');
    } finally {
      await closed(client);
    }
  });

  test('whitelisted four-letter words answer', async () => {
    const mntr = await fourLetterWord(server.address, 'mntr');
    assert.match(mntr, /^zk_server_state\tstandalone$/m);
    assert.match(mntr, /^zk_znode_count\t\d+$/m);
    assert.equal(await fourLetterWord(server.address, 'ruok'), 'imok');
    assert.match(await fourLetterWord(server.address, 'conf'), /^tickTime=500$/m);
    assert.match(await fourLetterWord(server.address, 'srvr'), /^Mode: standalone$/m);
  });

  test('a word outside the whitelist is refused', async () => {
    assert.equal(await fourLetterWord(server.address, 'stat'), 'stat is not executed because it is not in the whitelist.\n');
  });

  test('stop() ends the JVM by PID; start() brings it back with the same port and data', async () => {
    const pid = server.pid as number;
    await server.stop();
    assert.equal(server.pid, undefined);
    assert.equal(processExists(pid), false);
    assert.equal(await server.mode(), undefined);
    await assert.rejects(fourLetterWord(server.address, 'srvr', 500));

    await server.start();
    assert.notEqual(server.pid, pid);
    assert.equal(await server.mode(), 'standalone');
    const client = await connected(server.address);
    try {
      const data = await call<Buffer>((cb) => client.getData('/testkit', cb));
      assert.equal(data.toString(), 'hello', 'persistent znodes survive the restart');
    } finally {
      await closed(client);
    }
  });

  test('kill() sends SIGKILL', async () => {
    const pid = server.pid as number;
    await server.kill();
    assert.equal(processExists(pid), false);
    assert.equal(server.pid, undefined);
  });
});

describe('startZooKeeper with an empty whitelist', () => {
  let server: ZooKeeperServer;

  before(async () => {
    server = await startZooKeeper({ fourLetterWords: [] });
  });
  after(async () => {
    await server?.stop();
  });

  test('only srvr answers; mntr gets the whitelist refusal', async () => {
    assert.match(await fourLetterWord(server.address, 'srvr'), /^Mode: standalone$/m);
    assert.equal(await fourLetterWord(server.address, 'mntr'), 'mntr is not executed because it is not in the whitelist.\n');
    assert.equal(await fourLetterWord(server.address, 'ruok'), 'ruok is not executed because it is not in the whitelist.\n');
  });
});
