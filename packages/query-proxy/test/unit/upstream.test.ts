import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { after, describe, it } from 'node:test';
import { parseQueryProxyConfig } from '../../src/index.js';
import { GroupCall, Upstreams } from '../../src/upstream.js';

/** A store that answers every request after `delayMs`. */
async function slowStore(delayMs: number): Promise<{ server: Server; target: string }> {
  const server = createServer((_req, res) => {
    setTimeout(
      () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"success","data":[]}'),
      delayMs,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return { server, target: `127.0.0.1:${address.port}` };
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
    // Both take 700 ms; each replica's share of the 1 s timeout is 500 ms.
    const [a, b] = await Promise.all([slowStore(700), slowStore(700)]);
    servers.push(a.server, b.server);
    const [group] = parseQueryProxyConfig('promxy.yml', {
      promxy: { server_groups: [{ static_configs: [{ targets: [a.target, b.target] }], timeout: '1s' }] },
    }).groups;
    const ask = async () => {
      const call = new GroupCall(group!.timeoutMs);
      try {
        return (await upstreams.json(group!, { path: '/api/v1/labels', method: 'GET', search: '' }, call)).target;
      } finally {
        call.done();
      }
    };
    // a is asked first, b beside it after 500 ms; a answers at 700 ms, before b could.
    assert.equal(await ask(), `http://${a.target}`);
    // b had less time than a, not more: it keeps its turn, first this time.
    assert.equal(await ask(), `http://${b.target}`);
  });
});
