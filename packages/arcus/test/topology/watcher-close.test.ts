import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { TopologyWatcher } from '../../src/index.js';

/** A port that accepts connections and drops them at once, counting them: a ZooKeeper that is not serving. */
async function droppingServer(): Promise<{ address: string; connections: () => number; close: () => Promise<void> }> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    count++;
    sockets.add(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    connections: () => count,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('TopologyWatcher.close on an ensemble that never answered', () => {
  test('stops reconnecting and ends a pending synced() wait', async () => {
    const zk = await droppingServer();
    try {
      const watcher = new TopologyWatcher({ servers: [zk.address], sessionTimeoutMs: 2000 });
      watcher.start();
      const waiting = watcher.synced(60_000);
      // The client retries: several connections within a few spin delays.
      for (let i = 0; i < 50 && zk.connections() < 2; i++) await sleep(100);
      assert.ok(zk.connections() >= 2, `the client retried (${zk.connections()} connections)`);
      watcher.close();
      await assert.rejects(waiting, /topology watcher closed/);
      await sleep(300);
      const after = zk.connections();
      await sleep(2500);
      assert.equal(zk.connections(), after, 'no connection attempt after close()');
    } finally {
      await zk.close();
    }
  });
});
