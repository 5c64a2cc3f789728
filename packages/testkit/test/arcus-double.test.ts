import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ArcusDouble, eventually, startArcusDoubles } from '../src/index.js';
import { RawClient } from './helpers.js';

const doubles: ArcusDouble[] = [];
async function startDouble(
  options: Parameters<typeof ArcusDouble.start>[0] = {},
): Promise<{ double: ArcusDouble; client: RawClient }> {
  const double = await ArcusDouble.start(options);
  doubles.push(double);
  return { double, client: await RawClient.connect(double.address) };
}
after(async () => {
  for (const double of doubles) await double.stop();
});

function stat(reply: string, name: string): string | undefined {
  return new RegExp(`^STAT ${name} (.*)\\r$`, 'm').exec(reply)?.[1];
}

describe('ArcusDouble behaviours', () => {
  test("'hang' reads requests and never answers; 'normal' answers again", async () => {
    const { double, client } = await startDouble();
    double.setBehavior('hang');
    // A request line split across writes is counted once it is whole.
    client.socket.write('stats\r\nversion\r\nsta');
    await eventually(() => assert.equal(double.statsRequests, 1, 'stats requests are counted while hanging'));
    client.socket.write('ts settings\r\n');
    await eventually(() => assert.equal(double.statsRequests, 2));
    double.setBehavior('normal');
    // The first bytes the connection ever got are this reply: nothing was answered while hanging,
    // and the connection stayed open.
    client.socket.write('version\r\n');
    assert.equal(await client.collect(), 'VERSION 1.15.0\r\n');
    await client.send('stats detail on\r\n');
    assert.equal(double.statsRequests, 3);
    client.close();
  });

  test("'garbage' answers every request with non-protocol bytes and no terminator", async () => {
    const { double, client } = await startDouble();
    // What garbage gives ends where the answer to a request made in normal mode begins (the
    // double has read a request once it has counted the stats request after it).
    const VERSION = 'VERSION 1.15.0\r\n';
    const garbageFor = async (requests: string): Promise<string> => {
      const counted = double.statsRequests;
      double.setBehavior('garbage');
      client.socket.write(`${requests}stats\r\n`);
      await eventually(() => assert.equal(double.statsRequests, counted + 1));
      double.setBehavior('normal');
      client.socket.write('version\r\n');
      const all = await client.collect(VERSION);
      assert.ok(all.endsWith(VERSION), JSON.stringify(all));
      return all.slice(0, -VERSION.length);
    };
    const first = await garbageFor('');
    assert.ok(first.length > 0);
    assert.ok(!first.includes('\r\n') && !first.includes('\n'), 'no line terminator');
    assert.ok(!/^(STAT|END|ERROR|VALUE)/.test(first), 'not an ARCUS reply');
    assert.equal(await garbageFor('version\r\nget a\r\n'), first + first + first, 'one burst per request');
    client.close();
  });

  test("'hang-stats-settings' answers what comes before `stats settings`, then nothing on that connection; others are served", async () => {
    const { double, client } = await startDouble();
    double.setBehavior('hang-stats-settings');
    // What follows the request it gets stuck on in the same write is counted, not answered.
    client.socket.write('version\r\nstats settings\r\nversion\r\nstats\r\nsta');
    await eventually(() => assert.equal(double.statsRequests, 2));
    client.socket.write('ts\r\n');
    await eventually(() => assert.equal(double.statsRequests, 3));
    const other = await RawClient.connect(double.address);
    assert.match(await other.send('stats\r\n', 'END\r\n'), /^STAT pid \d+\r\n/);
    double.setBehavior('normal');
    client.socket.write('stats\r\n');
    // Read and not answered: counted (4 with the other connection's), then the other connection
    // is served once more, and the stuck one has still had only the first answer.
    await eventually(() => assert.equal(double.statsRequests, 5));
    assert.match(await other.send('stats settings\r\n', 'END\r\n'), /\r\nSTAT max_stats_prefixes 50\r\n/);
    assert.equal(client.take(), 'VERSION 1.15.0\r\n', 'what came before the stuck request, and nothing since');
    assert.equal(client.closed, false, 'the connection stays open');
    other.close();
    client.close();
  });

  test("'refuse-stats-prefixes' refuses the prefix dumps but not prefixlist", async () => {
    const { double, client } = await startDouble({ detailEnabled: true });
    assert.equal(await client.send('set app:a 0 0 1\r\n1\r\n'), 'STORED\r\n');
    double.setBehavior('refuse-stats-prefixes');
    assert.equal(await client.send('stats prefixes\r\n'), 'CLIENT_ERROR invalid: too many prefixes\r\n');
    assert.equal(await client.send('stats detail dump\r\n'), 'CLIENT_ERROR invalid: too many prefixes\r\n');
    assert.match(
      await client.send('stats prefixlist item app\r\n', 'END\r\n'),
      /^PREFIX app itm 1 kitm 1 .*\r\nEND\r\n$/,
    );
    assert.match(
      await client.send('stats prefixlist operation app\r\n', 'END\r\n'),
      /^PREFIX app get 0 hit 0 set 1 del 0 /,
    );
    client.close();
  });
});

