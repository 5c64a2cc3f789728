import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CachemonError, Errors } from '@cachemon/core';
import { seededRandom } from '@cachemon/testkit';
import { parseKey, parseMntr, parseValue, type MntrEntry } from '../../src/index.js';

/** Replies of the Debian ZooKeeper 3.8.0 server, captured with the test kit (see fixtures/README.md). */
const fixture = (name: string): string =>
  readFileSync(new URL(`../../../test/fixtures/${name}`, import.meta.url), 'utf8');

function metrics(reply: string): {
  entries: readonly MntrEntry[];
  skipped: readonly string[];
  skippedCount: number;
  dropped: number;
  byKey: Map<string, MntrEntry>;
} {
  const parsed = parseMntr(reply);
  assert.equal(parsed.kind, 'metrics');
  if (parsed.kind !== 'metrics') throw new Error('unreachable');
  return { ...parsed, byKey: new Map(parsed.entries.map((e) => [e.key, e])) };
}

describe('parseMntr on real 3.8 replies', () => {
  for (const [file, state, lines] of [
    ['mntr-3.8-standalone.txt', 'standalone', 485],
    ['mntr-3.8-leader.txt', 'leader', 529],
    ['mntr-3.8-follower.txt', 'follower', 492],
  ] as const) {
    it(`${file}: every line read, server state ${state}`, () => {
      const { entries, skipped, byKey } = metrics(fixture(file));
      assert.deepEqual(skipped, []);
      assert.equal(entries.length, lines);
      assert.equal(byKey.get('zk_server_state')?.text, state);
      assert.equal(byKey.get('zk_server_state')?.value, undefined);
      assert.match(byKey.get('zk_version')!.text, /^3\.8\.0-.*, built on /);
      assert.equal(typeof byKey.get('zk_znode_count')?.value, 'number');
      assert.equal(byKey.get('zk_avg_latency')?.text.includes('.'), true);
      // Everything but a few text keys is a number.
      const texts = entries.filter((e) => e.value === undefined).map((e) => e.key);
      assert.deepEqual(
        texts.sort(),
        ['zk_peer_state', 'zk_server_state', 'zk_version'].filter((k) => byKey.has(k)).sort(),
      );
    });
  }

  it('leader-only keys only on the leader', () => {
    const leader = metrics(fixture('mntr-3.8-leader.txt')).byKey;
    const follower = metrics(fixture('mntr-3.8-follower.txt')).byKey;
    for (const key of ['zk_synced_followers', 'zk_pending_syncs', 'zk_learners', 'zk_leader_uptime']) {
      assert.ok(leader.has(key), `leader has ${key}`);
      assert.ok(!follower.has(key), `follower lacks ${key}`);
    }
    assert.equal(leader.get('zk_synced_followers')?.value, 2);
  });

  it('not whitelisted and not serving are told apart from metrics and from each other', () => {
    assert.deepEqual(parseMntr(fixture('mntr-not-whitelisted.txt')), { kind: 'not_whitelisted' });
    assert.deepEqual(parseMntr(fixture('mntr-not-serving.txt')), { kind: 'not_serving' });
  });
});

describe('parseMntr on 3.6+ labelled keys', () => {
  it('splits labels off the name, escapes and all, and keeps the key as printed', () => {
    const reply =
      'zk_version\t3.6.3--6401e4ad2087061bc6b9f80dec2d69f2e3c8660a, built on 04/08/2021 16:35 GMT\n' +
      'zk_write_per_namespace_count{key="config"}\t4\n' +
      'zk_write_per_namespace_count{key="zookeeper"}\t12\n' +
      'zk_avg_read_per_namespace{key="a,b",quantile="0.5"}\t1.5E-4\n' +
      'zk_odd{key="say \\"hi\\"\\\\"}\t1\n';
    const { entries, skipped } = metrics(reply);
    assert.deepEqual(skipped, []);
    assert.deepEqual(
      entries.slice(1).map((e) => [e.name, e.labels, e.value]),
      [
        ['zk_write_per_namespace_count', [['key', 'config']], 4],
        ['zk_write_per_namespace_count', [['key', 'zookeeper']], 12],
        [
          'zk_avg_read_per_namespace',
          [
            ['key', 'a,b'],
            ['quantile', '0.5'],
          ],
          0.00015,
        ],
        ['zk_odd', [['key', 'say "hi"\\']], 1],
      ],
    );
    assert.equal(entries[1]!.key, 'zk_write_per_namespace_count{key="config"}');
  });

  it('refuses malformed label syntax line by line, naming the problem', () => {
    for (const [key, problem] of [
      ['zk_x{key="a"', 'labels not closed'],
      ['zk_x{key=a}', 'unquoted value'],
      ['zk_x{1key="a"}', 'bad label name'],
      ['zk_x{key="a" quantile="b"}', 'not separated by commas'],
      ['zk_x{key="a",key="b"}', 'repeated'],
      ['zk_x{key="a}', 'not closed'],
      ['9zk{key="a"}', 'not a metric name'],
    ] as const) {
      const result = parseKey(key);
      assert.equal(typeof result, 'string', key);
      assert.match(result as string, new RegExp(problem), key);
    }
  });
});

