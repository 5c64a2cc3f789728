/**
 * ArcusNodeClient against a fake ARCUS 1.15.0 answering with the captured replies.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CachemonError, Errors } from '@cachemon/core';
import { ArcusNodeClient, isTooManyPrefixes, parseStats } from '../../src/protocol/index.js';
import { fakeServer, onLines, sample, type FakeServer } from './fixtures.js';
import { prefixItems, prefixOperations } from '../support/prefix-parse.js';

const TOO_MANY = 'CLIENT_ERROR invalid: too many prefixes\r\n';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** Replies by command; `stats prefixlist` lines are built from sample 37 / 36 for the names asked. */
async function fakeArcus(
  options: { tooManyPrefixes?: boolean } = {},
): Promise<FakeServer & { received: string[]; segments: string[] }> {
  const received: string[] = [];
  const segments: string[] = [];
  const itemLines = sample('37-stats-prefixes-after.raw')
    .split('\r\n')
    .filter((l) => l.startsWith('PREFIX '));
  const operationLines = sample('36-stats-detail-dump.raw')
    .split('\r\n')
    .filter((l) => l.startsWith('PREFIX '));
  const lineFor = (lines: string[], name: string): string[] =>
    lines.filter((l) => l.split(' ')[1] === name).map((l) => `${l}\r\n`);
  const server = await fakeServer((socket) => {
    socket.on('data', (chunk: Buffer) => segments.push(chunk.toString('latin1')));
    onLines(socket, (command) => {
      received.push(command);
      const words = command.split(' ');
      let reply: string;
      if (command === 'stats') reply = sample('01-stats.raw');
      else if (command === 'stats settings') reply = sample('02-stats-settings.raw');
      else if (command === 'stats slabs') reply = sample('03-stats-slabs.raw');
      else if (command === 'stats zookeeper') reply = sample('04-stats-zookeeper.raw');
      else if (command === 'stats prefixes')
        reply = options.tooManyPrefixes ? TOO_MANY : sample('37-stats-prefixes-after.raw');
      else if (command === 'stats detail dump')
        reply = options.tooManyPrefixes ? TOO_MANY : sample('36-stats-detail-dump.raw');
      else if (command.startsWith('stats prefixlist item '))
        reply = `${words
          .slice(3)
          .flatMap((n) => lineFor(itemLines, n))
          .join('')}END\r\n`;
      else if (command.startsWith('stats prefixlist operation '))
        reply = `${words
          .slice(3)
          .flatMap((n) => lineFor(operationLines, n))
          .join('')}END\r\n`;
      else reply = 'ERROR no matching command\r\n';
      socket.write(reply, 'latin1');
    });
  });
  cleanups.push(() => server.close());
  return Object.assign(server, { received, segments });
}

function client(address: string): ArcusNodeClient {
  const c = new ArcusNodeClient(address);
  cleanups.push(() => c.close());
  return c;
}

const soon = (): number => Date.now() + 5000;

