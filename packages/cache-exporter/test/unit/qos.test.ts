import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { ArcusDouble, eventually } from '@cachemon/testkit';
import type { CacheNode } from '@cachemon/arcus';
import { QosScheduler } from '../../src/qos.js';

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined };

test('QoS probes that fall due while a collection runs wait for its end, then run', async () => {
  const double = await ArcusDouble.start();
  // Long enough that a probe started by the last release is told apart from the next round's.
  const intervalMs = 4000;
  const scheduler = new QosScheduler({ intervalMs, simple: true, logger: quiet });
  // Twins of it on the same node: `ticker` unheld, its rounds show when the held one's fall due;
  // `witness` held once and released beside the first release, its probe shows how long one takes.
  const ticker = new QosScheduler({ intervalMs, simple: true, logger: quiet });
  const witness = new QosScheduler({ intervalMs, simple: true, logger: quiet });
  try {
    const node: CacheNode = {
      serviceCode: 'test',
      node: double.address,
      hostname: 'localhost',
      live: true,
      mapped: true,
    };
    for (const s of [scheduler, ticker, witness]) s.setNodes([node]);
    scheduler.hold();
    scheduler.hold(); // two scrapes sharing the time
    witness.hold();
    const started = Date.now();
    for (const s of [scheduler, ticker, witness]) s.start();
    // Two rounds fall due (at 0 and at the interval); the ticker's have run by then.
    await eventually(() => assert.ok((ticker.snapshot(node.node)?.at ?? 0) >= started + intervalMs));
    assert.equal(scheduler.snapshot(node.node), undefined, 'no probe while collections run');
    scheduler.release();
    witness.release();
    await eventually(() => assert.ok(witness.snapshot(node.node)));
    assert.equal(scheduler.snapshot(node.node), undefined, 'one collection still runs');
    const released = Date.now();
    scheduler.release();
    const snapshot = await eventually(() => {
      const found = scheduler.snapshot(node.node);
      assert.ok(found, 'the probes that fell due ran once the last collection ended');
      return found;
    });
    // The next round is due an interval after the second one, well after this.
    assert.ok(
      snapshot.at >= released && snapshot.at - released < intervalMs / 2,
      `ran ${snapshot.at - released} ms after the release, not at the next round`,
    );
    assert.ok(snapshot.results.length > 0 && snapshot.results.every((r) => r.ok), JSON.stringify(snapshot.results));
    scheduler.release(); // more releases than holds change nothing
    await eventually(() => assert.ok(scheduler.snapshot(node.node)!.at > snapshot.at, 'rounds go on unheld'));
  } finally {
    for (const s of [scheduler, ticker, witness]) s.stop();
    await double.stop();
  }
});

test('a node that leaves the topology after its probe was scheduled is not connected to again', async () => {
  const double = await ArcusDouble.start();
  let accepted = 0;
  const leaving = createServer((socket) => {
    accepted++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => leaving.listen(0, '127.0.0.1', resolve));
  const scheduler = new QosScheduler({ intervalMs: 1000, simple: true, logger: quiet });
  try {
    const stays: CacheNode = {
      serviceCode: 'test',
      node: double.address,
      hostname: 'localhost',
      live: true,
      mapped: true,
    };
    const leaves: CacheNode = { ...stays, node: `127.0.0.1:${(leaving.address() as AddressInfo).port}` };
    scheduler.setNodes([stays, leaves]);
    const started = Date.now();
    scheduler.start(); // the first round probes `stays` at once and `leaves` 400 ms later
    scheduler.setNodes([stays]);
    // By the second round of `stays`, the timer of `leaves` has long fired.
    await eventually(() => assert.ok((scheduler.snapshot(stays.node)?.at ?? 0) >= started + 1000));
    assert.equal(accepted, 0, 'no connection to the node that left');
    assert.equal(scheduler.snapshot(leaves.node), undefined);
  } finally {
    scheduler.stop();
    leaving.close();
    await double.stop();
  }
});

test("a round starts the nodes' probes spread over 80 % of the interval", async () => {
  const doubles = await Promise.all([0, 1, 2, 3].map(() => ArcusDouble.start()));
  const scheduler = new QosScheduler({ intervalMs: 2000, simple: true, logger: quiet });
  try {
    const nodes: CacheNode[] = doubles.map((double) => ({
      serviceCode: 'test',
      node: double.address,
      hostname: 'localhost',
      live: true,
      mapped: true,
    }));
    scheduler.setNodes(nodes);
    const started = Date.now();
    scheduler.start(); // node i at i x 400 ms
    await eventually(() => assert.ok(nodes.every((node) => scheduler.snapshot(node.node) !== undefined)));
    const offsets = nodes.map((node) => scheduler.snapshot(node.node)!.at - started);
    for (let i = 0; i < nodes.length; i++) {
      // Each node's probes end a little after its start (i x 400 ms); a loaded machine may add some.
      assert.ok(
        offsets[i]! >= i * 400 && offsets[i]! < i * 400 + 1000,
        `node ${i} probed ${offsets[i]} ms after the start: ${offsets.join(', ')}`,
      );
    }
    // The next round starts anew at 2000 ms, with node 0: probed again before the third round, at 4000 ms.
    await eventually(() => assert.ok(scheduler.snapshot(nodes[0]!.node)!.at >= started + 2000));
    assert.ok(
      scheduler.snapshot(nodes[0]!.node)!.at < started + 4000,
      'node 0 was probed again at the start of the second round',
    );
  } finally {
    scheduler.stop();
    await Promise.all(doubles.map((double) => double.stop()));
  }
});