describe('parseMntr on keys named after znodes', () => {
  it('characters a metric name cannot have become _ (a top-level znode /my-app or /a.b)', () => {
    const { entries, skipped } = metrics('zk_cnt_my-app_write_per_namespace\t3\nzk_avg_a.b_write_per_namespace\t1.5\n');
    assert.deepEqual(skipped, []);
    assert.deepEqual(
      entries.map((e) => [e.key, e.name, e.value]),
      [
        ['zk_cnt_my-app_write_per_namespace', 'zk_cnt_my_app_write_per_namespace', 3],
        ['zk_avg_a.b_write_per_namespace', 'zk_avg_a_b_write_per_namespace', 1.5],
      ],
    );
  });

  it('two keys that become the same name: the first is kept, the second skipped and named', () => {
    const { entries, skipped } = metrics(
      'zk_cnt_my-app_write_per_namespace\t3\nzk_cnt_my_app_write_per_namespace\t4\n',
    );
    assert.deepEqual(
      entries.map((e) => [e.name, e.value]),
      [['zk_cnt_my_app_write_per_namespace', 3]],
    );
    assert.equal(skipped.length, 1);
    assert.match(
      skipped[0]!,
      /"zk_cnt_my_app_write_per_namespace" is the same series as "zk_cnt_my-app_write_per_namespace"/,
    );
  });
});

