import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ArcusZk, eventually, startZooKeeper } from '@cachemon/testkit';
import type { ZooKeeperServer } from '@cachemon/testkit';
import { TopologyWatcher } from '../../src/index.js';
import type { WatcherLogger, WatcherState } from '../../src/index.js';

/** The kit's servers (tickTime 500) accept 1-10 s: 4 s is what the session gets. */
const SESSION_MS = 4000;
/** The client pings after a third of the session timeout without traffic. */
const PING_MS = Math.floor(SESSION_MS / 3);
/** Timers late on a busy machine. */
const SLACK_MS = 2000;

interface Line {
  level: 'debug' | 'info' | 'warn';
  at: number;
  fields: Record<string, unknown>;
  msg: string;
}

function recordingLogger(): WatcherLogger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: Line['level']) => (fields: object, msg: string) => {
    lines.push({ level, at: Date.now(), fields: fields as Record<string, unknown>, msg });
  };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn') };
}

/**
 * A ZooKeeper whose process is stopped (SIGSTOP) keeps its TCP connections open and answers
 * nothing: the client library would call that connected for as long as it lasts.
 */
describe('TopologyWatcher of a hung ZooKeeper (process stopped, connections open)', () => {
  let zk: ZooKeeperServer;
  /** The process group of the server, while it is stopped. */
  let stoppedGroup: number | undefined;

  const hang = () => {
    assert.ok(zk.pid !== undefined, 'ZooKeeper runs');
    stoppedGroup = zk.pid;
    process.kill(-zk.pid, 'SIGSTOP');
    return Date.now();
  };
  const resume = () => {
    if (stoppedGroup !== undefined) process.kill(-stoppedGroup, 'SIGCONT');
    stoppedGroup = undefined;
  };

  before(async () => {
    zk = await startZooKeeper();
    const layout = await ArcusZk.connect(zk.address);
    await layout.createServiceCode('svc-hung');
    await layout.mapServer('127.0.6.1:11211', 'svc-hung');
    // No session of the kit's own across the stop: nothing of the layout depends on one.
    await layout.close();
  });

  after(async () => {
    // A stopped process ignores SIGTERM until it runs again.
    resume();
    await zk?.stop();
  });

  test('a connected session is given up within two thirds of the session timeout after the last reply', async () => {
    const logger = recordingLogger();
    const watcher = new TopologyWatcher({ servers: [zk.address], sessionTimeoutMs: SESSION_MS, logger });
    const changes: Array<{ at: number; state: WatcherState }> = [];
    watcher.on('state', (state: WatcherState) => {
      if (changes.at(-1)?.state.connected !== state.connected) changes.push({ at: Date.now(), state });
    });
    try {
      watcher.start();
      await watcher.synced(60_000);
      assert.equal(watcher.state.connected, true);
      // A few pings answered first: a server that answers is not dropped. A sleep: time passing is
      // the condition, nothing happens at its end.
      await sleep(3 * PING_MS);
      assert.deepEqual(
        logger.lines.filter((l) => l.level === 'warn'),
        [],
      );

      const stoppedAt = hang();
      try {
        await eventually(() => assert.equal(watcher.state.connected, false), { timeoutMs: 30_000, intervalMs: 50 });
        const lost = changes.at(-1)!;
        const dropped = logger.lines.find(
          (l) => l.msg === 'ZooKeeper server stopped answering; dropping the connection',
        );
        assert.ok(dropped, JSON.stringify(logger.lines));
        assert.equal(dropped.level, 'warn');
        // Known to stand up to the last reply, which came at most a ping interval before the stop.
        const { aliveUntil } = lost.state;
        assert.ok(aliveUntil <= stoppedAt + 100, `alive until ${aliveUntil - stoppedAt} ms after the stop`);
        assert.ok(
          aliveUntil >= stoppedAt - PING_MS - SLACK_MS,
          `alive until ${stoppedAt - aliveUntil} ms before the stop`,
        );
        // Dropped once a ping waited a third of the session timeout: two thirds after the last reply.
        const silence = lost.at - aliveUntil;
        assert.ok(silence >= 2 * PING_MS - 50, `dropped after ${silence} ms of silence, before a ping went unanswered`);
        assert.ok(silence <= 2 * PING_MS + SLACK_MS, `dropped after ${silence} ms of silence`);
        assert.ok(Number(dropped.fields['silentMs']) >= 2 * PING_MS - 50, JSON.stringify(dropped.fields));
        assert.ok(lost.at - stoppedAt <= 2 * PING_MS + SLACK_MS, `noticed ${lost.at - stoppedAt} ms after the stop`);
        assert.equal(watcher.topology.nodes.length, 1, 'the last topology is kept');
      } finally {
        resume();
      }
      await eventually(() => assert.equal(watcher.state.connected, true), { timeoutMs: 60_000 });
      assert.equal(watcher.topology.nodes.length, 1);
    } finally {
      resume();
      watcher.close();
    }
  });

  test('a connect request left unanswered is given up a third of the session timeout later, and retried', async () => {
    const logger = recordingLogger();
    const watcher = new TopologyWatcher({ servers: [zk.address], sessionTimeoutMs: SESSION_MS, logger });
    try {
      hang();
      try {
        watcher.start();
        // The stopped server's kernel still accepts connections; its answer never comes.
        await eventually(
          () => {
            const retries = logger.lines.filter(
              (l) => l.msg === 'ZooKeeper server did not answer the connect request; trying again',
            );
            assert.ok(retries.length >= 2, JSON.stringify(logger.lines));
            assert.equal(retries[0]!.level, 'debug');
            assert.ok(Number(retries[0]!.fields['silentMs']) >= PING_MS - 50, JSON.stringify(retries[0]));
          },
          { timeoutMs: 30_000 },
        );
        assert.equal(watcher.state.connected, false);
        assert.equal(watcher.state.synced, false);
      } finally {
        resume();
      }
      await watcher.synced(60_000);
      assert.equal(watcher.state.connected, true);
      assert.equal(watcher.topology.nodes.length, 1);
    } finally {
      resume();
      watcher.close();
    }
  });
});
