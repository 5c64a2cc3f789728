import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CachemonError } from '@cachemon/core';
import { renderServers } from '../../src/render.js';
import { formatEndpoint, parseServerList } from '../../src/exporter.js';
import { parseMntr } from '../../src/mntr.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`../../../test/fixtures/${name}`, import.meta.url), 'utf8');

/** The sample lines (no comments, no zk_up/zk_mntr_status/zk_server_leader) of one server's reply. */
function shaped(reply: string): string[] {
  const parsed = parseMntr(reply);
  if (parsed.kind !== 'metrics') throw new Error('expected metrics');
  return renderServers([{ host: 'h:1', status: 'ok', entries: parsed.entries }])
    .split('\n')
    .filter((l) => l !== '' && !/^(#|zk_up|zk_mntr_status|zk_server_leader)/.test(l));
}

describe('Prometheus names of mntr keys', () => {
  const table: Array<[string, string[]]> = [
    // counters: _count becomes _total, others get it, _total stays
    ['zk_commit_count\t5', ['zk_commit_total{zk_host="h:1"} 5']],
    ['zk_packets_sent\t7', ['zk_packets_sent_total{zk_host="h:1"} 7']],
    ['zk_auth_failed_count\t1', ['zk_auth_failed_total{zk_host="h:1"} 1']],
    ['zk_bytes_received_count\t9', ['zk_bytes_received_total{zk_host="h:1"} 9']],
    ['zk_jvm_threads_started_total\t3', ['zk_jvm_threads_started_total{zk_host="h:1"} 3']],
    // gauges: the well-known _count ones in the plural, others lose _count
    ['zk_znode_count\t4', ['zk_znodes{zk_host="h:1"} 4']],
    ['zk_watch_count\t2', ['zk_watches{zk_host="h:1"} 2']],
    ['zk_ephemerals_count\t1', ['zk_ephemerals{zk_host="h:1"} 1']],
    ['zk_open_file_descriptor_count\t60', ['zk_open_file_descriptors{zk_host="h:1"} 60']],
    ['zk_max_file_descriptor_count\t1024', ['zk_max_file_descriptors{zk_host="h:1"} 1024']],
    ['zk_something_count\t3', ['zk_something{zk_host="h:1"} 3']],
    ['zk_outstanding_requests\t0', ['zk_outstanding_requests{zk_host="h:1"} 0']],
    // legacy latency gauges (milliseconds) as they are
    [
      'zk_avg_latency\t0.5\nzk_min_latency\t0\nzk_max_latency\t12',
      ['zk_avg_latency{zk_host="h:1"} 0.5', 'zk_min_latency{zk_host="h:1"} 0', 'zk_max_latency{zk_host="h:1"} 12'],
    ],
    // a BASIC summary: one summary, min and max gauges, avg dropped
    [
      'zk_avg_commit_process_time\t2.5\nzk_min_commit_process_time\t1\nzk_max_commit_process_time\t4\nzk_cnt_commit_process_time\t2\nzk_sum_commit_process_time\t5',
      [
        'zk_commit_process_time_min{zk_host="h:1"} 1',
        'zk_commit_process_time_max{zk_host="h:1"} 4',
        'zk_commit_process_time_count{zk_host="h:1"} 2',
        'zk_commit_process_time_sum{zk_host="h:1"} 5',
      ],
    ],
    // an ADVANCED one in ms: seconds, counts not scaled
    [
      'zk_max_jvm_pause_time_ms\t30\nzk_cnt_jvm_pause_time_ms\t3\nzk_sum_jvm_pause_time_ms\t45\nzk_p50_jvm_pause_time_ms\t7\nzk_p999_jvm_pause_time_ms\t30',
      [
        'zk_jvm_pause_time_seconds_max{zk_host="h:1"} 0.03',
        'zk_jvm_pause_time_seconds_count{zk_host="h:1"} 3',
        'zk_jvm_pause_time_seconds_sum{zk_host="h:1"} 0.045',
        'zk_jvm_pause_time_seconds{zk_host="h:1",quantile="0.5"} 0.007',
        'zk_jvm_pause_time_seconds{zk_host="h:1",quantile="0.999"} 0.03',
      ],
    ],
    // a summary set: one summary with the member as `key`, as the server printed it
    [
      'zk_cnt_my-app_write_per_namespace\t3\nzk_sum_my-app_write_per_namespace\t30\nzk_cnt_zookeeper_write_per_namespace\t1',
      [
        'zk_write_per_namespace_count{zk_host="h:1",key="my-app"} 3',
        'zk_write_per_namespace_sum{zk_host="h:1",key="my-app"} 30',
        'zk_write_per_namespace_count{zk_host="h:1",key="zookeeper"} 1',
      ],
    ],
    [
      'zk_p99_2_learner_handler_qp_time_ms\t5',
      ['zk_learner_handler_qp_time_seconds{zk_host="h:1",key="2",quantile="0.99"} 0.005'],
    ],
    // a summary whose name ends like the set ack_latency
    ['zk_cnt_quorum_ack_latency\t8', ['zk_quorum_ack_latency_count{zk_host="h:1"} 8']],
    // a summary the catalog does not know, told by its parts
    [
      'zk_cnt_new_thing\t2\nzk_sum_new_thing\t6\nzk_avg_new_thing\t3',
      ['zk_new_thing_count{zk_host="h:1"} 2', 'zk_new_thing_sum{zk_host="h:1"} 6'],
    ],
    // legacy gauges that look like summary parts
    ['zk_max_client_response_size\t99', ['zk_max_client_response_size{zk_host="h:1"} 99']],
    // ZooKeeper's Prometheus metrics provider
    [
      'zk_readlatency{quantile="0.5"}\t3\nzk_readlatency_count\t10\nzk_readlatency_sum\t40',
      [
        'zk_readlatency{zk_host="h:1",quantile="0.5"} 3',
        'zk_readlatency_count{zk_host="h:1"} 10',
        'zk_readlatency_sum{zk_host="h:1"} 40',
      ],
    ],
    [
      'zk_jvm_gc_collection_seconds_count{gc="G1 Young Generation"}\t4\nzk_jvm_gc_collection_seconds_sum{gc="G1 Young Generation"}\t0.1',
      [
        'zk_jvm_gc_collection_seconds_count{zk_host="h:1",gc="G1 Young Generation"} 4',
        'zk_jvm_gc_collection_seconds_sum{zk_host="h:1",gc="G1 Young Generation"} 0.1',
      ],
    ],
    ['zk_write_per_namespace_count{key="config"}\t4', ['zk_write_per_namespace_count{zk_host="h:1",key="config"} 4']],
    // other units, camelCase and colons
    ['zk_cache_size_kb\t2', ['zk_cache_size_bytes{zk_host="h:1"} 2048']],
    ['zk_someThing:odd\t1', ['zk_some_thing_odd{zk_host="h:1"} 1']],
    // an le label outside a histogram cannot be exposed
    ['zk_odd{le="1"}\t1\nzk_znode_count\t1', ['zk_znodes{zk_host="h:1"} 1']],
  ];
  for (const [reply, lines] of table) {
    it(reply.split('\n')[0]!.replace('\t', ' '), () => assert.deepEqual(shaped(`${reply}\n`), lines));
  }

  it('families are typed: counters, gauges, summaries', () => {
    const text = renderServers([
      {
        host: 'h:1',
        status: 'ok',
        entries: entries(
          'zk_commit_count\t1\nzk_znode_count\t1\nzk_cnt_commit_process_time\t1\nzk_min_commit_process_time\t1\n',
        ),
      },
    ]);
    assert.match(text, /^# TYPE zk_commit_total counter$/m);
    assert.match(text, /^# TYPE zk_znodes gauge$/m);
    assert.match(text, /^# TYPE zk_commit_process_time summary$/m);
    assert.match(text, /^# TYPE zk_commit_process_time_min gauge$/m);
    assert.match(text, /^# HELP zk_commit_total ZooKeeper mntr zk_commit_count/m);
  });

  it('a gauge named like a summary part of the same reply is left out, not written twice', () => {
    const lines = shaped('zk_cnt_commit_process_time\t2\nzk_commit_process_time_count\t9\n');
    assert.deepEqual(lines, ['zk_commit_process_time_count{zk_host="h:1"} 2']);
  });
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
    assert.ok(types.length < parsed.entries.length, 'summary parts folded into families');
    assert.match(text, /^zk_up\{zk_host="10\.0\.0\.1:2181"\} 1\nzk_up\{zk_host="10\.0\.0\.2:2181"\} 0$/m);
    assert.match(text, /^zk_mntr_status\{zk_host="10\.0\.0\.2:2181",status="not_whitelisted"\} 1$/m);
    assert.match(text, /^zk_server_state\{zk_host="10\.0\.0\.1:2181",state="leader"\} 1$/m);
    assert.match(text, /^zk_peer_state\{zk_host="10\.0\.0\.1:2181",state="leading - broadcast"\} 1$/m);
    assert.match(text, /^zk_server_leader\{zk_host="10\.0\.0\.1:2181"\} 1$/m);
    assert.doesNotMatch(text, /zk_znodes\{zk_host="10\.0\.0\.2:2181"\}/);
    assert.match(text, /^zk_znodes\{zk_host="10\.0\.0\.1:2181"\} \d+$/m);
  });

  it('a text key stays a label when its text looks like a number', () => {
    const parsed = parseMntr('zk_observer_master_id\t2\nzk_znode_count\t5\n');
    if (parsed.kind !== 'metrics') throw new Error('expected metrics');
    const text = render([{ host: 'h:1', status: 'ok', entries: parsed.entries }]);
    assert.match(text, /^zk_observer_master_id\{zk_host="h:1",value="2"\} 1$/m);
    assert.match(text, /^zk_znodes\{zk_host="h:1"\} 5$/m);
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

  it('labels of labelled keys are kept beside zk_host; a zk_host label of the key is not', () => {
    const parsed = parseMntr('zk_readlatency{quantile="0.5",zk_host="x"}\t3\nzk_readlatency_count\t10\n');
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
function entries(reply: string) {
  const parsed = parseMntr(reply);
  if (parsed.kind !== 'metrics') throw new Error('expected metrics');
  return parsed.entries;
}

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
      'zk_znodes{zk_host="a:1"} 5',
      'zk_znodes{zk_host="b:1"} 6',
      'zk_watches{zk_host="a:1"} 1',
      'zk_watches{zk_host="b:1"} 2',
      // neither printed zk_server_state: not a leader
      'zk_server_leader{zk_host="a:1"} 0',
      'zk_server_leader{zk_host="b:1"} 0',
      'zk_ephemerals{zk_host="b:1"} 3',
    ]);
    const types = text.split('\n').filter((line) => line.startsWith('# TYPE '));
    assert.equal(new Set(types).size, types.length, 'no family twice');
  });

  it('a name that is a summary on one server and a gauge on another: one family, of the first type', () => {
    const text = write([
      { host: 'a:1', status: 'ok', entries: entries('zk_cnt_odd\t5\nzk_sum_odd\t6\n') },
      { host: 'b:1', status: 'ok', entries: entries('zk_odd\t7\nzk_odd_count\t8\n') },
    ]);
    assert.equal(text.match(/^# TYPE zk_odd /gm)?.length, 1);
    assert.match(text, /^# TYPE zk_odd summary$/m);
    assert.doesNotMatch(text, /zk_host="b:1"\} [78]$/m);
  });

  it('renders the same body again the same way, and follows a server whose state changes', () => {
    const leader = entries(fixture('mntr-3.8-leader.txt'));
    const first = write([{ host: 'a:1', status: 'ok', entries: leader }]);
    assert.equal(write([{ host: 'a:1', status: 'ok', entries: leader }]), first);
    const down = write([{ host: 'a:1', status: 'timeout', entries: [] }]);
    assert.match(down, /^zk_up\{zk_host="a:1"\} 0$/m);
    assert.match(down, /^zk_mntr_status\{zk_host="a:1",status="timeout"\} 1$/m);
    assert.match(down, /^zk_server_leader\{zk_host="a:1"\} 0$/m);
    assert.doesNotMatch(down, /zk_znodes|zk_server_state/);
    const follower = write([{ host: 'a:1', status: 'ok', entries: entries(fixture('mntr-3.8-follower.txt')) }]);
    assert.match(follower, /^zk_server_leader\{zk_host="a:1"\} 0$/m);
    assert.match(follower, /^zk_server_state\{zk_host="a:1",state="follower"\} 1$/m);
  });
});
