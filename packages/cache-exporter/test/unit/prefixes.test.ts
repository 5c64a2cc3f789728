import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CachemonError, Errors, ExpositionWriter } from '@cachemon/core';
import { arcusSample } from '@cachemon/testkit';
import { PrefixAggregator } from '../../src/index.js';
import type { PrefixSums } from '../../src/index.js';

const bytes = (name: string): Buffer => Buffer.from(arcusSample(name), 'latin1');
const items = bytes('37-stats-prefixes-after.raw');
const operations = bytes('36-stats-detail-dump.raw');
const base = 'ensemble="zk1",service_code="test"';

function render(aggregator: PrefixAggregator, sums: PrefixSums): string {
  const writer = new ExpositionWriter();
  aggregator.render('zk1', sums, writer);
  return writer.toString();
}

const has = (text: string, line: string) => assert.ok(text.includes(`${line}\n`), `missing: ${line}\n${text}`);

test('prefix statistics are summed per service code over its nodes', () => {
  const aggregator = new PrefixAggregator();
  const sums = aggregator.newSums();
  sums.serviceCode('test', true);
  sums.addNode('test', 'n1', 'ok', [items], [operations]);
  sums.addNode('test', 'n2', 'ok', [items], [operations]);
  sums.failed('test');
  const text = render(aggregator, sums);
  has(text, `arcus_prefix_items{type="kv",prefix="app",${base}} 2`);
  has(text, `arcus_prefix_items{type="list",prefix="app",${base}} 2`);
  has(text, `arcus_prefix_items{type="btree",prefix="app",${base}} 2`);
  has(text, `arcus_prefix_bytes{type="set",prefix="user",${base}} 752`);
  has(text, `arcus_prefix_items{type="kv",prefix="<null>",${base}} 2`);
  has(text, `arcus_prefix_commands_total{command="get",prefix="app",${base}} 10`);
  has(text, `arcus_prefix_command_hits_total{command="get",prefix="app",${base}} 6`);
  has(text, `arcus_prefix_commands_total{command="bop_count",prefix="app",${base}} 2`);
  has(text, `arcus_prefix_commands_total{command="getattr",prefix="app",${base}} 2`);
  has(text, `arcus_prefix_command_hits_total{command="sop_exist",prefix="user",${base}} 4`);
  has(text, `arcus_prefix_nodes{state="ok",${base}} 2`);
  has(text, `arcus_prefix_nodes{state="failed",${base}} 1`);
  has(text, `arcus_prefix_collection_enabled{${base}} 1`);
  assert.doesNotMatch(text, /type="map"/, 'never-used item types are not emitted');
  assert.doesNotMatch(text, /itm|tsz|time/, 'totals are derivable and not exported; time is no count');
  assert.doesNotMatch(text, /node=/, 'prefix series are per service code');
  assert.equal(text.match(/^# TYPE arcus_prefix_items gauge$/gm)?.length, 1);
  assert.deepEqual(sums.prefixesOf('test').sort(), ['<null>', 'app', 'arcus', 'user']);
});

test('a series appears once non-zero and stays, zeros included', () => {
  const aggregator = new PrefixAggregator();
  const scrape = (mitm: number): string => {
    const sums = aggregator.newSums();
    sums.addNode(
      's',
      'n3',
      'ok',
      [Buffer.from(`PREFIX p itm 1 kitm 1 mitm ${mitm} time 20261121133144\r\nEND\r\n`)],
      [],
    );
    return render(aggregator, sums);
  };
  assert.doesNotMatch(scrape(0), /type="map"/);
  assert.match(scrape(3), /arcus_prefix_items\{type="map",prefix="p",.*\} 3/);
  assert.match(scrape(0), /arcus_prefix_items\{type="map",prefix="p",.*\} 0/);
});

test('a service code without prefix collection reports only that', () => {
  const aggregator = new PrefixAggregator();
  const sums = aggregator.newSums();
  sums.serviceCode('quiet', false);
  const text = render(aggregator, sums);
  assert.equal(
    text
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .join('\n'),
    'arcus_prefix_collection_enabled{ensemble="zk1",service_code="quiet"} 0',
  );
});

test('a node with one reply that is not prefix statistics adds nothing, not even its good reply', () => {
  const aggregator = new PrefixAggregator();
  const sums = aggregator.newSums();
  sums.addNode('test', 'n4', 'ok', [items], [operations]);
  const garbage = Buffer.from(
    `${arcusSample('36-stats-detail-dump.raw').slice(0, -5)}PREFIX x get oops\r\nEND\r\n`,
    'latin1',
  );
  assert.throws(
    () => sums.addNode('test', 'n5', 'ok', [items], [garbage]),
    (err: unknown) => err instanceof CachemonError && err.code === Errors.NODE_PROTOCOL.code,
  );
  assert.throws(
    () => sums.addNode('test', 'n6', 'ok', [Buffer.from('SERVER_ERROR out of memory\r\n')], [operations]),
    CachemonError,
  );
  const text = render(aggregator, sums);
  has(text, `arcus_prefix_items{type="kv",prefix="app",${base}} 1`);
  has(text, `arcus_prefix_commands_total{command="get",prefix="app",${base}} 5`);
  has(text, `arcus_prefix_nodes{state="ok",${base}} 1`);
});

test('nodes with different field layouts (ARCUS, plain memcached, a newer server) are summed by field name', () => {
  const aggregator = new PrefixAggregator();
  const sums = aggregator.newSums();
  sums.addNode('test', 'n7', 'ok', [items], [operations]);
  sums.addNode('test', 'n8', 'ok', [], [Buffer.from('PREFIX app get 7 hit 1 set 0 del 2\r\nEND\r\n')]);
  sums.addNode(
    'test',
    'n9',
    'ok',
    [Buffer.from('PREFIX app itm 1 kitm 1 citm 9 time 20261121133216\r\nEND\r\n')],
    [Buffer.from('PREFIX app get 1 xyz 4\r\nEND\r\n')],
  );
  sums.addNode('test', 'n10', 'limited', [items], [operations]);
  const text = render(aggregator, sums);
  has(text, `arcus_prefix_commands_total{command="get",prefix="app",${base}} 18`);
  has(text, `arcus_prefix_command_hits_total{command="get",prefix="app",${base}} 7`);
  has(text, `arcus_prefix_commands_total{command="delete",prefix="app",${base}} 2`);
  has(text, `arcus_prefix_items{type="kv",prefix="app",${base}} 3`);
  has(text, `arcus_prefix_stat{field="citm",prefix="app",${base}} 9`);
  has(text, `arcus_prefix_stat{field="xyz",prefix="app",${base}} 4`);
  has(text, `arcus_prefix_nodes{state="limited",${base}} 1`);
  assert.equal(text.match(/^# TYPE arcus_prefix_stat untyped$/gm)?.length, 1);
});

test('operation counts are running totals: a node that fails, restarts or leaves never makes them fall', () => {
  const aggregator = new PrefixAggregator();
  const dump = (get: number): Buffer => Buffer.from(`PREFIX app get ${get} hit 0\r\nEND\r\n`);
  const scrape = (nodes: ReadonlyArray<readonly [string, number | 'failed']>): number => {
    const sums = aggregator.newSums();
    sums.serviceCode('test', true);
    for (const [node, get] of nodes) {
      if (get === 'failed') sums.failed('test');
      else sums.addNode('test', node, 'ok', [], [dump(get)]);
    }
    const line = render(aggregator, sums)
      .split('\n')
      .find((l) => l.startsWith(`arcus_prefix_commands_total{command="get",prefix="app",${base}} `));
    return Number(line?.split(' ')[1]);
  };
  assert.equal(
    scrape([
      ['a', 5],
      ['b', 5],
    ]),
    10,
    'first reading: the sum',
  );
  assert.equal(
    scrape([
      ['a', 6],
      ['b', 'failed'],
    ]),
    11,
    "b failed: only a's increase",
  );
  assert.equal(
    scrape([
      ['a', 6],
      ['b', 8],
    ]),
    14,
    'b back: its increase since its last reading',
  );
  assert.equal(
    scrape([
      ['a', 2],
      ['b', 8],
    ]),
    16,
    'a restarted, counting from zero: its whole count',
  );
  aggregator.retain([{ serviceCode: 'test', node: 'a' }]);
  assert.equal(scrape([['a', 3]]), 17, 'b left the topology: the total stays, a goes on');
  assert.equal(
    scrape([
      ['a', 3],
      ['c', 4],
    ]),
    21,
    'a new node: its whole count',
  );
});

test('running totals stay exact for counts past 2^32', () => {
  const aggregator = new PrefixAggregator();
  const scrape = (get: number): number => {
    const sums = aggregator.newSums();
    sums.addNode('test', 'a', 'ok', [], [Buffer.from(`PREFIX app get ${get} hit 0\r\nEND\r\n`)]);
    const line = render(aggregator, sums)
      .split('\n')
      .find((l) => l.startsWith(`arcus_prefix_commands_total{command="get",prefix="app",${base}} `));
    return Number(line?.split(' ')[1]);
  };
  const big = 2 ** 32 - 6;
  assert.equal(scrape(big), big, 'a first reading: all of it');
  assert.equal(scrape(big + 10), big + 10, 'across 2^32: the increase');
  assert.equal(scrape(big + 10 + 2 ** 31), big + 10 + 2 ** 31, 'an increase of 2^31 in one interval');
});

test('totals: not shown for a service code that stopped collecting; dropped for a prefix no node reports any more', async () => {
  const { PREFIX_KEPT_SCRAPES } = await import('../../src/metrics/prefixes.js');
  const aggregator = new PrefixAggregator();
  const scrape = (collected: boolean, dump: string | undefined): string => {
    const sums = aggregator.newSums();
    sums.serviceCode('test', collected);
    if (collected && dump !== undefined) sums.addNode('test', 'a', 'ok', [], [Buffer.from(`${dump}END\r\n`)]);
    return render(aggregator, sums);
  };
  const gone = `arcus_prefix_commands_total{command="get",prefix="gone",${base}}`;
  assert.ok(scrape(true, 'PREFIX gone get 4 hit 0\r\nPREFIX app get 1 hit 0\r\n').includes(`${gone} 4`));
  assert.ok(!scrape(false, undefined).includes(gone), 'collection off: no prefix series');
  for (let i = 1; i < PREFIX_KEPT_SCRAPES; i++)
    assert.ok(scrape(true, 'PREFIX app get 1 hit 0\r\n').includes(`${gone} 4`), `scrape ${i} after its last report`);
  assert.ok(
    !scrape(true, 'PREFIX app get 1 hit 0\r\n').includes(gone),
    `dropped ${PREFIX_KEPT_SCRAPES} scrapes after its last report`,
  );
  // A new prefix does not inherit the dropped one's reading: its first count is all of it (10).
  const next = `arcus_prefix_commands_total{command="get",prefix="next",${base}}`;
  const text = scrape(true, 'PREFIX app get 1 hit 0\r\nPREFIX next get 10 hit 0\r\n');
  assert.ok(text.includes(`${next} 10`), text);
  assert.ok(
    text.includes(`arcus_prefix_commands_total{command="get",prefix="app",${base}} 1`),
    'app unchanged: no increase',
  );
});

test('each line is summed under its own prefix when nodes list different names at the same place', () => {
  const aggregator = new PrefixAggregator();
  const sums = aggregator.newSums();
  const reply = (...lines: Array<[string, number]>): Buffer =>
    Buffer.from(
      `${lines.map(([name, itm]) => `PREFIX ${name} itm ${itm} kitm ${itm} time 20261121133144\r\n`).join('')}END\r\n`,
      'utf8',
    );
  // The same names in the same places, then other names there: ASCII, a name one byte longer,
  // UTF-8 names, and the Latin-1 reading of a UTF-8 name, which must not pass for it.
  sums.addNode('s', 'n1', 'ok', [reply(['a', 1], ['bb', 10], ['é', 100], ['Ã©', 1000])], []);
  sums.addNode('s', 'n2', 'ok', [reply(['a', 2], ['bb', 20], ['é', 200], ['Ã©', 2000])], []);
  sums.addNode('s', 'n3', 'ok', [reply(['bb', 30], ['a', 3], ['Ã©', 3000], ['é', 300])], []);
  sums.addNode('s', 'n4', 'ok', [reply(['a', 4], ['bbb', 40], ['é', 400])], []);
  const text = render(aggregator, sums);
  const base4 = 'service_code="s"';
  const kv = (prefix: string, value: number) =>
    has(text, `arcus_prefix_items{type="kv",prefix="${prefix}",ensemble="zk1",${base4}} ${value}`);
  kv('a', 10);
  kv('bb', 60);
  kv('bbb', 40);
  kv('é', 1000);
  kv('Ã©', 6000);
  assert.deepEqual(sums.prefixesOf('s').sort(), ['a', 'bb', 'bbb', 'Ã©', 'é'].sort());
});
