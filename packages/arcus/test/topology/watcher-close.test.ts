import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { TopologyWatcher } from '../../src/index.js';
import { droppingServer } from './dropping-server.js';

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
