import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { parseQueryProxyConfig } from '../../src/index.js';
import { GroupCall, Upstreams } from '../../src/upstream.js';

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
