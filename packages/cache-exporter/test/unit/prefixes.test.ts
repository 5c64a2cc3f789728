import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExpositionWriter } from '@cachemon/core';
import { arcusSample } from '@cachemon/testkit';
import { parsePrefixItems, parsePrefixOperations } from '@cachemon/arcus';
import { PrefixAggregator } from '../../src/index.js';
import type { ServiceCodePrefixes } from '../../src/index.js';

const sample = arcusSample;
const items = parsePrefixItems(sample('37-stats-prefixes-after.raw'));
const operations = parsePrefixOperations(sample('36-stats-detail-dump.raw'));

function render(aggregator: PrefixAggregator, groups: ServiceCodePrefixes[]): string {
  const writer = new ExpositionWriter();
  aggregator.render('zk1', groups, writer);
  return writer.toString();
}

test('prefix statistics are summed per service code over its nodes', () => {
  const text = render(new PrefixAggregator(), [
    { serviceCode: 'test', collected: true, nodes: [{ state: 'ok', items, operations }, { state: 'ok', items, operations }, { state: 'failed' }] },
  ]);
  const base = 'ensemble="zk1",service_code="test"';
  const has = (line: string) => assert.ok(text.includes(`${line}\n`), `missing: ${line}\n${text}`);
  has(`arcus_prefix_items{type="kv",prefix="app",${base}} 2`);
  has(`arcus_prefix_items{type="list",prefix="app",${base}} 2`);
  has(`arcus_prefix_items{type="btree",prefix="app",${base}} 2`);
  has(`arcus_prefix_bytes{type="set",prefix="user",${base}} 752`);
  has(`arcus_prefix_items{type="kv",prefix="<null>",${base}} 2`);
  has(`arcus_prefix_commands_total{command="get",prefix="app",${base}} 10`);
  has(`arcus_prefix_command_hits_total{command="get",prefix="app",${base}} 6`);
  has(`arcus_prefix_commands_total{command="bop_count",prefix="app",${base}} 2`);
  has(`arcus_prefix_commands_total{command="getattr",prefix="app",${base}} 2`);
  has(`arcus_prefix_command_hits_total{command="sop_exist",prefix="user",${base}} 4`);
  has(`arcus_prefix_nodes{state="ok",${base}} 2`);
  has(`arcus_prefix_nodes{state="failed",${base}} 1`);
  has(`arcus_prefix_collection_enabled{${base}} 1`);
  assert.doesNotMatch(text, /type="map"/, 'never-used item types are not emitted');
  assert.doesNotMatch(text, /itm|tsz/, 'totals are derivable and not exported');
  assert.doesNotMatch(text, /node=/, 'prefix series are per service code');
  assert.equal(text.match(/^# TYPE arcus_prefix_items gauge$/gm)?.length, 1);
});

test('a series appears once non-zero and stays, zeros included', () => {
  const aggregator = new PrefixAggregator();
  const group = (mitm: number): ServiceCodePrefixes[] => [
    { serviceCode: 's', collected: true, nodes: [{ state: 'ok', items: [{ prefix: 'p', fields: { kitm: 1, mitm } }] }] },
  ];
  assert.doesNotMatch(render(aggregator, group(0)), /type="map"/);
  assert.match(render(aggregator, group(3)), /arcus_prefix_items\{type="map",prefix="p",.*\} 3/);
  assert.match(render(aggregator, group(0)), /arcus_prefix_items\{type="map",prefix="p",.*\} 0/);
});

test('a service code without prefix collection reports only that', () => {
  const text = render(new PrefixAggregator(), [{ serviceCode: 'quiet', collected: false, nodes: [] }]);
  assert.equal(text.trim().split('\n').filter((l) => !l.startsWith('#')).join('\n'), 'arcus_prefix_collection_enabled{ensemble="zk1",service_code="quiet"} 0');
});
