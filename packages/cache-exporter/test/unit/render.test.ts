import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CachemonError, Errors, ExpositionBuffer } from '@cachemon/core';
import { arcusSample } from '@cachemon/testkit';
import type { CacheNode } from '@cachemon/arcus';
import { parseStats } from '@cachemon/arcus';
import { NodeMetricsRenderer, isDecimal } from '../../src/index.js';
import type { NodeSnapshot, QosSnapshot, RenderedStats } from '../../src/index.js';

const sample = arcusSample;
const statsReply = Buffer.from(sample('01-stats.raw'), 'latin1');
const stats = parseStats(statsReply);
const settings = parseStats(sample('02-stats-settings.raw'));
const zookeeper = parseStats(sample('04-stats-zookeeper.raw'));

/** A `stats` reply as a server sends it. */
const reply = (entries: ReadonlyArray<readonly [string, string]>): Buffer =>
  Buffer.from(`${entries.map(([name, value]) => `STAT ${name} ${value}\r\n`).join('')}END\r\n`);

const node = (n: string, extra: Partial<CacheNode> = {}): CacheNode => ({
  serviceCode: 'test',
  node: n,
  hostname: 'localhost',
  live: true,
  mapped: true,
  ...extra,
});

let renderer = new NodeMetricsRenderer('zk1');

/** The node's `stats` reply of this scrape, rendered (a fresh renderer per test file run is enough: nodes are new objects). */
const accept = (n: CacheNode, bytes: Buffer = statsReply): RenderedStats => renderer.acceptStats(n, bytes);

function render(snapshots: NodeSnapshot[], qos: ReadonlyMap<CacheNode, QosSnapshot> = new Map()): string {
  const writer = new ExpositionBuffer(256);
  renderer.render(snapshots, writer, (n) => qos.get(n));
  return writer.toBuffer().toString('utf8');
}

function sampleLines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

const labels = 'ensemble="zk1",service_code="test",node="127.0.0.1:21211",hostname="localhost"';