describe('parseMntr on bad input', () => {
  const good = fixture('mntr-3.8-leader.txt');

  it('a reply cut short: complete lines are used, the cut one is skipped (never read as a shorter number)', () => {
    const cut = good.indexOf('zk_znode_count\t') + 'zk_znode_count\t'.length + 0;
    const { byKey, skipped } = metrics(good.slice(0, cut + 1));
    assert.ok(byKey.has('zk_outstanding_requests'));
    assert.ok(!byKey.has('zk_znode_count'));
    assert.equal(skipped.length, 1);
    assert.match(skipped[0]!, /incomplete last line "zk_znode_count/);
  });

  it('lines a server can print but that cannot be exposed are skipped, counted and named; the rest is used', () => {
    const long = `zk_${'x'.repeat(600)}`;
    const { entries, skipped, skippedCount } = metrics(
      `zk_a\t1\nzk_new_text_key\tsome text\nzk_a\t2\n${long}\t1\nzk_b{key="a"\t3\nzk_c\t4\n`,
    );
    assert.deepEqual(
      entries.map((e) => [e.key, e.value]),
      [
        ['zk_a', 1],
        ['zk_c', 4],
      ],
    );
    assert.equal(skippedCount, 4);
    assert.match(
      skipped.join('|'),
      /text value of "zk_new_text_key": "some text"\|repeated key "zk_a"\|key longer than 512 characters: "zk_x{77}\.\.\."\|labels not closed/,
    );
  });

  it('a reply that is not in mntr form is a protocol error naming the first offending line, bounded and escaped', () => {
    const table: Array<[string, RegExp]> = [
      ['zk_a\t1\ngarbage line\nzk_b\t2\n', /line 2 is no key<TAB>value: "garbage line"$/],
      ['zk_a\t1\nzk_b\t2\u0000\n', /line 2 has control character "\\u0000": "zk_b\\t2\\u0000"$/],
      ['zk_a\t1\u0007\n', /line 1 has control character "\\u0007"/],
      ['zk_a\t1\rzk_b\t2\n', /line 1 has control character "\\r"/],
      ['zk_a\t\ufffd\n', /line 1 has bytes that are no UTF-8/],
      ['zk_a\t1\nfoo_b\t2\n', /line 2 has no zk_ key: "foo_b\\t2"$/],
      ['zk_a\t1\n\t5\n', /line 2 is no key<TAB>value/],
      ['zk_a b\t1\n', /line 1 has no zk_ key/],
      [`zk_a\t1\n${'y'.repeat(500)}\n`, /line 2 is no key<TAB>value: "y{80}\.\.\."$/],
    ];
    for (const [reply, message] of table) {
      assert.throws(
        () => parseMntr(reply),
        (err: unknown) =>
          err instanceof CachemonError && err.code === Errors.NODE_PROTOCOL.code && message.test(err.message),
        JSON.stringify(reply),
      );
    }
  });

  it('random bytes are a protocol error, never metrics (seeded, 200 replies of 8 KB)', () => {
    const random = seededRandom(5);
    for (let round = 0; round < 200; round++) {
      const bytes = Buffer.from(Array.from({ length: 8192 }, () => Math.floor(random() * 256)));
      assert.throws(
        () => parseMntr(bytes.toString('utf8')),
        (err: unknown) => err instanceof CachemonError && err.code === Errors.NODE_PROTOCOL.code,
        `round ${round}`,
      );
    }
  });

  it('past maxKeys the lines are counted as dropped, not read', () => {
    const reply = Array.from({ length: 10 }, (_, i) => `zk_k${i}\t${i}\n`).join('');
    const parsed = parseMntr(reply, { maxKeys: 3 });
    assert.equal(parsed.kind, 'metrics');
    if (parsed.kind !== 'metrics') return;
    assert.deepEqual(
      parsed.entries.map((e) => e.key),
      ['zk_k0', 'zk_k1', 'zk_k2'],
    );
    assert.equal(parsed.dropped, 7);
    // A real reply is under the default limit.
    const real = parseMntr(good);
    assert.equal(real.kind === 'metrics' && real.dropped, 0);
  });

  it('past maxKeys a NUL byte still makes the reply a protocol error', () => {
    const reply = `${Array.from({ length: 10 }, (_, i) => `zk_k${i}\t${i}\n`).join('')}zk_z\t\u00001\n`;
    assert.throws(() => parseMntr(reply, { maxKeys: 3 }), /line 11 has control character/);
  });

  it('text that is no mntr reply at all is a protocol error naming it', () => {
    for (const reply of ['', '\n', 'imok', 'Zookeeper version: 3.8.0\nMode: leader\n', '\u0000\u0001\u0002']) {
      assert.throws(
        () => parseMntr(reply),
        (err: unknown) =>
          err instanceof CachemonError &&
          err.code === Errors.NODE_PROTOCOL.code &&
          /not an mntr reply/.test(err.message),
        JSON.stringify(reply),
      );
    }
  });

  it('numbers as Java prints them; anything else is text', () => {
    const table: Array<[string, number | undefined]> = [
      ['0', 0],
      ['-1', -1],
      ['0.0', 0],
      ['12.25', 12.25],
      ['1.5E-4', 0.00015],
      ['2e3', 2000],
      ['NaN', Number.NaN],
      ['-Infinity', Number.NEGATIVE_INFINITY],
      ['leader', undefined],
      ['1.2.3', undefined],
      ['0x10', undefined],
      ['', undefined],
    ];
    for (const [text, expected] of table) assert.deepEqual(parseValue(text), expected, text);
  });

  it('random text and random cuts of real replies (seeded, 2000 cases): a reply from its lines or NODE_PROTOCOL, nothing else', () => {
    const random = seededRandom(11);
    const alphabet = 'zk_ab{}="\\,\t\n\r 0123456789.E-';
    for (let round = 0; round < 2000; round++) {
      let input: string;
      if (round % 2 === 0) {
        const start = Math.floor(random() * good.length);
        input = good.slice(start, start + Math.floor(random() * 400));
      } else {
        input = Array.from(
          { length: Math.floor(random() * 200) },
          () => alphabet[Math.floor(random() * alphabet.length)],
        ).join('');
      }
      try {
        const parsed = parseMntr(input);
        if (parsed.kind === 'metrics') {
          for (const entry of parsed.entries) {
            assert.ok(input.includes(`${entry.key}\t`), `entry ${entry.key} comes from the input`);
            assert.ok(entry.value === undefined || entry.text.length > 0);
          }
        }
      } catch (err) {
        assert.ok(
          err instanceof CachemonError && err.code === Errors.NODE_PROTOCOL.code,
          `round ${round}: ${String(err)}`,
        );
      }
    }
  });
});
