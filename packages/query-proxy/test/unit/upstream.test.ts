import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { parseQueryProxyConfig } from '../../src/index.js';
import { GroupCall, GroupFailure, Upstreams } from '../../src/upstream.js';

/** Requests as the stores got them, in order: the store's name each. */
const arrivals: string[] = [];
const arrived = new Set<() => void>();

/** A store that holds every request until the test answers it. */
async function heldStore(name: string): Promise<{ server: Server; target: string; answer: () => void }> {
  const held: ServerResponse[] = [];
  const server = createServer((_req, res) => {
    held.push(res);
    arrivals.push(name);
    for (const wake of arrived) wake();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return {
    server,
    target: `127.0.0.1:${address.port}`,
    answer: () => {
      for (const res of held.splice(0))
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"success","data":[]}');
    },
  };
}

/** Resolves once `count` requests have arrived at the stores in all. */
function arrivalsReach(count: number): Promise<void> {
  return new Promise((resolve) => {
    const wake = (): void => {
      if (arrivals.length < count) return;
      arrived.delete(wake);
      resolve();
    };
    arrived.add(wake);
    wake();
  });
}

describe("a group's replicas", () => {
  const servers: Server[] = [];
  const upstreams = new Upstreams();
  after(async () => {
    await upstreams.close();
    for (const server of servers) server.closeAllConnections();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it('a replica asked beside a slow one that then answers first is not passed over', async () => {
    // Each replica's share of the 4 s timeout is 2 s; the stores answer when the test says.
    const [a, b] = await Promise.all([heldStore('a'), heldStore('b')]);
    servers.push(a.server, b.server);
    const [group] = parseQueryProxyConfig('promxy.yml', {
      promxy: { server_groups: [{ static_configs: [{ targets: [a.target, b.target] }], timeout: '4s' }] },
    }).groups;
    const ask = async () => {
      const call = new GroupCall(group!.timeoutMs);
      try {
        return (await upstreams.json(group!, { path: '/api/v1/labels', method: 'GET', search: '' }, call)).target;
      } finally {
        call.done();
      }
    };
    // a is asked first, b beside it after its share; then a answers, before b.
    const first = ask();
    await arrivalsReach(2);
    assert.deepEqual(arrivals, ['a', 'b']);
    a.answer();
    assert.equal(await first, `http://${a.target}`);
    // b had less time than a, not more: it keeps its turn, first this time (a would be asked
    // only after b's share of the timeout).
    const second = ask();
    await arrivalsReach(3);
    assert.deepEqual(arrivals, ['a', 'b', 'b']);
    b.answer();
    assert.equal(await second, `http://${b.target}`);
  });
});

/** A store answering every request at once: 200 with `data`, or 500 while `failing()`. */
async function scriptedStore(
  failing: () => boolean,
  data: unknown,
): Promise<{ server: Server; target: string; asked: () => number }> {
  let asked = 0;
  const server = createServer((_req, res) => {
    asked++;
    if (failing()) res.writeHead(500).end('out of order');
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'success', data }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return { server, target: `127.0.0.1:${address.port}`, asked: () => asked };
}

describe("a merged group's replicas, each asked", () => {
  const servers: Server[] = [];
  const failures: string[] = [];
  const upstreams = new Upstreams({ replicaFailed: (_group, target, kind) => failures.push(`${target} ${kind}`) });
  after(async () => {
    await upstreams.close();
    for (const server of servers) server.closeAllConnections();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });
  const groupOf = (targets: string[], timeout: string) =>
    parseQueryProxyConfig('promxy.yml', { promxy: { server_groups: [{ static_configs: [{ targets }], timeout }] } })
      .groups[0]!;
  const each = (group: ReturnType<typeof groupOf>) =>
    upstreams.jsonEach(group, { path: '/api/v1/labels', method: 'GET', search: '' }, new GroupCall(group.timeoutMs));

  it('a replica silent past its share, once another answered, is given up, counted, then passed over', async () => {
    const healthy = await scriptedStore(() => false, ['a']);
    const silent = await heldStore('silent');
    servers.push(healthy.server, silent.server);
    // Each replica's share of the 2 s timeout is 1 s.
    const group = groupOf([silent.target, healthy.target], '2s');
    const started = performance.now();
    const first = await each(group);
    const took = performance.now() - started;
    assert.ok(took >= 950 && took < 1900, `answered after ${Math.round(took)} ms`);
    assert.deepEqual(
      first.answers.map((a) => [a.target, a.body]),
      [[`http://${healthy.target}`, { status: 'success', data: ['a'] }]],
    );
    assert.deepEqual(
      first.problems.map((p) => [p.target, p.kind]),
      [[`http://${silent.target}`, 'timeout']],
    );
    assert.match(first.problems[0]!.detail, /^no answer within \d+ ms, while another replica had answered$/);
    assert.deepEqual(failures, [`http://${silent.target} timeout`]);
    // Passed over now: not asked, and the answer does not wait for it.
    const before = arrivals.length;
    const again = performance.now();
    const second = await each(group);
    assert.ok(performance.now() - again < 500);
    assert.deepEqual(second.passedOver, [`http://${silent.target}`]);
    assert.equal(second.answers.length, 1);
    assert.equal(arrivals.length, before, 'the silent replica was not asked');
    silent.answer();
  });

  it('a replica passed over is asked all the same when every other fails', async () => {
    let firstFails = true;
    const one = await scriptedStore(() => firstFails, ['one']);
    const two = await scriptedStore(() => !firstFails, ['two']);
    servers.push(one.server, two.server);
    const group = groupOf([one.target, two.target], '2s');
    const first = await each(group);
    assert.deepEqual(
      first.answers.map((a) => a.target),
      [`http://${two.target}`],
    );
    assert.equal(first.problems[0]?.detail, 'answered 500: out of order');
    firstFails = false;
    const second = await each(group);
    assert.deepEqual(
      second.answers.map((a) => a.target),
      [`http://${one.target}`],
    );
    assert.deepEqual(second.passedOver, []);
    assert.deepEqual([one.asked(), two.asked()], [2, 2]);
    // Every replica failing is the group's failure, naming each.
    const dead = groupOf(['127.0.0.1:1', '127.0.0.1:2'], '2s');
    await assert.rejects(each(dead), (err: unknown) => {
      assert.ok(err instanceof GroupFailure);
      assert.equal(err.kind, 'unavailable');
      assert.match(
        err.message,
        /^group 0: no replica answered \(http:\/\/127\.0\.0\.1:\d: .*; http:\/\/127\.0\.0\.1:\d: .*\)$/,
      );
      return true;
    });
  });
});
