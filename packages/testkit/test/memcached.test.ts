import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startMemcached, type Memcached } from '../src/index.js';
import { RawClient } from './helpers.js';

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('startMemcached', () => {
  let memcached: Memcached;

  before(async () => {
    memcached = await startMemcached({ extraArgs: ['-c', '512'] });
  });
  after(async () => {
    await memcached?.kill();
  });

  test('answers stats with its own PID and the requested settings', async () => {
    assert.match(memcached.address, /^127\.0\.0\.1:\d+$/);
    const client = await RawClient.connect(memcached.address);
    try {
      const stats = await client.send('stats\r\n', 'END\r\n');
      assert.match(stats, new RegExp(`^STAT pid ${memcached.pid}\\r$`, 'm'));
      assert.match(stats, /^STAT version 1\.6\.\d+\r$/m);
      assert.match(stats, /^STAT limit_maxbytes 67108864\r$/m, '-m 64');
      assert.match(stats, /^STAT threads 2\r$/m, '-t 2');
      assert.match(stats, /^STAT max_connections 512\r$/m, 'extraArgs are passed');
      assert.equal(await client.send('set k 0 0 2\r\nhi\r\n'), 'STORED\r\n');
      assert.equal(await client.send('get k\r\n', 'END\r\n'), 'VALUE k 0 2\r\nhi\r\nEND\r\n');
    } finally {
      client.close();
    }
  });

  test('stop() ends it by PID; start() serves again on the same port', async () => {
    const pid = memcached.pid as number;
    await memcached.stop();
    assert.equal(memcached.pid, undefined);
    assert.equal(processExists(pid), false);
    await assert.rejects(RawClient.connect(memcached.address));

    await memcached.start();
    assert.notEqual(memcached.pid, undefined);
    const client = await RawClient.connect(memcached.address);
    try {
      assert.match(await client.send('version\r\n'), /^VERSION 1\.6\.\d+\r\n$/);
    } finally {
      client.close();
    }
  });
});
