import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mcHash } from '../src/arcus-double/hash.js';
import { itemSize, Memory, type Allocation } from '../src/arcus-double/memory.js';

describe('mcHash (lookup3 hashlittle, as the server hashes prefixes)', () => {
  test('matches the reference vectors', () => {
    assert.equal(mcHash(''), 0xdeadbeef);
    assert.equal(mcHash('Four score and seven years ago'), 0x17770551);
  });

  test('orders the sample prefixes like the server does (bucket = hash % 1024)', () => {
    const buckets = ['app', 'arcus-ping', 'arcus', 'user', ''].map((p) => mcHash(p) % 1024);
    assert.deepEqual(
      [...buckets].sort((a, b) => a - b),
      buckets,
      'stats detail dump lists app, arcus-ping, arcus, user, <null>',
    );
  });
});

describe('item sizes', () => {
  test('reproduce the sample sizes', () => {
    const memory = new Memory();
    const space = (size: number): number => memory.spaceSize(size);
    assert.equal(space(itemSize.kv('arcus:zk-ping'.length, 3)), 96);
    assert.equal(space(itemSize.kv('noprefixkey'.length, 5)), 96);
    const list =
      space(itemSize.collection('list', 'app:list1'.length)) +
      [8, 7, 7].reduce((sum, n) => sum + space(itemSize.listElement(n)), 0);
    assert.equal(list, 272);
    const set =
      space(itemSize.collection('set', 'user:set1'.length)) +
      space(168) +
      space(itemSize.setElement(5)) +
      space(itemSize.setElement(6));
    assert.equal(set, 376);
    const btree =
      space(itemSize.collection('btree', 'app:btree1'.length)) +
      space(280) +
      space(itemSize.btreeElement(0, 0, 7)) +
      space(itemSize.btreeElement(0, 2, 7)) +
      space(itemSize.btreeElement(0, 0, 8));
    assert.equal(btree, 544);
  });
});

describe('small-memory allocator simulation', () => {
  test('keeps its books balanced through random allocations and frees', () => {
    const memory = new Memory();
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const live: Allocation[] = [];
    const stats = (): Map<string, number> => new Map(memory.slabStats(67108864).map(([k, v]) => [k, Number(v)]));
    for (let step = 0; step < 20000; step++) {
      if (live.length > 0 && random(100) < 45) {
        memory.free(live.splice(random(live.length), 1)[0] as Allocation);
      } else {
        live.push(memory.alloc(20 + random(random(10) === 0 ? 60000 : 600)));
      }
      if (step % 997 === 0) {
        const s = stats();
        const smUsed = live.filter((a) => a.slot !== undefined).reduce((sum, a) => sum + a.space, 0);
        assert.equal(s.get('SM:used_total_space'), smUsed);
        const blocks = s.get('0:used_chunks') ?? 0;
        assert.equal(
          (s.get('SM:used_total_space') ?? 0) +
            (s.get('SM:free_small_space') ?? 0) +
            (s.get('SM:free_avail_space') ?? 0),
          blocks * (262144 - 32),
          `step ${step}`,
        );
      }
    }
    for (const allocation of live.splice(0)) memory.free(allocation);
    const s = stats();
    assert.equal(s.get('SM:used_total_space'), 0);
    assert.equal(s.get('SM:free_avail_space'), 0);
    assert.equal(s.get('SM:used_num_classes'), 0);
    assert.equal(s.get('0:used_chunks'), 0, 'every block went back');
  });
});
