import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { ArcusZk, eventually, parseExposition, startZooKeeper, valueOf } from '@cachemon/testkit';
import type { NodeRegistration, ZooKeeperServer } from '@cachemon/testkit';
import type { Harness } from './support.js';
import { startHarness } from './support.js';

const MINUTES_20 = 20 * 60 * 1000;
/** The harness's session timeout, and the client's ping interval (a third of it). */
const SESSION_MS = 4000;
const PING_MS = Math.floor(SESSION_MS / 3);

/** The provider's own series of an ensemble, by name. */
async function ownMetrics(provider: Harness, ensemble: string): Promise<(name: string) => number | undefined> {
  const samples = parseExposition(await (await fetch(provider.url + '/metrics')).text());
  return (name) => valueOf(samples, name, { ensemble });
}

/** `promtool check metrics` on an exposition: its exit code and what it printed. */
function promtool(text: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile('promtool', ['check', 'metrics'], { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
    child.stdin!.end(text);
  });
}

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
    const quietMetric = await ownMetrics(provider, 'solo');
    assert.ok(quietMetric('cachemon_topology_age_seconds')! < 1, 'the age counts from the confirmation');
    assert.ok(now() / 1000 - quietMetric('cachemon_topology_last_update_timestamp_seconds')! >= MINUTES_20 / 1000);
    assert.ok(Math.abs(now() / 1000 - quietMetric('cachemon_topology_last_confirmed_timestamp_seconds')!) < 1);

    const stopping = now();
    await zk.stop();
    const stopped = now();
    await eventually(async () => assert.equal((await statusRow()).topology, 'stale'), { timeoutMs: 20_000 });
    const early = await statedAge();
    // Up to a ping interval more when the stopping server left a ping unanswered (see below).
    assert.ok(early <= Math.round((now() - stopping + PING_MS) / 1000) + 1, `stated ${early} s just after the stop`);

    // Wait until four seconds have passed since the stop, as the issue saw it.
    await eventually(async () => assert.ok((await statedAge()) >= 4), { timeoutMs: 20_000, intervalMs: 200 });
    const age = await statedAge();
    const metric = await ownMetrics(provider, 'solo');
    const since = { stopping: (now() - stopping) / 1000, stopped: (now() - stopped) / 1000 };
    // A ping the stopping server left unanswered ends the confirmation at its last reply, up to a
    // ping interval before the stop.
    const ping = PING_MS / 1000;
    const fits = (value: number) =>
      value >= Math.floor(since.stopped) - 1 && value <= Math.ceil(since.stopping + ping) + 1;
    const went = `ZooKeeper went away ${since.stopped.toFixed(1)}-${since.stopping.toFixed(1)} s ago`;
    assert.ok(fits(age), `stated ${age} s; ${went}`);
    const ageMetric = metric('cachemon_topology_age_seconds')!;
    assert.ok(fits(ageMetric), `cachemon_topology_age_seconds ${ageMetric}; ${went}`);
    assert.ok(ageMetric < MINUTES_20 / 1000 / 2, 'not counted from the last change');
    const stale = await statusRow();
    assert.equal(stale.updated, quiet.updated, 'nothing changed meanwhile');
    assert.ok(stale.confirmed >= stopping - PING_MS && stale.confirmed <= stopped + 1000, 'confirmed up to the loss');
    assert.equal(metric('cachemon_topology_last_confirmed_timestamp_seconds'), stale.confirmed / 1000);
    assert.equal(metric('cachemon_topology_last_update_timestamp_seconds'), quiet.updated / 1000);
    assert.equal(metric('cachemon_topology_stale'), 1);

    await zk.start();
    await eventually(async () => assert.equal((await statusRow()).topology, 'current'), { timeoutMs: 30_000 });
    assert.ok(now() - (await statusRow()).confirmed < 1000, 'confirmed again once back');
    assert.ok((await ownMetrics(provider, 'solo'))('cachemon_topology_age_seconds')! < 1);
  });

  test('promtool check metrics finds nothing in /metrics', async () => {
    const text = await (await fetch(provider.url + '/metrics')).text();
    assert.match(text, /^cachemon_topology_last_confirmed_timestamp_seconds\{ensemble="solo"\} /m);
    assert.deepEqual(await promtool(text), { code: 0, output: '' });
  });
});

/**
 * A ZooKeeper whose process is stopped (SIGSTOP) keeps its connections open and answers nothing.
 * The provider notices within two thirds of the session timeout of its last reply, before the
 * session timeout, and counts the age from that reply.
 */