describe('ArcusNodeClient against captured ARCUS replies', () => {
  it('statsBytes hands the stats reply to its callback byte for byte', async () => {
    const server = await fakeArcus();
    const node = client(server.address);
    const bytes = await new Promise<string>((resolve, reject) =>
      node.statsBytes(soon(), (err, reply) => (err ? reject(err) : resolve(reply!.toString('latin1')))),
    );
    assert.equal(bytes, sample('01-stats.raw'));
    assert.deepEqual(server.received, ['stats']);
  });

  it('stats, stats settings, stats zookeeper, stats slabs', async () => {
    const server = await fakeArcus();
    const node = client(server.address);
    assert.equal(node.address, server.address);
    const [stats, settings, zookeeper, slabs] = await Promise.all([
      node.stats(soon()),
      node.statsSettings(soon()),
      node.statsZookeeper(soon()),
      node.statsSlabs(soon()),
    ]);
    assert.deepEqual(stats, parseStats(sample('01-stats.raw')));
    assert.equal(settings.find(([n]) => n === 'logger')?.[1], 'standard error');
    assert.deepEqual(zookeeper.at(-1), ['zk_ready', 'true']);
    assert.equal(slabs.length, 27);
    assert.deepEqual(server.received, ['stats', 'stats settings', 'stats zookeeper', 'stats slabs']);
    assert.equal(server.sockets.length, 1);
  });

  it('all prefixes: stats prefixes and stats detail dump', async () => {
    const server = await fakeArcus();
    const node = client(server.address);
    const items = await prefixItems(node, soon());
    assert.deepEqual(
      items.map((i) => [i.prefix, i.fields['itm']]),
      [
        ['<null>', 1],
        ['app', 3],
        ['arcus', 1],
        ['user', 2],
      ],
    );
    const operations = await prefixOperations(node, soon());
    assert.deepEqual(
      operations.map((o) => [o.prefix, o.counts['get']]),
      [
        ['app', 5],
        ['arcus', 0],
        ['user', 3],
        ['<null>', 2],
      ],
    );
    assert.deepEqual(server.received, ['stats prefixes', 'stats detail dump']);
  });

  it('too many prefixes: recognisable, and named prefixes still work', async () => {
    const server = await fakeArcus({ tooManyPrefixes: true });
    const node = client(server.address);
    let refused: unknown;
    await prefixItems(node, soon()).catch((err: unknown) => (refused = err));
    assert.ok(refused instanceof CachemonError && refused.code === Errors.NODE_ERROR_REPLY.code);
    assert.equal(isTooManyPrefixes(refused), true);
    let refusedOps: unknown;
    await prefixOperations(node, soon()).catch((err: unknown) => (refusedOps = err));
    assert.equal(isTooManyPrefixes(refusedOps), true);

    const items = await prefixItems(node, soon(), ['app', 'user']);
    assert.deepEqual(
      items.map((i) => i.prefix),
      ['app', 'user'],
    );
    assert.equal(items[0]!.created, '20261121133215');
    const operations = await prefixOperations(node, soon(), ['app']);
    assert.equal(operations[0]!.counts['bgs'], 2);
    assert.deepEqual(server.received.slice(2), ['stats prefixlist item app user', 'stats prefixlist operation app']);
    assert.equal(node.connection.connected, true, 'an error reply does not cost the connection');
  });

  it('long name lists: chunked, pipelined in one segment, results in the order asked', async () => {
    const server = await fakeArcus();
    const node = client(server.address);
    const names = [
      ...Array.from({ length: 30 }, (_, i) => `absent${i}`),
      'user',
      ...Array.from({ length: 30 }, (_, i) => `gone${i}`),
      'app',
      '<null>',
    ];
    const items = await prefixItems(node, soon(), names);
    assert.deepEqual(
      items.map((i) => i.prefix),
      ['user', 'app', '<null>'],
    );
    assert.equal(server.received.length, 3);
    assert.deepEqual(
      server.received.flatMap((c) => c.split(' ').slice(3)),
      names,
    );
    assert.equal(server.segments.length, 1, 'all chunks leave together');
    assert.deepEqual(await prefixItems(node, soon(), []), []);
    assert.equal(server.received.length, 3, 'an empty list sends nothing');
  });

  it('a bad name rejects the call and sends nothing', async () => {
    const server = await fakeArcus();
    const node = client(server.address);
    let err: unknown;
    await prefixOperations(node, soon(), ['app', 'evil\r\nflush_all']).catch((e: unknown) => (err = e));
    assert.ok(err instanceof CachemonError && err.code === Errors.CONFIG_INVALID.code);
    // A client dialled after it is answered, and is the only one the server has seen (it accepts
    // in the order connections come).
    assert.equal((await prefixItems(client(server.address), soon(), ['app'])).length, 1);
    assert.deepEqual(server.received, ['stats prefixlist item app']);
    assert.equal(server.sockets.length, 1);
  });
});
