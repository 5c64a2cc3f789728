/**
 * Against a real plain memcached 1.6.18: what the exporter gets from a node that is not ARCUS.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CachemonError, Errors } from '@cachemon/core';
import {
  ArcusNodeClient,
  isTooManyPrefixes,
  parseStats,
  runQosProbes,
  type StatsReply,
} from '../../src/protocol/index.js';
import { startMemcached, type Memcached } from './fixtures.js';
import { prefixItems, prefixOperations } from '../support/prefix-parse.js';

let memcached: Memcached;
let client: ArcusNodeClient;

before(async () => {
  memcached = await startMemcached();
  client = new ArcusNodeClient(memcached.address);
});

after(async () => {
  client?.close();
  await memcached?.stop();
});

const soon = (): number => Date.now() + 5000;
const value = (stats: StatsReply, name: string): string | undefined => stats.find(([n]) => n === name)?.[1];

async function rejection(promise: Promise<unknown>): Promise<CachemonError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof CachemonError, `expected CachemonError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

/** One line command on the client's own connection (the traffic that feeds detail stats). */
function send(command: string, reply: 'line' | 'value' | 'multi' = 'line'): Promise<string> {
  return client.connection.request(command, { deadline: soon(), reply });
}

describe('ArcusNodeClient against memcached 1.6.18', () => {
  it('stats', async () => {
    const stats = await client.stats(soon());
    assert.ok(stats.length > 50, String(stats.length));
    assert.equal(value(stats, 'pid'), String(memcached.pid));
    assert.equal(value(stats, 'version'), '1.6.18');
    assert.match(value(stats, 'rusage_user') ?? '', /^\d+\.\d+$/);
    assert.equal(value(stats, 'limit_maxbytes'), String(64 * 1024 * 1024));
    assert.equal(stats[0]![0], 'pid');
  });

  it('stats settings, including (null) values', async () => {
    const settings = await client.statsSettings(soon());
    assert.equal(value(settings, 'tcpport'), memcached.address.split(':')[1]);
    assert.equal(value(settings, 'udpport'), '0');
    assert.equal(value(settings, 'ssl_chain_cert'), '(null)');
    assert.equal(value(settings, 'binding_protocol'), 'auto-negotiate');
  });

  it('stats slabs after a store', async () => {
    assert.equal(await send('set slab:k 0 0 5\r\nhello'), 'STORED\r\n');
    const slabs = await client.statsSlabs(soon());
    assert.ok(slabs.some(([name]) => /^\d+:chunk_size$/.test(name)));
    assert.ok(Number(value(slabs, 'active_slabs')) >= 1);
  });

  it('stats detail dump after `stats detail on` and traffic: get hit set del per prefix', async () => {
    assert.equal(await send('stats detail on'), 'OK\r\n');
    assert.equal(await send('set app:k1 0 0 5\r\nhello'), 'STORED\r\n');
    assert.equal(await send('get app:k1', 'value'), 'VALUE app:k1 0 5\r\nhello\r\nEND\r\n');
    assert.equal(await send('get app:missing', 'value'), 'END\r\n');
    assert.equal(await send('get app:k1 app:nokey', 'value'), 'VALUE app:k1 0 5\r\nhello\r\nEND\r\n');
    assert.equal(await send('delete app:k1'), 'DELETED\r\n');
    assert.equal(await send('set user:k2 0 0 1\r\nx'), 'STORED\r\n');
    const operations = await prefixOperations(client, soon());
    const app = operations.find((op) => op.prefix === 'app');
    assert.deepEqual(app, { prefix: 'app', counts: { get: 4, hit: 2, set: 1, del: 1 } });
    assert.deepEqual(operations.find((op) => op.prefix === 'user')?.counts, { get: 0, hit: 0, set: 1, del: 0 });
  });

  it('ARCUS-only commands are NODE_ERROR_REPLY, and the connection stays usable', async () => {
    const prefixes = await rejection(prefixItems(client, soon()));
    assert.equal(prefixes.code, Errors.NODE_ERROR_REPLY.code);
    assert.equal(prefixes.details?.['reply'], 'ERROR');
    assert.equal(isTooManyPrefixes(prefixes), false);
    assert.equal((await rejection(client.statsZookeeper(soon()))).code, Errors.NODE_ERROR_REPLY.code);
    assert.equal((await rejection(prefixItems(client, soon(), ['app', 'user']))).code, Errors.NODE_ERROR_REPLY.code);
    assert.equal((await rejection(prefixOperations(client, soon(), ['app']))).code, Errors.NODE_ERROR_REPLY.code);
    assert.equal(client.connection.connected, true);
    assert.equal(client.retryAt, 0);
    assert.equal(parseStats(await send('stats', 'multi')).length > 50, true);
  });

  it('invalid prefix names are refused before anything is sent: no smuggled flush_all', async () => {
    const err = await rejection(prefixItems(client, soon(), ['ok', 'bad\r\nflush_all']));
    assert.equal(err.code, Errors.CONFIG_INVALID.code);
    assert.equal((await rejection(prefixOperations(client, soon(), ['x y']))).code, Errors.CONFIG_INVALID.code);
    assert.equal(value(await client.stats(soon()), 'cmd_flush'), '0');
    assert.equal(await send('get user:k2', 'value'), 'VALUE user:k2 0 1\r\nx\r\nEND\r\n');
  });

  it('QoS: kv probes succeed, collection probes fail cleanly on the same connection', async () => {
    const totalBefore = value(await client.stats(soon()), 'total_connections');

    const simple = await runQosProbes(client.connection, { simple: true, deadline: soon() });
    assert.deepEqual(
      simple.map(({ probe, ok }) => [probe, ok]),
      [
        ['kv_set', true],
        ['kv_get', true],
      ],
    );
    for (const result of simple) assert.ok(result.seconds > 0 && result.seconds < 1, String(result.seconds));

    const full = await runQosProbes(client.connection, { simple: false, deadline: soon() });
    assert.equal(full.length, 11);
    assert.deepEqual(
      full.slice(0, 2).map((r) => r.ok),
      [true, true],
    );
    for (const result of full.slice(2)) {
      assert.equal(result.ok, false, result.probe);
      assert.equal(result.error, 'unexpected reply: ERROR', result.probe);
      assert.ok(result.seconds > 0, result.probe);
    }

    // The stream stayed in step: no reconnect, and the next reply is the right one.
    const stats = await client.stats(soon());
    assert.equal(value(stats, 'total_connections'), totalBefore);
    assert.equal(client.lastError, undefined);
    assert.equal(await send('get arcus-ping:qos_kv', 'value'), 'VALUE arcus-ping:qos_kv 0 4\r\nDATA\r\nEND\r\n');
  });
});