describe('staleness of a hung ZooKeeper (process stopped, connections open)', () => {
  // The longest session the kit's servers grant (tickTime 500): the bound is well inside it.
  const session = 10_000;
  const ping = Math.floor(session / 3);
  /** Timers late on a busy machine. */
  const slack = 2000;
  let zk: ZooKeeperServer;
  let provider: Harness;
  let stoppedGroup: number | undefined;
  let skew = 0;
  const now = () => Date.now() + skew;
  const resume = () => {
    if (stoppedGroup !== undefined) process.kill(-stoppedGroup, 'SIGCONT');
    stoppedGroup = undefined;
  };

  before(async () => {
    zk = await startZooKeeper();
    const layout = await ArcusZk.connect(zk.address);
    await layout.createServiceCode('svc-a');
    await layout.mapServer('127.0.1.1:11211', 'svc-a');
    // No session of the kit's own across the stop: nothing of the layout depends on one.
    await layout.close();
    provider = await startHarness(
      { ensembleByName: { solo: [zk.address] }, log: { level: 'info' } },
      { now, zkSessionTimeoutMs: session },
    );
    await eventually(async () => {
      assert.deepEqual(await provider.variable({ target: 'nodes' }), ['127.0.1.1:11211']);
    });
  });

  after(async () => {
    // A stopped process ignores SIGTERM until it runs again.
    resume();
    await provider?.close();
    await zk?.stop();
  });

  const status = async () => {
    const { body } = await provider.post('/query', { targets: [{ refId: 'A', target: 'ensemble_status' }] });
    const frame = (body as Array<{ columns: Array<{ text: string }>; rows: unknown[][] }>)[0]!;
    const row = frame.rows[0]!;
    const column = (name: string) => row[frame.columns.findIndex((c) => c.text === name)];
    return { topology: column('topology'), confirmed: column('confirmed') as number };
  };

  test('it is stale within two thirds of the session timeout, aged from the last reply, not from the last change', async () => {
    skew += MINUTES_20;
    assert.equal((await status()).topology, 'current');
    assert.ok((await ownMetrics(provider, 'solo'))('cachemon_topology_age_seconds')! < 1);

    assert.ok(zk.pid !== undefined);
    stoppedGroup = zk.pid;
    process.kill(-zk.pid, 'SIGSTOP');
    const stoppedAt = now();
    try {
      await eventually(async () => assert.equal((await status()).topology, 'stale'), { timeoutMs: 60_000 });
      const { confirmed } = await status();
      const dropped = provider
        .logs()
        .find((l) => l['msg'] === 'ZooKeeper server stopped answering; dropping the connection');
      assert.ok(dropped, 'the silent server is logged');
      assert.equal(dropped['level'], 'warn');
      // Log times are wall-clock; the provider's runs `skew` ahead.
      const droppedAt = Date.parse(String(dropped['time'])) + skew;
      assert.ok(confirmed <= stoppedAt + 100, `confirmed ${confirmed - stoppedAt} ms after the stop`);
      assert.ok(confirmed >= stoppedAt - ping - slack, `confirmed ${stoppedAt - confirmed} ms before the stop`);
      assert.ok(droppedAt - confirmed <= 2 * ping + slack, `dropped ${droppedAt - confirmed} ms after the last reply`);
      assert.ok(droppedAt - stoppedAt <= 2 * ping + slack, `noticed ${droppedAt - stoppedAt} ms after the stop`);

      // From then on the age is the time since that reply, and grows with the clock.
      const metric = await ownMetrics(provider, 'solo');
      const age = metric('cachemon_topology_age_seconds')!;
      const sinceReply = (now() - confirmed) / 1000;
      assert.ok(age <= sinceReply && age >= sinceReply - 1, `age ${age} s, ${sinceReply} s since the last reply`);
      assert.ok(age >= (now() - stoppedAt) / 1000 - 1, `age ${age} s, stopped ${(now() - stoppedAt) / 1000} s ago`);
      assert.ok(age < MINUTES_20 / 1000 / 2, 'not counted from the last change');
      assert.equal(metric('cachemon_topology_last_confirmed_timestamp_seconds'), confirmed / 1000);
      assert.equal(metric('cachemon_zookeeper_connected'), 0);
    } finally {
      resume();
    }
    await eventually(async () => assert.equal((await status()).topology, 'current'), { timeoutMs: 60_000 });
    assert.ok((await ownMetrics(provider, 'solo'))('cachemon_topology_age_seconds')! < 1);
  });
});
