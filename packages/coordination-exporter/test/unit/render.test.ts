import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CachemonError } from '@cachemon/core';
import { metricType, renderServers } from '../../src/render.js';
import { formatEndpoint, parseServerList } from '../../src/exporter.js';
import { parseMntr } from '../../src/mntr.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`../../../test/fixtures/${name}`, import.meta.url), 'utf8');

describe('metricType', () => {
  const table: Array<[string, 'counter' | 'gauge']> = [
    ['zk_packets_sent', 'counter'],
    ['zk_packets_received', 'counter'],
    ['zk_auth_failed_count', 'counter'],
    ['zk_znode_count', 'gauge'],
    ['zk_watch_count', 'gauge'],
    ['zk_avg_latency', 'gauge'], // a legacy gauge that looks like a summary part
    ['zk_max_file_descriptor_count', 'gauge'],
    ['zk_cnt_commit_process_time', 'counter'],
    ['zk_sum_commit_process_time', 'counter'],
    ['zk_avg_commit_process_time', 'gauge'],
    ['zk_p99_jvm_pause_time_ms', 'gauge'],
    ['zk_cnt_zookeeper_write_per_namespace', 'counter'], // summary set member "zookeeper"
    ['zk_cnt_my_app_read_per_namespace', 'counter'], // a member with underscores
    ['zk_avg_1_learner_handler_qp_size', 'gauge'],
    ['zk_cnt_quorum_ack_latency', 'counter'], // a summary whose name ends like the set ack_latency
    ['zk_something_new', 'gauge'],
    // ZooKeeper's Prometheus metrics provider: summary counts and sums, and `_total` counters
    ['zk_readlatency_count', 'counter'],
    ['zk_readlatency_sum', 'counter'],
    ['zk_write_per_namespace_count', 'counter'],
    ['zk_process_cpu_seconds_total', 'counter'],
    ['zk_jvm_threads_started_total', 'counter'],
    ['zk_ephemerals_count', 'gauge'], // a gauge that ends in _count
    ['zk_inflight_snap_count', 'gauge'], // ends in _count, but inflight_snap is no summary
  ];
  for (const [name, type] of table) it(`${name} is a ${type}`, () => assert.equal(metricType(name), type));
});

const render = renderServers;

describe('renderServers', () => {
  it('every key of a real leader reply once, grouped in families, text keys as info gauges', () => {
    const parsed = parseMntr(fixture('mntr-3.8-leader.txt'));
    assert.equal(parsed.kind, 'metrics');
    if (parsed.kind !== 'metrics') return;
    const text = render([
      { host: '10.0.0.1:2181', status: 'ok', entries: parsed.entries },
      { host: '10.0.0.2:2181', status: 'not_whitelisted', entries: [] },
    ]);
    const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
    assert.equal(new Set(types).size, types.length, 'no family twice');
    assert.equal(
      types.length,
      parsed.entries.length + 3,
      'one family per key, plus zk_up, zk_mntr_status, zk_server_leader',
    );
    assert.match(text, /^zk_up\{zk_host="10\.0\.0\.1:2181"\} 1\nzk_up\{zk_host="10\.0\.0\.2:2181"\} 0$/m);
    assert.match(text, /^zk_mntr_status\{zk_host="10\.0\.0\.2:2181",status="not_whitelisted"\} 1$/m);
    assert.match(text, /^zk_server_state\{zk_host="10\.0\.0\.1:2181",state="leader"\} 1$/m);
    assert.match(text, /^zk_peer_state\{zk_host="10\.0\.0\.1:2181",state="leading - broadcast"\} 1$/m);
    assert.match(text, /^zk_server_leader\{zk_host="10\.0\.0\.1:2181"\} 1$/m);
    assert.doesNotMatch(text, /zk_znode_count\{zk_host="10\.0\.0\.2:2181"\}/);
  });

  it('a text key stays a label when its text looks like a number', () => {
    const parsed = parseMntr('zk_observer_master_id\t2\nzk_znode_count\t5\n');
    if (parsed.kind !== 'metrics') throw new Error('expected metrics');
    const text = render([{ host: 'h:1', status: 'ok', entries: parsed.entries }]);
    assert.match(text, /^zk_observer_master_id\{zk_host="h:1",value="2"\} 1$/m);
    assert.match(text, /^zk_znode_count\{zk_host="h:1"\} 5$/m);
  });

  it('zk_version: the release as `version` (as the widely used exporter has it), the whole text as `build`', () => {
    const parsed = parseMntr(fixture('mntr-3.8-follower.txt'));
    if (parsed.kind !== 'metrics') throw new Error('expected metrics');
    const text = render([{ host: 'h:1', status: 'ok', entries: parsed.entries }]);
    assert.match(
      text,
      /^zk_version\{zk_host="h:1",version="3\.8\.0",build="3\.8\.0-\$\{mvngit\.commit\.id\}, built on 2024-12-29 17:54 UTC"\} 1$/m,
    );
  });

  it('zk_server_leader for every server: 0 for one not read, 1 for a leader that serves no clients', () => {
    const text = render([
      { host: 'a:1', status: 'not_serving', entries: [] },
      { host: 'b:1', status: 'unreachable', entries: [] },
      { host: 'c:1', status: 'leader_only', entries: [] },
      { host: 'd:1', status: 'unresolved', entries: [] },
    ]);
    assert.match(
      text,
      /^zk_server_leader\{zk_host="a:1"\} 0\nzk_server_leader\{zk_host="b:1"\} 0\nzk_server_leader\{zk_host="c:1"\} 1\nzk_server_leader\{zk_host="d:1"\} 0$/m,
    );
    assert.match(text, /^zk_up\{zk_host="c:1"\} 1$/m);
    assert.match(text, /^zk_mntr_status\{zk_host="c:1",status="leader_only"\} 1$/m);
    assert.match(text, /^zk_up\{zk_host="d:1"\} 0$/m);
    assert.match(text, /^zk_mntr_status\{zk_host="d:1",status="unresolved"\} 1$/m);
  });

  it('labels of labelled keys are kept beside zk_host', () => {
    const parsed = parseMntr('zk_readlatency{quantile="0.5"}\t3\nzk_readlatency_count\t10\n');
    if (parsed.kind !== 'metrics') throw new Error('expected metrics');
    const text = render([{ host: 'h:1', status: 'ok', entries: parsed.entries }]);
    assert.match(text, /^zk_readlatency\{zk_host="h:1",quantile="0\.5"\} 3$/m);
  });
});

