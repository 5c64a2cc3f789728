import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CachemonError, ExpositionWriter } from '@cachemon/core';
import { metricType, renderServers } from '../../src/render.js';
import { formatEndpoint, parseServerList } from '../../src/exporter.js';
import { parseMntr } from '../../src/mntr.js';

const fixture = (name: string): string => readFileSync(new URL(`../../../test/fixtures/${name}`, import.meta.url), 'utf8');

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
  ];
  for (const [name, type] of table) it(`${name} is a ${type}`, () => assert.equal(metricType(name), type));
});

describe('renderServers', () => {
  it('every key of a real leader reply once, grouped in families, text keys as info gauges', () => {
    const parsed = parseMntr(fixture('mntr-3.8-leader.txt'));
    assert.equal(parsed.kind, 'metrics');
    if (parsed.kind !== 'metrics') return;
    const writer = new ExpositionWriter();
    renderServers(
      [
        { host: '10.0.0.1:2181', status: 'ok', entries: parsed.entries },
        { host: '10.0.0.2:2181', status: 'not_whitelisted', entries: [] },
      ],
      writer,
    );
    const text = writer.toString();
    const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
    assert.equal(new Set(types).size, types.length, 'no family twice');
    assert.equal(types.length, parsed.entries.length + 3, 'one family per key, plus zk_up, zk_mntr_status, zk_server_leader');
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
    const writer = new ExpositionWriter();
    renderServers([{ host: 'h:1', status: 'ok', entries: parsed.entries }], writer);
    assert.match(writer.toString(), /^zk_observer_master_id\{zk_host="h:1",value="2"\} 1$/m);
    assert.match(writer.toString(), /^zk_znode_count\{zk_host="h:1"\} 5$/m);
  });

  it('labels of labelled keys are kept beside zk_host', () => {
    const parsed = parseMntr('zk_readlatency{quantile="0.5"}\t3\nzk_readlatency_count\t10\n');
    if (parsed.kind !== 'metrics') throw new Error('expected metrics');
    const writer = new ExpositionWriter();
    renderServers([{ host: 'h:1', status: 'ok', entries: parsed.entries }], writer);
    assert.match(writer.toString(), /^zk_readlatency\{zk_host="h:1",quantile="0\.5"\} 3$/m);
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
      assert.throws(() => parseServerList(list), (err: unknown) => err instanceof CachemonError && message.test(err.message), list);
    }
  });
});
