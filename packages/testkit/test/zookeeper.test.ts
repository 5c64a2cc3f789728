import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { fourLetterWord, freePort, startZooKeeper, type ZooKeeperServer } from '../src/index.js';

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
    assert.equal(
      await fourLetterWord(server.address, 'stat'),
      'stat is not executed because it is not in the whitelist.\n',
    );
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
    assert.equal(
      await fourLetterWord(server.address, 'mntr'),
      'mntr is not executed because it is not in the whitelist.\n',
    );
    assert.equal(
      await fourLetterWord(server.address, 'ruok'),
      'ruok is not executed because it is not in the whitelist.\n',
    );
  });
});

describe('startZooKeeper when its port is taken before the JVM binds it', () => {
  let taken: Server;
  let server: ZooKeeperServer | undefined;

  before(async () => {
    // Whoever holds the port: the kit's readiness probe may knock while the JVM is still starting.
    taken = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    await server?.stop();
    await new Promise((resolve) => taken.close(resolve));
  });

  test('the JVM exits with BindException and the server is started again on another port', async () => {
    const busy = (taken.address() as AddressInfo).port;
    const chosen: number[] = [];
    server = await startZooKeeper({
      choosePort: async () => {
        const port = chosen.length === 0 ? busy : await freePort();
        chosen.push(port);
        return port;
      },
    });
    assert.equal(chosen.length, 2, 'a second port after the first was refused');
    assert.equal(chosen[0], busy);
    assert.equal(server.address, `127.0.0.1:${chosen[1]}`);
    assert.match(await fourLetterWord(server.address, 'srvr'), /^Mode: standalone$/m);
  });

  test('a failure other than a taken port is not retried', async () => {
    let calls = 0;
    await assert.rejects(
      startZooKeeper({
        choosePort: async () => {
          calls++;
          return 70000; // no such port: the JVM refuses the config
        },
      }),
    );
    assert.equal(calls, 1);
  });
});
