import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '@cachemon/testkit';
import { TopologyWatcher } from '../../src/index.js';
import { droppingServer } from './dropping-server.js';

describe('TopologyWatcher.close on an ensemble that never answered', () => {
  test('stops reconnecting and ends a pending synced() wait', async () => {
    const zk = await droppingServer();
    // A twin left running: its connection attempts show the retry rounds the closed one would make.
    const twinZk = await droppingServer();
    const options = { sessionTimeoutMs: 2000 };
    const watcher = new TopologyWatcher({ servers: [zk.address], ...options });
    const twin = new TopologyWatcher({ servers: [twinZk.address], ...options });
    try {
      watcher.start();
      twin.start();
      const waiting = watcher.synced(60_000);
      // The client retries: several connections within a few spin delays.
      await eventually(() => assert.ok(zk.connections() >= 2, `the client retried (${zk.connections()} connections)`));
      watcher.close();
      await assert.rejects(waiting, /topology watcher closed/);
      // A connection under way when it closed is counted once the twin has made one more.
      const settle = twinZk.connections();
      await eventually(() => assert.ok(twinZk.connections() > settle));
      const after = zk.connections();
      const twinAfter = twinZk.connections();
      await eventually(() => assert.ok(twinZk.connections() >= twinAfter + 3, 'the twin went on retrying'));
      assert.equal(zk.connections(), after, 'no connection attempt after close()');
    } finally {
      watcher.close();
      twin.close();
      await zk.close();
      await twinZk.close();
    }
  });
});
