import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ArcusZk, eventually, freePort, startZooKeeper } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { TopologyWatcher } from '../../src/index.js';
import type { WatcherLogger } from '../../src/index.js';
import { droppingServer } from './dropping-server.js';

interface Line {
  level: 'debug' | 'info' | 'warn';
  fields: Record<string, unknown>;
  msg: string;
}

function recordingLogger(): WatcherLogger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: Line['level']) => (fields: object, msg: string) => {
    lines.push({ level, fields: fields as Record<string, unknown>, msg });
  };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn') };
}

/** The live nodes the watcher publishes, as `<service code> <ip:port>`. */
const liveNodes = (watcher: TopologyWatcher) =>
  watcher.topology.nodes.filter((n) => n.live).map((n) => `${n.serviceCode} ${n.node}`);

/** One ZooKeeper for the file; the first test empties its data, which the later ones do not mind. */
let zk: ZooKeeperServer;

before(async () => {
  zk = await startZooKeeper();
});

after(async () => {
  await zk?.stop();
});

describe('TopologyWatcher when the old session cannot come back', () => {
  test('a server restarted without its data refuses the old session: a new session is made within the session timeout', async () => {
    const layout = await ArcusZk.connect(zk.address);
    await layout.createServiceCode('svc-old');
    // Enough writes that the watcher has seen a zxid the emptied server will not have.
    for (let i = 1; i <= 5; i++) await layout.mapServer(`127.0.4.${i}:11211`, 'svc-old');
    const old = await layout.registerNode('127.0.4.1:11211', 'svc-old', { hostname: 'old-1' });
    const logger = recordingLogger();
    const watcher = new TopologyWatcher({ servers: [zk.address], sessionTimeoutMs: 2000, debounceMs: 20, logger });
    try {
      watcher.start();
      await watcher.synced(60_000);
      await eventually(async () => assert.deepEqual(liveNodes(watcher), ['svc-old 127.0.4.1:11211']));
      // The kit's own sessions end before the data goes: the emptied server would refuse them too.
      await old.unregister();
      await layout.close();

      await zk.stop();
      await eventually(async () => assert.equal(watcher.state.connected, false));
      for (const entry of await readdir(zk.dataDir))
        await rm(join(zk.dataDir, entry), { recursive: true, force: true });
      await zk.start();
      const rebuilt = await ArcusZk.connect(zk.address);
      try {
        await rebuilt.createServiceCode('svc-new');
        await rebuilt.mapServer('127.0.5.1:11211', 'svc-new');
        const fresh = await rebuilt.registerNode('127.0.5.1:11211', 'svc-new', { hostname: 'new-1' });
        // The old client is refused forever ("client must try another server"); the new session
        // comes after one negotiated session timeout (2 s).
        await eventually(async () => {
          assert.equal(watcher.state.connected, true);
          assert.deepEqual(liveNodes(watcher), ['svc-new 127.0.5.1:11211']);
        });
        assert.equal(watcher.state.sessionExpirations, 1, 'the given-up session is counted');
        const warned = logger.lines.filter((l) => l.level === 'warn' && /giving it up for a new session/.test(l.msg));
        assert.equal(warned.length, 1, JSON.stringify(logger.lines));
        assert.equal(warned[0]!.fields['timeoutMs'], 2000, 'the negotiated session timeout');
        await fresh.unregister();
      } finally {
        await rebuilt.close();
      }
    } finally {
      watcher.close();
    }
  });
});

/**
 * A TCP proxy in front of ZooKeeper that can cut the client's connection in the middle of a frame
 * (the first bytes of one: a length of 100 and four bytes of it, then the end), or close it and
 * refuse new ones for a while: an outage whose length the test decides, the server running on.
 */
async function cuttingProxy(
  target: string,
): Promise<{ address: string; cut: () => void; hold: (ms: number) => void; close: () => Promise<void> }> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const clients = new Set<Socket>();
  let refuseUntil = 0;
  const proxy = createServer((client) => {
    if (Date.now() < refuseUntil) {
      client.destroy();
      return;
    }
    const upstream = connect(port, host);
    clients.add(client);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      clients.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    cut: () => {
      for (const client of clients) client.end(Buffer.from([0, 0, 0, 100, 1, 2, 3, 4]));
    },
    hold: (ms) => {
      refuseUntil = Date.now() + ms;
      for (const client of clients) client.destroy();
    },
    close: () => {
      for (const client of clients) client.destroy();
      return new Promise((resolve) => proxy.close(() => resolve()));
    },
  };
}