describe('parseServerList', () => {
  it('host:port entries, names and IPv6 in brackets', () => {
    assert.deepEqual(parseServerList('10.0.0.1:2181, zk.example:2182,[::1]:2183'), [
      { host: '10.0.0.1', port: 2181 },
      { host: 'zk.example', port: 2182 },
      { host: '::1', port: 2183 },
    ]);
    assert.equal(formatEndpoint({ host: '::1', port: 2183 }), '[::1]:2183');
  });

  it('refuses empty lists, missing ports, bad ports and repeats, naming the entry', () => {
    for (const [list, message] of [
      ['', /no server given/],
      ['10.0.0.1', /"10\.0\.0\.1" is not host:port/],
      ['a:0', /"a:0" is not host:port/],
      ['a:65536', /"a:65536"/],
      ['::1:2181', /"::1:2181" is not host:port/],
      ['a:1,a:1', /a:1 is listed twice/],
    ] as const) {
      assert.throws(
        () => parseServerList(list),
        (err: unknown) => err instanceof CachemonError && message.test(err.message),
        list,
      );
    }
  });
});

/** The entries of a reply that parses to metrics. */
const entries = (reply: string) => {
  const parsed = parseMntr(reply);
  if (parsed.kind !== 'metrics') throw new Error('expected metrics');
  return parsed.entries;
};

describe('renderServers of several servers', () => {
  const write = renderServers;

  it('interleaves servers prepared one by one, family by family, in the order families first appear', () => {
    const text = write([
      { host: 'a:1', status: 'ok', entries: entries('zk_znode_count\t5\nzk_watch_count\t1\n') },
      { host: 'b:1', status: 'ok', entries: entries('zk_watch_count\t2\nzk_ephemerals_count\t3\nzk_znode_count\t6\n') },
    ]);
    const samples = text
      .split('\n')
      .filter((line) => line.startsWith('zk_') && !line.startsWith('zk_mntr_status') && !line.startsWith('zk_up'));
    assert.deepEqual(samples, [
      'zk_znode_count{zk_host="a:1"} 5',
      'zk_znode_count{zk_host="b:1"} 6',
      'zk_watch_count{zk_host="a:1"} 1',
      'zk_watch_count{zk_host="b:1"} 2',
      // neither printed zk_server_state: not a leader
      'zk_server_leader{zk_host="a:1"} 0',
      'zk_server_leader{zk_host="b:1"} 0',
      'zk_ephemerals_count{zk_host="b:1"} 3',
    ]);
    const types = text.split('\n').filter((line) => line.startsWith('# TYPE '));
    assert.equal(new Set(types).size, types.length, 'no family twice');
  });

  it('a name that is a number on one server and text on another is one family', () => {
    const text = write([
      { host: 'a:1', status: 'ok', entries: entries('zk_odd\t5\n') },
      { host: 'b:1', status: 'ok', entries: entries('zk_odd\tfive\n') },
    ]);
    assert.equal(text.match(/^# TYPE zk_odd /gm)?.length, 1);
    assert.match(text, /^zk_odd\{zk_host="a:1"\} 5\nzk_odd\{zk_host="b:1",value="five"\} 1$/m);
  });

  it('renders the same body again the same way, and follows a server whose state changes', () => {
    const leader = entries(fixture('mntr-3.8-leader.txt'));
    const first = write([{ host: 'a:1', status: 'ok', entries: leader }]);
    assert.equal(write([{ host: 'a:1', status: 'ok', entries: leader }]), first);
    const down = write([{ host: 'a:1', status: 'timeout', entries: [] }]);
    assert.match(down, /^zk_up\{zk_host="a:1"\} 0$/m);
    assert.match(down, /^zk_mntr_status\{zk_host="a:1",status="timeout"\} 1$/m);
    assert.match(down, /^zk_server_leader\{zk_host="a:1"\} 0$/m);
    assert.doesNotMatch(down, /zk_znode_count|zk_server_state/);
    const follower = write([{ host: 'a:1', status: 'ok', entries: entries(fixture('mntr-3.8-follower.txt')) }]);
    assert.match(follower, /^zk_server_leader\{zk_host="a:1"\} 0$/m);
    assert.match(follower, /^zk_server_state\{zk_host="a:1",state="follower"\} 1$/m);
  });
});