test('stats of the sample server become typed metrics with the node labels', () => {
  const n = node('127.0.0.1:21211');
  const text = render([{ node: n, up: true, stats: accept(n), settings, zookeeper, durationSeconds: 0.002 }]);
  const has = (line: string) => assert.ok(text.includes(`${line}\n`), `missing: ${line}`);
  has(`arcus_up{${labels}} 1`);
  has(`arcus_commands_total{command="set",${labels}} 10`);
  has(`arcus_commands_total{command="get",${labels}} 0`);
  has(`arcus_commands_total{command="lop_insert",${labels}} 0`);
  has(`arcus_command_hits_total{command="get",${labels}} 0`);
  has(`arcus_command_misses_total{command="get",${labels}} 0`);
  has(`arcus_command_elem_hits_total{command="lop_delete",${labels}} 0`);
  has(`arcus_command_none_hits_total{command="bop_get",${labels}} 0`);
  has(`arcus_command_oks_total{command="bop_mget",${labels}} 0`);
  has(`arcus_command_badval_total{command="cas",${labels}} 0`);
  has(`arcus_heartbeats_total{${labels}} 10`);
  has(`arcus_heartbeat_latency_seconds_total{${labels}} 0.006`);
  has(`arcus_limit_bytes{${labels}} 67108864`);
  has(`arcus_items{${labels}} 1`);
  has(`arcus_bytes{${labels}} 96`);
  has(`arcus_version_info{version="1.15.0",libevent="2.1.12-stable",${labels}} 1`);
  has(`arcus_max_stats_prefixes{${labels}} 50`);
  has(`arcus_prefix_detail_enabled{${labels}} 0`);
  has(`arcus_collection_max_elements{type="btree",${labels}} 50000`);
  has(`arcus_heartbeat_timeout_seconds{${labels}} 10`);
  has(`arcus_zookeeper_connected{${labels}} 1`);
  has(`arcus_zookeeper_session_timeout_seconds{${labels}} 30`);
  has('# TYPE arcus_commands_total counter');
  has('# TYPE arcus_items gauge');
  assert.doesNotMatch(text, /arcus_stat\{/, 'every field of the sample has a specific metric');
});

test('each stats field lands on its own series: with a distinct value per field, none is swapped or repeated', () => {
  const distinct = stats.map(([name, value], i) => [name, /^\d+$/.test(value) ? String(70_000 + i) : value] as const);
  const valueOfField = new Map(distinct);
  const n = node('127.0.0.1:21211');
  const text = render([{ node: n, up: true, stats: accept(n, reply(distinct)) }]);
  const lines = sampleLines(text);
  const expect = (field: string, series: string): void => {
    const value = valueOfField.get(field);
    assert.ok(value !== undefined, `the sample has no ${field}`);
    assert.ok(lines.includes(`${series} ${value}`), `${field} (${value}) should be ${series}`);
  };
  const at = (command: string): string => `command="${command}",${labels}`;
  expect('cmd_get', `arcus_commands_total{${at('get')}}`);
  expect('cmd_set', `arcus_commands_total{${at('set')}}`);
  expect('get_hits', `arcus_command_hits_total{${at('get')}}`);
  expect('get_misses', `arcus_command_misses_total{${at('get')}}`);
  expect('delete_hits', `arcus_command_hits_total{${at('delete')}}`);
  expect('incr_misses', `arcus_command_misses_total{${at('incr')}}`);
  expect('cas_badval', `arcus_command_badval_total{${at('cas')}}`);
  expect('lop_delete_elem_hits', `arcus_command_elem_hits_total{${at('lop_delete')}}`);
  expect('lop_delete_none_hits', `arcus_command_none_hits_total{${at('lop_delete')}}`);
  expect('sop_exist_hits', `arcus_command_hits_total{${at('sop_exist')}}`);
  expect('bop_get_elem_hits', `arcus_command_elem_hits_total{${at('bop_get')}}`);
  expect('bop_get_none_hits', `arcus_command_none_hits_total{${at('bop_get')}}`);
  expect('curr_items', `arcus_items{${labels}}`);
  // No value shows twice: no field is rendered into another's series as well as its own.
  const values = lines.map((line) => line.slice(line.lastIndexOf(' ') + 1)).filter((v) => /^7\d{4}$/.test(v));
  assert.ok(values.length > 100, `only ${values.length} distinct-valued series`);
  assert.equal(new Set(values).size, values.length);
});

test('every numeric stats field of the sample is exported exactly once', () => {
  const n = node('127.0.0.1:21211');
  const text = render([{ node: n, up: true, stats: accept(n) }]);
  const numeric = stats.filter(([, v]) => /^-?\d+(\.\d+)?$/.test(v)).length;
  const fromStats = sampleLines(text).filter(
    (l) => !/^arcus_(up|node_registered|version_info|node_scrape_duration_seconds)\{/.test(l),
  );
  assert.equal(fromStats.length, numeric);
});

test('HELP and TYPE once per family across nodes; a down node has only its state series', () => {
  const n = node('127.0.0.1:21211');
  const text = render([
    { node: n, up: true, stats: accept(n) },
    { node: node('127.0.0.1:21212'), up: false, reason: 'timeout', durationSeconds: 4 },
    { node: node('127.0.0.1:21213', { live: false, hostname: '' }), up: false, reason: 'not_registered' },
  ]);
  assert.equal(text.match(/^# TYPE arcus_up gauge$/gm)?.length, 1);
  assert.equal(text.match(/^# HELP arcus_commands_total /gm)?.length, 1);
  assert.match(text, /^arcus_up\{ensemble="zk1",service_code="test",node="127.0.0.1:21212",hostname="localhost"\} 0$/m);
  assert.match(
    text,
    /^arcus_node_last_error_info\{reason="timeout",ensemble="zk1",service_code="test",node="127.0.0.1:21212",hostname="localhost"\} 1$/m,
  );
  assert.match(
    text,
    /^arcus_node_registered\{ensemble="zk1",service_code="test",node="127.0.0.1:21213",hostname=""\} 0$/m,
  );
  assert.match(text, /^arcus_node_last_error_info\{reason="not_registered",.*node="127.0.0.1:21213"/m);
  assert.doesNotMatch(text, /arcus_commands_total\{[^}]*21212/);
});

test('replication nodes carry group and role; label values are escaped', () => {
  const n = node('10.0.0.1:11211', { group: 'g1', role: 'master', hostname: 'we"ird\\host' });
  const text = render([{ node: n, up: true, stats: accept(n, reply([['curr_items', '5']])) }]);
  assert.match(
    text,
    /^arcus_items\{ensemble="zk1",service_code="test",node="10.0.0.1:11211",hostname="we\\"ird\\\\host",group="g1",role="master"\} 5$/m,
  );
});

test('unknown numeric fields are kept as arcus_stat{field}; text fields are skipped', () => {
  const n = node('1.1.1.1:1');
  const text = render([
    {
      node: n,
      up: true,
      stats: accept(
        n,
        reply([
          ['get_expired', '3'],
          ['brand_new_field', '7'],
          ['weird', 'text'],
          ['hexish', '0x10'],
        ]),
      ),
    },
  ]);
  assert.match(text, /^arcus_stat\{field="get_expired",.*\} 3$/m);
  assert.match(text, /^arcus_stat\{field="brand_new_field",.*\} 7$/m);
  assert.doesNotMatch(text, /weird|hexish/);
});

test('QoS results: latency of successful probes, success of every probe, time of the run', () => {
  const n = node('127.0.0.1:21211');
  const qos = {
    at: 1_700_000_000_000,
    results: [
      { probe: 'kv_set', ok: true, seconds: 0.0004 },
      { probe: 'lop_insert', ok: false, seconds: 0 },
    ],
  };
  const text = render([{ node: n, up: true }], new Map([[n, qos]]));
  assert.match(
    text,
    new RegExp(`^arcus_qos_latency_seconds\\{probe="kv_set",${labels.replace(/\./g, '\\.')}\\} 0.0004$`, 'm'),
  );
  assert.match(text, /^arcus_qos_success\{probe="lop_insert",.*\} 0$/m);
  assert.doesNotMatch(text, /arcus_qos_latency_seconds\{probe="lop_insert"/);
  assert.match(text, /^arcus_qos_last_run_timestamp_seconds\{.*\} 1700000000$/m);
});

test('nodes with different stats field lists (ARCUS and plain memcached) share each family once', () => {
  const memcachedStats: Array<[string, string]> = [
    ['pid', '7'],
    ['cmd_get', '5'],
    ['get_hits', '4'],
    ['get_expired', '1'],
    ['curr_items', '2'],
  ];
  const [a, m, b] = [node('127.0.0.1:21211'), node('127.0.0.1:11211'), node('127.0.0.1:21212')];
  const text = render([
    { node: a, up: true, stats: accept(a) },
    { node: m, up: true, stats: accept(m, reply(memcachedStats)) },
    { node: b, up: true, stats: accept(b) },
  ]);
  assert.equal(text.match(/^# TYPE arcus_commands_total counter$/gm)?.length, 1);
  assert.equal(text.match(/^# TYPE arcus_items gauge$/gm)?.length, 1);
  assert.match(
    text,
    /^arcus_commands_total\{command="get",ensemble="zk1",service_code="test",node="127.0.0.1:11211",hostname="localhost"\} 5$/m,
  );
  assert.match(text, /^arcus_stat\{field="get_expired",.*node="127.0.0.1:11211".*\} 1$/m);
  assert.equal(text.match(/^arcus_items\{/gm)?.length, 3);
  // Every family's samples are contiguous: once a family's block ends, its name never comes back.
  const order = text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.slice(0, l.search(/[{ ]/)));
  const finished = new Set<string>();
  order.forEach((name, i) => {
    assert.ok(!finished.has(name), `${name} is split`);
    if (order[i + 1] !== name) finished.add(name);
  });
});

test('the next reply of a node is rendered into the same area: values change, nothing of the last one stays', () => {
  const n = node('127.0.0.1:21211');
  const first = accept(
    n,
    reply([
      ['curr_items', '1'],
      ['cmd_get', '10'],
      ['hb_latency', '6'],
    ]),
  );
  const firstText = render([{ node: n, up: true, stats: first }]);
  assert.match(firstText, /^arcus_items\{.*\} 1$/m);
  const second = accept(
    n,
    reply([
      ['curr_items', '123456789'],
      ['cmd_get', '11'],
      ['hb_latency', '7000'],
    ]),
  );
  assert.equal(second.bytes, first.bytes, 'the byte area is reused');
  const text = render([{ node: n, up: true, stats: second }]);
  assert.match(text, /^arcus_items\{.*\} 123456789$/m);
  assert.match(text, /^arcus_commands_total\{command="get",.*\} 11$/m);
  assert.match(text, /^arcus_heartbeat_latency_seconds_total\{.*\} 7$/m);
  assert.equal(text.match(/^arcus_items\{/gm)?.length, 1);
});

test("a node's area holds its lines and room for one more reply's values, and little else", () => {
  const n = node('127.0.0.1:21215');
  const rendered = accept(n);
  let lines = 0;
  let values = 0;
  for (let f = 0; f < rendered.segments.length / 3; f++) {
    const view = rendered.bytes.subarray(rendered.segments[f * 3], rendered.segments[f * 3 + 1]);
    lines += view.length;
    for (const line of view.toString('latin1').split('\n'))
      if (line !== '') values += line.length - line.lastIndexOf(' ') - 1;
  }
  assert.ok(lines > 10_000, `the sample's ${lines} bytes of lines`);
  // Scaled values are reserved at their longest text (32 bytes), the others at their length.
  assert.ok(
    rendered.bytes.length <= lines + 2 * (values + 32 * 20) + (lines >> 4),
    `area ${rendered.bytes.length} bytes for ${lines} bytes of lines`,
  );
  assert.ok(rendered.bytes.length < lines * 1.25, `area ${rendered.bytes.length} bytes for ${lines} bytes of lines`);
  // The same reply again is written in place.
  assert.equal(accept(n).bytes, rendered.bytes);
});

test('a node whose field list changes (server upgraded) gets a plan of its own, then back', () => {
  const n = node('127.0.0.1:21211');
  render([{ node: n, up: true, stats: accept(n) }]);
  const upgraded = [...stats.slice(0, 10), ['brand_new_counter', '42'] as const, ...stats.slice(10)];
  const text = render([{ node: n, up: true, stats: accept(n, reply(upgraded)) }]);
  assert.match(text, /^arcus_stat\{field="brand_new_counter",.*\} 42$/m);
  assert.match(text, /^arcus_commands_total\{command="set",.*\} 10$/m);
  // Same length, one name different: must not be read with the old plan.
  const renamed = stats.map(([name, value]) =>
    name === 'curr_items' ? (['curr_itemz', value] as const) : ([name, value] as const),
  );
  const again = render([{ node: n, up: true, stats: accept(n, reply(renamed)) }]);
  assert.match(again, /^arcus_stat\{field="curr_itemz",.*\} 1$/m);
  assert.doesNotMatch(again, /^arcus_items\{/m);
});

test('a field the server repeats is one series; empty values are skipped', () => {
  const n = node('127.0.0.1:21211');
  const text = render([
    {
      node: n,
      up: true,
      stats: accept(
        n,
        reply([
          ['curr_items', '1'],
          ['curr_items', '2'],
          ['ssl_key', ''],
        ]),
      ),
    },
  ]);
  assert.equal(text.match(/^arcus_items\{/gm)?.length, 1);
  assert.match(text, /^arcus_items\{.*\} 1$/m);
  assert.doesNotMatch(text, /ssl_key/);
});

test('a reply that is not stats is refused with the protocol error codes', () => {
  const n = node('127.0.0.1:21211');
  const code = (bytes: string) => {
    try {
      renderer.acceptStats(n, Buffer.from(bytes));
    } catch (err) {
      assert.ok(err instanceof CachemonError, String(err));
      return err.code;
    }
    return 'accepted';
  };
  assert.equal(code('SERVER_ERROR out of memory\r\n'), Errors.NODE_ERROR_REPLY.code);
  assert.equal(code('STAT pid 1\r\nVALUE x 0 1\r\nEND\r\n'), Errors.NODE_PROTOCOL.code);
  assert.equal(code('STAT pid 1\r\n'), Errors.NODE_PROTOCOL.code);
  // With a plan in place, garbage late in an otherwise matching reply is still refused.
  accept(n);
  assert.equal(code(`${sample('01-stats.raw').slice(0, -5)}STAT\r\nEND\r\n`), Errors.NODE_PROTOCOL.code);
  assert.equal(code(`${sample('01-stats.raw')}END\r\n`), Errors.NODE_PROTOCOL.code);
  assert.equal(code(sample('01-stats.raw')), 'accepted');
});

test('isDecimal: what a server prints as a number, and nothing the format would refuse', () => {
  const yes = ['0', '12', '-3', '0.008834', '1.25', '.5', '5.', '1e9', '2.5E-3', '18446744073709551615'];
  const no = [
    '',
    '-',
    '.',
    'e5',
    '1e',
    '1e+',
    '0x10',
    'NaN',
    'Infinity',
    'inf',
    ' 1',
    '1 ',
    '1.2.3',
    '+1',
    'on',
    '(null)',
  ];
  const check = (text: string) => isDecimal(Buffer.from(`x${text}y`), 1, 1 + Buffer.byteLength(text));
  for (const text of yes) assert.equal(check(text), true, text);
  for (const text of no) assert.equal(check(text), false, text);
});

test('a renderer is bound to its ensemble label', () => {
  renderer = new NodeMetricsRenderer('other');
  const n = node('127.0.0.1:21211');
  const text = render([{ node: n, up: true, stats: accept(n) }]);
  assert.match(text, /^arcus_items\{ensemble="other",/m);
  renderer = new NodeMetricsRenderer('zk1');
});

test('in-place rewriting equals a fresh rendering, over random reply sequences (seeded, 3 nodes x 400 replies)', () => {
  let seed = 20261122;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const values = ['0', '7', '42', '1234567', '18446744073709551615', '0.008834', '12.5', '', 'on', '-3', '1e9', 'x1'];
  const baseNames = [
    'pid',
    'version',
    'hb_latency',
    'curr_items',
    'cmd_get',
    'get_hits',
    'get_misses',
    'rusage_user',
    'libevent',
    'brand_new',
    'bytes',
  ];
  const shared = new NodeMetricsRenderer('zk1');
  const nodes = [node('127.0.0.1:1'), node('127.0.0.1:2', { group: 'g', role: 'slave' }), node('127.0.0.1:3')];
  let names = baseNames;
  for (let step = 0; step < 400; step++) {
    if (random() < 0.05) {
      // The server's field list changes: a field dropped or one added.
      names =
        random() < 0.5
          ? baseNames.filter((n) => n !== pick(baseNames))
          : [...baseNames.slice(0, 4), 'extra_field', ...baseNames.slice(4)];
    }
    const snapshots: NodeSnapshot[] = [];
    const freshSnapshots: NodeSnapshot[] = [];
    const fresh = new NodeMetricsRenderer('zk1');
    for (const n of nodes) {
      const bytes = reply(names.map((name) => [name, name === 'version' ? '1.15.0' : pick(values)] as const));
      snapshots.push({ node: n, up: true, stats: shared.acceptStats(n, bytes) });
      freshSnapshots.push({ node: n, up: true, stats: fresh.acceptStats(n, bytes) });
    }
    const write = (r: NodeMetricsRenderer, s: NodeSnapshot[]) => {
      const writer = new ExpositionBuffer(256);
      r.render(s, writer);
      return writer.toBuffer().toString('utf8');
    };
    // Families may come in another order (the shared renderer has seen more field lists); compare sorted lines.
    const lines = (text: string) =>
      text
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .sort();
    assert.deepEqual(lines(write(shared, snapshots)), lines(write(fresh, freshSnapshots)), `step ${step}`);
  }
});

test('a renderer kept across scrapes writes what a fresh one writes, as values, states, settings and QoS change (seeded, 4 nodes x 300 scrapes)', () => {
  let seed = 20261123;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const values = ['0', '7', '42', '1234567', '0.008834', '12.5', '', 'on', '-3', '1e9'];
  const baseNames = [
    'pid',
    'version',
    'hb_latency',
    'curr_items',
    'cmd_get',
    'cmd_set',
    'get_hits',
    'get_misses',
    'rusage_user',
    'libevent',
    'bytes',
    'threads',
  ];
  const shared = new NodeMetricsRenderer('zk1');
  const nodes = [
    node('127.0.0.1:1'),
    node('127.0.0.1:2', { group: 'g', role: 'slave' }),
    node('127.0.0.1:3'),
    node('127.0.0.1:4'),
  ];
  const current = new Map<CacheNode, Map<string, string>>(
    nodes.map((n) => [n, new Map(baseNames.map((name) => [name, name === 'version' ? '1.15.0' : '0']))]),
  );
  const nodeSettings = new Map(nodes.map((n) => [n, settings]));
  const qos = new Map<CacheNode, QosSnapshot>();
  const upNow = new Map(nodes.map((n) => [n, true]));
  let names = baseNames;
  for (let step = 0; step < 300; step++) {
    // Mostly little moves; now and then a value, a node's state, its settings, its QoS or the field list.
    if (random() < 0.03)
      names =
        random() < 0.5
          ? baseNames.filter((n) => n !== pick(baseNames))
          : [...baseNames.slice(0, 3), 'extra_field', ...baseNames.slice(3)];
    const snapshots: NodeSnapshot[] = [];
    const freshSnapshots: NodeSnapshot[] = [];
    const fresh = new NodeMetricsRenderer('zk1');
    for (const n of nodes) {
      const fields = current.get(n)!;
      for (const name of names) if (name !== 'version' && random() < 0.04) fields.set(name, pick(values));
      if (random() < 0.05)
        qos.set(n, {
          at: 1_700_000_000_000 + step,
          results: [{ probe: 'kv_get', ok: random() < 0.8, seconds: random() / 100 }],
        });
      if (random() < 0.02)
        nodeSettings.set(
          n,
          settings.map(([name, value]) => [name, name === 'threads' ? String(step) : value] as const),
        );
      if (random() < 0.05) upNow.set(n, !upNow.get(n));
      const bytes = reply(names.map((name) => [name, fields.get(name) ?? '1'] as const));
      if (upNow.get(n)) {
        snapshots.push({
          node: n,
          up: true,
          stats: shared.acceptStats(n, bytes),
          settings: nodeSettings.get(n)!,
          zookeeper,
        });
        freshSnapshots.push({
          node: n,
          up: true,
          stats: fresh.acceptStats(n, bytes),
          settings: nodeSettings.get(n)!,
          zookeeper,
        });
      } else {
        snapshots.push({ node: n, up: false, reason: 'timeout' });
        freshSnapshots.push({ node: n, up: false, reason: 'timeout' });
      }
    }
    const kept = new ExpositionBuffer(256);
    shared.render(snapshots, kept, (n) => qos.get(n));
    const plain = new ExpositionBuffer(256);
    fresh.render(freshSnapshots, plain, (n) => qos.get(n));
    // Families may come in another order (the shared renderer has seen more field lists): compare
    // sorted lines, HELP and TYPE included.
    const lines = (text: string) => text.split('\n').sort();
    assert.deepEqual(lines(kept.toBuffer().toString()), lines(plain.toBuffer().toString()), `step ${step}`);
    assert.equal(kept.sampleCount, plain.sampleCount, `step ${step}: samples`);
  }
});

const slabsReply = Buffer.from(sample('03-stats-slabs.raw'), 'latin1');

test('stats slabs of the sample server: the node totals always, the class series only per class', () => {
  const n = node('127.0.0.1:21211');
  const totalsOnly = render([{ node: n, up: true, slabs: renderer.acceptSlabs(n, slabsReply, false) }]);
  const has = (text: string, line: string) => assert.ok(text.includes(`${line}\n`), `missing: ${line}`);
  has(totalsOnly, `arcus_sm_space_shortage_level{${labels}} 0`);
  has(totalsOnly, `arcus_sm_free_available_bytes{${labels}} 262016`);
  has(totalsOnly, `arcus_sm_used_min_class_id{${labels}} 12`);
  has(totalsOnly, `arcus_slab_memory_limit_bytes{${labels}} 67108864`);
  has(totalsOnly, `arcus_slab_malloced_bytes{${labels}} 1048576`);
  has(totalsOnly, `arcus_slab_active_classes{${labels}} 1`);
  assert.equal(sampleLines(totalsOnly).length - 2 /* up, registered */, 18);
  assert.ok(!totalsOnly.includes('slab_class='));

  const perClass = render([{ node: n, up: true, slabs: renderer.acceptSlabs(n, slabsReply, true) }]);
  has(perClass, `arcus_slab_chunk_size_bytes{slab_class="0",${labels}} 262144`);
  has(perClass, `arcus_slab_used_chunks{slab_class="0",${labels}} 1`);
  has(perClass, `arcus_slab_free_end_chunks{slab_class="0",${labels}} 3`);
  has(perClass, `arcus_slab_requested_bytes{slab_class="0",${labels}} 262144`);
  assert.equal(sampleLines(perClass).length - sampleLines(totalsOnly).length, 9);
  assert.match(perClass, /# TYPE arcus_slab_pages gauge\n/);
});

test('an unchanged stats slabs reply reuses its lines; unknown fields keep their figure under a field label', () => {
  const n = node('127.0.0.1:21212');
  const first = renderer.acceptSlabs(n, slabsReply, true);
  assert.equal(renderer.acceptSlabs(n, Buffer.from(slabsReply), true), first);
  assert.notEqual(renderer.acceptSlabs(n, slabsReply, false), first);
  const memcachedLike = reply([
    ['1:chunk_size', '96'],
    ['1:get_hits', '7'],
    ['active_slabs', '1'],
    ['total_malloced', '1048576'],
    ['new_total', '5'],
  ]);
  const text = render([{ node: n, up: true, slabs: renderer.acceptSlabs(n, memcachedLike, true) }]);
  const other = labels.replace('21211', '21212');
  assert.ok(text.includes(`arcus_slab_class_stat{slab_class="1",field="get_hits",${other}} 7\n`), text);
  assert.ok(text.includes(`arcus_slab_stat{field="new_total",${other}} 5\n`), text);
  assert.throws(() => renderer.acceptSlabs(n, Buffer.from('ERROR\r\n'), true));
});

test('settings: every numeric or yes/no field a gauge, text fields one info series, the ZooKeeper client version', () => {
  const n = node('127.0.0.1:21211');
  const text = render([{ node: n, up: true, settings, zookeeper }]);
  const has = (line: string) => assert.ok(text.includes(`${line}\n`), `missing: ${line}`);
  has(`arcus_prefix_detail_allowed{${labels}} 1`);
  has(`arcus_cas_enabled{${labels}} 1`);
  has(`arcus_topkeys{${labels}} 0`);
  has(`arcus_scrub_batch_items{${labels}} 96`);
  has(`arcus_slab_growth_factor{${labels}} 1.25`);
  has(`arcus_max_connections{${labels}} 1000`);
  has(
    `arcus_settings_info{inter="127.0.0.1",domain_socket="NULL",umask="700",stat_key_prefix=":",binding_protocol="auto-negotiate",auth_sasl_engine="none",logger="standard error",ascii_extension="scrub",${labels}} 1`,
  );
  has(`arcus_zookeeper_client_info{version="3.5.9-p3",${labels}} 1`);
  assert.ok(!text.includes('arcus_setting{'), 'every ARCUS field has its own metric');
});
