import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExpositionBuffer } from '@cachemon/core';
import { arcusSample } from '@cachemon/testkit';
import type { CacheNode } from '@cachemon/arcus';
import { parseStats } from '@cachemon/arcus';
import { renderNodeMetrics } from '../../src/index.js';
import type { NodeSnapshot } from '../../src/index.js';

const sample = arcusSample;
const stats = parseStats(sample('01-stats.raw'));
const settings = parseStats(sample('02-stats-settings.raw'));
const zookeeper = parseStats(sample('04-stats-zookeeper.raw'));

const node = (n: string, extra: Partial<CacheNode> = {}): CacheNode => ({
  serviceCode: 'test',
  node: n,
  hostname: 'localhost',
  live: true,
  mapped: true,
  ...extra,
});

function render(snapshots: NodeSnapshot[]): string {
  const writer = new ExpositionBuffer(256);
  renderNodeMetrics('zk1', snapshots, writer);
  return writer.toBuffer().toString('utf8');
}

function sampleLines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

const labels = 'ensemble="zk1",service_code="test",node="127.0.0.1:21211",hostname="localhost"';

test('stats of the sample server become typed metrics with the node labels', () => {
  const text = render([{ node: node('127.0.0.1:21211'), up: true, stats, settings, zookeeper, durationSeconds: 0.002 }]);
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

test('every numeric stats field of the sample is exported exactly once', () => {
  const text = render([{ node: node('127.0.0.1:21211'), up: true, stats }]);
  const numeric = stats.filter(([, v]) => v !== '' && !Number.isNaN(Number(v))).length;
  const fromStats = sampleLines(text).filter(
    (l) => !/^arcus_(up|node_registered|version_info|node_scrape_duration_seconds)\{/.test(l),
  );
  assert.equal(fromStats.length, numeric);
});

test('HELP and TYPE once per family across nodes; a down node has only its state series', () => {
  const text = render([
    { node: node('127.0.0.1:21211'), up: true, stats },
    { node: node('127.0.0.1:21212'), up: false, reason: 'timeout', durationSeconds: 4 },
    { node: node('127.0.0.1:21213', { live: false, hostname: '' }), up: false, reason: 'not_registered' },
  ]);
  assert.equal(text.match(/^# TYPE arcus_up gauge$/gm)?.length, 1);
  assert.equal(text.match(/^# HELP arcus_commands_total /gm)?.length, 1);
  assert.match(text, /^arcus_up\{ensemble="zk1",service_code="test",node="127.0.0.1:21212",hostname="localhost"\} 0$/m);
  assert.match(text, /^arcus_node_last_error_info\{reason="timeout",ensemble="zk1",service_code="test",node="127.0.0.1:21212",hostname="localhost"\} 1$/m);
  assert.match(text, /^arcus_node_registered\{ensemble="zk1",service_code="test",node="127.0.0.1:21213",hostname=""\} 0$/m);
  assert.match(text, /^arcus_node_last_error_info\{reason="not_registered",.*node="127.0.0.1:21213"/m);
  assert.doesNotMatch(text, /arcus_commands_total\{[^}]*21212/);
});

test('replication nodes carry group and role; label values are escaped', () => {
  const text = render([
    { node: node('10.0.0.1:11211', { group: 'g1', role: 'master', hostname: 'we"ird\\host' }), up: true, stats: [['curr_items', '5']] },
  ]);
  assert.match(text, /^arcus_items\{ensemble="zk1",service_code="test",node="10.0.0.1:11211",hostname="we\\"ird\\\\host",group="g1",role="master"\} 5$/m);
});

test('unknown numeric fields are kept as arcus_stat{field}; text fields are skipped', () => {
  const text = render([{ node: node('1.1.1.1:1'), up: true, stats: [['get_expired', '3'], ['brand_new_field', '7'], ['weird', 'text']] }]);
  assert.match(text, /^arcus_stat\{field="get_expired",.*\} 3$/m);
  assert.match(text, /^arcus_stat\{field="brand_new_field",.*\} 7$/m);
  assert.doesNotMatch(text, /weird/);
});

test('QoS results: latency of successful probes, success of every probe, time of the run', () => {
  const text = render([
    {
      node: node('127.0.0.1:21211'),
      up: true,
      qos: { at: 1_700_000_000_000, results: [{ probe: 'kv_set', ok: true, seconds: 0.0004 }, { probe: 'lop_insert', ok: false, seconds: 0 }] },
    },
  ]);
  assert.match(text, new RegExp(`^arcus_qos_latency_seconds\\{probe="kv_set",${labels.replace(/\./g, '\\.')}\\} 0.0004$`, 'm'));
  assert.match(text, /^arcus_qos_success\{probe="lop_insert",.*\} 0$/m);
  assert.doesNotMatch(text, /arcus_qos_latency_seconds\{probe="lop_insert"/);
  assert.match(text, /^arcus_qos_last_run_timestamp_seconds\{.*\} 1700000000$/m);
});

test('nodes with different stats field lists (ARCUS and plain memcached) share each family once', () => {
  const memcachedStats: Array<[string, string]> = [['pid', '7'], ['cmd_get', '5'], ['get_hits', '4'], ['get_expired', '1'], ['curr_items', '2']];
  const text = render([
    { node: node('127.0.0.1:21211'), up: true, stats },
    { node: node('127.0.0.1:11211'), up: true, stats: memcachedStats },
    { node: node('127.0.0.1:21212'), up: true, stats },
  ]);
  assert.equal(text.match(/^# TYPE arcus_commands_total counter$/gm)?.length, 1);
  assert.equal(text.match(/^# TYPE arcus_items gauge$/gm)?.length, 1);
  assert.match(text, /^arcus_commands_total\{command="get",ensemble="zk1",service_code="test",node="127.0.0.1:11211",hostname="localhost"\} 5$/m);
  assert.match(text, /^arcus_stat\{field="get_expired",.*node="127.0.0.1:11211".*\} 1$/m);
  assert.equal(text.match(/^arcus_items\{/gm)?.length, 3);
  // Every family's samples are contiguous: once a family's block ends, its name never comes back.
  const order = text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.slice(0, l.search(/[{ ]/)));
  const finished = new Set<string>();
  order.forEach((name, i) => {
    assert.ok(!finished.has(name), `${name} is split`);
    if (order[i + 1] !== name) finished.add(name);
  });
});
