import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ArcusZk, eventually, startZooKeeper } from '@cachemon/testkit';
import type { NodeRegistration, ZooKeeperServer } from '@cachemon/testkit';
import type { Harness } from './support.js';
import { startHarness } from './support.js';

const MINUTES_20 = 20 * 60 * 1000;

/**
 * A topology that has not changed for a long time is still confirmed by ZooKeeper every moment its
 * session is up: once the ensemble goes away, a stale answer counts from then, not from the change.
 */
describe('staleness against a real ZooKeeper', () => {
  let zk: ZooKeeperServer;
  let arcus: ArcusZk;
  let registration: NodeRegistration;
  let provider: Harness;
  // The provider's clock runs ahead of the wall clock by `skew`: 20 quiet minutes pass in a moment.
  let skew = 0;
  const now = () => Date.now() + skew;

  before(async () => {
    zk = await startZooKeeper();
    arcus = await ArcusZk.connect(zk.address);
    await arcus.createServiceCode('svc-a');
    registration = await arcus.registerNode('127.0.1.1:11211', 'svc-a', { hostname: 'localhost' });
    provider = await startHarness({ ensembleByName: { solo: [zk.address] }, log: { level: 'info' } }, { now });
    await eventually(async () => {
      assert.deepEqual(await provider.variable({ target: 'nodes' }), ['127.0.1.1:11211']);
    });
  });

  after(async () => {
    await provider?.close();
    await registration?.unregister();
    await arcus?.close();
    await zk?.stop();
  });

  const statusRow = async () => {
    const { body } = await provider.post('/query', { targets: [{ refId: 'A', target: 'ensemble_status' }] });
    const frame = (body as Array<{ columns: Array<{ text: string }>; rows: unknown[][] }>)[0]!;
    const row = frame.rows[0]!;
    const column = (name: string) => row[frame.columns.findIndex((c) => c.text === name)];
    return {
      topology: column('topology'),
      updated: column('updated') as number,
      confirmed: column('confirmed') as number,
    };
  };

  /** The age the stale notice of an overview panel states, in seconds. */
  const statedAge = async (): Promise<number> => {
    const { body } = await provider.post('/query', { targets: [{ refId: 'A', target: 'overview' }] });
    const notices = (body as Array<{ meta?: { notices: Array<{ severity: string; text: string }> } }>)[0]!.meta
      ?.notices;
    assert.ok(notices !== undefined && notices.length === 1, `one stale notice, got ${JSON.stringify(notices)}`);
    assert.equal(notices[0]!.severity, 'warning');
    const match = /^ensemble solo: ZooKeeper unreachable; showing its last topology, confirmed (\d+) s ago$/.exec(
      notices[0]!.text,
    );
    assert.ok(match, notices[0]!.text);
    return Number(match[1]);
  };

  test('four seconds after ZooKeeper went away, the age is about four seconds, not the time since the last change', async () => {
    skew += MINUTES_20;
    const quiet = await statusRow();
    assert.equal(quiet.topology, 'current');
    assert.ok(now() - quiet.updated >= MINUTES_20, 'the topology last changed 20 minutes ago (provider clock)');
    assert.ok(now() - quiet.confirmed < 1000, 'and is confirmed now');

    const stopping = now();
    await zk.stop();
    const stopped = now();
    await eventually(async () => assert.equal((await statusRow()).topology, 'stale'), { timeoutMs: 20_000 });
    const early = await statedAge();
    assert.ok(early <= Math.round((now() - stopping) / 1000) + 1, `stated ${early} s just after the stop`);

    // Wait until four seconds have passed since the stop, as the issue saw it.
    await eventually(async () => assert.ok((await statedAge()) >= 4), { timeoutMs: 20_000, intervalMs: 200 });
    const age = await statedAge();
    const since = { stopping: (now() - stopping) / 1000, stopped: (now() - stopped) / 1000 };
    assert.ok(
      age >= Math.floor(since.stopped) - 1 && age <= Math.ceil(since.stopping) + 1,
      `stated ${age} s; ZooKeeper went away ${since.stopped.toFixed(1)}-${since.stopping.toFixed(1)} s ago`,
    );
    const stale = await statusRow();
    assert.equal(stale.updated, quiet.updated, 'nothing changed meanwhile');
    assert.ok(stale.confirmed >= stopping && stale.confirmed <= stopped + 1000, 'confirmed up to the loss');

    await zk.start();
    await eventually(async () => assert.equal((await statusRow()).topology, 'current'), { timeoutMs: 30_000 });
    assert.ok(now() - (await statusRow()).confirmed < 1000, 'confirmed again once back');
  });
});