describe('TopologyWatcher through a proxy that cuts its connections', () => {
  test('the next connection resumes the session at once: nothing of the cut frame is kept', async () => {
    const proxy = await cuttingProxy(zk.address);
    const logger = recordingLogger();
    // 10 s, the longest the server allows: a client that hung would be replaced only after it.
    const watcher = new TopologyWatcher({ servers: [proxy.address], sessionTimeoutMs: 10_000, logger });
    // Connection changes as they happen (a reconnect can take less than a poll's interval).
    const changes: boolean[] = [];
    watcher.on('state', (state: { connected: boolean }) => {
      if (changes.at(-1) !== state.connected) changes.push(state.connected);
    });
    try {
      watcher.start();
      await watcher.synced(60_000);
      for (let round = 1; round <= 3; round++) {
        proxy.cut();
        await eventually(async () =>
          assert.deepEqual(changes, [false, true, ...Array.from({ length: round }, () => [false, true]).flat()]),
        );
        // A hung client would have been replaced after the 10 s session timeout: a new session.
        assert.equal(watcher.state.sessionExpirations, 0, `round ${round}: the same session, not a new one`);
      }
      assert.equal(logger.lines.filter((l) => l.msg === 'ZooKeeper session connected').length, 4);
      assert.equal(
        logger.lines.filter((l) => l.msg === 'ZooKeeper connection lost; keeping the last topology').length,
        3,
      );
    } finally {
      watcher.close();
      await proxy.close();
    }
  });

  test('a session that comes back in time is kept: no new session later, nothing counted', async () => {
    const proxy = await cuttingProxy(zk.address);
    const logger = recordingLogger();
    const watcher = new TopologyWatcher({ servers: [proxy.address], sessionTimeoutMs: 8000, logger });
    try {
      watcher.start();
      await watcher.synced(60_000);
      // A 1 s outage; the client is back within a few seconds, well inside the 8 s.
      proxy.hold(1000);
      const lost = Date.now();
      await eventually(async () => assert.equal(watcher.state.connected, false));
      // Back in time or not, it reconnects; only one back in time keeps its session (checked below).
      await eventually(async () => assert.equal(watcher.state.connected, true));
      // Past the session timeout counted from the loss: the deadline went when the session came back.
      // Kept as a sleep: nothing happens at a deadline that was cleared, so there is no event to
      // wait for; a timer due then would fire before this later one, however busy the machine.
      await sleep(Math.max(0, lost + 9000 - Date.now()));
      assert.equal(watcher.state.connected, true);
      assert.equal(watcher.state.sessionExpirations, 0);
      assert.deepEqual(
        logger.lines.filter((l) => l.level === 'warn').map((l) => l.msg),
        ['ZooKeeper connection lost; keeping the last topology'],
      );
    } finally {
      watcher.close();
      await proxy.close();
    }
  });
});

describe('TopologyWatcher of an ensemble that never answers', () => {
  test('a new client per session timeout resolves the names again; no session, so nothing counted or warned', async () => {
    const server = await droppingServer();
    let lookups = 0;
    const logger = recordingLogger();
    const watcher = new TopologyWatcher({
      servers: [`zk.test:${server.port}`],
      sessionTimeoutMs: 1000,
      logger,
      resolver: async () => {
        lookups++;
        return ['127.0.0.1'];
      },
    });
    // A twin left running after the watcher is closed: its lookups show the rounds the closed one would make.
    const twinServer = await droppingServer();
    let twinLookups = 0;
    const twin = new TopologyWatcher({
      servers: [`zk.test:${twinServer.port}`],
      sessionTimeoutMs: 1000,
      resolver: async () => {
        twinLookups++;
        return ['127.0.0.1'];
      },
    });
    try {
      watcher.start();
      twin.start();
      await eventually(async () => assert.ok(lookups >= 3, `${lookups} lookups`));
      assert.equal(watcher.state.sessionExpirations, 0);
      assert.equal(watcher.state.connected, false);
      assert.deepEqual(
        logger.lines.filter((l) => l.level === 'warn'),
        [],
      );
      assert.ok(logger.lines.some((l) => l.level === 'debug' && /still unreachable; a new client/.test(l.msg)));
      watcher.close();
      // Closed: no new client resolves the names again, while the twin's go on doing so.
      const settled = lookups;
      const twinSettled = twinLookups;
      await eventually(() => assert.ok(twinLookups >= twinSettled + 2, `${twinLookups - twinSettled} twin lookups`));
      assert.equal(lookups, settled);
    } finally {
      watcher.close();
      twin.close();
      await server.close();
      await twinServer.close();
    }
  });

  test('a name that does not resolve is warned about once, not at every new client', async () => {
    let lookups = 0;
    const logger = recordingLogger();
    // The name is kept as it is and the client resolves it itself: localhost, so nothing leaves
    // the machine; nothing listens on the port.
    const port = await freePort();
    const watcher = new TopologyWatcher({
      servers: [`localhost:${port}`],
      sessionTimeoutMs: 1000,
      logger,
      resolver: async () => {
        lookups++;
        throw new Error('no such name');
      },
    });
    try {
      watcher.start();
      await eventually(async () => assert.ok(lookups >= 3, `${lookups} lookups`));
      const unresolved = logger.lines.filter((l) => l.msg === 'ZooKeeper server names did not resolve');
      assert.deepEqual(unresolved.map((l) => l.level).slice(0, 3), ['warn', 'debug', 'debug']);
      assert.deepEqual(unresolved[0]!.fields['servers'], [`localhost:${port}`]);
    } finally {
      watcher.close();
    }
  });
});