describe('ArcusDouble state', () => {
  test('addTraffic moves the named stats counters and the byte counts, and nothing else', async () => {
    const { double, client } = await startDouble();
    const before = await client.send('stats\r\n', 'END\r\n');
    double.addTraffic({ cmd_get: 10, get_hits: 7, get_misses: 3, bop_get_elem_hits: 2, bytes_read: 600 });
    double.addTraffic({ cmd_get: 1 });
    const after = await client.send('stats\r\n', 'END\r\n');
    assert.equal(stat(after, 'cmd_get'), String(Number(stat(before, 'cmd_get')) + 11));
    assert.equal(stat(after, 'get_hits'), String(Number(stat(before, 'get_hits')) + 7));
    assert.equal(stat(after, 'get_misses'), String(Number(stat(before, 'get_misses')) + 3));
    assert.equal(stat(after, 'bop_get_elem_hits'), String(Number(stat(before, 'bop_get_elem_hits')) + 2));
    // bytes_read also counts the first stats request itself.
    assert.equal(stat(after, 'bytes_read'), String(Number(stat(before, 'bytes_read')) + 600 + 'stats\r\n'.length));
    assert.equal(stat(after, 'cmd_set'), stat(before, 'cmd_set'));
    client.close();
  });

  test('more prefixes than maxStatsPrefixes: stats prefixes refuses', async () => {
    const { double, client } = await startDouble({ maxStatsPrefixes: 2 });
    assert.match(await client.send('stats settings\r\n', 'END\r\n'), /^STAT max_stats_prefixes 2\r$/m);
    double.populate([{ key: 'a:1' }, { key: 'b:1', type: 'list' }]);
    assert.match(await client.send('stats prefixes\r\n', 'END\r\n'), /^PREFIX a .*\r\nPREFIX b .*\r\nEND\r\n$/);
    double.populate([{ key: 'c:1', type: 'btree' }]);
    assert.equal(await client.send('stats prefixes\r\n'), 'CLIENT_ERROR invalid: too many prefixes\r\n');
    assert.match(
      await client.send('stats prefixlist item c\r\n', 'END\r\n'),
      /^PREFIX c itm 1 kitm 0 litm 0 sitm 0 mitm 0 bitm 1 /,
    );
    client.close();
  });

  test('detail counting runs only while on, and settings say so', async () => {
    const { client } = await startDouble();
    assert.match(await client.send('stats settings\r\n', 'END\r\n'), /^STAT detail_enabled no\r$/m);
    await client.send('get x:1\r\n', 'END\r\n');
    assert.equal(await client.send('stats detail dump\r\n'), 'END\r\n');
    assert.equal(await client.send('stats detail on\r\n'), 'OK\r\n');
    assert.match(await client.send('stats settings\r\n', 'END\r\n'), /^STAT detail_enabled yes\r$/m);
    await client.send('get x:1\r\n', 'END\r\n');
    await client.send('set x:1 0 0 1\r\n1\r\n');
    await client.send('get x:1 nokey\r\n', 'END\r\n');
    assert.equal(await client.send('stats detail off\r\n'), 'OK\r\n');
    await client.send('get x:1\r\n', 'END\r\n');
    const dump = await client.send('stats detail dump\r\n', 'END\r\n');
    assert.match(dump, /^PREFIX x get 2 hit 1 set 1 del 0 /m);
    assert.match(dump, /^PREFIX <null> get 1 hit 0 set 0 /m);
    const stats = await client.send('stats\r\n', 'END\r\n');
    assert.equal(stat(stats, 'stat_prefixes'), '2');
    assert.equal(stat(stats, 'cmd_get'), '5');
    assert.equal(stat(stats, 'get_hits'), '2');
    assert.equal(stat(stats, 'get_misses'), '3');
    client.close();
  });

  test('items honour exptime; expired items are reclaimed', async () => {
    let now = 1_800_000_000_000;
    const { client } = await startDouble({ clock: () => now });
    assert.equal(await client.send('set arcus-ping:qos_kv 0 3 4\r\nDATA\r\n'), 'STORED\r\n');
    assert.equal(
      await client.send('lop insert arcus-ping:qos_lop 0 4 create 0 3 10\r\nDATA\r\n'),
      'CREATED_STORED\r\n',
    );
    assert.equal(
      await client.send('getattr arcus-ping:qos_lop expiretime\r\n', 'END\r\n'),
      'ATTR expiretime=3\r\nEND\r\n',
    );
    now += 2900;
    assert.equal(
      await client.send('get arcus-ping:qos_kv\r\n', 'END\r\n'),
      'VALUE arcus-ping:qos_kv 0 4\r\nDATA\r\nEND\r\n',
    );
    now += 200;
    assert.equal(await client.send('get arcus-ping:qos_kv\r\n', 'END\r\n'), 'END\r\n');
    assert.equal(await client.send('lop get arcus-ping:qos_lop 0..10\r\n'), 'NOT_FOUND\r\n');
    const stats = await client.send('stats\r\n', 'END\r\n');
    assert.equal(stat(stats, 'curr_items'), '0');
    assert.equal(stat(stats, 'bytes'), '0');
    assert.equal(stat(stats, 'reclaimed'), '2');
    assert.equal(stat(stats, 'curr_prefixes'), '0');
    assert.equal(stat(stats, 'total_items'), '2');
    assert.equal(await client.send('stats prefixes\r\n'), 'END\r\n');
    client.close();
  });

  test('heartbeat() sets arcus:zk-ping like the server', async () => {
    const { double, client } = await startDouble();
    double.heartbeat();
    double.heartbeat();
    assert.equal(await client.send('get arcus:zk-ping\r\n', 'END\r\n'), 'VALUE arcus:zk-ping 1 1\r\n1\r\nEND\r\n');
    const stats = await client.send('stats\r\n', 'END\r\n');
    assert.equal(stat(stats, 'hb_count'), '2');
    assert.equal(stat(stats, 'cmd_set'), '2');
    assert.equal(stat(stats, 'curr_items'), '1');
    assert.equal(stat(stats, 'total_items'), '2');
    assert.equal(stat(stats, 'bytes'), '96');
    client.close();
  });

  test('protocol errors', async () => {
    const { client } = await startDouble();
    assert.equal(await client.send('bogus command\r\n'), 'ERROR\r\n');
    assert.equal(await client.send('\r\n'), 'ERROR\r\n');
    assert.equal(await client.send('set k 0 0 3\r\nabcd\r\n'), 'CLIENT_ERROR bad data chunk\r\nERROR\r\n');
    assert.equal(await client.send('set k 0 0 x\r\n'), 'CLIENT_ERROR bad command line format\r\n');
    assert.equal(
      await client.send(`sop insert s 16385 create 0 0 0\r\n${'x'.repeat(16385)}\r\n`),
      'CLIENT_ERROR too large value\r\n',
    );
    assert.equal(await client.send('set k 0 0 1 noreply\r\n1\r\nget k\r\n', 'END\r\n'), 'VALUE k 0 1\r\n1\r\nEND\r\n');
    assert.equal(await client.send('lop get k 0..1\r\n'), 'TYPE_MISMATCH\r\n');
    assert.equal(await client.send('bop insert k 1 1\r\nx\r\n'), 'TYPE_MISMATCH\r\n');
    assert.equal(await client.send('constructor x\r\n'), 'ERROR\r\n');
    client.close();
  });

  test('collection semantics: overflow, trimming, ranges, drop', async () => {
    const { client } = await startDouble();
    // list: maxcount 2 with the default tail_trim
    assert.equal(await client.send('lop insert l 0 1 create 5 0 2\r\na\r\n'), 'CREATED_STORED\r\n');
    assert.equal(await client.send('lop insert l -1 1\r\nb\r\n'), 'STORED\r\n');
    assert.equal(await client.send('lop insert l 0 1\r\nc\r\n'), 'STORED\r\n');
    assert.equal(await client.send('lop get l 0..-1\r\n', 'END\r\n'), 'VALUE 5 2\r\n1 c\r\n1 a\r\nEND\r\n');
    assert.equal(await client.send('lop insert l 5 1\r\nd\r\n'), 'OUT_OF_RANGE\r\n');
    assert.equal(await client.send('lop get l 7..9\r\n'), 'NOT_FOUND_ELEMENT\r\n');
    // set: overflow is an error
    assert.equal(await client.send('sop insert s 1 create 0 0 1\r\na\r\n'), 'CREATED_STORED\r\n');
    assert.equal(await client.send('sop insert s 1\r\nb\r\n'), 'OVERFLOWED\r\n');
    assert.equal(await client.send('sop exist s 1\r\nb\r\n'), 'NOT_EXIST\r\n');
    // b+tree: smallest_trim, eflag filter, count, drop
    assert.equal(await client.send('bop create b 0 0 3\r\n'), 'CREATED\r\n');
    assert.equal(await client.send('bop create b 0 0 3\r\n'), 'EXISTS\r\n');
    for (const k of [5, 1, 3]) assert.equal(await client.send(`bop insert b ${k} 0x0${k} 1\r\n${k}\r\n`), 'STORED\r\n');
    assert.equal(await client.send('bop insert b 0 1\r\nz\r\n'), 'OUT_OF_RANGE\r\n');
    assert.equal(await client.send('bop insert b 9 1\r\nz\r\n'), 'STORED\r\n');
    assert.equal(
      await client.send('bop get b 0..100\r\n', 'END\r\n'),
      'VALUE 0 3\r\n3 0x03 1 3\r\n5 0x05 1 5\r\n9 1 z\r\nEND\r\n',
    );
    assert.match(
      await client.send('getattr b trimmed minbkey\r\n', 'END\r\n'),
      /^ATTR minbkey=3\r\nATTR trimmed=1\r\nEND\r\n$/,
    );
    assert.equal(await client.send('bop get b 0..100 0 EQ 0x05\r\n', 'END\r\n'), 'VALUE 0 1\r\n5 0x05 1 5\r\nEND\r\n');
    assert.equal(await client.send('bop count b 0..4\r\n'), 'COUNT=1\r\n');
    assert.equal(await client.send('bop insert b 0x01 1\r\nz\r\n'), 'BKEY_MISMATCH\r\n');
    assert.equal(
      await client.send('bop get b 100..0 1 1 delete\r\n', 'DELETED\r\n'),
      'VALUE 0 1\r\n5 0x05 1 5\r\nDELETED\r\n',
    );
    assert.equal(await client.send('bop delete b 0..100 drop\r\n'), 'DELETED_DROPPED\r\n');
    assert.equal(await client.send('bop get b 0..100\r\n'), 'NOT_FOUND\r\n');
    client.close();
  });

  test('flush_all empties the store; memory accounting returns to zero', async () => {
    const { double, client } = await startDouble();
    double.populate(
      Array.from({ length: 300 }, (_, i) => ({
        key: `p${i % 7}:k${i}`,
        type: (['kv', 'list', 'set', 'btree'] as const)[i % 4],
        bytes: 100 + i,
      })),
    );
    let stats = await client.send('stats\r\n', 'END\r\n');
    assert.equal(stat(stats, 'curr_items'), '300');
    assert.equal(stat(stats, 'curr_prefixes'), '7');
    assert.ok(Number(stat(stats, 'bytes')) > 300 * 96);
    assert.equal(stat(stats, 'cmd_set'), '0', 'populate is not counted as requests');
    assert.equal(await client.send('flush_all\r\n'), 'OK\r\n');
    stats = await client.send('stats\r\n', 'END\r\n');
    assert.equal(stat(stats, 'curr_items'), '0');
    assert.equal(stat(stats, 'bytes'), '0');
    assert.equal(stat(stats, 'cmd_flush'), '1');
    const slabs = await client.send('stats slabs\r\n', 'END\r\n');
    assert.equal(stat(slabs, 'SM:used_total_space'), '0');
    assert.equal(stat(slabs, '0:used_chunks'), '0', 'the SM block went back to the slab class');
    client.close();
  });
});

describe('startArcusDoubles', () => {
  test('500 doubles in one process, each on its own port, each answering', async () => {
    const many = await startArcusDoubles(500);
    try {
      assert.equal(many.length, 500);
      assert.equal(new Set(many.map((d) => d.port)).size, 500);
      const versions = await Promise.all(
        many.map(async (d) => {
          const client = await RawClient.connect(d.address);
          try {
            return await client.send('version\r\n');
          } finally {
            client.close();
          }
        }),
      );
      assert.ok(versions.every((v) => v === 'VERSION 1.15.0\r\n'));
    } finally {
      await Promise.all(many.map((d) => d.stop()));
    }
  });
});
